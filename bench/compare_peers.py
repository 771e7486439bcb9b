#!/usr/bin/env python3
"""Times SwinUNETR inference on the CPU with several engines side by side, and checks each one's logits against MONAI.

All engines run the same weights on the same input with the same number of threads:

  pytorch-fp32      MONAI's SwinUNETR, eager float32 (the reference every other engine is compared with)
  pytorch-bf16      the same under torch.autocast("cpu", dtype=torch.bfloat16) (LayerNorm in float32: PyTorch
                    1.13's CPU layer_norm cannot take a bf16 input with float32 weights)
  pytorch-compile   torch.compile(model), only with --compile and a torch that has it (2.0 or later)
  onnxruntime-fp32  the model exported to ONNX (opset 17), ONNX Runtime's CPU execution provider
  openvino-fp32     the same ONNX file in OpenVINO's CPU plugin, inference precision f32
  openvino-bf16     ... inference precision bf16 (native on CPUs with AVX512_BF16 or AMX, emulated elsewhere)
  openvino-int8     NNCF post-training quantization of the ONNX model, only with --int8 (installs nncf);
                    --nncf-model-type transformer quantizes it with NNCF's transformer preset instead
  swinfer-B/P       swinfer's backend B at precision P for every B/P in --swinfer; the time is bench_forward's
                    single timed run after its own warm-up (on its own random input of the same shape: the time does
                    not depend on the values), the logits come from `swinfer forward` on the measured input;
                    P may carry "+rounded" (cpu/bf16+rounded: --bf16-weights rounded, weights rounded to bf16);
                    int8 is calibrated by `swinfer calibrate` on the inputs NNCF gets (--calibration-inputs, never
                    the measured one; bench_forward times it calibrated on its own input), int8+dynamic runs
                    --int8-dynamic instead

Every engine gets one warm-up, then --rounds rounds in which the engines run one after another in a fixed order, so
that load from other tenants of the machine hits all of them alike; the table gives each engine's median, sorted
fastest first, with max|d|/max|ref| (largest absolute logit difference over the largest absolute MONAI float32
logit) and the fraction of voxels whose argmax label agrees with MONAI float32.

  python3 bench/compare_peers.py --bench build/bench/bench_forward --swinfer-cli build/apps/swinfer/swinfer \\
      --preset fs48 --rounds 3
  python3 bench/compare_peers.py --preset demo --rounds 1 --engines pytorch-fp32,onnxruntime-fp32,swinfer

Presets: fs48 is MONAI's SwinUNETR (1 input channel, 14 classes, feature_size 48) with MONAI's random
initialisation after torch.manual_seed(--seed), on a 1x1x96x96x96 random normal input; demo is the bundled
data/demo/model.pt (configuration data/demo/model_config.json) on a 64^3 crop of data/demo/phantom.nii.gz around the
organ, scaled as data/demo/pipeline.json says.

Set-up: the script runs itself in a virtual environment, by default ~/.cache/swinfer-peers/venv (--venv PATH),
made with `/usr/bin/python3 -m venv --system-site-packages` so that Debian's python3-torch (1.13) is used, the
PyTorch the other scripts here run on; pip's numpy is held below 2 because that torch is built against numpy 1.
When the venv is missing or lacks a package the script creates it and pip-installs "numpy<2" onnx onnxruntime
openvino einops and monai==1.5.0 --no-deps into it (with --int8 also nncf), then re-executes itself with the venv's
python. It needs `apt-get install -y python3-torch python3-venv` first (without them it says so and exits with
status 2). The exported ONNX files (and the int8 models) are cached in ~/.cache/swinfer-peers/onnx (--cache-dir),
keyed by preset and seed and checked against a hash of the weights. Not part of CI.
"""
import argparse
import contextlib
import hashlib
import inspect
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEMO = os.path.join(REPO, "data", "demo")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "swinfer-peers")
SYSTEM_PYTHON = "/usr/bin/python3"
APT_COMMAND = "apt-get install -y python3-torch python3-venv"
VENV_PACKAGES = [["numpy<2", "onnx", "onnxruntime", "openvino", "einops"], ["monai==1.5.0", "--no-deps"]]
VENV_IMPORTS = "import numpy, torch, onnx, onnxruntime, openvino, einops, monai"
INT8_PACKAGES = ["numpy<2", "nncf"]  # numpy pinned again so that pip cannot upgrade it past Debian's torch
PYTHON_ENGINES = ["pytorch-fp32", "pytorch-bf16", "pytorch-compile", "onnxruntime-fp32", "openvino-fp32",
                  "openvino-bf16", "openvino-int8"]
ISA_FLAGS = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile"]
REFERENCE = "pytorch-fp32"


class EngineUnavailable(Exception):
    """An engine that cannot run here: the message says why, the comparison goes on without it."""


# ---------------------------------------------------------------------------------------------------------------------
# Virtual environment


def run_checked(cmd, **kwargs):
    """subprocess.run with check; a failure names the command and ends with the last line the command printed."""
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)
    except FileNotFoundError as e:
        raise EngineUnavailable(f"`{shlex.join(cmd)}`: {e.strerror}: {e.filename}") from None
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or "").strip().splitlines() or (e.stdout or "").strip().splitlines() or ["(no output)"]
        raise EngineUnavailable(f"`{shlex.join(cmd)}` exited with status {e.returncode}: {lines[-1]}") from None


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def imports_work(python, statement):
    return subprocess.run([python, "-c", statement], capture_output=True).returncode == 0


def run_or_exit(cmd):
    """For the set-up steps, which nothing can go on without: output shown as it comes, a failure ends the script."""
    try:
        subprocess.run(cmd, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"error: `{shlex.join(cmd)}` failed: {e}")


def pip_install(python, packages):
    print(f"installing into {os.path.dirname(os.path.dirname(python))}: {' '.join(packages)}", flush=True)
    run_or_exit([python, "-m", "pip", "install", "--quiet"] + packages)


def ensure_venv(venv, script=__file__):
    """Creates the venv and its packages when missing, then re-executes `script` (this one, or a script that imports
    it) inside it with the same arguments. Returns only when already running there."""
    venv = os.path.abspath(venv)
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    if os.environ.get("SWINFER_PEERS_REEXEC") == venv:
        sys.exit(f"error: re-executed with {venv_python(venv)} but sys.prefix is {sys.prefix}")
    python = venv_python(venv)
    if not os.path.exists(python):
        # Debian's torch is the one this venv is built around; without it (or without ensurepip) nothing can work.
        if not imports_work(SYSTEM_PYTHON, "import torch, ensurepip"):
            print(f"error: {SYSTEM_PYTHON} cannot import torch or ensurepip; install them with:\n  {APT_COMMAND}",
                  file=sys.stderr)
            sys.exit(2)
        print(f"creating the virtual environment {venv}", flush=True)
        run_or_exit([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv])
    if not imports_work(python, VENV_IMPORTS):
        for packages in VENV_PACKAGES:
            pip_install(python, packages)
    os.environ["SWINFER_PEERS_REEXEC"] = venv
    os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])


# ---------------------------------------------------------------------------------------------------------------------
# Machine and versions


def cpu_description():
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    return model, [flag for flag in ISA_FLAGS if flag in flags]


def package_version(module_name):
    try:
        module = __import__(module_name)
    except Exception:  # a broken install is as absent as a missing one here
        return "not installed"
    return getattr(module, "__version__", "unknown")


def git_commit():
    try:
        commit = run_checked(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = run_checked(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
    except EngineUnavailable:
        return "unknown"
    return commit + (" (working tree modified)" if dirty else "")


# ---------------------------------------------------------------------------------------------------------------------
# Model and input


def build_fs48(torch, seed):
    from monai.networks.nets import SwinUNETR
    torch.manual_seed(seed)
    config = {"in_channels": 1, "out_channels": 14, "feature_size": 48}
    return SwinUNETR(**config).eval(), config, 96


def build_demo(torch):
    from monai.networks.nets import SwinUNETR
    with open(os.path.join(DEMO, "model_config.json")) as f:
        config = json.load(f)
    # keep only what this MONAI's SwinUNETR accepts, so that a config written for a newer one still loads
    accepted = inspect.signature(SwinUNETR.__init__).parameters
    model = SwinUNETR(**{k: v for k, v in config.items() if k in accepted}).eval()
    model.load_state_dict(torch.load(os.path.join(DEMO, "model.pt"), map_location="cpu"))
    return model, config, 64


def demo_phantom(np):
    """The demo phantom scaled like data/demo/pipeline.json says (MONAI's ScaleIntensityRange), and its truth mask."""
    import nibabel as nib
    image = np.asanyarray(nib.load(os.path.join(DEMO, "phantom.nii.gz")).dataobj).astype(np.float32)
    truth = np.asanyarray(nib.load(os.path.join(DEMO, "phantom_truth.nii.gz")).dataobj)
    with open(os.path.join(DEMO, "pipeline.json")) as f:
        scale = json.load(f)["scale_intensity_range"]
    scaled = (image - scale["a_min"]) / (scale["a_max"] - scale["a_min"]) * (scale["b_max"] - scale["b_min"])
    scaled += scale["b_min"]
    if scale.get("clip"):
        scaled = np.clip(scaled, scale["b_min"], scale["b_max"])
    return scaled.astype(np.float32), truth


def crop(np, volume, start, size):
    """A size^3 block of a (D, H, W) volume as a (1, 1, size, size, size) C-order input."""
    a, b, c = start
    return np.ascontiguousarray(volume[a:a + size, b:b + size, c:c + size][None, None], dtype=np.float32)


def make_input(np, preset, size, seed):
    """The measured input and its description. For the demo a crop around the organ, so that the label agreement is
    measured where the network has something to decide."""
    if preset == "demo":
        try:
            image, truth = demo_phantom(np)
            centre = np.argwhere(truth > 0).mean(0).round().astype(int)
            start = [int(min(max(c - size // 2, 0), n - size)) for c, n in zip(centre, image.shape)]
            return crop(np, image, start, size), f"demo phantom crop at {start}"
        except Exception as e:  # nibabel missing or the data not checked out: random input still times fine
            print(f"note: demo phantom not usable ({e}); random normal input instead")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((1, 1, size, size, size), dtype=np.float32), f"random normal, seed {seed}"


def calibration_inputs(np, x, preset, count, seed):
    """count inputs for NNCF's calibration, stacked, never the measured one (that would flatter the int8 accuracy):
    for the demo other crops of the phantom at random places, otherwise random normal inputs with another seed."""
    rng = np.random.default_rng(seed + 1)
    if preset == "demo":
        try:
            image, _ = demo_phantom(np)
        except Exception:
            image = None
        if image is not None:
            size = x.shape[-1]
            starts = [[int(rng.integers(0, n - size + 1)) for n in image.shape] for _ in range(count)]
            return np.stack([crop(np, image, start, size) for start in starts])
    return rng.standard_normal((count,) + x.shape, dtype=np.float32)


def weights_hash(state_dict):
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        digest.update(name.encode())
        digest.update(state_dict[name].detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------------------------------
# ONNX export


def layer_norm_symbolic(g, input, normalized_shape, weight, bias, eps, cudnn_enable):
    """aten::layer_norm as ONNX LayerNormalization (opset 17), with unit scale and zero bias when the call has none.
    MONAI's proj_out calls F.layer_norm without weights; PyTorch 1.13's own opset-17 symbolic then emits a
    LayerNormalization without its required Scale input, which onnx.checker and the runtimes reject."""
    import torch
    from torch.onnx import symbolic_helper
    shape = symbolic_helper._get_const(normalized_shape, "is", "normalized_shape")
    if symbolic_helper._is_none(weight):
        weight = g.op("Constant", value_t=torch.ones(shape, dtype=torch.float32))
    if symbolic_helper._is_none(bias):
        bias = g.op("Constant", value_t=torch.zeros(shape, dtype=torch.float32))
    epsilon = symbolic_helper._get_const(eps, "f", "eps")
    return g.op("LayerNormalization", input, weight, bias, epsilon_f=epsilon, axis_i=-len(shape))


def export_onnx(torch, model, x, path):
    import onnx
    opset = 17  # the first opset with LayerNormalization, which the runtimes fuse
    torch.onnx.register_custom_op_symbolic("aten::layer_norm", layer_norm_symbolic, opset)
    partial = path + ".partial"
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about MONAI's shape arithmetic, constant here
            torch.onnx.export(model, torch.from_numpy(x), partial, opset_version=opset, input_names=["image"],
                              output_names=["logits"], do_constant_folding=True)
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::layer_norm", opset)
    onnx.checker.check_model(partial, full_check=True)
    os.replace(partial, path)


# NNCF 3.x loads its PyTorch backend whenever torch imports, and that backend needs a newer torch than Debian's 1.13;
# so the quantization runs in a child process that cannot see torch.
QUANTIZE_IN_CHILD = """
import sys
sys.modules["torch"] = None
import numpy as np, nncf, openvino as ov
onnx_path, calibration_path, output_path, model_type = sys.argv[1:]
calibration = list(np.load(calibration_path))
preset = {"model_type": nncf.ModelType.TRANSFORMER} if model_type == "transformer" else {}
model = nncf.quantize(ov.Core().read_model(onnx_path), nncf.Dataset(calibration), subset_size=len(calibration),
                      **preset)
ov.save_model(model, output_path, compress_to_fp16=False)
"""
NNCF_IMPORTS = "import sys; sys.modules['torch'] = None; import nncf"


def cached_int8(onnx_path, calibration, workdir, model_type):
    """The NNCF-quantized OpenVINO IR (.xml + .bin) of the ONNX file, next to it; redone when the ONNX file or the
    calibration inputs changed."""
    import numpy as np
    digest = hashlib.sha256(calibration.tobytes()).hexdigest()
    path = onnx_path[:-len(".onnx")] + ("-int8-transformer.xml" if model_type == "transformer" else "-int8.xml")
    stamp_path = path + ".json"
    stamp = {"onnx_mtime": os.path.getmtime(onnx_path), "calibration_sha256": digest}
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if json.load(f) == stamp:
                print(f"int8: cached {path}", flush=True)
                return path
    print(f"int8: NNCF quantization on {len(calibration)} calibration inputs to {path} ...", flush=True)
    t0 = time.perf_counter()
    calibration_path = os.path.join(workdir, "calibration.npy")
    np.save(calibration_path, calibration)
    run_checked([sys.executable, "-c", QUANTIZE_IN_CHILD, onnx_path, calibration_path, path, model_type])
    with open(stamp_path, "w") as f:
        json.dump(stamp, f)
    print(f"int8: quantized in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def swinfer_calibration(args, files):
    """`swinfer calibrate` (percentile, its default) over the inputs NNCF calibrates on, written as NIfTI volumes that
    need no preprocessing; made once per run for every calibrated swinfer int8 engine."""
    path = os.path.join(files["workdir"], "swinfer.int8.json")
    if os.path.exists(path):
        return path
    import nibabel
    import numpy as np
    volumes = []
    for i, volume in enumerate(files["calibration_inputs"]()):
        volumes.append(os.path.join(files["workdir"], f"calibration-{i}.nii.gz"))
        nibabel.save(nibabel.Nifti1Image(np.ascontiguousarray(volume[0, 0]), np.eye(4)), volumes[-1])
    config = ["--config", files["config"]] if files["config"] else []
    run_checked([args.swinfer_cli, "calibrate", "--model", files["weights"]] + config +
                ["--input"] + volumes + ["--roi", str(files["size"]), "--threads", str(args.threads), "-q",
                 "--output", path])
    return path


def cached_onnx(torch, model, x, cache_dir, key, digest):
    """The model's ONNX file, exported once per preset and seed; re-exported when the weights changed."""
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"{key}.onnx")
    stamp_path = path + ".json"
    stamp = {"weights_sha256": digest, "input_shape": list(x.shape), "torch": torch.__version__,
             "monai": package_version("monai")}
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if json.load(f) == stamp:
                print(f"ONNX: cached {path}", flush=True)
                return path
    print(f"ONNX: exporting to {path} ...", flush=True)
    t0 = time.perf_counter()
    export_onnx(torch, model, x, path)
    with open(stamp_path, "w") as f:
        json.dump(stamp, f)
    print(f"ONNX: exported and checked in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


# ---------------------------------------------------------------------------------------------------------------------
# Engines. Each has a name, prepare() (raises EngineUnavailable, also serves as the warm-up), run() -> seconds of
# one forward, and logits (a float32 numpy array, from the warm-up).


@contextlib.contextmanager
def layer_norm_taking_mixed_dtypes(torch):
    """Under CPU autocast, PyTorch 1.13 hands nn.LayerNorm a bf16 input while its weight stays float32, and its
    layer_norm kernel refuses the mix. For the duration of the block, such a call computes in float32 (what newer
    PyTorch does with mixed dtypes); calls whose dtypes match are passed through unchanged."""
    functional = torch.nn.functional
    original = functional.layer_norm

    def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        if weight is not None and weight.dtype != input.dtype:
            return original(input.float(), normalized_shape, weight.float(),
                            None if bias is None else bias.float(), eps)
        return original(input, normalized_shape, weight, bias, eps)

    functional.layer_norm = layer_norm  # nn.LayerNorm and MONAI look it up through the module at call time
    try:
        yield
    finally:
        functional.layer_norm = original


class TorchEngine:
    def __init__(self, name, torch, model, x, bf16=False):
        self.name, self.torch, self.model, self.x, self.bf16 = name, torch, model, torch.from_numpy(x), bf16
        self.logits = None

    def forward(self):
        torch = self.torch
        mixed = layer_norm_taking_mixed_dtypes(torch) if self.bf16 else contextlib.nullcontext()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16), mixed:
            return self.model(self.x)

    def prepare(self):
        self.logits = self.forward().float().numpy()

    def run(self):
        t0 = time.perf_counter()
        self.forward()
        return time.perf_counter() - t0


class OnnxRuntimeEngine:
    def __init__(self, name, onnx_path, x, threads):
        self.name, self.onnx_path, self.x, self.threads = name, onnx_path, x, threads
        self.logits = None

    def prepare(self):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(self.onnx_path(), options, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.logits = self.session.run(None, {self.input_name: self.x})[0]

    def run(self):
        t0 = time.perf_counter()
        self.session.run(None, {self.input_name: self.x})
        return time.perf_counter() - t0


class OpenVinoEngine:
    """precision: the CPU plugin's inference precision hint, "f32" or "bf16". model_path: a callable giving the
    ONNX file (or, for int8, the quantized OpenVINO IR), called on first use."""

    def __init__(self, name, model_path, x, threads, precision):
        self.name, self.model_path, self.x, self.threads, self.precision = name, model_path, x, threads, precision
        self.logits = None

    def prepare(self):
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints
        core = ov.Core()
        config = {props.inference_num_threads: self.threads,
                  hints.performance_mode: hints.PerformanceMode.LATENCY,
                  hints.inference_precision: ov.Type.bf16 if self.precision == "bf16" else ov.Type.f32}
        compiled = core.compile_model(core.read_model(self.model_path()), "CPU", config)
        self.request = compiled.create_infer_request()
        self.request.infer({0: self.x})
        self.logits = self.request.get_output_tensor(0).data.copy()

    def run(self):
        t0 = time.perf_counter()
        self.request.infer({0: self.x})
        return time.perf_counter() - t0


class SwinferEngine:
    """Timed by bench_forward (one timed run after its own warm-up; the forward alone, without loading the weights),
    logits from one `swinfer forward` on the same input."""

    def __init__(self, spec, args, files):
        # "cpu/bf16+rounded": bf16 with weights rounded to bf16 (--bf16-weights rounded, the pair dot product path);
        # "cpu/int8+dynamic": int8 with per-window scales instead of a calibration
        self.backend, precision = spec.split("/")
        self.precision, _, variant = precision.partition("+")
        if variant == "dynamic":
            self.variant_flags = ["--int8-dynamic"]
        else:
            self.variant_flags = ["--bf16-weights", variant] if variant else []
        self.calibrated = self.precision == "int8" and variant != "dynamic"
        self.name = f"swinfer-{spec}"
        self.args, self.files = args, files
        self.logits = None
        self.gflop = None  # bench_forward's FLOP count per forward, from its header line

    def config_flags(self):
        return ["--config", self.files["config"]] if self.files["config"] else []

    def prepare(self):
        import numpy as np
        for program in (self.args.bench, self.args.swinfer_cli):
            if not os.access(program, os.X_OK):
                raise EngineUnavailable(f"{program} not found (build it first)")
        self.run()  # warm-up: page cache, the binary's first start
        output = os.path.join(self.files["workdir"], f"{self.name}.npy".replace("/", "-"))
        run_checked([self.args.swinfer_cli, "forward", "--model", self.files["weights"]] + self.config_flags() +
                    ["--input", self.files["input"], "--output", output, "--backend", self.backend, "--precision",
                     self.precision, "--threads", str(self.args.threads), "-q"] + self.forward_flags())
        self.logits = np.load(output)

    def forward_flags(self):
        if not self.calibrated:
            return self.variant_flags
        path = self.files["swinfer_calibration"]()
        return ["--calibration", path]

    def run(self):
        cmd = [self.args.bench, "--model", self.files["weights"]] + self.config_flags() + [
            "--feature-size", str(self.files["feature_size"]), "--size", str(self.files["size"]), "--runs", "1",
            "--threads", str(self.args.threads), "--backends", self.backend, "--precisions", self.precision
        ] + self.variant_flags
        out = run_checked(cmd).stdout
        header = re.search(r"([\d.]+) GFLOP per forward", out)
        if header:
            self.gflop = float(header.group(1))
        rows = [line for line in out.splitlines() if line.startswith(f"{self.backend}/{self.precision}/")]
        fields = re.split(r"\s+", rows[0]) if rows else []
        try:
            return float(fields[1])  # the single timed run after bench_forward's own warm-up
        except (IndexError, ValueError):
            # bench_forward prints the reason in place of the numbers when it cannot make that network
            raise EngineUnavailable(f"`{shlex.join(cmd)}`: " + (rows[0] if rows else "no row for this spec")) from None


# ---------------------------------------------------------------------------------------------------------------------
# Comparison


def accuracy(np, reference, logits):
    if logits.shape != reference.shape:
        raise EngineUnavailable(f"logits of shape {logits.shape}, MONAI's are {reference.shape}")
    logits = logits.astype(np.float32)
    relative = float(np.abs(logits - reference).max() / np.abs(reference).max())
    agreement = float((logits.argmax(1) == reference.argmax(1)).mean())
    return relative, agreement


def selected_engines(args):
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in PYTHON_ENGINES + ["swinfer"] and not n.startswith("swinfer-")]
    if unknown:
        sys.exit(f"error: unknown engine(s) {', '.join(unknown)}; known: {', '.join(PYTHON_ENGINES)}, swinfer, "
                 "swinfer-B/P")
    if REFERENCE not in names:
        names.insert(0, REFERENCE)  # the reference every accuracy is measured against
    specs = [s.strip() for s in args.swinfer.split(",") if s.strip()]
    specs = [s for s in specs if "swinfer" in names or f"swinfer-{s}" in names]
    specs += [n[len("swinfer-"):] for n in names if n.startswith("swinfer-") and n[len("swinfer-"):] not in specs]
    return [n for n in PYTHON_ENGINES if n in names], specs


def make_engines(args, torch, np, model, x, onnx_path, files):
    """The engines in the order they run within a round, and the ones left out with the reason."""
    python_names, specs = selected_engines(args)
    engines, skipped = [], {}
    for name in python_names:
        if name == "pytorch-fp32":
            engines.append(TorchEngine(name, torch, model, x))
        elif name == "pytorch-bf16":
            engines.append(TorchEngine(name, torch, model, x, bf16=True))
        elif name == "pytorch-compile":
            if not args.compile:
                skipped[name] = "needs --compile"
            elif not hasattr(torch, "compile"):
                skipped[name] = f"torch {torch.__version__} has no torch.compile (it came with 2.0)"
            else:
                engines.append(TorchEngine(name, torch, torch.compile(model), x))
        elif name == "onnxruntime-fp32":
            engines.append(OnnxRuntimeEngine(name, onnx_path, x, args.threads))
        elif name in ("openvino-fp32", "openvino-bf16"):
            precision = "f32" if name == "openvino-fp32" else "bf16"
            engines.append(OpenVinoEngine(name, onnx_path, x, args.threads, precision))
        elif name == "openvino-int8":
            if not args.int8:
                skipped[name] = "needs --int8 (NNCF post-training quantization)"
            else:
                def int8_path():
                    if not imports_work(sys.executable, NNCF_IMPORTS):
                        raise EngineUnavailable("nncf does not import")
                    return cached_int8(onnx_path(), files["calibration_inputs"](), files["workdir"],
                                       args.nncf_model_type)
                # the unquantized rest in f32, so that the difference to openvino-fp32 is the quantization alone
                engines.append(OpenVinoEngine(name, int8_path, x, args.threads, "f32"))
    for spec in specs:
        if spec.count("/") != 1:
            skipped[f"swinfer-{spec}"] = "not of the form backend/precision"
        else:
            engines.append(SwinferEngine(spec, args, files))
    return engines, skipped


def prepare_engines(engines, skipped):
    """Warm-up of every engine (and its logits); the ones that fail are moved to skipped with the reason."""
    ready = []
    for engine in engines:
        t0 = time.perf_counter()
        try:
            engine.prepare()
        except EngineUnavailable as e:
            skipped[engine.name] = str(e)
        except Exception as e:  # an export or runtime error leaves the others to compare
            skipped[engine.name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        if engine.name in skipped:
            print(f"warm-up {engine.name}: skipped: {skipped[engine.name]}", flush=True)
        else:
            print(f"warm-up {engine.name}: {time.perf_counter() - t0:.1f} s", flush=True)
            ready.append(engine)
    return ready


def time_rounds(engines, skipped, rounds):
    times = {e.name: [] for e in engines}
    for r in range(rounds):
        for engine in engines:
            if engine.name in skipped:
                continue
            try:
                times[engine.name].append(engine.run())
            except Exception as e:
                skipped[engine.name] = f"failed in round {r + 1}: {e}"
                print(f"{engine.name}: {skipped[engine.name]}", flush=True)
        print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:.2f} s" for n, v in times.items()
                                             if n not in skipped and v), flush=True)
    return {n: v for n, v in times.items() if n not in skipped}


def openvino_bf16_note():
    try:
        import openvino as ov
        capabilities = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception as e:
        return f"OpenVINO CPU capabilities unknown ({type(e).__name__})"
    native = "yes" if "BF16" in capabilities else "no (emulated)"
    return f"OpenVINO CPU capabilities {' '.join(capabilities)}; native bf16: {native}"


def print_table(results, base):
    print("| engine | median s | GFLOP/s | max\\|d\\|/max\\|ref\\| | label agreement | speed vs pytorch-fp32 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in sorted(results.items(), key=lambda item: item[1]["median_s"]):
        gflops = f"{r['gflop_per_s']:.1f}" if r["gflop_per_s"] is not None else "-"
        print(f"| {name} | {r['median_s']:.3f} | {gflops} | {r['max_rel_diff']:.2e} | "
              f"{100 * r['label_agreement']:.3f} % | {base / r['median_s']:.2f}x |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=["fs48", "demo"], default="fs48")
    p.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "bench_forward"),
                   help="swinfer's bench_forward (times the swinfer engines)")
    p.add_argument("--swinfer-cli", default=os.path.join(REPO, "build", "apps", "swinfer", "swinfer"),
                   help="swinfer's command-line program (its `forward` gives the swinfer engines' logits)")
    p.add_argument("--swinfer", default="cpu/fp32,cpu/bf16,cpu/bf16+rounded,cpu/fp16,onednn/fp32,onednn/bf16",
                   help="swinfer backend/precision list; empty for none")
    p.add_argument("--engines", default=",".join(PYTHON_ENGINES + ["swinfer"]),
                   help="comma list of engines (pytorch-fp32 always runs: it is the reference); 'swinfer' means "
                        "every --swinfer spec, swinfer-B/P one of them")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="seed of the fs48 weights and of the random inputs")
    p.add_argument("--compile", action="store_true", help="also time torch.compile (PyTorch 2.0 or later)")
    p.add_argument("--int8", action="store_true", help="also time OpenVINO int8 after NNCF quantization "
                                                      "(pip-installs nncf into the venv)")
    p.add_argument("--nncf-model-type", choices=["default", "transformer"], default="default",
                   help="NNCF's quantization preset for openvino-int8 (transformer: nncf.ModelType.TRANSFORMER)")
    p.add_argument("--calibration-inputs", type=int, default=4,
                   help="inputs NNCF calibrates --int8 on (never the measured one)")
    p.add_argument("--venv", default=os.path.join(CACHE, "venv"), help="virtual environment to run in")
    p.add_argument("--cache-dir", default=os.path.join(CACHE, "onnx"), help="where the ONNX exports are kept")
    p.add_argument("--json", help="also write every raw timing and result to this file")
    args = p.parse_args()
    ensure_venv(args.venv)
    if args.int8 and not imports_work(sys.executable, NNCF_IMPORTS):
        pip_install(sys.executable, INT8_PACKAGES)

    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    model, config, size = build_demo(torch) if args.preset == "demo" else build_fs48(torch, args.seed)
    x, input_description = make_input(np, args.preset, size, args.seed)
    state_dict = model.state_dict()
    onnx_state = {}

    def onnx_path():
        """Exported on first use, once for all the engines that read it; a failure is remembered, not retried."""
        if "error" in onnx_state:
            raise EngineUnavailable(onnx_state["error"])
        if "path" not in onnx_state:
            key = "demo" if args.preset == "demo" else f"{args.preset}-seed{args.seed}"
            try:
                onnx_state["path"] = cached_onnx(torch, model, x, args.cache_dir, key, weights_hash(state_dict))
            except Exception as e:
                onnx_state["error"] = f"ONNX export failed: {type(e).__name__}: {str(e).strip()[:300]}"
                raise EngineUnavailable(onnx_state["error"]) from None
        return onnx_state["path"]

    with tempfile.TemporaryDirectory(prefix="compare_peers_") as workdir:
        files = {"workdir": workdir, "weights": os.path.join(workdir, "weights.pt"),
                 "input": os.path.join(workdir, "input.npy"), "size": size, "feature_size": config["feature_size"],
                 "config": os.path.join(DEMO, "model_config.json") if args.preset == "demo" else None}
        files["calibration_inputs"] = lambda: calibration_inputs(np, x, args.preset, args.calibration_inputs, args.seed)
        files["swinfer_calibration"] = lambda: swinfer_calibration(args, files)
        torch.save(state_dict, files["weights"])  # swinfer runs the very same weights
        np.save(files["input"], x)
        engines, skipped = make_engines(args, torch, np, model, x, onnx_path, files)
        engines = prepare_engines(engines, skipped)
        if REFERENCE in skipped:
            sys.exit(f"error: the reference {REFERENCE} failed: {skipped[REFERENCE]}")
        reference = next(e for e in engines if e.name == REFERENCE).logits
        for engine in engines:
            try:
                engine.accuracy = accuracy(np, reference, engine.logits)
            except EngineUnavailable as e:
                skipped[engine.name] = str(e)
        engines = [e for e in engines if e.name not in skipped]
        times = time_rounds(engines, skipped, args.rounds)

    gflop = next((e.gflop for e in engines if isinstance(e, SwinferEngine) and e.gflop), None)
    base = statistics.median(times[REFERENCE]) if times.get(REFERENCE) else None
    results = {}
    for engine in engines:
        if engine.name not in times:
            continue
        median = statistics.median(times[engine.name])
        results[engine.name] = {
            "times_s": times[engine.name], "median_s": median, "gflop_per_s": gflop / median if gflop else None,
            "max_rel_diff": engine.accuracy[0], "label_agreement": engine.accuracy[1],
            "speed_vs_reference": base / median if base else None}

    cpu_model, isa = cpu_description()
    versions = {m: package_version(m) for m in ("torch", "monai", "onnxruntime", "openvino")}
    commit = git_commit()
    print(f"\nSwinUNETR fs{config['feature_size']}, {config.get('out_channels')} classes, input "
          f"{'x'.join(map(str, x.shape))} ({input_description}), preset {args.preset}, median of {args.rounds} rounds")
    print(f"CPU: {cpu_model}; ISA: {' '.join(isa) or 'none of ' + ' '.join(ISA_FLAGS)}; threads {args.threads}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + f", swinfer {commit}")
    if any(e.name.startswith("openvino") for e in engines) or any(k.startswith("openvino") for k in skipped):
        print(openvino_bf16_note())
    print(f"GFLOP per forward: {gflop if gflop else 'unknown (no swinfer engine ran)'} (bench_forward's count)\n")
    if base is None:
        sys.exit(f"error: {REFERENCE} did not finish its rounds")
    print_table(results, base)
    if skipped:
        print("\nleft out:")
        for name, reason in skipped.items():
            print(f"  {name}: {reason}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"preset": args.preset, "input": input_description, "threads": args.threads,
                       "rounds": args.rounds, "seed": args.seed, "cpu": cpu_model, "isa": isa, "versions": versions,
                       "swinfer_commit": commit, "gflop_per_forward": gflop, "results": results,
                       "skipped": skipped}, f, indent=2)
    if len(results) < 2:
        sys.exit("error: no engine besides the reference ran")


if __name__ == "__main__":
    main()
