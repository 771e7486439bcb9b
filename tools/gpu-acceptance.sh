#!/usr/bin/env bash
# The hip backend's acceptance run on a GPU machine (docs/gpu.md): what the GPU issue's "done" asks for, in steps
# that each fit a 10-minute call. Build here and carry the executables (the plan): `bash tools/gpu-bundle.sh` on
# this Debian machine, carry .gpu-bundle/ with the tree, and start there with `unpack`. Or build there (the
# fallback, about 3 minutes of GPU time per build): `bash tools/stage-gpu-build.sh` here, carry .gpu-stage/, and
# start with `build`.
#
#   bash tools/gpu-acceptance.sh unpack   the carried executables (.gpu-bundle/bin.tar.xz) into $BUILD/bin, the host
#                                         tools (.host-bundle/bin.tar.xz) into $BUILD/host/bin
#   bash tools/gpu-acceptance.sh build    configure (stage.cmake + tool + benchmark) and build
#   bash tools/gpu-acceptance.sh info     nvidia-smi, driver, nvcc, torch; the device and the matrix-core self-test
#                                         (the [matrix_cores] and [context] tests: if the matrix cores fall back to
#                                         FMA, every fp16/bf16 number after it is the wrong path)
#   bash tools/gpu-acceptance.sh test     the [gpu] tests (kernels, sliding window, whole models vs cpu), SEED fixed;
#                                         the convolutions again on the halo tile (SWINFER_GPU_CONV=halo)
#   bash tools/gpu-acceptance.sh sanitize compute-sanitizer memcheck and racecheck on three convolutions (the tiled
#                                         GEMM, the halo tile, the direct kernel of a 1-channel input), one window
#                                         attention on either core kernel and one sliding-window case
#   bash tools/gpu-acceptance.sh check    MONAI SwinUNETR at FEATURE_SIZE (its own random initialisation, saved
#                                         once): crosscheck of one window (fp32: every stage within 1e-4) and of a
#                                         whole volume through the device sliding window; fp16/bf16 label agreement
#                                         is printed for hip and, alongside, for the cpu backend (random weights put
#                                         most voxels near the decision boundary, so it is not a pass criterion
#                                         there). Then the trained demo model on the demo phantom: fp32, fp16 and
#                                         bf16 labels >= 99.9 % of the cpu backend's, and segment --backend hip
#                                         against the cpu mask and the phantom's truth
#   bash tools/gpu-acceptance.sh bench    per-window time of hip fp32/fp16/bf16 against PyTorch eager and AMP on
#                                         the same GPU with the same weights (bench/compare_pytorch.py); then hip
#                                         int8 beside fp16 (bench_forward, int8 calibrated on the input)
#   bash tools/gpu-acceptance.sh profile  one FEATURE_SIZE SIZE^3 forward per precision under ncu (SpeedOfLight,
#                                         --clock-control none, only the benchmarks' timed runs): time per kernel
#                                         name summed, against the forward's wall time (tools/ncu_summary.py); then
#                                         ncu --set full on the full-resolution 48->48 3x3x3 convolution and the
#                                         stage-1 window attention; every ncu output packed into $LOGS/ncu.tar.xz
#   bash tools/gpu-acceptance.sh volume   a 512x512x128 CT-like volume at 1.5 mm segmented whole by swinfer (hip,
#                                         fp16) and by MONAI's sliding_window_inference (AMP) with the same weights:
#                                         time and peak device memory at sw_batch 1, 4 and 12
#                                         (bench/compare_volume_gpu.py; $LOGS/volume-gpu.json for
#                                         tools/plot_gpu_memory.py)
#   bash tools/gpu-acceptance.sh kernels  the hot kernels one by one (convolutions, norms, concat, attention, MLP at
#                                         the window's sizes) against PyTorch's on the same shapes
#                                         (bench/compare_gpu_kernels.py): where the time goes, for the next step;
#                                         then the fp16 kernels again with the convolutions on Hopper's warpgroup
#                                         products and the tiled GEMM (SWINFER_GPU_CONV=wgmma, gemm), with
#                                         the attention on the matrix cores (SWINFER_GPU_ATTENTION=mma), with
#                                         SWINFER_GPU_MATRIX_CORES=0 (FMA), and in int8; last, what kernel
#                                         tuning measured ($LOGS/gpu-kernels.json: every 3x3x3 convolution shape
#                                         met so far, each kernel's time, the one kept)
#   bash tools/gpu-acceptance.sh host     the GPU machine's own CPU (the first AMX-INT8 CPU this project has met),
#                                         with the static tools of `tools/gpu-bundle.sh host`: the demo model's int8
#                                         logits on the AMX tiles must equal the VNNI kernel's (bf16 printed); then
#                                         fs48 96^3 bf16 and int8 forwards at the avx512-bf16 and amx levels side by
#                                         side (2 threads and all), bf16 with rounded weights, and an int8 profile.
#                                         In a call of its own: LOGS=$OUT bash tools/gpu-acceptance.sh unpack host
#
# A step written STEP:SECONDS runs in a process of its own, stopped after SECONDS, and only its log's last lines are
# printed (the whole log is in $LOGS): one slow step on a lent machine leaves the others their time, e.g.
#   LOGS=$OUT bash tools/gpu-acceptance.sh unpack info test:150 sanitize:60 check:110 bench:120 profile:240
#
# Environment: BUILD (build-gpu), FEATURE_SIZE (48), SIZE (96, the window), VOLUME (128, the whole volume's edge),
# ROUNDS (5), SEED (2026, the tests' --rng-seed), DEVICE (cuda; cpu for a dry run without a GPU), CMAKE_ARGS (extra
# configure flags, e.g. -DSWINFER_GPU_PLATFORM=emulator for a dry run), COMPILE (1: bench also times AMP +
# torch.compile, minutes of compilation), BENCH_BATCHES (1; "1,4" also times the sliding window's batch of 4),
# PROFILE_PRECISIONS (fp32,fp16,bf16), VOLUME_BATCHES (1,4,12), VOLUME_ROUNDS (3; COMPILE=1 adds MONAI with
# torch.compile to the volume step too). Outputs go to $BUILD/acceptance/,
# each step's log to $LOGS/<step>.log (LOGS defaults to the same folder).
set -uo pipefail  # no -e: a failing check is recorded and the run goes on (steps run inside `||` anyway)
cd "$(dirname "$0")/.."
build=${BUILD:-build-gpu}
fs=${FEATURE_SIZE:-48}
size=${SIZE:-96}
volume=${VOLUME:-128}
rounds=${ROUNDS:-5}
device=${DEVICE:-cuda}
seed=${SEED:-2026}
out="$build/acceptance"
logs=${LOGS:-$out}
# Kernel tuning (backends/hip/include/swinfer/backend/hip/kernel_tuning.hpp) keeps its measurements in the logs, so
# they come back: every 3x3x3 convolution shape the steps meet, each kernel's time and the one kept.
export SWINFER_GPU_TUNING_FILE=${SWINFER_GPU_TUNING_FILE:-$(realpath -m "$logs")/gpu-kernels.json}
# The test data wherever the tree landed (the executables may have been configured on another machine).
export SWINFER_TEST_DATA_DIR="$PWD/tests/data"

locate_executables() {  # carried and unpacked ($build/bin), else built here
  local dir
  for dir in "$build/bin" ""; do
    if [[ -z $dir ]]; then
      swinfer="$build/apps/swinfer/swinfer" gpu_tests="$build/tests/gpu/swinfer_gpu_tests"
      bench_forward="$build/bench/bench_forward" bench_kernels="$build/bench/bench_gpu_kernels"
    elif [[ -x $dir/swinfer ]]; then
      swinfer="$dir/swinfer" gpu_tests="$dir/swinfer_gpu_tests" bench_forward="$dir/bench_forward"
      bench_kernels="$dir/bench_gpu_kernels"
      return
    fi
  done
}
locate_executables

with_monai() {  # MONAI from the bundle's site tree or the staged wheel (the GPU machine has torch, no network)
  if ! python3 -c "import monai" 2>/dev/null; then
    local site="$out/site"
    local wheel
    if [[ ! -d "$site/monai" ]]; then
      mkdir -p "$site"
      if [[ -f .gpu-bundle/monai-site.tar.xz ]]; then
        tar -C "$site" -xJf .gpu-bundle/monai-site.tar.xz
      else
        wheel=$(ls .gpu-stage/wheels/monai-*.whl 2>/dev/null | head -1)
        python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel"
      fi
    fi
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

inputs() {  # model.pt (MONAI's init, seed 0), volume.nii (Gaussian blobs under noise), window.npy (its corner)
  [[ -f "$out/model.pt" ]] && return
  with_monai
  python3 - "$out" "$fs" "$size" "$volume" <<'PY'
import sys
import numpy as np
import torch
from monai.networks.nets import SwinUNETR

sys.path.insert(0, "bench")
from compare_volume_gpu import write_nifti  # noqa: E402 (the NIfTI writer the volume step uses too)

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
np.save(f"{out}/window.npy", v[None, None, :size, :size, :size].copy())
write_nifti(f"{out}/volume.nii", v, 1.0)
PY
}

step_build() {
  cmake -C .gpu-stage/stage.cmake -S . -B "$build" -G Ninja -DSWINFER_BUILD_TOOL=ON -DSWINFER_BUILD_BENCH=ON \
    ${CMAKE_ARGS:-}
  cmake --build "$build"
}

step_unpack() {  # whichever bundles were carried: .gpu-bundle into $build/bin, .host-bundle into $build/host/bin
  local unpacked=0
  if [[ -f .gpu-bundle/bin.tar.xz ]]; then
    mkdir -p "$build" && tar -C "$build" -xJf .gpu-bundle/bin.tar.xz && cat .gpu-bundle/MANIFEST || return 1
    unpacked=1
  fi
  if [[ -f .host-bundle/bin.tar.xz ]]; then
    mkdir -p "$build/host" && tar -C "$build/host" -xJf .host-bundle/bin.tar.xz && cat .host-bundle/MANIFEST || return 1
    unpacked=1
  fi
  ((unpacked)) || { echo "unpack: carry .gpu-bundle or .host-bundle (tools/gpu-bundle.sh gpu|host)" >&2; return 1; }
}

step_host() {
  local tool="$build/host/bin/swinfer" bench="$build/host/bin/bench_forward" status=0 level
  # The level under test last (a dry run on a CPU without AMX: HOST_LEVELS="x86-64-v4 avx512-bf16").
  local levels=(${HOST_LEVELS:-avx512-bf16 amx})
  local compared=${levels[0]},${levels[1]}
  [[ -x $tool ]] || { echo "host: no static tools in $build/host/bin: carry .host-bundle and unpack" >&2; return 1; }
  lscpu | grep -E "^(Model name|CPU\(s\)|Thread\(s\) per core|Socket\(s\)|L2 cache|L3 cache):"
  echo "flags: $(grep -m1 -o -w -E "avx512_(bf16|vnni|fp16)|amx_(bf16|int8|tile)" /proc/cpuinfo | sort -u | xargs)"
  "$tool" info --model data/demo/model.pt | sed -n "/^this CPU/,/^$/p"
  python3 -c "import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(0).random((1, 1, 64, 64, 64), 'f4'))"\
    "$out/host-input.npy"
  # The demo model at each level: int8 (dynamic scales) on the AMX tiles must equal VNNI's vpdpbusd bit for bit
  # (the same int32 sums; static.levels_agree's rule); bf16 (exact weights, the default: the convolutions on the
  # AMX-BF16 tiles with hi + lo weight halves, against F(4x4x4) Winograd one level down) is printed.
  for level in "${levels[@]}"; do
    "$tool" forward --model data/demo/model.pt -i "$out/host-input.npy" --cpu-level "$level" --precision int8 \
      --int8-dynamic -o "$out/host-$level-int8.npy" || status=1
    "$tool" forward --model data/demo/model.pt -i "$out/host-input.npy" --cpu-level "$level" --precision bf16 \
      -o "$out/host-$level-bf16.npy" || status=1
    "$tool" forward --model data/demo/model.pt -i "$out/host-input.npy" --cpu-level "$level" \
      -o "$out/host-$level-fp32.npy" || status=1
  done
  python3 - "$out" "${levels[@]}" <<'PY' || status=1
import sys
import numpy as np

out, lower, upper = sys.argv[1:4]
load = lambda level, precision: np.load(f"{out}/host-{level}-{precision}.npy").astype(np.float64)
fp32 = load(upper, "fp32")
for precision in ("int8", "bf16"):
    a, b = load(upper, precision), load(lower, precision)
    print(f"{precision}: {upper} vs {lower} max|d|/max|ref| {np.abs(a - b).max() / np.abs(b).max():.3e}, "
          f"equal {np.array_equal(a, b)}; {upper} to fp32 {np.abs(a - fp32).max() / np.abs(fp32).max():.3e}, "
          f"labels {100 * np.mean(a.argmax(1) == fp32.argmax(1)):.3f} %")
if not np.array_equal(load(upper, "int8"), load(lower, "int8")):
    sys.exit(f"host: the {upper} level's int8 logits differ from the {lower} level's: their integer kernels disagree")
PY
  # fs48 96^3 forward, the levels side by side in one process: 2 threads (the workstations' 2-core figures), then all.
  for threads in 2 0; do
    "$bench" --backends cpu --feature-size "$fs" --size "$size" --precisions bf16,int8 --cpu-levels "$compared" \
      --threads "$threads" --runs 3 || status=1
  done
  "$bench" --backends cpu --feature-size "$fs" --size "$size" --precisions bf16 --bf16-weights rounded \
    --cpu-levels "$compared" --threads 0 --runs 3 || status=1
  "$bench" --backends cpu --feature-size "$fs" --size "$size" --precisions int8 --cpu-levels "${levels[1]}" \
    --threads 0 --runs 3 --profile > "$out/host-int8-profile.txt" || status=1
  sed -n '1,/by op:/p' "$out/host-int8-profile.txt"
  return $status
}

step_info() {
  nvidia-smi
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
  # The device line (name, architecture, matrix cores) and the matrix-core self-test before anything else.
  "$gpu_tests" --rng-seed "$seed" "[matrix_cores],[context]"
}

step_test() {
  "$gpu_tests" --rng-seed "$seed" "~[matrix_cores]~[context]" || return 1
  # The op suite's convolutions are too small to fill a large GPU, so by default they run the tiled GEMM there:
  # once more on each box kernel wherever it applies (wgmma on Hopper; elsewhere that run is the halo tile's again),
  # and the whole-model tests with the convolutions on wgmma (automatic only where kernel tuning finds it fastest).
  local status=0 conv
  for conv in halo wgmma; do
    echo "-- conv3d with SWINFER_GPU_CONV=$conv"
    SWINFER_GPU_CONV=$conv "$gpu_tests" --rng-seed "$seed" "conv3d/hip" || status=1
  done
  echo "-- [model] with SWINFER_GPU_CONV=wgmma"
  SWINFER_GPU_CONV=wgmma "$gpu_tests" --rng-seed "$seed" "[model]" || status=1
  return $status
}

step_sanitize() {
  # One case of each kind, small (the sanitizers run kernels 10-100x slower): 3x3x3 convolution rows of the shared
  # op suite (the tiled GEMM, the halo tile, the direct kernel of a 1-channel input) and a shifted, padded window
  # attention row on either core kernel (FMA, matrix cores), all fp16, and the device
  # sliding window's gather, blend and normalisation (-c names a suite row's section, tests/ops/op_suite.hpp).
  local status=0 tool
  local attention_row="grid 9x8x10 C32 2 heads window 7 batch 2 +qkv_bias shifted"
  # The 48->48 convolutions run on the halo tile, then on wgmma (Hopper; elsewhere the halo tile again): a residual
  # block's chain, normalising on load and gathering the outputs' InstanceNorm moments in the epilogue.
  local box_row="conv3d/hip/fp16/ndhwc/gathering moments after instance_norm+leaky_relu k3s1p1 48->48 2x48x5x6x9"
  local cases=(halo "conv3d/hip" "conv3d/hip/fp16/ndhwc/k3s1p1 5->7 2x5x5x7x3"
               auto "conv3d/hip" "conv3d/hip/fp16/ndhwc/k3s1p1+bias 1->48 2x1x7x6x9"
               halo "conv3d/hip" "$box_row"
               wgmma "conv3d/hip" "$box_row"
               halo "window_attention/hip" "window_attention/hip/fp16/ndhwc/$attention_row"
               halo "window_attention on the matrix cores/hip" "window_attention/hip/fp16/ndhwc/$attention_row on mma"
               halo "gpu sliding window: gather*" "")  # a wildcard: Catch reads the full name's comma as "or"
  for tool in memcheck racecheck; do
    for ((i = 0; i < ${#cases[@]}; i += 3)); do
      local row=()
      [[ -n ${cases[i + 2]} ]] && row=(-c "${cases[i + 2]}")
      echo "-- compute-sanitizer --tool $tool (SWINFER_GPU_CONV=${cases[i]}): ${cases[i + 1]} ${cases[i + 2]}"
      SWINFER_GPU_CONV=${cases[i]} compute-sanitizer --tool "$tool" --error-exitcode 1 "$gpu_tests" \
        --rng-seed "$seed" "${cases[i + 1]}" "${row[@]}" || status=1
    done
  done
  return $status
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
  # int8 on the int8 matrix cores against the cpu backend's int8 with the same scales (calibrated here, by the cpu
  # backend, on the phantom itself: a cross-check of the backends, not an accuracy figure).
  "$swinfer" calibrate "${demo[@]}" -i data/demo/phantom.nii.gz -o "$out/demo.int8.json" -q || status=1
  "$swinfer" crosscheck "${demo[@]}" --backend hip --reference cpu --precision int8 \
    --calibration "$out/demo.int8.json" -i data/demo/phantom.nii.gz -q || status=1
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
  local BENCH_BATCHES=${BENCH_BATCHES:-1}
  with_monai
  local specs=hip/fp32,hip/fp16,hip/bf16
  [[ $device == cpu ]] && specs=cpu/fp32
  local compile=()
  [[ ${COMPILE:-0} == 1 && $device == cuda ]] && compile=(--compile)
  local batch
  for batch in ${BENCH_BATCHES//,/ }; do
    python3 bench/compare_pytorch.py --bench "$bench_forward" --device "$device" --swinfer "$specs" \
      --feature-size "$fs" --size "$size" --batch "$batch" --rounds "$rounds" --runs-per-round 10 "${compile[@]}"
  done
  [[ $device == cpu ]] && return
  # int8 beside fp16 in one process, same weights and input (int8 calibrated once on that input, on the host CPU).
  echo "== hip int8 against fp16 (bench_forward, median of 10)"
  "$bench_forward" --backends hip --layouts ndhwc --feature-size "$fs" --size "$size" --precisions fp16,int8 --runs 10
}

step_profile() {
  local precision status=0 PROFILE_PRECISIONS=${PROFILE_PRECISIONS:-fp32,fp16,bf16}
  local forward=(--backends hip --layouts ndhwc --feature-size "$fs" --size "$size")
  # Only what the benchmarks time is profiled (they open the profiler's range around their timed runs): no warm-up,
  # no start-up self-test. Every ncu output is packed into $logs/ncu.tar.xz as soon as it exists.
  local ncu=(ncu --clock-control none --target-processes all --profile-from-start off)
  pack() { tar -C "$out" -cJf "$logs/ncu.tar.xz" $(cd "$out" && ls ncu-* forward-* 2>/dev/null); }
  for precision in ${PROFILE_PRECISIONS//,/ }; do
    echo "-- $precision: one forward's wall time (median of $rounds), then its kernels under ncu"
    "$bench_forward" "${forward[@]}" --precisions "$precision" --runs "$rounds" | tee "$out/forward-$precision.txt"
    local wall_ms
    # The forward with input and logits on the device (the @device row): kernels against launch gaps and host work.
    wall_ms=$(awk '$1 ~ /^hip\/.*@device$/ {print $2 * 1000; exit}' "$out/forward-$precision.txt")
    "${ncu[@]}" --section SpeedOfLight --csv --page details "$bench_forward" "${forward[@]}" --precisions "$precision" \
      --runs 1 > "$out/ncu-forward-$precision.csv" || status=1
    pack
    python3 tools/ncu_summary.py "$out/ncu-forward-$precision.csv" --forwards 1 ${wall_ms:+--wall-ms "$wall_ms"} \
      --launches | tee "$out/ncu-forward-$precision.md" || status=1
    pack
  done
  # Everything Nsight Compute measures, for the two rows the next kernel work is about: the full-resolution 48->48
  # 3x3x3 convolution and the stage-1 window attention (its qkv and proj GEMMs too), fp16, one timed run each.
  local row
  for row in "encoder1.conv2" "norm1 + window attention, C48 @$((size / 2))^3 shifted"; do
    echo "-- ncu --set full: $row (fp16)"
    "${ncu[@]}" --set full "$bench_kernels" --size "$size" --runs 1 --precisions fp16 --only "$row" \
      > "$out/ncu-full-${row%%[ .]*}.txt" 2>&1 || status=1
    pack
    grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Theoretical Occupancy" \
      "$out/ncu-full-${row%%[ .]*}.txt" | head -60
  done
  return $status
}

step_volume() {
  with_monai
  local compile=()
  [[ ${COMPILE:-0} == 1 ]] && compile=(--compile)
  python3 bench/compare_volume_gpu.py --swinfer "$swinfer" --out "$out" --rounds "${VOLUME_ROUNDS:-3}" \
    --sw-batches "${VOLUME_BATCHES:-1,4,12}" "${compile[@]}"
  local status=$?
  [[ $logs == "$out" ]] || cp "$out/volume-gpu.json" "$logs/" 2>/dev/null
  return $status
}

step_kernels() {
  with_monai
  local precisions=fp32,fp16,bf16
  [[ $device == cpu ]] && precisions=fp32
  python3 bench/compare_gpu_kernels.py --bench "$bench_kernels" --device "$device" --size "$size" \
    --rounds "$rounds" --precisions "$precisions"
  # The same 16-bit kernels without the matrix cores (float32 FMA): what the mma/MFMA paths buy, kernel by kernel.
  [[ $precisions == fp32 ]] && return
  local conv
  for conv in wgmma gemm; do
    echo "== the 3x3x3 convolutions with SWINFER_GPU_CONV=$conv, against the automatic choice above"
    SWINFER_GPU_CONV=$conv "$bench_kernels" --size "$size" --runs "$rounds" --precisions fp16
  done
  echo "== the window attention's core on the matrix cores (SWINFER_GPU_ATTENTION=mma), against FMA above"
  SWINFER_GPU_ATTENTION=mma "$bench_kernels" --size "$size" --runs "$rounds" --precisions fp16
  echo "== without matrix cores (SWINFER_GPU_MATRIX_CORES=0)"
  SWINFER_GPU_MATRIX_CORES=0 "$bench_kernels" --size "$size" --runs "$rounds" --precisions fp16
  echo "== int8 on the int8 matrix cores, against fp16 above"
  "$bench_kernels" --size "$size" --runs "$rounds" --precisions int8
  show_tuning
}

show_tuning() {  # what kernel tuning measured so far: per convolution shape, each kernel's ms, the one kept
  [[ -f $SWINFER_GPU_TUNING_FILE ]] || return 0
  python3 - "$SWINFER_GPU_TUNING_FILE" <<'PY'
import json
import sys

for device, entries in json.load(open(sys.argv[1]))["devices"].items():
    print(f"== kernel tuning on {device} ({sys.argv[1]})")
    for key, entry in sorted(entries.items()):
        times = ", ".join(f"{k} {v:.3f}" for k, v in sorted(entry.get("ms", {}).items(), key=lambda kv: kv[1]))
        print(f"  {key}: {entry['kernel']} ({times} ms)")
PY
}

mkdir -p "$out" "$logs"
[[ $# -gt 0 ]] || set -- build test check bench kernels
failed=()
for spec in "$@"; do
  step=${spec%%:*} limit=${spec#*:}
  [[ $limit == "$spec" ]] && limit=""
  case $step in
    unpack | build | info | test | sanitize | check | bench | profile | volume | kernels | host)
      echo "== gpu-acceptance: $step${limit:+ (at most $limit s)}"
      if [[ -n $limit ]]; then  # STEP:SECONDS: the step in a process of its own, stopped after SECONDS
        GPU_ACCEPTANCE_STEP=1 timeout "$limit" bash tools/gpu-acceptance.sh "$step" > /dev/null 2>&1 || failed+=("$step")
        tail -25 "$logs/$step.log"
      else
        "step_$step" 2>&1 | tee "$logs/$step.log" || failed+=("$step")
      fi
      locate_executables  # the step ran in a subshell (the pipe): an unpack or a build shows here
      [[ ($step != build && $step != unpack) || ${#failed[@]} == 0 ]] || break ;;  # nothing runs without them
    *) echo "gpu-acceptance: unknown step '$step' (unpack, build, info, test, sanitize, check, bench, profile," \
            "volume, kernels, host)" >&2; exit 2 ;;
  esac
done
# The device tool brings back at most 8 files from $OUT (the fourth session lost volume.log to that): where a run's
# own LOGS folder holds more, they go back as one archive.
pack_logs() {
  [[ -z ${GPU_ACCEPTANCE_STEP:-} && $logs != "$out" ]] || return 0
  local files
  mapfile -t files < <(cd "$logs" && find . -maxdepth 1 -type f -printf '%P\n' | sort)
  ((${#files[@]} > 8)) || return 0
  tar -C "$logs" -cJf "$logs/acceptance-logs.tar.xz" --remove-files "${files[@]}"
  echo "gpu-acceptance: ${#files[@]} files in $logs, more than the device tool brings back: packed into" \
       "acceptance-logs.tar.xz"
}
pack_logs
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "gpu-acceptance: FAILED: ${failed[*]} (logs in $out/)" >&2
  exit 1
fi
echo "gpu-acceptance: passed: $* (logs in $out/)"
