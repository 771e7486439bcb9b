#!/usr/bin/python3
"""Independent check of the swinfer binary against MONAI on random SwinUNETR configurations (run by hand, not CI).

For each of N configurations drawn from --seed it builds MONAI's SwinUNETR (MONAI 1.5.0; 1.4.0 for the legacy
"merging" order) with MONAI's own random init, then re-draws every LayerNorm weight/bias, every bias and every
relative_position_bias_table with torch.randn (seeded) so those paths matter; writes

    <workdir>/case_<i>/model.safetensors   state_dict (float32 + int64 index buffers), written by hand
    <workdir>/case_<i>/config.json         MONAI kwargs + "downsample" (merging | merging_legacy | mergingv2)
    <workdir>/case_<i>/input.npy           float32 NCDHW
    <workdir>/case_<i>/monai.npy           MONAI float32 logits (eval, no_grad, 2 threads)

and runs, for every requested backend and layout,

    <binary> forward --model model.safetensors --config config.json --input input.npy --output out.npy \\
             --backend B --layout L --precision fp32

PASS when max|swinfer - MONAI| <= 1e-4 * max|MONAI logit|. Exit status 1 if anything fails.

    /usr/bin/python3 tools/check_against_monai.py --binary build/apps/swinfer/swinfer -n 6 --seed 1 \\
        --backends cpu onednn --layouts ndhwc ncdhw
    /usr/bin/python3 tools/check_against_monai.py --prepare-only -n 6     # MONAI half only (no binary)
    /usr/bin/python3 tools/check_against_monai.py --self-test             # safetensors writer round trip

Needs /usr/bin/python3 with torch, numpy, MONAI 1.5.0 and /opt/monai-1.4.0 (see tests/data/goldens/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "goldens"))

import swin_common as sc  # noqa: E402

REL_TOL = 1e-4

# ---------------------------------------------------------------------------------------------------------------
# configuration drawing


def _heads_for(c: int, rng: random.Random, default: int) -> int:
    """A head count dividing c with head dim >= 2 (MONAI's default count half the time)."""
    if c % default == 0 and rng.random() < 0.5:
        return default
    opts = [h for h in (1, 2, 3, 4, 6, 8, 12, 16, 24) if c % h == 0 and c // h >= 2]
    return rng.choice(opts)


def draw_case(seed: int, index: int) -> dict:
    rng = random.Random(f"swinfer-check/{seed}/{index}")
    fs = rng.choice([12, 24])
    ds = rng.choices(["merging", "mergingv2", "merging_legacy"], weights=[2, 1, 1])[0]
    depths = [rng.choice([1, 2, 2, 3]) for _ in range(4)]
    heads = [_heads_for(fs * 2**s, rng, 3 * 2**s) for s in range(4)]
    if ds == "merging_legacy":  # MONAI 1.4.0 has window 7, qkv bias and mlp_ratio 4 hard-wired
        window, qkv_bias, mlp_ratio = 7, True, 4.0
    else:
        window = rng.choice([5, 6, 7]) if rng.random() < 0.6 else [rng.choice([5, 6, 7]) for _ in range(3)]
        qkv_bias = rng.random() < 0.7
        mlp_ratio = rng.choice([4.0, 4.0, 2.0, 3.0, 1.5])
    cfg = sc.make_config(
        in_channels=rng.choice([1, 1, 2, 4]),
        out_channels=rng.choice([1, 2, 3, 14]),
        depths=depths,
        num_heads=heads,
        window_size=window,
        qkv_bias=qkv_bias,
        mlp_ratio=mlp_ratio,
        feature_size=fs,
        normalize=rng.random() < 0.7,
        use_v2=rng.random() < 0.3,
        downsample=ds,
    )
    # spatial sizes: multiples of 32, more than one bottleneck voxel, bounded cost
    while True:
        sp = [rng.choice([32, 64, 96]) for _ in range(3)]
        if sp != [32, 32, 32] and sp[0] * sp[1] * sp[2] <= 96 * 64 * 64:
            break
    batch = rng.choice([1, 1, 2])
    return {"index": index, "seed": seed, "config": cfg, "input_shape": [batch, cfg["in_channels"]] + sp,
            "torch_seed": (seed * 1000003 + index) % (2**31)}


def summary(case: dict) -> str:
    c = case["config"]
    w = c["window_size"]
    w = "x".join(map(str, w)) if isinstance(w, list) else str(w)
    parts = [
        "x".join(map(str, case["input_shape"])),
        f"fs{c['feature_size']}",
        "d" + "".join(map(str, c["depths"])),
        "h" + "-".join(map(str, c["num_heads"])),
        f"w{w}",
        {"merging": "mrg", "mergingv2": "mrg2", "merging_legacy": "mrgL"}[c["downsample"]],
        f"in{c['in_channels']}out{c['out_channels']}",
        f"mlp{c['mlp_ratio']:g}",
    ]
    if not c["qkv_bias"]:
        parts.append("noqkvb")
    if not c["normalize"]:
        parts.append("nonorm")
    if c["use_v2"]:
        parts.append("v2")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# safetensors, written by hand: u64 LE header length, JSON header (space-padded to 8 bytes), raw LE data

_ST_DTYPES = {"float32": ("F32", "<f4"), "float16": ("F16", "<f2"), "int64": ("I64", "<i8"),
              "float64": ("F64", "<f8"), "int32": ("I32", "<i4")}


def write_safetensors(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """tensors: name -> numpy array (C order written). Offsets are relative to the start of the data block."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        code, le = _ST_DTYPES[str(a.dtype)]
        b = np.ascontiguousarray(a, dtype=np.dtype(le)).tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path: str) -> tuple[dict, dict]:
    """Independent reader (numpy) used to verify the writer."""
    inv = {v[0]: v[1] for v in _ST_DTYPES.values()}
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out, covered = {}, 0
    for name, e in header.items():
        s, t = e["data_offsets"]
        a = np.frombuffer(data[s:t], dtype=np.dtype(inv[e["dtype"]])).reshape(e["shape"])
        out[name] = a
        covered += t - s
    assert covered == len(data), "data block not exactly covered by the tensors"
    return out, meta


# ---------------------------------------------------------------------------------------------------------------
# MONAI half (one subprocess per case: one MONAI release per process)


randomise = sc.randomise  # re-exported for check_fusion_against_author.py


def prepare_case(case: dict, cdir: str, fp64: bool) -> dict:
    from monai_select import import_monai

    cfg = case["config"]
    monai = import_monai(sc.monai_version_for(cfg))
    import torch

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    torch.manual_seed(case["torch_seed"])
    model = sc.build_model(monai, cfg, case["input_shape"][2:])
    y, t_monai, noise = run_and_write_case(model, case, cdir, fp64, "monai.npy",
                                           {"format": "pt", "monai_version": monai.__version__,
                                            "downsample": cfg["downsample"]})
    return {"monai": monai.__version__, "max_abs": float(np.abs(y).max()), "fp64_noise": noise,
            "monai_seconds": t_monai}


def run_and_write_case(model, case: dict, cdir: str, fp64: bool, expected: str, metadata: dict):
    """Randomises `model` (seeded by the case), runs it on a seeded input and writes the case for the binary:
    model.safetensors (read back and compared), config.json, input.npy and the logits as `expected`. Returns
    (logits, seconds, max |fp32 - fp64| or None)."""
    import torch

    gen = torch.Generator().manual_seed(case["torch_seed"] + 1)
    randomise(model, gen)
    x = torch.randn(case["input_shape"], generator=gen)
    t0 = time.time()
    y = model(x).numpy()
    seconds = time.time() - t0
    noise = None
    if fp64:
        noise = float(np.abs(y.astype(np.float64) - model.double()(x.double()).numpy()).max())
        model.float()
    os.makedirs(cdir, exist_ok=True)
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(cdir, "model.safetensors"), sd, metadata)
    back, _ = read_safetensors(os.path.join(cdir, "model.safetensors"))
    assert list(back) == list(sd)
    for k in sd:
        assert back[k].dtype == sd[k].dtype and np.array_equal(back[k], sd[k]), k
    with open(os.path.join(cdir, "config.json"), "w") as f:
        json.dump(case["config"], f, indent=1)
    np.save(os.path.join(cdir, "input.npy"), x.numpy(), allow_pickle=False)
    np.save(os.path.join(cdir, expected), y, allow_pickle=False)
    return y, seconds, noise


# ---------------------------------------------------------------------------------------------------------------
# running the Python half and the binary on a case, and the results table (shared with check_fusion_against_author.py)


def run_subprocess_result(script: str, *args: str) -> tuple[dict | None, str]:
    """Runs `python script args...` in a fresh interpreter (one model per process keeps memory flat); returns the
    JSON of its `RESULT ` line (None when it failed or printed none) and its stderr."""
    p = subprocess.run([sys.executable, os.path.abspath(script), *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    res = [s for s in p.stdout.splitlines() if s.startswith("RESULT ")]
    return (json.loads(res[0][7:]) if p.returncode == 0 and res else None), p.stderr


def run_binary(a, cdir: str, index: int, summary_text: str, max_abs: float, noise, ref, rows: list) -> bool:
    """`<a.binary> forward` on cdir's model/config/input for every a.backends x a.layouts, compared with ref;
    appends one row per run to rows and returns True if any run did not PASS."""
    failed = False
    for be in a.backends:
        for lay in a.layouts:
            out = os.path.join(cdir, f"out_{be}_{lay}.npy")
            run = [a.binary, "forward", "--model", os.path.join(cdir, "model.safetensors"),
                   "--config", os.path.join(cdir, "config.json"), "--input", os.path.join(cdir, "input.npy"),
                   "--output", out, "--backend", be, "--layout", lay, "--precision", "fp32"]
            row = {"case": index, "summary": summary_text, "backend": be, "layout": lay, "max_abs": max_abs,
                   "noise": noise}
            t0 = time.time()
            try:
                q = subprocess.run(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=a.timeout)
                row["seconds"] = time.time() - t0
                if q.returncode != 0:
                    row.update(status="ERROR", detail=(q.stderr or q.stdout).strip()[-300:])
                else:
                    y = np.load(out)
                    if y.shape != ref.shape:
                        row.update(status="FAIL", detail=f"shape {y.shape} != {ref.shape}")
                    else:
                        d = float(np.abs(y.astype(np.float64) - ref).max()) if np.isfinite(y).all() else float("inf")
                        row["delta"] = d
                        row["status"] = "PASS" if d <= REL_TOL * max_abs else "FAIL"
            except subprocess.TimeoutExpired:
                row.update(status="ERROR", detail=f"timeout after {a.timeout:.0f}s", seconds=time.time() - t0)
            failed |= row["status"] != "PASS"
            rows.append(row)
            print(f"   {be}/{lay}: {row['status']} "
                  + (f"max|d| {row['delta']:.3g}" if "delta" in row else row.get("detail", "")), flush=True)
    return failed


def print_results(rows: list, width: int) -> None:
    if not rows:
        return
    print()
    hdr = f"{'case':>4}  {'configuration':<{width}} {'backend/layout':<15} {'max|d|':>9} {'max|logit|':>10} " \
          f"{'ratio':>9} {'fp64 noise':>10} {'time':>7}  result"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        d = r.get("delta")
        ratio = f"{d / r['max_abs']:.2e}" if d is not None and r["max_abs"] > 0 else "-"
        ds = f"{d:.3g}" if d is not None else "-"
        print(f"{r['case']:>4}  {r['summary']:<{width}} {r['backend'] + '/' + r['layout']:<15} {ds:>9} "
              f"{r['max_abs']:>10.4g} {ratio:>9} {r['noise']:>10} {r.get('seconds', 0):>6.1f}s  {r['status']}")
    n_pass = sum(r["status"] == "PASS" for r in rows)
    print(f"\n{n_pass} passed, {len(rows) - n_pass} failed")


def self_test() -> int:
    """safetensors writer round trip, read back with numpy (above) and checked against the torch tensors."""
    import torch

    d = tempfile.mkdtemp(prefix="swinfer_st_")
    try:
        g = torch.Generator().manual_seed(0)
        ts = {"a.weight": torch.randn(3, 4, 2, generator=g), "b.idx": torch.arange(-5, 7).reshape(3, 4),
              "c.scalar": torch.tensor(2.5), "d.empty": torch.zeros(0, 3), "e.f16": torch.randn(5, generator=g).half()}
        p = os.path.join(d, "t.safetensors")
        write_safetensors(p, {k: v.numpy() for k, v in ts.items()}, {"format": "pt"})
        back, meta = read_safetensors(p)
        assert meta == {"format": "pt"}
        for k, v in ts.items():
            assert torch.equal(torch.from_numpy(back[k].copy()), v), k
        with open(p, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        assert n % 8 == 0 and raw[8 + n - 1:8 + n] in (b"}", b" ")
        # byte-level check of one value: little-endian float32 at its recorded offset
        hdr = json.loads(raw[8:8 + n])
        s = hdr["a.weight"]["data_offsets"][0]
        assert struct.unpack("<f", raw[8 + n + s:8 + n + s + 4])[0] == float(ts["a.weight"].reshape(-1)[0])
        s = hdr["b.idx"]["data_offsets"][0]
        assert struct.unpack("<q", raw[8 + n + s:8 + n + s + 8])[0] == -5
        # configuration drawing is deterministic and valid
        for i in range(50):
            c1, c2 = draw_case(3, i), draw_case(3, i)
            assert c1 == c2
            cfg = c1["config"]
            for s_, h in enumerate(cfg["num_heads"]):
                assert (cfg["feature_size"] * 2**s_) % h == 0
            sp = c1["input_shape"][2:]
            assert all(v % 32 == 0 for v in sp) and np.prod(sp) // 32**3 > 1
        print("self-test passed")
        return 0
    finally:
        shutil.rmtree(d)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", help="the swinfer executable")
    ap.add_argument("-n", type=int, default=6, help="number of random configurations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", nargs="+", default=["cpu"])
    ap.add_argument("--layouts", nargs="+", default=["ndhwc"])
    ap.add_argument("--workdir", help="keep the case files here (default: a temporary folder, removed)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per swinfer run")
    ap.add_argument("--no-fp64", action="store_true", help="skip MONAI's float64 rerun (noise-floor column)")
    ap.add_argument("--prepare-only", action="store_true", help="only the MONAI half: draw, build, write files")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: one case as JSON, in a subprocess
    a = ap.parse_args()

    if a.self_test:
        return self_test()
    if a.prepare:
        case = json.loads(a.prepare)
        print("RESULT " + json.dumps(prepare_case(case, case["dir"], not a.no_fp64)))
        return 0
    if not a.prepare_only and not a.binary:
        ap.error("--binary is required (or use --prepare-only / --self-test)")
    if a.binary and not os.path.exists(a.binary):
        ap.error(f"no such binary: {a.binary}")

    work = a.workdir or tempfile.mkdtemp(prefix="swinfer_check_")
    os.makedirs(work, exist_ok=True)
    rows, failed = [], False
    try:
        for i in range(a.n):
            case = draw_case(a.seed, i)
            cdir = os.path.join(work, f"case_{i}")
            case["dir"] = cdir
            info, err = run_subprocess_result(__file__, "--prepare", json.dumps(case), *(["--no-fp64"] * a.no_fp64))
            if info is None:
                print(f"case {i}: MONAI side failed ({summary(case)})\n{err[-3000:]}")
                failed = True
                continue
            noise = "-" if info["fp64_noise"] is None else f"{info['fp64_noise']:.2g}"
            print(f"case {i}: {summary(case)}  MONAI {info['monai']} {info['monai_seconds']:.1f}s "
                  f"max|logit| {info['max_abs']:.4g} fp32-vs-fp64 {noise}", flush=True)
            if a.prepare_only:
                continue
            ref = np.load(os.path.join(cdir, "monai.npy"))
            failed |= run_binary(a, cdir, i, summary(case), info["max_abs"], noise, ref, rows)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print_results(rows, 70)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
