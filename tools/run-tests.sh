#!/usr/bin/env bash
# The README's test command: installs the Debian packages, builds everything and runs the whole suite.
#
# Every submission (CI, under 45 minutes on 2 cores from a cold ccache; 2026-12-02: 36 min): the main build with the
# Python module, ctest (every C++ test, the tool's tests and the Python package's pytest suite against MONAI), each
# fuzz harness for 30 s and the MPI build of the tool. SWINFER_RELEASE_CHECKS=1 adds what a release runs (about an
# hour more cold): every translation unit through clang 19, the static executables for x86-64 and aarch64 under
# qemu, the hip backend compiled for NVIDIA and AMD and run on the CPU emulator (kernels, crosscheck, the tool), and
# `pip install .` into a clean venv; each also has its own switch below. Run them when a change touches what they
# cover (the GPU backend, the static build, packaging).
set -euo pipefail
cd "$(dirname "$0")/.."
release=${SWINFER_RELEASE_CHECKS:-0}
sanitize=${SWINFER_SANITIZE_TESTS:-1}
SWINFER_GPU_DEPS=${SWINFER_GPU_DEPS:-${SWINFER_GPU_COMPILE:-$release}} SWINFER_MPI_DEPS=${SWINFER_MPI_DEPS:-1} \
  SWINFER_STATIC_DEPS=${SWINFER_STATIC_TESTS:-$release} SWINFER_PYTHON_DEPS=1 \
  SWINFER_SANITIZE_DEPS=$([[ $sanitize == 0 ]] && echo 0 || echo 1) \
  bash tools/install-deps.sh
# ccache hits across clones: paths below this folder are hashed relative to it.
export CCACHE_BASEDIR="$PWD"
build=${SWINFER_BUILD_DIR:-build}
jobs=${SWINFER_JOBS:-$(nproc)}
python_env="${build}-python-env"
bash tools/python-env.sh "$python_env"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_BUILD_PYTHON=ON \
  -DPython_EXECUTABLE="$(realpath "$python_env")/bin/python"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"

# A second compiler, sanitizers and fuzzing (docs/reliability.md). Every submission: each libFuzzer harness for 30 s
# from its seeds (tools/fuzz.sh: clang 19, ASan + UBSan). Release (SWINFER_CLANG_CHECK, on with the release checks):
# every host translation unit through clang 19's front end with the project's -Werror warnings (-fsyntax-only:
# templates are instantiated and checked, no code is generated). SWINFER_SANITIZE_TESTS=full adds the whole host
# suite built with clang 19, ASan and UBSan and run (tools/sanitize.sh); 0 turns all of this off.
if [[ $sanitize != 0 ]]; then
  sanitize_start=$SECONDS
  if [[ "${SWINFER_CLANG_CHECK:-$release}" == 1 ]]; then
    clang_dir="${build}-clang"
    cmake -S . -B "$clang_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-19 \
      -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$clang_dir.configure.log" 2>&1 ||
      { cat "$clang_dir.configure.log" >&2; exit 1; }
    # Each compile command without its outputs (object, dependency file), run from its folder; not the must-not-compile
    # halves of the failtests (tests/failtest/*_ko.cpp), which the sanitizer suite runs as tests under clang.
    perl -MJSON::PP -0777 -ne 'for (grep { $_->{file} !~ /_ko\.cpp$/ } @{decode_json($_)}) { my $c = $_->{command};
        $c =~ s/ -o \S+| -MD| -MT \S+| -MF \S+//g; print "cd \x27$_->{directory}\x27 && $c -fsyntax-only\0" }' \
      "$clang_dir/compile_commands.json" | xargs -0 -P "$jobs" -n 1 sh -c
    echo "swinfer: $(perl -MJSON::PP -0777 -ne 'print scalar grep { $_->{file} !~ /_ko\.cpp$/ } @{decode_json($_)}' \
                      "$clang_dir/compile_commands.json")" \
         "host translation units compile with clang 19 too ($((SECONDS - sanitize_start)) s)"
  fi
  SWINFER_FUZZ_BUILD_DIR="${build}-fuzz" SWINFER_FUZZ_SECONDS=30 bash tools/fuzz.sh
  if [[ $sanitize == full ]]; then
    SWINFER_SANITIZE_BUILD_DIR="${build}-sanitize" bash tools/sanitize.sh
  fi
  echo "swinfer: clang, fuzzing and sanitizers took $((SECONDS - sanitize_start)) s"
fi

# The tool built with -DSWINFER_MPI=ON in its own folder, and its mpirun tests (tests/CMakeLists.txt, cli.mpi_*:
# mpirun -n 3 against a single-process run; a rank killed, then --resume). Only swinfer_cli is built: its objects
# other than the MPI one are the main build's, which ccache hands back (about 30 s). SWINFER_MPI_TESTS=0 turns this
# off.
if [[ "${SWINFER_MPI_TESTS:-1}" == 1 ]]; then
  mpi_start=$SECONDS
  cmake -S . -B "${build}-mpi" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_MPI=ON -DSWINFER_BUILD_BENCH=OFF
  cmake --build "${build}-mpi" -j "$jobs" --target swinfer_cli
  ctest --test-dir "${build}-mpi" -R 'cli[.]mpi' --output-on-failure -j "$jobs"
  echo "swinfer: the MPI build of the tool and its tests took $((SECONDS - mpi_start)) s"
fi

# The static executable (docs/static.md): -DSWINFER_STATIC=ON, its cpu kernels compiled for x86-64-v2 to AMX and
# chosen at run time; tests/static runs it on this CPU at every level it has, on emulated Nehalem (SSE4.2) and Haswell
# (AVX2) CPUs with qemu-user, and in an empty root on the demo. Then the same tool cross-compiled for 64-bit Arm and
# its golden test under qemu-aarch64. Release; SWINFER_STATIC_TESTS=1 alone.
if [[ "${SWINFER_STATIC_TESTS:-$release}" == 1 ]]; then
  static_start=$SECONDS
  cmake -S . -B "${build}-static" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_STATIC=ON
  cmake --build "${build}-static" -j "$jobs"
  ctest --test-dir "${build}-static" --output-on-failure -j "$jobs"
  arm64="${build}-static-arm64"
  bash tools/arm64-sysroot.sh "$arm64/sysroot"
  cmake -S . -B "$arm64" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_STATIC=ON \
    -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DSWINFER_ARM64_SYSROOT="$(realpath "$arm64/sysroot")"
  cmake --build "$arm64" -j "$jobs" --target swinfer_cli golden_tool swinfer_embed_example
  ctest --test-dir "$arm64" --output-on-failure -j "$jobs"
  echo "swinfer: the static builds (x86-64 and aarch64) and their tests took $((SECONDS - static_start)) s"
fi

# The hip GPU backend, compile only (no GPU here): its library, the [gpu] test executable and the command-line tool
# with `--backend hip` (swinfer::runtime + swinfer_cli) for both platforms, each in its own build folder; then the
# two checks that need no GPU: the [gpu] tests report skipped (exit 77) and `swinfer forward --backend hip` fails
# with "no usable GPU" (either may also pass, on a machine with a GPU). A platform whose compiler is absent is
# skipped with a message. Then the same kernels on the CPU emulator (SWINFER_GPU_PLATFORM=emulator), which runs
# them: the [gpu] kernel tests with 32- and 64-lane warps and `swinfer crosscheck --backend hip` on a checkpoint.
# Each build also installs itself and builds a find_package(swinfer COMPONENTS hip) consumer (tests/package),
# which compares its hip logits with the cpu backend's (run on the emulator; 77, no GPU, elsewhere).
# docs/gpu.md runs the tests on a GPU machine. All of this is in the release checks: the NVIDIA and AMD compiles
# (SWINFER_GPU_COMPILE=1 alone), the emulator's kernel tests and crosscheck example (SWINFER_GPU_EMULATE=1 alone:
# about 7 minutes to build cold and over 6 to run) and the tool's builds and checks on it (SWINFER_GPU_CLI=1 with
# either). The host objects of the three builds are identical, so ccache compiles them once.
gpu_npy_input() {  # a (1, 1, 32, 32, 64) float32 .npy of uniform [-2, 2) values (NPY 1.0, header padded to 128 bytes)
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 32, 32, 64), }"
  { printf '\x93NUMPY\x01\x00\x76\x00%-117s\n' "$header"
    perl -e 'srand(2026); print pack("f<*", map { 4 * rand() - 2 } 1 .. 32 * 32 * 64)'; } > "$1"
}
gpu_nifti_input() {  # a 36 x 32 x 56 float32 NIfTI-1 of uniform [-2, 2) values, 1 mm voxels, identity sform
  perl -e 'srand(2027);
    print pack("l< a10 a18 l< s< a a s<8 f<3 s<4 f<8 f<3 s< a a f<4 l<2 a80 a24 s<2 f<6 f<12 a16 a4 x4",
      348, "", "", 0, 0, "r", "", 3, 36, 32, 56, 1, 1, 1, 1, 0, 0, 0, 0, 16, 32, 0, 1, 1, 1, 1, 1, 1, 1, 1,
      352, 0, 0, 0, "", "", 0, 0, 0, 0, 0, 0, "", "", 0, 1, 0, 0, 0, 0, 0, 0,
      1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, "", "n+1");
    print pack("f<*", map { 4 * rand() - 2 } 1 .. 36 * 32 * 56)' > "$1"
}
gpu_package() {  # installs the build's hip backend and builds a find_package(swinfer COMPONENTS hip) consumer
  local dir=$1 platform=$2 rc=0 prefix
  prefix=$(realpath -m "$dir/package-prefix")
  cmake --install "$dir" --prefix "$prefix" > "$dir/package-install.log"
  cmake -S tests/package -B "$dir/package-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_CONSUMER_HIP=ON \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" > /dev/null
  cmake --build "$dir/package-build" -j "$jobs"
  "$dir/package-build/consumer_hip" tests/data/goldens/pt_checkpoint/model.pt || rc=$?
  if [[ $rc != 0 && ! ( $rc == 77 && $platform != emulator ) ]]; then
    echo "swinfer: the installed hip backend's consumer for $platform exited with $rc" >&2
    exit 1
  fi
}
gpu_compile() {
  local platform=$1 dir=$2
  shift 2
  # swinfer_runtime: the install (gpu_package) holds it, with or without the tool.
  local start=$SECONDS targets=(swinfer_hip swinfer_runtime swinfer_gpu_tests) tool=OFF
  if [[ "${SWINFER_GPU_CLI:-$release}" == 1 ]]; then
    targets+=(swinfer_cli swinfer_crosscheck_example)
    tool=ON
  fi
  echo "swinfer: compile-only build of the hip backend for $platform in $dir (${targets[*]})"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_GPU_PLATFORM="$platform" \
    -DSWINFER_BUILD_TESTS=OFF -DSWINFER_BUILD_TOOL=$tool -DSWINFER_BUILD_EXAMPLES=$tool -DSWINFER_BUILD_BENCH=OFF \
    -DSWINFER_WITH_ONEDNN=OFF "$@"
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  local rc=0
  "$dir/tests/gpu/swinfer_gpu_tests" || rc=$?
  if [[ $rc != 77 && $rc != 0 ]]; then
    echo "swinfer: the [gpu] tests for $platform exited with $rc (77 = skipped without a GPU)" >&2
    exit 1
  fi
  if [[ $tool == ON ]]; then
    local npy="$dir/gpu-check-input.npy" log="$dir/gpu-check.log"
    gpu_npy_input "$npy"
    rc=0
    "$dir/apps/swinfer/swinfer" forward --model tests/data/goldens/pt_checkpoint/model.pt --backend hip -i "$npy" \
      -o "$dir/gpu-check-logits.npy" -q > "$log" 2>&1 || rc=$?
    if [[ $rc != 0 ]] && ! grep -q "no usable GPU" "$log"; then
      cat "$log" >&2
      echo "swinfer: 'swinfer forward --backend hip' for $platform failed other than with 'no usable GPU'" >&2
      exit 1
    fi
    echo "swinfer: swinfer forward --backend hip ($platform): $(if [[ $rc == 0 ]]; then echo ran; else cat "$log"; fi)"
  fi
  gpu_package "$dir" "$platform"
  echo "swinfer: hip backend for $platform compiled in $((SECONDS - start)) s (not run: no GPU in CI)"
}
gpu_emulate() {
  local dir=$1 start=$SECONDS
  echo "swinfer: the hip backend's kernels on the CPU emulator in $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_GPU_PLATFORM=emulator \
    -DSWINFER_BUILD_TESTS=OFF -DSWINFER_BUILD_EXAMPLES=ON -DSWINFER_BUILD_BENCH=ON -DSWINFER_WITH_ONEDNN=OFF
  local tool=${SWINFER_GPU_CLI:-$release} targets=(swinfer_gpu_tests swinfer_crosscheck_example)
  [[ $tool == 1 ]] && targets+=(swinfer_cli bench_gpu_kernels)
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  # The [model] tests (gpu.emulator.model, about 16 min here) are left to a GPU: crosscheck covers the model path.
  ctest --test-dir "$dir" -R 'gpu[.]emulator[.](kernels|conv_halo|conv_wgmma)' --output-on-failure -j "$jobs"
  # The GPU-against-CPU example (examples/crosscheck) on the emulated GPU: the whole network on the device.
  "$dir/examples/crosscheck/swinfer_crosscheck_example" tests/data/goldens/pt_checkpoint/model.pt
  if [[ $tool != 1 ]]; then
    echo "swinfer: the hip backend's kernels and the crosscheck example on the CPU emulator passed in" \
         "$((SECONDS - start)) s (the tool's checks run with the release checks)"
    return
  fi
  gpu_npy_input "$dir/gpu-check-input.npy"
  "$dir/apps/swinfer/swinfer" crosscheck --model tests/data/goldens/pt_checkpoint/model.pt --backend hip \
    -i "$dir/gpu-check-input.npy" -q
  # The sliding window on the device (2 windows, padded on the last axis; blending, normalisation and the softmax
  # argmax on the emulated GPU), against the CPU's logits and labels, then `segment --backend hip` end to end.
  local nii="$dir/gpu-check-input.nii" window=(--roi 32,32,64 --overlap 0.5 --blend gaussian)
  gpu_nifti_input "$nii"
  "$dir/apps/swinfer/swinfer" crosscheck --model tests/data/goldens/pt_checkpoint/model.pt --backend hip -i "$nii" \
    "${window[@]}" -q
  "$dir/apps/swinfer/swinfer" segment --model tests/data/goldens/pt_checkpoint/model.pt -i "$nii" \
    -o "$dir/gpu-check-mask-cpu.nii.gz" "${window[@]}" -q
  "$dir/apps/swinfer/swinfer" segment --model tests/data/goldens/pt_checkpoint/model.pt --backend hip -i "$nii" \
    -o "$dir/gpu-check-mask.nii.gz" --truth "$dir/gpu-check-mask-cpu.nii.gz" --report "$dir/gpu-check-mask.json" \
    "${window[@]}" -q
  if ! awk '/"dice"/ { d = 1; next } d && /}/ { d = 0 } d { gsub(/[",]/, ""); split($0, a, ":"); n++;
                                                          if (a[2] + 0 < 0.999) bad = 1 } END { exit bad || !n }' \
      "$dir/gpu-check-mask.json"; then
    echo "swinfer: 'segment --backend hip' on the emulator differs from the cpu mask (Dice per label below 0.999):" >&2
    cat "$dir/gpu-check-mask.json" >&2
    exit 1
  fi
  # Too little device memory (the emulator's capped at 24 MiB: the weights fit, the sliding window does not): a
  # clear error, a non-zero exit and no output file.
  local oom="$dir/gpu-check-oom.nii.gz" rc=0
  rm -f "$oom"
  SWINFER_GPU_EMULATOR_MEMORY_MIB=24 "$dir/apps/swinfer/swinfer" segment \
    --model tests/data/goldens/pt_checkpoint/model.pt --backend hip -i "$nii" -o "$oom" "${window[@]}" -q \
    2> "$dir/gpu-check-oom.log" || rc=$?
  if [[ $rc == 0 || -e "$oom" ]] || ! grep -q "out of device memory allocating" "$dir/gpu-check-oom.log"; then
    cat "$dir/gpu-check-oom.log" >&2
    echo "swinfer: 'segment --backend hip' without enough device memory did not fail cleanly (exit $rc)" >&2
    exit 1
  fi
  # The kernel benchmark runs (tiny sizes, timings meaningless on the emulator) so that it cannot rot unseen.
  "$dir/bench/bench_gpu_kernels" --size 8 --runs 1 > "$dir/bench-gpu-kernels.log"
  gpu_package "$dir" emulator
  echo "swinfer: the hip backend on the CPU emulator passed in $((SECONDS - start)) s"
}
if [[ "${SWINFER_GPU_COMPILE:-$release}" == 1 ]]; then
  nvcc=$(command -v nvcc || true)
  [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  if [[ -n "$nvcc" ]]; then
    gpu_compile nvidia "${build}-gpu-nvidia" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
  else
    echo "swinfer: SKIPPED the hip backend's NVIDIA compile check: no nvcc (install the CUDA toolkit)"
  fi
  if [[ -x /usr/lib/llvm-19/bin/clang++ && -x /usr/lib/llvm-19/bin/ld.lld && -x /usr/lib/llvm-19/bin/clang-offload-bundler
        && -e /usr/include/hip/hip_runtime.h ]]; then
    # gfx942 (MI300X) needs clang >= 17: Debian's clang 19 over HIP 5.2's headers and device libraries
    # (cmake/SwinferGpu.cmake supplies the one device library 5.2 lacks); compiled, never run.
    gpu_compile amd "${build}-gpu-amd" "-DCMAKE_HIP_ARCHITECTURES=gfx90a;gfx940;gfx942"
  elif [[ -x /opt/rocm/llvm/bin/clang++ || -x /usr/lib/llvm-15/bin/clang++ && -e /usr/include/hip/hip_runtime.h ]]; then
    echo "swinfer: the AMD compile check leaves out gfx942 (MI300X): no clang 19 (apt-get install clang-19 lld-19" \
         "clang-tools-19)"
    gpu_compile amd "${build}-gpu-amd" "-DCMAKE_HIP_ARCHITECTURES=gfx90a;gfx940"
  else
    echo "swinfer: SKIPPED the hip backend's AMD compile check: no HIP clang (apt-get install hipcc libamdhip64-dev)"
  fi
fi
if [[ "${SWINFER_GPU_EMULATE:-$release}" == 1 ]]; then
  gpu_emulate "${build}-gpu-emulator"
fi

# The Python package as users install it (release; SWINFER_PYTHON_WHEEL=1 alone): `pip install .` into a new venv
# (a wheel with the cpu kernels of every x86-64 level, built from a cold start), then the pytest suite run outside
# the source tree against the installed package.
if [[ "${SWINFER_PYTHON_WHEEL:-$release}" == 1 ]]; then
  wheel_start=$SECONDS
  wheel_env="${build}-wheel-env"
  rm -rf "$wheel_env"
  bash tools/python-env.sh "$wheel_env"
  "$wheel_env/bin/python" -m pip install -q --no-build-isolation .
  (cd "$wheel_env" && "$wheel_env/bin/python" -m pytest -q -rs "$OLDPWD/python/tests")
  echo "swinfer: pip install . and the Python tests on the installed package took $((SECONDS - wheel_start)) s"
fi
