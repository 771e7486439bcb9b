#!/usr/bin/env python3
"""Whole-volume segmentation on one GPU: `swinfer segment --backend hip` against MONAI's sliding_window_inference
with the same SwinUNETR weights, time and peak device memory at several sliding-window batch sizes, side by side in
one run (rounds alternate, so other load on the machine hits both alike).

The volume is CT-like and synthetic (a body of soft tissue with organs, a bone ring and noise, already scaled to
[0, 1] as ScaleIntensityRange with clip leaves a CT), 512 x 512 x 128 voxels at 1.5 mm by default, written once as
NIfTI; the model is MONAI's SwinUNETR with its own random initialisation (seed 0), 14 classes as BTCV's. Both sides
use ROI 96, overlap 0.5, Gaussian blending and the given precision (MONAI: autocast), and both end with the label map
on the host: MONAI's time covers sliding_window_inference, argmax and the copy to the host of a volume already on
the GPU; swinfer's is the `inference` time of its report (the sliding window, argmax on the GPU, the labels back),
its whole process time printed beside it. Peak memory: torch.cuda.max_memory_allocated for MONAI, the report's
device_peak_memory_mib (what swinfer's tensors, weights and scratch held at once) for swinfer. The label agreement
between the two is printed (random weights leave many voxels near the decision boundary: informational).

Writes DIR/volume-gpu.json (every round) for tools/plot_gpu_memory.py. Needs torch and MONAI; not part of CI.

  python3 bench/compare_volume_gpu.py --swinfer build-gpu/bin/swinfer --out build-gpu/acceptance --rounds 3
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np


def ct_like(shape, spacing, seed=0):
    """A float32 (i, j, k) volume in [0, 1]: air 0, a soft-tissue body ~0.45 (an elliptic cylinder along k), organs
    as Gaussian blobs of other densities, a bone ring ~0.95, and noise."""
    rng = np.random.default_rng(seed)
    i, j, k = (np.arange(n, dtype=np.float32) * spacing for n in shape)
    ci, cj = i[-1] / 2, j[-1] / 2
    r = np.sqrt(((i[:, None] - ci) / (0.42 * i[-1])) ** 2 + ((j[None, :] - cj) / (0.32 * j[-1])) ** 2)
    body = (r < 1.0).astype(np.float32)
    ring = ((r > 0.80) & (r < 0.86)).astype(np.float32)
    v = np.repeat((0.45 * body + 0.5 * ring)[:, :, None], shape[2], axis=2)
    for _ in range(14):  # organs
        c = rng.uniform([ci - 0.25 * i[-1], cj - 0.2 * j[-1], 0], [ci + 0.25 * i[-1], cj + 0.2 * j[-1], k[-1]])
        radius = rng.uniform(15, 45)  # mm
        level = rng.uniform(-0.2, 0.25)
        d2 = ((i[:, None, None] - c[0]) ** 2 + (j[None, :, None] - c[1]) ** 2 + (k[None, None, :] - c[2]) ** 2)
        v += (level * np.exp(-d2 / (2 * radius * radius))).astype(np.float32) * body[:, :, None]
    v += 0.03 * rng.standard_normal(shape).astype(np.float32)
    return np.clip(v, 0.0, 1.0)


def write_nifti(path, v, spacing):
    """A NIfTI-1 .nii of the float32 (i, j, k) array v (i fastest on disk), scanner axes = voxel axes x spacing."""
    di, dj, dk = v.shape
    header = struct.pack("<i10s18sihcb8h3f4h8f3fh2b4f2i80s24s2h6f12f16s4s", 348, b"", b"", 0, 0, b"r", 0,
                         3, di, dj, dk, 1, 1, 1, 1, 0, 0, 0, 0, 16, 32, 0, 1.0, spacing, spacing, spacing,
                         1.0, 1.0, 1.0, 1.0, 352.0, 0.0, 0.0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0, b"", b"", 0, 1,
                         *([0.0] * 6), spacing, 0, 0, 0, 0, spacing, 0, 0, 0, 0, spacing, 0, b"", b"n+1\0")
    with open(path, "wb") as f:
        f.write(header + b"\0" * 4 + np.ascontiguousarray(v.transpose(2, 1, 0)).tobytes())


def read_nifti_u8(path, shape):
    """The uint8 (i, j, k) label map of an uncompressed .nii that swinfer wrote."""
    raw = open(path, "rb").read()
    offset = int(struct.unpack_from("<f", raw, 108)[0])
    return np.frombuffer(raw, np.uint8, offset=offset).reshape(shape[::-1]).transpose(2, 1, 0)


def run_swinfer(a, model_path, volume_path, sw_batch, out):
    mask, report = f"{out}/volume-mask-swinfer.nii", f"{out}/volume-report-swinfer.json"
    t0 = time.perf_counter()
    subprocess.run([a.swinfer, "segment", "--model", model_path, "--backend", "hip", "--precision", a.precision,
                    "-i", volume_path, "-o", mask, "--roi", str(a.roi), "--overlap", str(a.overlap),
                    "--blend", "gaussian", "--sw-batch", str(sw_batch), "--report", report, "-q"], check=True)
    process_s = time.perf_counter() - t0
    r = json.load(open(report))
    return {"seconds": r["timings_s"]["inference"], "process_seconds": process_s,
            "peak_mib": r["device_peak_memory_mib"], "windows": r["sliding_window"]["windows"],
            "device": r["engine"]["device"]}, mask


def run_monai(torch, predictor, x, a, sw_batch):
    from monai.inferers import sliding_window_inference
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.no_grad(), torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
        logits = sliding_window_inference(x, (a.roi,) * 3, sw_batch, predictor, overlap=a.overlap, mode="gaussian")
        labels = logits.argmax(1)[0].to(torch.uint8).cpu().numpy()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "peak_mib": torch.cuda.max_memory_allocated() / 2**20}, labels


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--swinfer", required=True, help="the swinfer executable (built with the hip backend)")
    p.add_argument("--out", required=True, help="folder for the model, the volume, the masks and volume-gpu.json")
    p.add_argument("--shape", default="512,512,128", help="the volume's voxels i,j,k")
    p.add_argument("--spacing", type=float, default=1.5, help="mm")
    p.add_argument("--feature-size", type=int, default=48)
    p.add_argument("--classes", type=int, default=14)
    p.add_argument("--precision", default="fp16", choices=["fp32", "fp16", "bf16"])
    p.add_argument("--roi", type=int, default=96)
    p.add_argument("--overlap", type=float, default=0.5)
    p.add_argument("--sw-batches", default="1,4,12")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--compile", action="store_true",
                   help="also MONAI with torch.compile (compiled once per batch size before the rounds)")
    a = p.parse_args()

    import torch
    from monai.networks.nets import SwinUNETR
    os.makedirs(a.out, exist_ok=True)
    shape = tuple(int(s) for s in a.shape.split(","))
    torch.manual_seed(0)
    model = SwinUNETR(in_channels=1, out_channels=a.classes, feature_size=a.feature_size).eval()
    model_path = f"{a.out}/volume-model-fs{a.feature_size}-{a.classes}.pt"
    torch.save(model.state_dict(), model_path)
    model = model.cuda()
    volume = ct_like(shape, a.spacing)
    volume_path = f"{a.out}/volume-ct.nii"
    write_nifti(volume_path, volume, a.spacing)
    x = torch.from_numpy(volume)[None, None].cuda()
    engines = {"MONAI": model}
    if a.compile:
        engines["MONAI + torch.compile"] = torch.compile(model)
    batches = [int(b) for b in a.sw_batches.split(",")]
    results = {"volume": list(shape), "spacing_mm": a.spacing, "precision": a.precision, "roi": a.roi,
               "overlap": a.overlap, "feature_size": a.feature_size, "classes": a.classes,
               "torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "runs": []}
    for batch in batches:
        for name, predictor in engines.items():
            if name != "MONAI":  # compilation (and its autotuning) before the timed rounds
                t0 = time.perf_counter()
                run_monai(torch, predictor, x, a, batch)
                print(f"{name}, sw_batch {batch}: compiled and ran once in {time.perf_counter() - t0:.0f} s",
                      flush=True)
        for r in range(a.rounds):
            got, mask_path = run_swinfer(a, model_path, volume_path, batch, a.out)
            got.update(engine="swinfer", sw_batch=batch, round=r)
            results["runs"].append(got)
            swinfer_labels = read_nifti_u8(mask_path, shape)
            line = [f"sw_batch {batch} round {r + 1}: swinfer {got['seconds']:.2f} s ({got['peak_mib']:.0f} MiB)"]
            for name, predictor in engines.items():
                m, labels = run_monai(torch, predictor, x, a, batch)
                m.update(engine=name, sw_batch=batch, round=r, agreement=float((labels == swinfer_labels).mean()))
                results["runs"].append(m)
                line.append(f"{name} {m['seconds']:.2f} s ({m['peak_mib']:.0f} MiB, labels agree "
                            f"{100 * m['agreement']:.3f} %)")
            print(", ".join(line), flush=True)
    json.dump(results, open(f"{a.out}/volume-gpu.json", "w"), indent=1)

    windows = next(r["windows"] for r in results["runs"] if r["engine"] == "swinfer")
    print(f"\n{shape[0]}x{shape[1]}x{shape[2]} voxels at {a.spacing} mm, {windows} windows of {a.roi}^3 (overlap "
          f"{a.overlap}, gaussian), SwinUNETR fs{a.feature_size} {a.classes} classes, {a.precision}, on "
          f"{results['gpu']}; torch {torch.__version__}; medians of {a.rounds} rounds")
    print(f"{'engine':24s} {'sw_batch':>8s} {'seconds':>8s} {'ms/window':>9s} {'peak MiB':>9s} {'vs swinfer':>10s}")
    for batch in batches:
        base = statistics.median(r["seconds"] for r in results["runs"]
                                 if r["engine"] == "swinfer" and r["sw_batch"] == batch)
        for name in ["swinfer", *engines]:
            rows = [r for r in results["runs"] if r["engine"] == name and r["sw_batch"] == batch]
            s = statistics.median(r["seconds"] for r in rows)
            peak = max(r["peak_mib"] for r in rows)
            extra = f"   (process {statistics.median(r['process_seconds'] for r in rows):.2f} s)" \
                if name == "swinfer" else ""
            print(f"{name:24s} {batch:8d} {s:8.2f} {1000 * s / windows:9.2f} {peak:9.0f} {s / base:9.2f}x{extra}")


if __name__ == "__main__":
    sys.exit(main())
