#!/usr/bin/env python3
"""Train swinfer's bundled demo model: a small MONAI SwinUNETR that segments the vessel tree of the synthetic
CT phantom (tools/demo/phantom.py), and write everything the README quick start needs into data/demo/.

SYNTHETIC DEMO MODEL -- NOT FOR CLINICAL USE.

Model: SwinUNETR(in_channels=1, out_channels=2, feature_size=12, use_v2=False, default depths/heads, window 7,
downsample="merging").  Preprocessing: ScaleIntensityRange(a_min=-1000, a_max=400, b_min=0, b_max=1, clip=True)
only.  Training: phantoms generated on the fly (seeds 1000+, never the bundled seed), random patches biased
toward vessels, DiceCELoss(softmax), AdamW, cosine learning rate over a wall-clock budget.  Evaluation: MONAI's
sliding_window_inference (roi 64^3, overlap 0.25, mode constant, sw_batch_size 1) on the bundled phantom; the
best checkpoint (vessel Dice) is kept.

Outputs (--out, default data/demo):
  phantom.nii.gz, phantom_truth.nii.gz   bundled phantom (seed --bundled-seed) and its truth
  model.pt                               plain state_dict (float32 parameters; int64 relative_position_index)
  model_config.json                      SwinUNETR constructor arguments (MONAI names)
  pipeline.json, inference.json          preprocessing and sliding-window settings
  training.json                          what the training run did (steps, losses, Dice, wall time)
  monai_reference.json, monai_mask.nii.gz  MONAI's own result on the bundled phantom (written by the reference
                                         step that ends a training run, or alone with --reference-only)

Debian's torch links the reference (netlib) BLAS; training is noticeably faster with OpenBLAS loaded for this
process only, e.g. LD_LIBRARY_PATH=<dir with OpenBLAS's libblas.so.3>.  Run the reference step with the stock
libraries (--reference-only) if its timing is meant to describe the machine as installed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from collections import OrderedDict

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # do not spin on a shared, oversubscribed CPU

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import phantom as ph  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))

MODEL_CONFIG = OrderedDict(
    [
        ("in_channels", 1),
        ("out_channels", 2),
        ("feature_size", 12),
        ("patch_size", 2),
        ("depths", [2, 2, 2, 2]),
        ("num_heads", [3, 6, 12, 24]),
        ("window_size", 7),
        ("qkv_bias", True),
        ("mlp_ratio", 4.0),
        ("norm_name", "instance"),
        ("drop_rate", 0.0),
        ("attn_drop_rate", 0.0),
        ("dropout_path_rate", 0.0),
        ("normalize", True),
        ("patch_norm", False),
        ("use_checkpoint", False),
        ("spatial_dims", 3),
        ("downsample", "merging"),
        ("use_v2", False),
    ]
)
PIPELINE = {"scale_intensity_range": {"a_min": -1000, "a_max": 400, "b_min": 0, "b_max": 1, "clip": True}}
INFERENCE = OrderedDict(
    [("roi", [64, 64, 64]), ("overlap", 0.25), ("mode", "constant"), ("sw_batch_size", 1),
     ("padding_mode", "constant"), ("cval", 0.0)]
)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_model(config: dict | None = None):
    """The demo SwinUNETR, or the model a swinfer config describes (a Swin Fusion UNETR variant, built by
    tools/goldens/swin_fusion_reference.py on MONAI's SwinUNETR with the author's module names)."""
    if config is not None and config.get("arch") == "SwinFusionUNETR":
        import monai

        sys.path.insert(0, os.path.join(REPO, "tools", "goldens"))
        import swin_fusion_reference as sfr

        return sfr.build_fusion(monai, config, tuple(INFERENCE["roi"])).train()
    from monai.networks.nets import SwinUNETR

    kw = {k: v for k, v in (config or MODEL_CONFIG).items()}
    return SwinUNETR(**kw)


def scale(img_hu: np.ndarray) -> np.ndarray:
    """The demo pipeline, with MONAI's own transform."""
    from monai.transforms import ScaleIntensityRange

    a = PIPELINE["scale_intensity_range"]
    t = ScaleIntensityRange(a_min=a["a_min"], a_max=a["a_max"], b_min=a["b_min"], b_max=a["b_max"], clip=a["clip"])
    out = t(img_hu.astype(np.float32))
    return np.asarray(out, dtype=np.float32)


def dice(pred: np.ndarray, truth: np.ndarray) -> float:
    p, t = pred.astype(bool), truth.astype(bool)
    s = p.sum() + t.sum()
    return float(2.0 * np.logical_and(p, t).sum() / s) if s else 1.0


def sliding_window(model, x: np.ndarray):
    """MONAI sliding_window_inference with the demo settings; returns (logits np.float32 (C,I,J,K), windows,
    wall seconds, cpu seconds)."""
    from monai.inferers import sliding_window_inference

    windows = [0]

    def predictor(t):
        windows[0] += t.shape[0]
        return model(t)

    inp = torch.from_numpy(np.ascontiguousarray(x))[None, None]
    model.eval()
    c0, t0 = cpu_seconds(), time.perf_counter()
    with torch.no_grad():
        out = sliding_window_inference(
            inp,
            roi_size=tuple(INFERENCE["roi"]),
            sw_batch_size=INFERENCE["sw_batch_size"],
            predictor=predictor,
            overlap=INFERENCE["overlap"],
            mode=INFERENCE["mode"],
            padding_mode=INFERENCE["padding_mode"],
            cval=INFERENCE["cval"],
        )
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return out[0].float().numpy(), windows[0], wall, cpu


def save_state_dict(model, path: str) -> None:
    sd = OrderedDict()
    for k, v in model.state_dict().items():
        v = v.detach().cpu().clone().contiguous()
        sd[k] = v.float() if v.is_floating_point() else v
    tmp = path + ".tmp"
    torch.save(sd, tmp)
    os.replace(tmp, path)


def write_json(path: str, obj) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def blas_in_use() -> str:
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for name in ("openblas", "mkl", "blis", "atlas"):
        if name in maps.lower():
            return name
    return "netlib (reference BLAS)" if "libblas" in maps else "unknown"


# ----------------------------------------------------------------------------------------------------------------


class PatchSampler:
    """A growing pool of phantoms; patches are centred (with jitter) on a vessel voxel with probability p_fg."""

    def __init__(self, shape, seed0, rng, p_fg):
        self.shape, self.next_seed, self.rng, self.p_fg = tuple(shape), seed0, rng, p_fg
        self.pool = []

    def add(self):
        img, truth, _ = ph.make_phantom(self.next_seed, self.shape)
        x = scale(img)
        fg = np.argwhere(truth > 0)
        body = np.argwhere(img[::4, ::4, ::4] > -500) * 4
        self.pool.append((x, truth, fg, body, self.next_seed))
        self.next_seed += 1

    def sample(self, patch):
        x, truth, fg, body, _ = self.pool[self.rng.integers(len(self.pool))]
        patch = np.asarray(patch)
        vol = np.asarray(x.shape)
        if len(fg) and self.rng.random() < self.p_fg:
            c = fg[self.rng.integers(len(fg))]
            start = c - self.rng.integers(0, patch)  # the voxel lands anywhere inside the patch
        else:
            c = body[self.rng.integers(len(body))] if len(body) else self.rng.integers(0, vol)
            start = c - patch // 2
        start = np.clip(start, 0, vol - patch)
        sl = tuple(slice(int(s), int(s + p)) for s, p in zip(start, patch))
        return x[sl], truth[sl]

    def batch(self, patch, n):
        xs, ys = zip(*(self.sample(patch) for _ in range(n)))
        return torch.from_numpy(np.stack(xs)[:, None].copy()), torch.from_numpy(np.stack(ys)[:, None].astype(np.int64))


def evaluate(model, x, truth):
    logits, windows, wall, cpu = sliding_window(model, x)
    pred = logits.argmax(0)
    return dice(pred == 1, truth == 1), windows, wall, cpu


def reference(args, model, img, truth, affine):
    """MONAI's own result on the bundled phantom: Dice, time, windows, label counts, mask (and logits if small)."""
    x = scale(img)
    runs = []
    logits = None
    for _ in range(max(1, args.timing_runs)):
        load0 = os.getloadavg()
        logits, windows, wall, cpu = sliding_window(model, x)
        runs.append({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "loadavg_1min_before": round(load0[0], 2)})
        log(f"reference run: {windows} windows, wall {wall:.1f}s, cpu {cpu:.1f}s, load {load0[0]:.1f}")
    pred = logits.argmax(0).astype(np.uint8)
    d = dice(pred == 1, truth == 1)
    counts = {str(c): int((pred == c).sum()) for c in range(logits.shape[0])}
    ph.save_nifti(os.path.join(args.out, "monai_mask.nii.gz"), pred, affine, "MONAI SwinUNETR argmax, swinfer demo")
    # exact logits only if they are small when compressed (float32, lossless); they usually are not
    import io

    buf = io.BytesIO()
    np.savez_compressed(buf, logits=logits.astype(np.float32))
    logits_bytes = buf.getbuffer().nbytes
    logits_file = None
    if logits_bytes < 3 * 1024 * 1024:
        logits_file = "monai_logits.npz"
        with open(os.path.join(args.out, logits_file), "wb") as f:
            f.write(buf.getvalue())
    best = min(runs, key=lambda r: r["wall_s"])
    import monai

    ref = OrderedDict(
        [
            ("what", "MONAI sliding_window_inference on data/demo/phantom.nii.gz with data/demo/model.pt, "
                     "pipeline.json preprocessing and inference.json settings, torch eval mode, float32, CPU"),
            ("image", "phantom.nii.gz"),
            ("truth", "phantom_truth.nii.gz"),
            ("mask", "monai_mask.nii.gz"),
            ("logits", logits_file),
            ("logits_npz_float32_bytes", int(logits_bytes)),
            ("dice_vessel", round(d, 6)),
            ("windows", int(windows)),
            ("label_voxels", counts),
            ("wall_time_s", best["wall_s"]),
            ("cpu_time_s", best["cpu_s"]),
            ("runs", runs),
            ("torch_threads", torch.get_num_threads()),
            ("omp_wait_policy", os.environ.get("OMP_WAIT_POLICY")),
            ("blas", blas_in_use()),
            ("torch_version", torch.__version__),
            ("monai_version", monai.__version__),
            ("numpy_version", np.__version__),
            ("python", platform.python_version()),
            ("cpu", platform.processor() or platform.machine()),
            ("cpu_count", os.cpu_count()),
            ("inference", INFERENCE),
            ("note", "wall time was taken on a shared machine (see loadavg); cpu_time_s is the process's own "
                     "user+sys CPU seconds for the same call"),
        ]
    )
    write_json(os.path.join(args.out, "monai_reference.json"), ref)
    log(f"reference: Dice(vessel) {d:.4f}, windows {windows}, label voxels {counts}, "
        f"logits npz {logits_bytes / 1e6:.1f} MB ({'saved' if logits_file else 'not saved'})")
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "data", "demo"))
    ap.add_argument("--bundled-seed", type=int, default=2026)
    ap.add_argument("--shape", type=int, nargs=3, default=[160, 160, 96])
    ap.add_argument("--minutes", type=float, default=32.0, help="wall-clock budget for training + evaluations")
    ap.add_argument("--eval-at", type=float, nargs="*", default=[0.7, 1.0],
                    help="fractions of the budget after which to evaluate on the bundled phantom")
    ap.add_argument("--patch", type=int, nargs=3, default=[64, 64, 32], help="training patch (first phase)")
    ap.add_argument("--final-patch", type=int, nargs=3, default=[64, 64, 64], help="patch for the last phase")
    ap.add_argument("--final-phase", type=float, default=0.35, help="fraction of the budget for --final-patch")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-5)
    ap.add_argument("--p-fg", type=float, default=0.8)
    ap.add_argument("--pool", type=int, default=6, help="phantoms generated before training")
    ap.add_argument("--pool-max", type=int, default=16)
    ap.add_argument("--add-every", type=int, default=20, help="steps between new phantoms")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", help="start from this state_dict instead of random weights")
    ap.add_argument("--reference-only", action="store_true",
                    help="skip training: load <out>/model.pt and write monai_reference.json / monai_mask.nii.gz")
    ap.add_argument("--no-reference", action="store_true", help="do not run the reference step after training")
    ap.add_argument("--timing-runs", type=int, default=1)
    ap.add_argument("--model-config", help="train the model this swinfer config JSON describes instead of the "
                    "demo SwinUNETR, e.g. a Swin Fusion variant ({\"arch\": \"SwinFusionUNETR\", \"variant\": "
                    "\"od\", ...}); written to <out>/model_config.json")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()

    # bundled phantom (deterministic; rewritten identically on every run)
    img, truth, affine = ph.make_phantom(args.bundled_seed, tuple(args.shape))
    ph.save_nifti(os.path.join(args.out, "phantom.nii.gz"), img, affine,
                  f"swinfer synthetic CT phantom seed {args.bundled_seed} NOT FOR CLINICAL USE")
    ph.save_nifti(os.path.join(args.out, "phantom_truth.nii.gz"), truth, affine,
                  f"swinfer phantom truth seed {args.bundled_seed} 0=bg 1=vessel")
    config = None
    if args.model_config:
        with open(args.model_config) as f:
            config = json.load(f)
    write_json(os.path.join(args.out, "model_config.json"), config or MODEL_CONFIG)
    write_json(os.path.join(args.out, "pipeline.json"), PIPELINE)
    write_json(os.path.join(args.out, "inference.json"), INFERENCE)
    log(f"bundled phantom seed {args.bundled_seed} {img.shape}: {int(truth.sum())} vessel voxels; BLAS {blas_in_use()}, "
        f"threads {torch.get_num_threads()}")

    model = build_model(config)
    model_path = os.path.join(args.out, "model.pt")
    if args.reference_only:
        model.load_state_dict(torch.load(model_path, map_location="cpu"))
        reference(args, model, img, truth, affine)
        return 0
    if args.init:
        model.load_state_dict(torch.load(args.init, map_location="cpu"))
    else:
        # start the vessel logit low: patches are mostly background
        with torch.no_grad():
            model.out.conv.conv.bias.copy_(torch.tensor([1.5, -1.5]))

    from monai.losses import DiceCELoss

    loss_fn = DiceCELoss(to_onehot_y=True, softmax=True, include_background=False, batch=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    rng = np.random.default_rng(args.seed + 12345)
    sampler = PatchSampler(args.shape, 1000, rng, args.p_fg)
    for _ in range(args.pool):
        sampler.add()
    log(f"pool of {len(sampler.pool)} phantoms ready after {time.time() - t_start:.0f}s")

    budget = args.minutes * 60.0
    eval_at = sorted(args.eval_at)
    x_eval = scale(img)
    history, evals = [], []
    best = -1.0
    step, t_loop = 0, time.time()
    losses = []
    while True:
        elapsed = time.time() - t_start
        frac = elapsed / budget
        if eval_at and frac >= eval_at[0]:
            eval_at.pop(0)
            d, windows, wall, _ = evaluate(model, x_eval, truth)
            model.train()
            evals.append({"step": step, "elapsed_s": round(time.time() - t_start, 1), "dice_vessel": round(d, 5)})
            tag = ""
            if d > best:
                best = d
                save_state_dict(model, model_path)
                tag = " (best, saved)"
            log(f"eval step {step}: Dice(vessel) {d:.4f} ({windows} windows, {wall:.0f}s){tag}")
            if not eval_at:
                break
            continue
        # learning rate: short warmup, cosine decay over the budget
        lr = args.lr * min(1.0, (step + 1) / 10.0) * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0))))
        for g in opt.param_groups:
            g["lr"] = lr
        patch = args.final_patch if frac >= 1.0 - args.final_phase else args.patch
        xb, yb = sampler.batch(patch, args.batch)
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(float(loss))
        step += 1
        if step % 5 == 0:
            m = float(np.mean(losses[-5:]))
            history.append({"step": step, "elapsed_s": round(time.time() - t_start, 1), "loss": round(m, 5),
                            "lr": lr, "patch": list(patch)})
            log(f"step {step} loss {m:.4f} lr {lr:.2e} patch {tuple(patch)} "
                f"({(time.time() - t_loop) / step:.1f}s/step, {elapsed / 60:.1f} min)")
        if step % args.add_every == 0 and len(sampler.pool) < args.pool_max:
            sampler.add()

    train_wall = time.time() - t_start
    summary = OrderedDict(
        [
            ("command", "python3 tools/demo/train_demo_model.py " + " ".join(argv if argv is not None else sys.argv[1:])),
            ("steps", step),
            ("batch", args.batch),
            ("patch", args.patch),
            ("final_patch", args.final_patch),
            ("final_phase", args.final_phase),
            ("lr", args.lr),
            ("loss", "DiceCELoss(to_onehot_y=True, softmax=True, include_background=False, batch=True)"),
            ("optimizer", f"AdamW(weight_decay={args.weight_decay}), 10-step warmup, cosine to 5% over the budget"),
            ("p_fg", args.p_fg),
            ("training_phantom_seeds", [s for *_, s in sampler.pool]),
            ("bundled_seed", args.bundled_seed),
            ("wall_time_s", round(train_wall, 1)),
            ("best_dice_vessel", round(best, 5)),
            ("evals", evals),
            ("blas", blas_in_use()),
            ("threads", torch.get_num_threads()),
            ("history", history),
        ]
    )
    write_json(os.path.join(args.out, "training.json"), summary)
    log(f"training done: {step} steps in {train_wall / 60:.1f} min, best Dice(vessel) {best:.4f}")

    if not args.no_reference:
        model.load_state_dict(torch.load(model_path, map_location="cpu"))
        reference(args, model, img, truth, affine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
