#!/usr/bin/env python3
"""Which hip-backend kernels use an AMD architecture's matrix instructions (v_mfma...): the GEMM (convolutions,
linears) and attention sources compiled device-only to assembly with a configured amd build's own compile command,
for one architecture, and the v_mfma instructions counted per kernel, as a markdown table for docs/gpu.md.

    cmake -S . -B build-amd -G Ninja -DSWINFER_GPU_PLATFORM=amd -DCMAKE_HIP_ARCHITECTURES="gfx90a;gfx940;gfx942" \\
          -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    python3 tools/hip_isa_report.py build-amd --arch gfx942

Kernel names are shortened as tools/ncu_summary.py does (the kernel and its top-level template arguments)."""
import argparse
import collections
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_summary import short_kernel_name  # noqa: E402

SOURCES = ["backends/hip/src/gemm_linear.cu", "backends/hip/src/conv3d.cu", "backends/hip/src/conv_transpose3d.cu",
           "backends/hip/src/attention_mma.cu"]


def device_assembly(build, source, arch):
    """The source's device code for `arch` as assembly text, compiled with the build's command for it."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if os.path.realpath(e["file"]) == os.path.realpath(source)]
    if not entries:
        sys.exit(f"hip_isa_report: {source} is not in {build}/compile_commands.json (an amd build configured with "
                 "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON?)")
    args, keep = shlex.split(entries[0]["command"]), []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT"):
            skip = True
        elif a in ("-c", "-MD") or a.startswith("--offload-arch="):
            pass
        else:
            keep.append(a)
    if keep and os.path.basename(keep[0]) == "ccache":
        keep = keep[1:]
    command = keep + [f"--offload-arch={arch}", "--cuda-device-only", "-S", "-o", "-"]
    return subprocess.run(command, cwd=entries[0]["directory"], check=True, capture_output=True, text=True).stdout


def mfma_per_kernel(assembly):
    """kernel symbol -> Counter of v_mfma mnemonics, for every kernel in the assembly."""
    kernels, current = collections.OrderedDict(), None
    for line in assembly.splitlines():
        label = re.match(r"^(_Z\S+):", line)
        if label:
            current = label.group(1)
            kernels.setdefault(current, collections.Counter())
        elif current and (m := re.match(r"\s+(v_mfma\w*)", line)):
            kernels[current][m.group(1)] += 1
    return kernels


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", help="a configured amd build directory with compile_commands.json")
    p.add_argument("--arch", default="gfx942")
    p.add_argument("sources", nargs="*", default=SOURCES)
    a = p.parse_args()
    rows = collections.OrderedDict()
    for source in a.sources:
        for symbol, counts in mfma_per_kernel(device_assembly(a.build, source, a.arch)).items():
            name = subprocess.run(["c++filt", symbol], capture_output=True, text=True).stdout.strip() or symbol
            row = rows.setdefault((os.path.basename(source), short_kernel_name(name)),
                                  {"instances": 0, "with": 0, "mfma": collections.Counter()})
            row["instances"] += 1
            row["with"] += bool(counts)
            row["mfma"].update(counts)
    print(f"| source | kernel ({a.arch}) | instantiations | with v_mfma | v_mfma instructions |")
    print("|---|---|---:|---:|---|")
    for (source, kernel), r in rows.items():
        mfma = ", ".join(f"`{k}` {v}" for k, v in sorted(r["mfma"].items())) or "none"
        print(f"| {source} | `{kernel}` | {r['instances']} | {r['with']} | {mfma} |")


if __name__ == "__main__":
    main()
