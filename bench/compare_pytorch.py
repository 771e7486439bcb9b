#!/usr/bin/env python3
"""Times MONAI's SwinUNETR (PyTorch) and swinfer's bench_forward side by side in one run.

Both run the same configuration and the same weights (the PyTorch model's state_dict is saved and handed to
bench_forward --model) on this machine, alternating rounds so that load from other tenants hits both alike.
Prints medians and the speed-up. Needs torch and monai (see tools/goldens/README.md); not part of CI.

  python3 bench/compare_pytorch.py --bench build/bench/bench_forward --feature-size 48 --size 96 --threads 2

On a GPU machine (docs/gpu.md), PyTorch eager float32 and AMP (autocast float16) on the GPU against the hip
backend; swinfer's time is a whole forward() (input upload and logits download included):

  python3 bench/compare_pytorch.py --bench build-gpu/bench/bench_forward --device cuda --swinfer hip/fp32,hip/fp16

--model od times the Swin Fusion author's published od model (PyTorch) instead, against swinfer's od
(the author's code is loaded at run time: --author-code PATH, or the local mirror tools/goldens knows of).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def time_monai(model, x, torch, amp=False, tf32=None, runs=1):
    """The median of `runs` forwards; on a GPU each clock stops when the device is done. tf32: None keeps PyTorch's
    settings, False turns TF32 off for cuDNN convolutions and matmuls (strict float32, like swinfer's hip fp32)."""
    cuda = x.is_cuda
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    if tf32 is not None:
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32
    seconds = []
    try:
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp and cuda):
            for _ in range(runs):
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                model(x)
                if cuda:
                    torch.cuda.synchronize()
                seconds.append(time.perf_counter() - t0)
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    return statistics.median(seconds)


def time_swinfer(bench, args, spec):
    backend, precision = spec.split("/")
    config = ["--config", args.config_file] if args.config_file else []
    out = subprocess.run([bench, "--feature-size", str(args.feature_size), "--size", str(args.size),
                          "--batch", str(args.batch),
                          "--runs", str(args.runs_per_round),
                          "--threads", str(args.threads), "--backends", backend, "--precisions", precision,
                          "--model", args.weights_file] + config,
                         check=True, capture_output=True, text=True).stdout
    rows = {re.split(r"\s+", line)[0]: float(re.split(r"\s+", line)[1])  # medians of the timed runs
            for line in out.splitlines() if line.startswith(f"{backend}/{precision}/")}
    whole = [t for name, t in rows.items() if not name.endswith("@device")]
    device = [t for name, t in rows.items() if name.endswith("@device")]
    return whole[0], (device[0] if device else None)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path to swinfer's bench_forward")
    p.add_argument("--feature-size", type=int, default=48)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=1, help="windows per forward (the sliding window's sw_batch)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs-per-round", type=int, default=1,
                   help="forwards per engine and round, their median taken (a GPU forward takes milliseconds)")
    p.add_argument("--compile", action="store_true",
                   help="cuda: then AMP + torch.compile (timed after the main table, against AMP eager)")
    p.add_argument("--swinfer", default="cpu/fp32,cpu/bf16,onednn/fp32", help="backend/precision list")
    p.add_argument("--model", choices=["swinunetr", "od"], default="swinunetr",
                   help="MONAI SwinUNETR (14 classes) or the Swin Fusion author's od (2 classes)")
    p.add_argument("--author-code", help="swin_fusion_overdrive.py for --model od")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where PyTorch runs; cuda also times AMP (autocast float16)")
    args = p.parse_args()

    import torch
    torch.set_num_threads(args.threads)
    args.config_file = None
    if args.model == "od":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "goldens"))
        import swin_fusion_reference as sfr
        author = sfr.import_author(sfr.author_code_path(args.author_code))
        model = author.SwinUNETR(img_size=args.size, in_channels=1, out_channels=2,
                                 feature_size=args.feature_size).eval()
        fd, args.config_file = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"arch": "SwinFusionUNETR", "variant": "od", "out_channels": 2,
                       "feature_size": args.feature_size}, f)
    else:
        from monai.networks.nets import SwinUNETR
        model = SwinUNETR(in_channels=1, out_channels=14, feature_size=args.feature_size).eval()
    fd, args.weights_file = tempfile.mkstemp(suffix=".pt")
    os.close(fd)
    torch.save(model.state_dict(), args.weights_file)  # swinfer times the very same weights
    x = torch.randn(args.batch, 1, args.size, args.size, args.size)
    # name: (amp, tf32). PyTorch's default float32 lets cuDNN convolutions use TF32 (10-bit mantissas); the strict
    # run is float32 as swinfer's hip fp32 computes it.
    torch_runs = {"monai-pytorch": (False, None)}
    if args.device == "cuda":
        model, x = model.cuda(), x.cuda()
        torch_runs["monai-pytorch-strict"] = (False, False)
        torch_runs["monai-pytorch-amp"] = (True, None)
    for amp, tf32 in torch_runs.values():
        time_monai(model, x, torch, amp, tf32)  # warm-up (cuDNN autotuning, allocator)
    specs = args.swinfer.split(",")
    # A GPU spec gets a second entry, SPEC@device: its forward with input and logits on the device, as PyTorch's.
    times = {k: [] for k in torch_runs} | {s: [] for s in specs}
    if args.device == "cuda":
        times |= {f"{s}@device": [] for s in specs}
    for r in range(args.rounds):
        for k, (amp, tf32) in torch_runs.items():
            times[k].append(time_monai(model, x, torch, amp, tf32, args.runs_per_round))
        for s in specs:
            whole, device = time_swinfer(args.bench, args, s)
            times[s].append(whole)
            if device is not None and f"{s}@device" in times:
                times[f"{s}@device"].append(device)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.4f} s" for k, v in times.items() if v), flush=True)
    base = statistics.median(times["monai-pytorch"])
    name = "Swin Fusion od (author's code)" if args.model == "od" else "SwinUNETR"
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"{args.threads} threads"
    print(f"\n{name} fs{args.feature_size} {args.size}^3 batch {args.batch}, {where}, torch {torch.__version__}, "
          f"median of {args.rounds} rounds")
    if args.device == "cuda":
        print(f"monai-pytorch: PyTorch's defaults (cuDNN TF32 {torch.backends.cudnn.allow_tf32}, matmul TF32 "
              f"{torch.backends.cuda.matmul.allow_tf32}); monai-pytorch-strict: TF32 off; speed-ups against the "
              "first")
    print_table({k: v for k, v in times.items() if v}, base)
    if args.compile and args.device == "cuda":
        time_compiled(model, x, torch, args, times)
    os.remove(args.weights_file)


def print_table(times, base):
    print(f"{'engine':<26} {'median s':>9} {'speed-up':>9}", flush=True)
    for k, v in times.items():
        m = statistics.median(v)
        print(f"{k:<26} {m:>9.5f} {base / m:>8.2f}x", flush=True)


def time_compiled(model, x, torch, args, times):
    """AMP + torch.compile, after the main table (compiling takes minutes): its rounds alternate with AMP eager and
    the fastest swinfer spec again, and speed-ups are against AMP eager."""
    compiled = torch.compile(model)
    t0 = time.perf_counter()
    time_monai(compiled, x, torch, amp=True)
    print(f"\ntorch.compile: first AMP forward (compilation) {time.perf_counter() - t0:.1f} s", flush=True)
    fastest = min((s for s in times if "/" in s and times[s]), key=lambda s: statistics.median(times[s]))
    again = {"monai-pytorch-amp": [], "monai-pytorch-amp-compile": [], fastest: []}
    for r in range(args.rounds):
        again["monai-pytorch-amp"].append(time_monai(model, x, torch, True, None, args.runs_per_round))
        again["monai-pytorch-amp-compile"].append(time_monai(compiled, x, torch, True, None, args.runs_per_round))
        whole, device = time_swinfer(args.bench, args, fastest.removesuffix("@device"))
        again[fastest].append(device if fastest.endswith("@device") else whole)
    print_table(again, statistics.median(again["monai-pytorch-amp"]))


if __name__ == "__main__":
    main()
