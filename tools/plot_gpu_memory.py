#!/usr/bin/env python3
"""The whole-volume GPU comparison as a picture: peak device memory and time per volume against the sliding
window's batch size, one line per engine, from bench/compare_volume_gpu.py's volume-gpu.json (medians of its rounds
for time, the largest peak for memory).

    python3 tools/plot_gpu_memory.py bench/results/gpu-runs/<run>/volume-gpu.json docs/images/gpu-memory-vs-batch.png

Needs matplotlib."""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="volume-gpu.json")
    p.add_argument("png", help="the picture to write")
    a = p.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = json.load(open(a.json))
    engines = list(dict.fromkeys(run["engine"] for run in r["runs"]))
    batches = sorted({run["sw_batch"] for run in r["runs"]})
    fig, (mem, sec) = plt.subplots(1, 2, figsize=(10, 4))
    for engine in engines:
        rows = {b: [run for run in r["runs"] if run["engine"] == engine and run["sw_batch"] == b] for b in batches}
        xs = [b for b in batches if rows[b]]
        # MONAI runs the precision through autocast (AMP), swinfer as its storage type.
        label = f"{engine} ({'autocast ' if engine != 'swinfer' and r['precision'] != 'fp32' else ''}" \
                f"{r['precision']})"
        mem.plot(xs, [max(run["peak_mib"] for run in rows[b]) / 1024 for b in xs], "o-", label=label)
        sec.plot(xs, [statistics.median(run["seconds"] for run in rows[b]) for b in xs], "o-", label=label)
    shape = "x".join(str(v) for v in r["volume"])
    for ax, label in ((mem, "peak device memory (GiB)"), (sec, "seconds per volume (median)")):
        ax.set_xlabel("sliding-window batch (sw_batch_size)")
        ax.set_ylabel(label)
        ax.set_xticks(batches)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"SwinUNETR fs{r['feature_size']}, {r['classes']} classes, {r['precision']}, {shape} voxels, "
                 f"ROI {r['roi']} overlap {r['overlap']}, on {r['gpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
