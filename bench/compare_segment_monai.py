#!/usr/bin/python3
"""Times the demo segmentation with MONAI (PyTorch, CPU) and with `swinfer segment`, side by side in one run.

Both segment data/demo/phantom.nii.gz with data/demo/model.pt, the demo's preprocessing (ScaleIntensityRange) and
sliding-window settings (roi 64, overlap 0.25, constant, sw_batch_size 1), on the same threads, alternating rounds so
that other load on the machine hits both alike. MONAI's time covers loading the NIfTI through argmax, swinfer's the
whole `swinfer segment` process. Prints per-round times, medians, the speed-up and both Dice scores.
Needs torch, nibabel and MONAI 1.5 (see tests/data/goldens/README.md); not part of CI.

  /usr/bin/python3 bench/compare_segment_monai.py --swinfer build/examples/swinfer --threads 2 --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "demo")


def dice(a, b):
    return 2.0 * ((a == 1) & (b == 1)).sum() / ((a == 1).sum() + (b == 1).sum())


def run_monai(model, truth, torch, np, nib):
    from monai.inferers import sliding_window_inference
    from monai.transforms import ScaleIntensityRange
    t0 = time.perf_counter()
    image = np.asanyarray(nib.load(os.path.join(DEMO, "phantom.nii.gz")).dataobj).astype(np.float32)
    pipeline = json.load(open(os.path.join(DEMO, "pipeline.json")))["scale_intensity_range"]
    x = ScaleIntensityRange(**pipeline)(torch.from_numpy(image)[None, None])
    with torch.no_grad():
        logits = sliding_window_inference(x, (64, 64, 64), 1, model, overlap=0.25, mode="constant")
    mask = logits.softmax(1).argmax(1)[0].numpy()
    return time.perf_counter() - t0, dice(mask, truth)


def run_swinfer(binary, threads, workdir):
    report = os.path.join(workdir, "report.json")
    t0 = time.perf_counter()
    subprocess.run([binary, "segment", "--model", os.path.join(DEMO, "model.pt"),
                    "--config", os.path.join(DEMO, "model_config.json"),
                    "--pipeline", os.path.join(DEMO, "pipeline.json"), "--roi", "64", "--overlap", "0.25",
                    "--sw-batch", "1", "--threads", str(threads), "--quiet",
                    "--input", os.path.join(DEMO, "phantom.nii.gz"), "--output", os.path.join(workdir, "seg.nii.gz"),
                    "--truth", os.path.join(DEMO, "phantom_truth.nii.gz"), "--report", report], check=True)
    elapsed = time.perf_counter() - t0
    return elapsed, json.load(open(report))["dice"]["1"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--swinfer", required=True, help="path to the swinfer binary")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    import nibabel as nib
    import numpy as np
    import torch
    from monai.networks.nets import SwinUNETR
    torch.set_num_threads(args.threads)
    config = json.load(open(os.path.join(DEMO, "model_config.json")))
    config.pop("downsample")  # MONAI 1.5's default "merging" is what the demo model uses
    model = SwinUNETR(**config).eval()
    model.load_state_dict(torch.load(os.path.join(DEMO, "model.pt"), map_location="cpu"))
    truth = np.asanyarray(nib.load(os.path.join(DEMO, "phantom_truth.nii.gz")).dataobj)
    times = {"monai": [], "swinfer": []}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            t, monai_dice = run_monai(model, truth, torch, np, nib)
            times["monai"].append(t)
            t, swinfer_dice = run_swinfer(args.swinfer, args.threads, work)
            times["swinfer"].append(t)
            print(f"round {r + 1}: MONAI {times['monai'][-1]:.1f} s, swinfer {times['swinfer'][-1]:.1f} s", flush=True)
    m, s = statistics.median(times["monai"]), statistics.median(times["swinfer"])
    print(f"\ndemo phantom 160x160x96, 18 windows of 64^3, {args.threads} threads, torch {torch.__version__}, "
          f"median of {args.rounds} rounds")
    print(f"MONAI/PyTorch  {m:7.1f} s   Dice {monai_dice:.4f}")
    print(f"swinfer        {s:7.1f} s   Dice {swinfer_dice:.4f}   ({m / s:.1f}x faster)")


if __name__ == "__main__":
    main()
