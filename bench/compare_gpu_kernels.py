#!/usr/bin/env python3
"""Times PyTorch's kernels (cuDNN convolutions, MONAI's Swin block parts) against swinfer's bench_gpu_kernels on the
same shapes, alternating rounds in one run, and prints the medians side by side.

The rows are bench_gpu_kernels' (fs48 sizes, channels-last, batch 1): every convolution as torch.nn.functional
conv3d / conv_transpose3d on channels_last_3d tensors, InstanceNorm + residual + LeakyReLU, torch.cat, and MONAI's
SwinTransformerBlock.forward_part1 (norm1, shift, window attention) and forward_part2 (norm2, MLP) with the residual
adds. fp32 rows run as PyTorch runs them by default (cuDNN convolutions may use TF32; swinfer's fp32 is exact
float32 FMA); fp16 and bf16 rows run the tensors and weights in that type. Needs torch and monai; not part of CI.

  python3 bench/compare_gpu_kernels.py --bench build-gpu/bench/bench_gpu_kernels --size 96 --rounds 3
"""
import argparse
import re
import statistics
import subprocess
import time

ROW = re.compile(r"^(.{52}) (fp32|fp16|bf16)\s+([0-9.]+)\s")


def swinfer_times(bench, size, runs, precisions):
    """{(row, precision): ms} from one bench_gpu_kernels run, and its header line."""
    out = subprocess.run([bench, "--size", str(size), "--runs", str(runs), "--precisions", precisions], check=True,
                         capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            times[(m.group(1).rstrip(), m.group(2))] = float(m.group(3))
    return times, out.splitlines()[0]


def torch_rows(torch, size, dtype, device):
    """(row name, callable) pairs in bench_gpu_kernels' order and names."""
    import torch.nn.functional as F
    from monai.networks.nets.swin_unetr import SwinTransformerBlock, compute_mask

    cl = torch.channels_last_3d

    def volume(c, edge):
        return torch.randn(1, c, edge, edge, edge, device=device, dtype=dtype).to(memory_format=cl)

    def conv(cin, cout, edge, how="plain", kernel=3, stride=1):
        x = volume(cin, edge)
        w = (0.05 * torch.randn(cout, cin, kernel, kernel, kernel, device=device, dtype=dtype)).to(memory_format=cl)
        pad = 1 if kernel == 3 else 0
        if how == "norm_on_load":  # what the fused row does: the previous norm and LeakyReLU, then the convolution
            return lambda: F.conv3d(F.leaky_relu(F.instance_norm(x), 0.01), w, padding=pad)
        if how == "two_halves":  # MONAI's decoder: concatenate, then convolve
            a, b = volume(cin // 2, edge), volume(cin // 2, edge)
            return lambda: F.conv3d(torch.cat([a, b], dim=1), w, padding=pad)
        return lambda: F.conv3d(x, w, stride=stride, padding=pad)

    full, half, quarter = size, size // 2, size // 4
    at = lambda edge: f" @{edge}^3"
    rows = [
        ("patch embedding k2s2 1->48" + at(full), conv(1, 48, full, kernel=2, stride=2)),
        ("encoder1.conv1 3x3x3 1->48" + at(full), conv(1, 48, full)),
        ("encoder1.conv3 1x1x1 1->48" + at(full), conv(1, 48, full, kernel=1)),
        ("encoder1.conv2 3x3x3 48->48" + at(full), conv(48, 48, full)),
        ("  the same, conv1's InstanceNorm applied on load", conv(48, 48, full, "norm_on_load")),
        ("decoder1.conv1 3x3x3 96->48" + at(full), conv(96, 48, full)),
        ("  the same, reading [upsampled, skip] in place", conv(96, 48, full, "two_halves")),
        ("encoder2.conv2 3x3x3 48->48" + at(half), conv(48, 48, half)),
        (f"decoder3.conv1 3x3x3 192->96 @{quarter}^3", conv(192, 96, quarter)),
    ]
    xt, wt = volume(96, half), 0.05 * torch.randn(96, 48, 2, 2, 2, device=device, dtype=dtype)
    rows.append((f"decoder1.transp_conv k2s2 96->48 @{half}^3", lambda: F.conv_transpose3d(xt, wt, stride=2)))
    xn, rn = volume(48, full), volume(48, full)
    rows.append(("instance_norm + residual + LeakyReLU 48ch" + at(full),
                 lambda: F.leaky_relu(F.instance_norm(xn) + rn, 0.01)))
    a, b = volume(48, full), volume(48, full)
    rows.append(("concat 48+48 channels" + at(full), lambda: torch.cat([a, b], dim=1)))
    tokens = torch.randn(1, half, half, half, 48, device=device, dtype=dtype)  # MONAI's blocks take (B, D, H, W, C)
    for shifted in (False, True):
        shift = (3, 3, 3) if shifted else (0, 0, 0)
        block = SwinTransformerBlock(48, 3, (7, 7, 7), shift).to(device=device, dtype=dtype).eval()
        mask = compute_mask([-(-half // 7) * 7] * 3, (7, 7, 7), shift, device).to(dtype)
        rows.append((f"norm1 + window attention, C48{at(half)}" + (" shifted" if shifted else ""),
                     lambda block=block, mask=mask: tokens + block.forward_part1(tokens, mask)))
    rows.append((f"norm2 + MLP 48->192->48, {half ** 3} tokens", lambda: tokens + block.forward_part2(tokens)))
    return rows


def time_ms(torch, f, runs, device):
    """Median milliseconds of `runs` calls after one warm-up, each until the device is idle."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        f()
        sync()
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            f()
            sync()
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path to swinfer's bench_gpu_kernels")
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--precisions", default="fp32,fp16,bf16")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a dry run of the script")
    args = p.parse_args()

    import torch
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    precisions = args.precisions.split(",")
    rows = {prec: torch_rows(torch, args.size, dtypes[prec], args.device) for prec in precisions}
    ours, theirs, header = {}, {}, ""
    for r in range(args.rounds):
        times, header = swinfer_times(args.bench, args.size, args.runs, args.precisions)
        for key, ms in times.items():
            ours.setdefault(key, []).append(ms)
        for prec in precisions:
            for name, f in rows[prec]:
                theirs.setdefault((name, prec), []).append(time_ms(torch, f, args.runs, args.device))
        print(f"round {r + 1} of {args.rounds} done", flush=True)
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU (dry run)"
    print(f"\n{header}\nPyTorch {torch.__version__} on {where}; medians over {args.rounds} rounds of the per-round "
          f"medians of {args.runs} runs")
    print(f"{'kernel':<52} {'prec':<5} {'swinfer ms':>10} {'torch ms':>9} {'speed-up':>9}")
    for prec in precisions:
        for name, _ in rows[prec]:
            mine, other = ours.get((name, prec)), theirs[(name, prec)]
            if not mine:
                print(f"{name:<52} {prec:<5} {'missing':>10}")
                continue
            a, b = statistics.median(mine), statistics.median(other)
            print(f"{name:<52} {prec:<5} {a:>10.3f} {b:>9.3f} {b / a:>8.2f}x")


if __name__ == "__main__":
    main()
