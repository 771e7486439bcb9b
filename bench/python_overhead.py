#!/usr/bin/python3
"""The Python package's overhead, side by side in one run (docs/python.md):

1. one fs48 forward: `net(x)` from Python against bench_forward (C++) on the same checkpoint, input size, threads,
   backend, precision and layout; medians of --runs, rounds alternating, and their ratio;
2. the bundled demo: swinfer.segment(...) against the tool's `swinfer segment` with the same arguments; wall times,
   rounds alternating.

    PYTHONPATH=build/python build-python-env/bin/python bench/python_overhead.py --build build --runs 5 --rounds 2

The fs48 checkpoint (MONAI's SwinUNETR, 14 classes, MONAI's own initialisation) is made with MONAI unless --model
names one. Prints a table; --log appends it to a file (bench/results/).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import swinfer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO, "data", "demo")
DEMO_ARGS = ["--config", os.path.join(DEMO, "model_config.json"), "--pipeline", os.path.join(DEMO, "pipeline.json"),
             "--roi", "64", "--overlap", "0.25", "--sw-batch", "1"]


def cpu_name() -> str:
    for line in open("/proc/cpuinfo", encoding="utf-8"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def fs48_checkpoint(folder: str) -> str:
    """Made in a child process, so torch's threads and memory are not in the timed one."""
    path = os.path.join(folder, "fs48.pt")
    subprocess.run([sys.executable, "-c", "import sys, torch; from monai.networks.nets import SwinUNETR; "
                    "torch.manual_seed(0); torch.save(SwinUNETR(in_channels=1, out_channels=14, feature_size=48)"
                    ".state_dict(), sys.argv[1])", path], check=True)
    return path


def cpp_forward(bench: str, model: str, a) -> float:
    out = subprocess.run([bench, "--model", model, "--size", str(a.size), "--runs", str(a.runs), "--threads",
                          str(a.threads), "--backends", a.backend, "--precisions", a.precision, "--layouts", a.layout],
                         check=True, capture_output=True, text=True).stdout
    row = re.search(rf"^{a.backend}/{a.precision}/{a.layout}\s+([0-9.]+)", out, re.M)
    if not row:
        raise SystemExit(f"bench_forward printed no {a.backend}/{a.precision}/{a.layout} row:\n{out}")
    return float(row.group(1))


def python_forward(model: str, a) -> float:
    net = swinfer.load(model, backend=a.backend, precision=a.precision, layout=a.layout, threads=a.threads)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 1, a.size, a.size, a.size)).astype(np.float32)
    net(x)  # warm-up, as bench_forward's
    seconds = []
    for _ in range(a.runs):
        start = time.perf_counter()
        net(x)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--model", help="checkpoint to time (default: an fs48 SwinUNETR made with MONAI)")
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--layout", default="ndhwc")
    p.add_argument("--no-segment", action="store_true", help="skip the demo comparison")
    p.add_argument("--log", help="append the table to this file")
    a = p.parse_args()
    swinfer.reuse_freed_memory()  # as bench_forward and the tool do
    bench = os.path.join(a.build, "bench", "bench_forward")
    lines = [f"# bench/python_overhead.py {' '.join(sys.argv[1:])}",
             f"# {time.strftime('%Y-%m-%d %H:%M')}, CPU: {cpu_name()}, {os.cpu_count()} logical CPUs, "
             f"swinfer {swinfer.__version__}, Python {platform.python_version()}"]
    with tempfile.TemporaryDirectory() as tmp:
        model = a.model or fs48_checkpoint(tmp)
        cpp, py = [], []
        for r in range(a.rounds):
            cpp.append(cpp_forward(bench, model, a))
            py.append(python_forward(model, a))
            lines.append(f"round {r + 1}: forward {a.size}^3 {a.backend}/{a.precision}/{a.layout}, {a.threads} "
                         f"threads, median of {a.runs}: bench_forward {cpp[-1]:.4f} s, Python net(x) {py[-1]:.4f} s")
        c, q = statistics.median(cpp), statistics.median(py)
        lines.append(f"forward: bench_forward {c:.4f} s, Python {q:.4f} s, Python / C++ = {q / c:.4f} "
                     f"({100 * (q / c - 1):+.2f} %)")
        if not a.no_segment:
            tool = swinfer.tool_path()
            image, ckpt = os.path.join(DEMO, "phantom.nii.gz"), os.path.join(DEMO, "model.pt")
            cli, seg = [], []
            for r in range(a.rounds):
                cli.append(timed(lambda: subprocess.run(
                    [tool, "segment", "-q", "--model", ckpt, "--input", image, "--output",
                     os.path.join(tmp, "cli.nii.gz"), *DEMO_ARGS], check=True)))
                options = {k.lstrip("-").replace("-", "_"): v for k, v in zip(DEMO_ARGS[::2], DEMO_ARGS[1::2])}
                seg.append(timed(lambda: swinfer.segment(image, os.path.join(tmp, "py.nii.gz"), model=ckpt,
                                                         progress=lambda d, t: None, **options)))
                lines.append(f"round {r + 1}: demo segment: tool {cli[-1]:.2f} s, swinfer.segment {seg[-1]:.2f} s")
            c, q = statistics.median(cli), statistics.median(seg)
            lines.append(f"demo segment: tool {c:.2f} s, swinfer.segment {q:.2f} s, ratio {q / c:.4f} "
                         f"({100 * (q / c - 1):+.2f} %)")
    text = "\n".join(lines)
    print(text)
    if a.log:
        with open(a.log, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
