#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz: clang-19, ASan + UBSan, every finding fatal) and runs each for
# SWINFER_FUZZ_SECONDS seconds from its seed corpus, with the JSON dictionary for the JSON harnesses, one harness per
# core (SWINFER_JOBS) at a time. CI (tools/run-tests.sh) runs 30 s each; a release runs 1800 s each
# (docs/reliability.md):
#   SWINFER_FUZZ_SECONDS=1800 bash tools/fuzz.sh
# SWINFER_FUZZ_HARNESSES picks harnesses (default: all). The corpus each run grows is kept in the build folder
# (<build>/corpus/<harness>), so later runs start where earlier ones stopped. A finding fails the script (the other
# harnesses finish first) with its reproducer in <build>/artifacts/; replay it with
# <build>/tests/fuzz/fuzz_<harness> <file>. Each run's executions go to <build>/fuzz-summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
seconds=${SWINFER_FUZZ_SECONDS:-30}
dir=${SWINFER_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${SWINFER_JOBS:-$(nproc)}
read -r -a harnesses <<< "${SWINFER_FUZZ_HARNESSES:-nifti torch_checkpoint safetensors npy config_json pipeline_json pipeline_apply}"
clang=${SWINFER_FUZZ_CXX:-clang++-19}

cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$clang" -DSWINFER_FUZZ=ON \
  -DSWINFER_BUILD_TESTS=OFF -DSWINFER_BUILD_EXAMPLES=OFF -DSWINFER_BUILD_BENCH=OFF -DSWINFER_WITH_ONEDNN=OFF \
  -DSWINFER_INSTALL=OFF > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
cmake --build "$dir" -j "$jobs" --target "${harnesses[@]/#/fuzz_}"

# Seeds: the files the reader tests use (small ones only: libFuzzer mutates up to the largest seed's length).
seeds() {
  case $1 in
    nifti) ls tests/data/nifti/*.nii tests/data/nifti/*.nii.gz tests/data/preprocess/*.nii.gz ;;
    torch_checkpoint) ls tests/data/io/*.pt ;;
    safetensors) ls tests/data/io/*.safetensors ;;
    npy) ls tests/data/io/*.npy; find tests/data/preprocess -name '*.npy' -size -8k ;;
    config_json) ls tests/fuzz/corpus/config_json/* ;;
    pipeline_json | pipeline_apply) ls tests/fuzz/corpus/pipeline_json/* ;;
  esac
}

mkdir -p "$dir/artifacts"
summary="$dir/fuzz-summary.txt"
fuzz() {  # one harness for $seconds from its corpus; non-zero on a finding
  local h=$1 corpus="$dir/corpus/$1" log="$dir/fuzz-$1.log" rc=0 runs line
  mkdir -p "$corpus"
  seeds "$h" | xargs -r cp -n -t "$corpus"
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
                 -artifact_prefix="$dir/artifacts/$h-")
  [[ $h == *json* || $h == pipeline_apply ]] && options+=(-dict=tests/fuzz/json.dict)
  echo "swinfer: fuzzing $h for $seconds s ($(ls "$corpus" | wc -l) inputs in its corpus)"
  "$dir/tests/fuzz/fuzz_$h" "${options[@]}" "$corpus" > "$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $rc != 0 ]]; then
    tail -n 60 "$log" >&2
    echo "swinfer: fuzz_$h FAILED (exit $rc) after ${runs:-?} executions; reproducer in $dir/artifacts/" >&2
    return 1
  fi
  line="fuzz_$h: ${runs:-?} executions in $seconds s, no crash, leak, timeout or sanitizer report; corpus $(ls "$corpus" | wc -l) inputs"
  echo "swinfer: $line"
  echo "$(date -u +%FT%TZ) $line" >> "$summary"
}
# One harness per core at a time (each is single-threaded), so CI's 30 s each take 30 s per core, not per harness.
running=() failed=0
for h in "${harnesses[@]}"; do
  fuzz "$h" &
  running+=($!)
  if ((${#running[@]} >= jobs)); then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
done
for pid in "${running[@]}"; do
  wait "$pid" || failed=1
done
exit $failed
