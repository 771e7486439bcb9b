# Microbenchmark of the cpu backend's hot kernels (included by bench/CMakeLists.txt).
add_executable(bench_cpu_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_cpu_kernels.cpp)
target_link_libraries(bench_cpu_kernels PRIVATE swinfer::swinfer swinfer_native swinfer_warnings Threads::Threads)

# The CPU's register-only arithmetic ceiling per instruction (the "peak" the kernel benchmarks are a fraction of).
add_executable(bench_peak ${CMAKE_CURRENT_LIST_DIR}/bench_peak.cpp)
target_link_libraries(bench_peak PRIVATE swinfer::swinfer swinfer_native swinfer_warnings Threads::Threads)
