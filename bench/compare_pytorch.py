#!/usr/bin/env python3
"""Times MONAI's SwinUNETR (PyTorch, CPU) and swinfer's bench_forward side by side in one run.

Both run the same configuration (feature_size, cubic input size, threads) on this machine, alternating
rounds so that load from other tenants hits both alike. Prints medians and the speed-up.
Needs torch and monai (see tools/goldens/README.md); not part of CI.

  python3 bench/compare_pytorch.py --bench build/bench/bench_forward --feature-size 48 --size 96 --threads 2
"""
import argparse
import re
import statistics
import subprocess
import time


def time_monai(model, x, torch):
    with torch.no_grad():
        t0 = time.perf_counter()
        model(x)
        return time.perf_counter() - t0


def time_swinfer(bench, args, spec):
    backend, precision = spec.split("/")
    out = subprocess.run([bench, "--feature-size", str(args.feature_size), "--size", str(args.size), "--runs", "1",
                          "--threads", str(args.threads), "--backends", backend, "--precisions", precision],
                         check=True, capture_output=True, text=True).stdout
    row = [line for line in out.splitlines() if line.startswith(f"{backend}/{precision}/")]
    return float(re.split(r"\s+", row[0])[1])  # the single timed run after bench_forward's own warm-up


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path to swinfer's bench_forward")
    p.add_argument("--feature-size", type=int, default=48)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--swinfer", default="cpu/fp32,cpu/bf16,onednn/fp32", help="backend/precision list")
    args = p.parse_args()

    import torch
    from monai.networks.nets import SwinUNETR
    torch.set_num_threads(args.threads)
    model = SwinUNETR(in_channels=1, out_channels=14, feature_size=args.feature_size).eval()
    x = torch.randn(1, 1, args.size, args.size, args.size)
    time_monai(model, x, torch)  # warm-up
    specs = args.swinfer.split(",")
    times = {"monai-pytorch": []} | {s: [] for s in specs}
    for r in range(args.rounds):
        times["monai-pytorch"].append(time_monai(model, x, torch))
        for s in specs:
            times[s].append(time_swinfer(args.bench, args, s))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    base = statistics.median(times["monai-pytorch"])
    print(f"\nSwinUNETR fs{args.feature_size} {args.size}^3, {args.threads} threads, torch {torch.__version__}, "
          f"median of {args.rounds} rounds")
    print(f"{'engine':<16} {'median s':>9} {'speed-up':>9}")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"{k:<16} {m:>9.2f} {base / m:>8.2f}x")


if __name__ == "__main__":
    main()
