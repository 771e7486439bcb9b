#!/usr/bin/env bash
# The hip backend's acceptance run on a GPU machine (docs/gpu.md): what the GPU issue's "done" asks for, in steps
# that each fit a 10-minute call. Run tools/stage-gpu-build.sh here first and carry .gpu-stage/ with the tree.
#
#   bash tools/gpu-acceptance.sh build    configure (stage.cmake + tool + benchmark) and build
#   bash tools/gpu-acceptance.sh test     the [gpu] tests (kernels, sliding window, whole models vs cpu)
#   bash tools/gpu-acceptance.sh check    MONAI SwinUNETR at FEATURE_SIZE (its own random initialisation, saved
#                                         once): crosscheck of one window (fp32: every stage within 1e-4) and of a
#                                         whole volume through the device sliding window; fp16/bf16 label agreement
#                                         is printed for hip and, alongside, for the cpu backend (random weights put
#                                         most voxels near the decision boundary, so it is not a pass criterion
#                                         there). Then the trained demo model on the demo phantom: fp32, fp16 and
#                                         bf16 labels >= 99.9 % of the cpu backend's, and segment --backend hip
#                                         against the cpu mask and the phantom's truth
#   bash tools/gpu-acceptance.sh bench    per-window time of hip fp32/fp16/bf16 against PyTorch eager and AMP on
#                                         the same GPU with the same weights (bench/compare_pytorch.py)
#   bash tools/gpu-acceptance.sh kernels  the hot kernels one by one (convolutions, norms, concat, attention, MLP at
#                                         the window's sizes) against PyTorch's on the same shapes
#                                         (bench/compare_gpu_kernels.py): where the time goes, for the next step;
#                                         then the fp16 kernels again with SWINFER_GPU_MATRIX_CORES=0 (FMA)
#
# Environment: BUILD (build-gpu), FEATURE_SIZE (48), SIZE (96, the window), VOLUME (128, the whole volume's edge),
# ROUNDS (5), DEVICE (cuda; cpu for a dry run without a GPU), CMAKE_ARGS (extra configure flags, e.g.
# -DSWINFER_GPU_PLATFORM=emulator for a dry run). Outputs and logs go to $BUILD/acceptance/.
set -uo pipefail  # no -e: a failing check is recorded and the run goes on (steps run inside `||` anyway)
cd "$(dirname "$0")/.."
build=${BUILD:-build-gpu}
fs=${FEATURE_SIZE:-48}
size=${SIZE:-96}
volume=${VOLUME:-128}
rounds=${ROUNDS:-5}
device=${DEVICE:-cuda}
out="$build/acceptance"
swinfer="$build/examples/swinfer"

with_monai() {  # MONAI from the staged wheel (the GPU machine has torch and einops but no network)
  if ! python3 -c "import monai" 2>/dev/null; then
    local site="$out/site"
    [[ -d "$site/monai" ]] || python3 -m pip install -q --no-index --no-deps --target "$site" .gpu-stage/wheels/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

inputs() {  # model.pt (MONAI's init, seed 0), volume.nii (Gaussian blobs under noise), window.npy (its corner)
  [[ -f "$out/model.pt" ]] && return
  with_monai
  python3 - "$out" "$fs" "$size" "$volume" <<'PY'
import struct, sys
import numpy as np
import torch
from monai.networks.nets import SwinUNETR

out, fs, size, edge = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
torch.save(SwinUNETR(in_channels=1, out_channels=2, feature_size=fs).eval().state_dict(), f"{out}/model.pt")
rng = np.random.default_rng(0)
# Structure (Gaussian blobs) under noise: pure noise through random weights leaves most voxels on the decision
# boundary, where low precision flips labels that carry no meaning.
edge = max(edge, size)
z, y, x = np.meshgrid(*(np.arange(edge, dtype=np.float32),) * 3, indexing="ij")
v = 0.3 * rng.standard_normal((edge,) * 3).astype(np.float32)
for cz, cy, cx, r in rng.uniform([0, 0, 0, 6], [edge, edge, edge, edge / 6], size=(12, 4)):
    v += np.exp(-((z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r)).astype(np.float32)
header = struct.pack("<i10s18sihcb8h3f4h8f3fh2b4f2i80s24s2h6f12f16s4s", 348, b"", b"", 0, 0, b"r", 0,
                     3, edge, edge, edge, 1, 1, 1, 1, 0, 0, 0, 0, 16, 32, 0, *([1.0] * 8), 352.0, 0.0, 0.0, 0, 0,
                     0, 0.0, 0.0, 0.0, 0.0, 0, 0, b"", b"", 0, 1, *([0.0] * 6),
                     1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, b"", b"n+1\0")
np.save(f"{out}/window.npy", v[None, None, :size, :size, :size].copy())
with open(f"{out}/volume.nii", "wb") as f:
    f.write(header + b"\0" * 4 + np.ascontiguousarray(v.transpose(2, 1, 0)).tobytes())  # NIfTI: i fastest
PY
}

step_build() {
  cmake -C .gpu-stage/stage.cmake -S . -B "$build" -G Ninja -DSWINFER_BUILD_EXAMPLES=ON -DSWINFER_BUILD_BENCH=ON \
    ${CMAKE_ARGS:-}
  cmake --build "$build"
}

step_test() {
  ctest --test-dir "$build" --output-on-failure
}

step_check() {
  inputs
  local model="$out/model.pt" window=(--roi "$size" --overlap 0.5 --blend gaussian) status=0
  "$swinfer" crosscheck --model "$model" --backend hip --reference cpu -i "$out/window.npy" -q || status=1
  "$swinfer" crosscheck --model "$model" --backend hip --reference cpu -i "$out/volume.nii" "${window[@]}" -q ||
    status=1
  for precision in fp16 bf16; do
    for backend in hip cpu; do
      echo "-- $backend $precision (random weights: informational)"
      "$swinfer" crosscheck --model "$model" --backend "$backend" --reference cpu --precision "$precision" \
        -i "$out/window.npy" -q --min-agreement 0 | grep "label agreement"
    done
  done
  # The trained demo model (feature size 12) on its phantom, with the demo's pipeline and windows.
  local demo=(--model data/demo/model.pt --config data/demo/model_config.json --pipeline data/demo/pipeline.json
              --roi 64 --overlap 0.25)
  for precision in fp32 fp16 bf16; do
    "$swinfer" crosscheck "${demo[@]}" --backend hip --reference cpu --precision "$precision" \
      -i data/demo/phantom.nii.gz -q || status=1
  done
  "$swinfer" segment "${demo[@]}" -i data/demo/phantom.nii.gz -o "$out/mask-cpu.nii.gz" \
    --truth data/demo/phantom_truth.nii.gz --report "$out/segment-cpu.json" -q || status=1
  "$swinfer" segment "${demo[@]}" --backend hip -i data/demo/phantom.nii.gz -o "$out/mask-hip.nii.gz" \
    --truth "$out/mask-cpu.nii.gz" --report "$out/segment-hip.json" -q || status=1
  "$swinfer" segment "${demo[@]}" --backend hip -i data/demo/phantom.nii.gz -o "$out/mask-hip-truth.nii.gz" \
    --truth data/demo/phantom_truth.nii.gz --report "$out/segment-hip-truth.json" -q || status=1
  python3 - "$out" <<'PY'
import json, sys
cpu, hip, truth = (json.load(open(f"{sys.argv[1]}/segment-{b}.json")) for b in ("cpu", "hip", "hip-truth"))
print(f"segment (demo): cpu {cpu['timings_s']['inference']:.2f} s, hip {hip['timings_s']['inference']:.2f} s for "
      f"{hip['sliding_window']['windows']} windows on {hip['engine']['device']}; Dice of the hip mask against the "
      f"cpu mask {hip['dice']}; against the phantom's truth: hip {truth['dice']}, cpu {cpu['dice']}")
PY
  [[ $? == 0 ]] || status=1
  return $status
}

step_bench() {
  with_monai
  local specs=hip/fp32,hip/fp16,hip/bf16
  [[ $device == cpu ]] && specs=cpu/fp32
  python3 bench/compare_pytorch.py --bench "$build/bench/bench_forward" --device "$device" --swinfer "$specs" \
    --feature-size "$fs" --size "$size" --rounds "$rounds"
}

step_kernels() {
  with_monai
  local precisions=fp32,fp16,bf16
  [[ $device == cpu ]] && precisions=fp32
  python3 bench/compare_gpu_kernels.py --bench "$build/bench/bench_gpu_kernels" --device "$device" --size "$size" \
    --rounds "$rounds" --precisions "$precisions"
  # The same 16-bit kernels without the matrix cores (float32 FMA): what the mma/MFMA paths buy, kernel by kernel.
  [[ $precisions == fp32 ]] && return
  echo "== without matrix cores (SWINFER_GPU_MATRIX_CORES=0)"
  SWINFER_GPU_MATRIX_CORES=0 "$build/bench/bench_gpu_kernels" --size "$size" --runs "$rounds" --precisions fp16
}

mkdir -p "$out"
[[ $# -gt 0 ]] || set -- build test check bench kernels
failed=()
for step in "$@"; do
  case $step in
    build | test | check | bench | kernels)
      echo "== gpu-acceptance: $step"
      "step_$step" 2>&1 | tee "$out/$step.log" || failed+=("$step")
      [[ $step != build || ${#failed[@]} == 0 ]] || break ;;  # nothing runs without a build
    *) echo "gpu-acceptance: unknown step '$step' (build, test, check, bench, kernels)" >&2; exit 2 ;;
  esac
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "gpu-acceptance: FAILED: ${failed[*]} (logs in $out/)" >&2
  exit 1
fi
echo "gpu-acceptance: passed: $* (logs in $out/)"
