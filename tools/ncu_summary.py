#!/usr/bin/env python3
"""Where a forward's GPU time goes: an Nsight Compute CSV (ncu --csv --page details --section SpeedOfLight) summed by
kernel name, as a markdown table for docs/gpu.md.

    ncu --clock-control none --section SpeedOfLight --csv --page details bench_forward ... > forward.csv
    python3 tools/ncu_summary.py forward.csv --forwards 2 --wall-ms 4.1

Kernel names are shortened to the kernel and its top-level template arguments without namespaces
(gemm_mma_kernel<mma_tile, 8, 8, __half, conv_loader, conv_epilogue>), so each op's instantiation is a row of its
own. --forwards divides by the number of forwards the profiled process ran (bench_forward --runs 1 runs a warm-up
and one timed forward: 2); --wall-ms is the forward's median wall time measured without the profiler, against which
the summed kernel time is set (the rest is launch gaps, host work and synchronisation)."""
import argparse
import collections
import csv
import re
import sys

# Milliseconds per unit: Nsight Compute 2023+ writes ns/us/ms/s (scaled to the value), older releases nsecond etc.
TIME_UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0,
              "s": 1e3}


def split_top_level(text):
    """The comma-separated items of `text` that are not inside <>, () or []."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def bare(name):
    """`ns::thing<args>` -> `thing` (a template argument's name without its namespaces or arguments)."""
    name = re.sub(r"^(struct|class|enum)\s+", "", name.strip())
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            if depth == 0:
                cut = i
                break
            depth += 1
    name = name[:cut]
    return name.split("::")[-1].strip() or name


def short_kernel_name(full):
    """The demangled signature shortened to kernel<top-level template arguments, bare>."""
    name = re.sub(r"^void\s+", "", full.strip())
    paren = 0
    for i in range(len(name) - 1, -1, -1):  # drop the parameter list: the last top-level (...)
        if name[i] == ")":
            paren += 1
        elif name[i] == "(":
            paren -= 1
            if paren == 0:
                name = name[:i]
                break
    lt = name.find("<")
    if lt < 0 or not name.endswith(">"):
        return bare(name)
    args = split_top_level(name[lt + 1:-1])
    return f"{bare(name[:lt])}<{', '.join(bare(a) for a in args)}>"


def number(text):
    return float(text.replace(",", ""))


def read(path):
    """launch id -> {name, duration_ms, sm_pct, dram_pct}"""
    launches = collections.OrderedDict()
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages (==PROF==) are not CSV
    for row in csv.DictReader(lines):
        launch = launches.setdefault(row["ID"], {"name": short_kernel_name(row["Kernel Name"]),
                                                 "grid": row.get("Grid Size", "")})
        metric, unit, value = row["Metric Name"], row["Metric Unit"], row["Metric Value"]
        try:
            if metric == "Duration":
                launch["duration_unit"] = unit
                if unit in TIME_UNITS:
                    launch["duration_ms"] = number(value) * TIME_UNITS[unit]
            elif metric == "Compute (SM) Throughput":
                launch["sm_pct"] = number(value)
            elif metric == "DRAM Throughput":
                launch["dram_pct"] = number(value)
        except ValueError:
            pass  # "n/a" and the like
    return launches


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="ncu --csv --page details --section SpeedOfLight output")
    p.add_argument("--forwards", type=int, default=1, help="forwards the profiled process ran")
    p.add_argument("--wall-ms", type=float, help="one forward's wall time without the profiler (ms)")
    p.add_argument("--top", type=int, default=25, help="rows to print (the rest are summed in one)")
    p.add_argument("--launches", action="store_true",
                   help="then every launch in order: its grid, duration and SM throughput (where one shape of a "
                        "kernel is slow, e.g. a GEMM with a handful of tiles)")
    a = p.parse_args()
    launches = read(a.csv)
    if not launches:
        sys.exit(f"ncu_summary: no kernel launches in {a.csv} (not ncu --csv --page details output?)")
    missing = [i for i, l in launches.items() if "duration_ms" not in l]
    if missing:
        units = sorted({l.get("duration_unit", "?") for l in launches.values() if "duration_ms" not in l})
        sys.exit(f"ncu_summary: {len(missing)} launches without a Duration in a known unit (units seen: "
                 f"{', '.join(units)}; profile with --section SpeedOfLight)")
    rows = collections.defaultdict(lambda: {"launches": 0, "ms": 0.0, "sm": 0.0, "dram": 0.0})
    for l in launches.values():
        r = rows[l["name"]]
        r["launches"] += 1
        r["ms"] += l["duration_ms"]
        r["sm"] += l.get("sm_pct", 0.0) * l["duration_ms"]  # time-weighted averages
        r["dram"] += l.get("dram_pct", 0.0) * l["duration_ms"]
    total = sum(r["ms"] for r in rows.values())
    n = max(1, a.forwards)
    print(f"{len(launches)} launches of {len(rows)} kernels in {n} forward(s); kernel time per forward "
          f"{total / n:.3f} ms" + (f", wall time {a.wall_ms:.3f} ms: kernels busy {100 * total / n / a.wall_ms:.0f} %"
                                   if a.wall_ms else ""))
    print()
    print("| kernel | launches per forward | ms per forward | % of kernel time | SM throughput % | DRAM throughput % |")
    print("|---|---:|---:|---:|---:|---:|")
    ordered = sorted(rows.items(), key=lambda kv: -kv[1]["ms"])
    shown, rest = ordered[:a.top], ordered[a.top:]
    for name, r in shown:
        print(f"| `{name}` | {r['launches'] / n:g} | {r['ms'] / n:.3f} | {100 * r['ms'] / total:.1f} | "
              f"{r['sm'] / r['ms']:.0f} | {r['dram'] / r['ms']:.0f} |")
    if rest:
        ms = sum(r["ms"] for _, r in rest)
        count = sum(r["launches"] for _, r in rest)
        print(f"| {len(rest)} other kernels | {count / n:g} | {ms / n:.3f} | {100 * ms / total:.1f} | | |")
    if a.launches:
        print()
        print("| launch | kernel | grid | µs | SM throughput % |")
        print("|---:|---|---|---:|---:|")
        for i, l in launches.items():
            print(f"| {i} | `{l['name']}` | {l['grid']} | {1000 * l['duration_ms']:.1f} | {l.get('sm_pct', 0):.0f} |")


if __name__ == "__main__":
    main()
