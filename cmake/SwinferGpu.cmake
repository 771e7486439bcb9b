# The hip GPU backend (backends/hip): one kernel source compiled for NVIDIA (nvcc, CUDA language) or AMD (HIP clang,
# HIP language), chosen by SWINFER_GPU_PLATFORM = off | nvidia | amd | emulator (default off). Defines swinfer_hip
# (swinfer::hip), a static library of the kernels (fp32/fp16/bf16 instantiated once each) plus the header-only
# backend, and the GPU test executable tests/gpu (SWINFER_GPU_TESTS).
#
#   nvidia:   CMAKE_CUDA_ARCHITECTURES defaults to 90 (H100/H200). nvcc is looked up on PATH, then /usr/local/cuda.
#   amd:      CMAKE_HIP_ARCHITECTURES defaults to gfx942 (MI300): ROCm >= 6 (/opt/rocm), or Debian 12's HIP 5.2
#             headers and device libraries compiled by Debian's clang 19 or 22 (clang 15, HIP 5.2's own, builds
#             gfx90a and gfx940 but not gfx942); the multiarch layout and the one missing device library are
#             bridged below.
#   emulator: no GPU toolkit: the same kernel sources compiled by the C++ compiler against a CPU emulator of the
#             CUDA dialect (emulator/, x86-64), so the [gpu] tests and `--backend hip` run, slowly, on
#             the CPU. It checks the kernels' logic (indexing, barriers, warp-size independence), nothing else.
# HIP 5.2's device libraries hold an ISA-version library for gfx940 but none for gfx942, and clang will not target
# an architecture without one. It is a single constant (__oclc_ISA_version = 9402, as ROCm 6 defines it): this
# makes it with the HIP compiler into a directory of the build tree beside links to Debian's other libraries, and
# sets `out_dir` to that directory. A compiler that cannot target gfx942 (clang 15) is a configure error.
function(swinfer_debian_device_libs_for_gfx942 out_dir)
  set(debian "${${out_dir}}")
  set(dir "${CMAKE_BINARY_DIR}/swinfer-device-libs")
  file(MAKE_DIRECTORY "${dir}")
  file(GLOB libs "${debian}/*.bc")
  foreach(lib IN LISTS libs)
    get_filename_component(name "${lib}" NAME)
    file(CREATE_LINK "${lib}" "${dir}/${name}" SYMBOLIC)
  endforeach()
  set(compiler "${CMAKE_HIP_COMPILER}")
  if(NOT compiler)
    set(compiler "${SWINFER_HIP_CLANG}")
  endif()
  if(NOT EXISTS "${dir}/oclc_isa_version_942.bc")
    file(WRITE "${dir}/oclc_isa_version_942.ll" "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 9402, align 4\n")
    execute_process(COMMAND "${compiler}" --target=amdgcn-amd-amdhsa -mcpu=gfx942 -nogpulib -c -emit-llvm
                            "${dir}/oclc_isa_version_942.ll" -o "${dir}/oclc_isa_version_942.bc"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "swinfer: '${compiler}' cannot target gfx942 (MI300), which needs clang >= 17: install "
                          "clang-19 lld-19 clang-tools-19 (Debian 12) or ROCm >= 6, or configure with "
                          "-DCMAKE_HIP_ARCHITECTURES=\"gfx90a;gfx940\" for Debian's clang 15.\n${err}")
    endif()
  endif()
  set(${out_dir} "${dir}" PARENT_SCOPE)
endfunction()

string(TOLOWER "${SWINFER_GPU_PLATFORM}" _swinfer_gpu)
if(_swinfer_gpu STREQUAL "" OR _swinfer_gpu STREQUAL "off")
  return()
endif()
if(NOT _swinfer_gpu MATCHES "^(nvidia|amd|emulator)$")
  message(FATAL_ERROR "SWINFER_GPU_PLATFORM must be off, nvidia, amd or emulator, not '${SWINFER_GPU_PLATFORM}'")
endif()

option(SWINFER_GPU_TESTS "Build the [gpu] test executable (tests/gpu); without a GPU its tests report skipped"
       ${SWINFER_MAIN_PROJECT})

set(_swinfer_gpu_sources
  ${PROJECT_SOURCE_DIR}/backends/hip/src/runtime.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/data_movement.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/norm.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/gemm_linear.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/conv3d.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/conv_transpose3d.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/self_tests.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/attention.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/attention_fma.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/attention_mma.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/sliding_window.cu
  ${PROJECT_SOURCE_DIR}/backends/hip/src/quantize.cu)

if(_swinfer_gpu STREQUAL "nvidia")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures of the hip backend's kernels")
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(SWINFER_NVCC nvcc HINTS ENV CUDA_PATH PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
    if(SWINFER_NVCC)
      set(CMAKE_CUDA_COMPILER ${SWINFER_NVCC})
    endif()
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(_swinfer_gpu_lang CUDA)
elseif(_swinfer_gpu STREQUAL "emulator")
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    message(FATAL_ERROR "SWINFER_GPU_PLATFORM=emulator needs x86-64 (its fiber switch), not ${CMAKE_SYSTEM_PROCESSOR}")
  endif()
  set(_swinfer_gpu_lang CXX)
  set_source_files_properties(${_swinfer_gpu_sources} PROPERTIES LANGUAGE CXX)  # CMake adds -x c++
  list(APPEND _swinfer_gpu_sources ${PROJECT_SOURCE_DIR}/emulator/src/emulator.cpp)
else()
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    set(CMAKE_HIP_ARCHITECTURES gfx942 CACHE STRING "AMD GPU architectures of the hip backend's kernels")
  endif()
  # The HIP language needs ROCm's clang and a ROCm root holding lib/cmake/hip-lang.
  set(_swinfer_rocm "/opt/rocm")
  if(DEFINED ENV{ROCM_PATH})
    set(_swinfer_rocm "$ENV{ROCM_PATH}")
  endif()
  set(_swinfer_debian_hip "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/hip-lang")
  set(_swinfer_debian_layout OFF)
  if(NOT EXISTS "${_swinfer_rocm}/lib/cmake/hip-lang/hip-lang-config.cmake"
     AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${_swinfer_debian_hip}/hip-lang-config.cmake")
    set(_swinfer_debian_layout ON)
  endif()
  # gfx942 (MI300X) is unknown to clang 15; Debian 12's clang 19 and 22 know it.
  set(_swinfer_needs_new_clang OFF)
  foreach(_arch IN LISTS CMAKE_HIP_ARCHITECTURES)
    if(_arch MATCHES "^gfx94[12]")
      set(_swinfer_needs_new_clang ON)
    endif()
  endforeach()
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
    if(_swinfer_debian_layout AND _swinfer_needs_new_clang)
      # Also needs ld.lld and clang-offload-bundler of the same version (lld-19 and clang-tools-19).
      find_program(SWINFER_HIP_CLANG clang++ PATHS /usr/lib/llvm-22/bin /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
      if(NOT SWINFER_HIP_CLANG)
        message(FATAL_ERROR "swinfer: gfx942 (MI300) with Debian's HIP 5.2 needs clang 19 or 22 (apt-get install "
                            "clang-19 lld-19 clang-tools-19), or ROCm >= 6; Debian's own HIP clang 15 builds "
                            "-DCMAKE_HIP_ARCHITECTURES=\"gfx90a;gfx940\".")
      endif()
    elseif(_swinfer_debian_layout)
      # Debian's hipcc drives clang-15 (see hipconfig --hipclangpath); the default clang++ may be another version.
      find_program(SWINFER_HIP_CLANG clang++ PATHS /usr/lib/llvm-15/bin NO_DEFAULT_PATH)
    else()
      find_program(SWINFER_HIP_CLANG clang++ PATHS "${_swinfer_rocm}/llvm/bin" NO_DEFAULT_PATH)
    endif()
    if(SWINFER_HIP_CLANG)
      set(CMAKE_HIP_COMPILER ${SWINFER_HIP_CLANG})
    endif()
  endif()
  if(_swinfer_debian_layout)
    # CMake 3.25 expects <ROCm root>/lib/cmake/{hip-lang,amd_comgr,...}; Debian installs them under the multiarch
    # directory. A root of symbolic links in the build tree bridges the two (hip-lang-config.cmake resolves its
    # real location, so every path it computes is Debian's), and clang is told where the runtime and the device
    # libraries live. The environment variable reaches CMake's compiler checks, which run in this process.
    set(_swinfer_shim "${CMAKE_BINARY_DIR}/swinfer-rocm-root")
    file(MAKE_DIRECTORY "${_swinfer_shim}/lib/cmake")
    foreach(_pkg hip-lang amd_comgr hsa-runtime64 AMDDeviceLibs)
      if(EXISTS "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/${_pkg}")
        file(CREATE_LINK "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/${_pkg}" "${_swinfer_shim}/lib/cmake/${_pkg}"
             SYMBOLIC)
      endif()
    endforeach()
    set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_swinfer_shim}" CACHE PATH "ROCm root for the HIP language (Debian bridge)")
    set(ENV{CMAKE_PREFIX_PATH} "${_swinfer_shim}:$ENV{CMAKE_PREFIX_PATH}")
    set(_swinfer_device_libs "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode")
    if(_swinfer_needs_new_clang)
      swinfer_debian_device_libs_for_gfx942(_swinfer_device_libs)
      # hip-lang's targets add `-isystem /usr/include` (Debian's HIP prefix), which puts /usr/include ahead of
      # libstdc++'s headers; clang >= 19's HIP wrapper headers then fail in <cmath>'s #include_next <math.h>.
      # Declared implicit, CMake leaves the flag out (clang searches /usr/include anyway).
      set(CMAKE_HIP_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
    endif()
    set(CMAKE_HIP_FLAGS_INIT "--rocm-path=/usr --rocm-device-lib-path=${_swinfer_device_libs}")
  endif()
  enable_language(HIP)
  # Executables that link swinfer::hip (its objects, not their own sources) are linked by the C++ compiler; HIP's
  # linker preference (90, above C++'s 30) would otherwise make clang link every test and tool.
  set(CMAKE_HIP_LINKER_PREFERENCE_PROPAGATES FALSE)
  set(_swinfer_gpu_lang HIP)
  set_source_files_properties(${_swinfer_gpu_sources} PROPERTIES LANGUAGE HIP)
endif()

if(SWINFER_CCACHE AND NOT CMAKE_${_swinfer_gpu_lang}_COMPILER_LAUNCHER)
  set(CMAKE_${_swinfer_gpu_lang}_COMPILER_LAUNCHER ${SWINFER_CCACHE})
endif()

add_library(swinfer_hip STATIC ${_swinfer_gpu_sources})
add_library(swinfer::hip ALIAS swinfer_hip)
target_include_directories(swinfer_hip PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/backends/hip/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The GPU sources need only the backend's api.hpp and core/error.hpp (no Eigen); users get the whole core.
target_include_directories(swinfer_hip PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(swinfer_hip INTERFACE swinfer)
# C++20 by flag: CMake 3.25 does not know the dialect flags of nvcc 13 (CUDA_STANDARD 20 fails to generate).
set_target_properties(swinfer_hip PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(swinfer_hip PRIVATE -std=c++20)
target_compile_definitions(swinfer_hip PUBLIC SWINFER_HAS_HIP=1)
# The vendor runtimes are PRIVATE: host code never includes their headers, and consumers' compile lines stay free
# of them (the same host objects on every platform, so ccache shares them); static linking still carries them.
if(_swinfer_gpu STREQUAL "nvidia")
  set_target_properties(swinfer_hip PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(swinfer_hip PRIVATE -O3 -Wno-deprecated-gpu-targets --Werror all-warnings
                                             -Xcompiler=-Wall,-Wextra,-Werror)
  target_link_libraries(swinfer_hip PRIVATE CUDA::cudart_static)
elseif(_swinfer_gpu STREQUAL "amd")
  # Without HIP_STANDARD, CMake's HIP language appends its own -std=c++17 after ours.
  set_target_properties(swinfer_hip PROPERTIES HIP_STANDARD 20 HIP_STANDARD_REQUIRED ON HIP_EXTENSIONS OFF)
  target_compile_options(swinfer_hip PRIVATE -O3 -Wall -Wextra -Werror)
  # The runtime through hip's package (hip::amdhip64), not the HIP language's: a consumer of the installed
  # static library finds it with find_package(hip) from plain C++ (cmake/swinferConfig.cmake.in).
  find_package(hip CONFIG REQUIRED HINTS "${_swinfer_rocm}")
  target_link_libraries(swinfer_hip PRIVATE hip::amdhip64)
else()
  target_compile_definitions(swinfer_hip PRIVATE SWINFER_GPU_EMULATOR=1)
  # Only the library's own translation units (through vendor/gpu.hpp) include the emulator: PRIVATE, as the
  # vendor runtimes are on the other platforms.
  target_include_directories(swinfer_hip PRIVATE ${PROJECT_SOURCE_DIR}/emulator/include)
  target_compile_options(swinfer_hip PRIVATE -O2 -Wall -Wextra -Werror -Wno-unknown-pragmas)  # #pragma unroll
  target_link_libraries(swinfer_hip PRIVATE Eigen3::Eigen)
endif()
message(STATUS "swinfer: hip backend for ${_swinfer_gpu} (${CMAKE_${_swinfer_gpu_lang}_COMPILER}, architectures "
               "${CMAKE_${_swinfer_gpu_lang}_ARCHITECTURES})")

# The [gpu] tests (swinfer_native and swinfer_warnings, which they link, are defined later in the top level).
if(SWINFER_GPU_TESTS)
  enable_testing()
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/gpu ${PROJECT_BINARY_DIR}/tests/gpu)
endif()
