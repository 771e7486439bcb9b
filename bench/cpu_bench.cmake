# Microbenchmark of the cpu backend's hot kernels (included by bench/CMakeLists.txt).
add_executable(bench_cpu_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_cpu_kernels.cpp)
target_link_libraries(bench_cpu_kernels PRIVATE swinfer::swinfer swinfer_native swinfer_warnings)
