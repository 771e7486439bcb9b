#!/usr/bin/env python3
"""Volumes per minute of `swinfer segment` over a folder of volumes, side by side in one run: one process, --jobs 2,
and mpirun with 1 and 2 ranks (those need an MPI build, -DSWINFER_MPI=ON; without mpirun that build behaves as any
other, so one binary serves every row). The volumes are copies of the demo phantom (160x160x96, the demo model,
18 windows of 64^3 each). Configurations alternate within each round; the table gives medians over the rounds.

    python3 bench/bench_batch.py --swinfer build-mpi/apps/swinfer/swinfer --volumes 8 --rounds 2

As root, Open MPI wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "data", "demo")


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--swinfer", default=os.path.join(ROOT, "build-mpi", "apps", "swinfer", "swinfer"))
    parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    parser.add_argument("--volumes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--configs", default="process,jobs2,mpi1,mpi2",
                        help="comma-separated: process, jobsN, mpiN")
    args = parser.parse_args()

    # Open MPI refuses to run as root unless told; only the tests tell it (tests/cli/batch_support.cmake). Here the
    # person running the benchmark says so, as Open MPI documents: OMPI_ALLOW_RUN_AS_ROOT=1
    # OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment.
    mpirun = [args.mpirun, "--oversubscribe"]
    configs = {}
    for name in args.configs.split(","):
        if name == "process":
            configs[name] = ([], [])
        elif name.startswith("jobs"):
            configs[name] = ([], ["--jobs", name[4:]])
        elif name.startswith("mpi"):
            configs[name] = (mpirun + ["-n", name[3:]], [])
        else:
            parser.error(f"unknown configuration {name}")
    if (any(name.startswith("mpi") for name in configs) and os.geteuid() == 0
            and os.environ.get("OMPI_ALLOW_RUN_AS_ROOT") != "1"):
        parser.error("the mpi configurations as root: Open MPI refuses to run as root unless "
                     "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set; run as a user, set them, "
                     "or leave out the mpi configurations (--configs process,jobs2)")

    work = tempfile.mkdtemp(prefix="swinfer-bench-batch-")
    try:
        inputs = os.path.join(work, "inputs")
        os.makedirs(inputs)
        for i in range(args.volumes):
            shutil.copyfile(os.path.join(DEMO, "phantom.nii.gz"), os.path.join(inputs, f"phantom{i:03d}.nii.gz"))
        common = ["segment", "--model", os.path.join(DEMO, "model.pt"), "--config", os.path.join(DEMO, "model_config.json"),
                  "--pipeline", os.path.join(DEMO, "pipeline.json"), "--roi", "64", "--sw-batch", "1",
                  "--input", inputs, "--quiet"]
        # Open MPI's session files in this run's own folder (its Unix sockets need a short path: /tmp/... is).
        env = dict(os.environ, TMPDIR=work, OMPI_MCA_orte_tmpdir_base=work, PMIX_SYSTEM_TMPDIR=work,
                   PMIX_SERVER_TMPDIR=work)
        results = {name: [] for name in configs}
        for r in range(args.rounds):
            for name, (launcher, flags) in configs.items():
                out = os.path.join(work, f"{name}-{r}")
                report = out + ".json"
                command = launcher + [args.swinfer] + common + flags + ["--output", out, "--report", report]
                subprocess.run(command, check=True, env=env)
                with open(report) as f:
                    summary = json.load(f)["summary"]
                if summary["done"] != args.volumes:
                    raise SystemExit(f"{name}: {summary['done']} of {args.volumes} volumes done")
                results[name].append(summary)
                print(f"round {r + 1} {name}: {summary['volumes_per_minute']:.2f} volumes/min", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n{args.volumes} demo volumes (160x160x96, 18 windows of 64^3, feature_size 12), {cpu_name()}, "
          f"{os.cpu_count()} CPUs; medians of {args.rounds} round(s)\n")
    print("| configuration | workers | threads each | wall s | volumes/min | busy per worker |")
    print("|---|---:|---:|---:|---:|---|")
    for name, runs in results.items():
        wall = statistics.median(s["wall_s"] for s in runs)
        rate = statistics.median(s["volumes_per_minute"] for s in runs)
        last = runs[-1]["workers"]
        busy = ", ".join(f"{w['busy_fraction'] * 100:.0f} %" for w in last)
        print(f"| {name} | {len(last)} | {last[0]['threads']} | {wall:.1f} | {rate:.2f} | {busy} |")


if __name__ == "__main__":
    main()
