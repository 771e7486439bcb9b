#!/usr/bin/python3
"""Times the demo segmentation with MONAI (PyTorch, CPU) and with `swinfer segment`, side by side in one run; with
--openvino also MONAI's pipeline with OpenVINO as sliding_window_inference's predictor, the way OpenVINO users run it.

All segment data/demo/phantom.nii.gz with data/demo/model.pt, the demo's preprocessing (ScaleIntensityRange) and
sliding-window settings (roi 64, overlap 0.25, constant, sw_batch_size 1), on the same threads, alternating rounds so
that other load on the machine hits them alike. MONAI's time covers loading the NIfTI through argmax, swinfer's the
whole `swinfer segment` process (reading the checkpoint included; OpenVINO's model is compiled before the rounds).
Prints per-round times, medians, the speed-ups and the Dice scores.
Needs torch, nibabel and MONAI 1.5 (see tests/data/goldens/README.md); --openvino runs in bench/compare_peers.py's
virtual environment (made on first use) and exports the demo model to ONNX once. Not part of CI.

  /usr/bin/python3 bench/compare_segment_monai.py --swinfer build/apps/swinfer/swinfer --threads 2 --rounds 3 --openvino
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


def openvino_predictor(torch, np, model, threads):
    """sliding_window_inference's predictor on OpenVINO fp32: the demo model exported to ONNX for one 64^3 window
    (cached as compare_peers.py caches its exports), compiled for the CPU plugin with `threads` threads."""
    import compare_peers as peers
    import openvino as ov
    import openvino.properties as props
    import openvino.properties.hint as hints
    window = np.zeros((1, 1, 64, 64, 64), np.float32)
    path = peers.cached_onnx(torch, model, window, os.path.join(peers.CACHE, "onnx"), "demo-roi64",
                             peers.weights_hash(model.state_dict()))
    core = ov.Core()
    config = {props.inference_num_threads: threads, hints.performance_mode: hints.PerformanceMode.LATENCY,
              hints.inference_precision: ov.Type.f32}
    request = core.compile_model(core.read_model(path), "CPU", config).create_infer_request()

    def predict(x):
        request.infer({0: x.numpy()})
        return torch.from_numpy(request.get_output_tensor(0).data.copy())
    return predict


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
    p.add_argument("--openvino", action="store_true", help="also MONAI's pipeline with OpenVINO as the predictor")
    p.add_argument("--venv", default=None, help="with --openvino: the virtual environment (compare_peers.py's)")
    args = p.parse_args()
    import compare_peers as peers  # the demo model and the OpenVINO set-up, as the forward comparison has them
    if args.openvino:
        peers.ensure_venv(args.venv or os.path.join(peers.CACHE, "venv"), __file__)

    import nibabel as nib
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    model, _, _ = peers.build_demo(torch)
    truth = np.asanyarray(nib.load(os.path.join(DEMO, "phantom_truth.nii.gz")).dataobj)
    runners = {"MONAI/PyTorch": lambda work: run_monai(model, truth, torch, np, nib)}
    if args.openvino:
        predictor = openvino_predictor(torch, np, model, args.threads)
        runners["MONAI/OpenVINO"] = lambda work: run_monai(predictor, truth, torch, np, nib)
    runners["swinfer"] = lambda work: run_swinfer(args.swinfer, args.threads, work)
    times = {name: [] for name in runners}
    dices = {}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for name, run in runners.items():
                t, dices[name] = run(work)
                times[name].append(t)
            print(f"round {r + 1}: " + ", ".join(f"{name} {t[-1]:.1f} s" for name, t in times.items()), flush=True)
    print(f"\ndemo phantom 160x160x96, 18 windows of 64^3, {args.threads} threads, torch {torch.__version__}, "
          f"median of {args.rounds} rounds")
    swinfer_median = statistics.median(times["swinfer"])
    for name, t in times.items():
        m = statistics.median(t)
        speed = "" if name == "swinfer" else f"   swinfer is {m / swinfer_median:.2f}x faster"
        print(f"{name:15s} {m:7.1f} s   Dice {dices[name]:.4f}{speed}")


if __name__ == "__main__":
    main()
