# cpu backend tests, compiled into the shared swinfer_tests executable (included by tests/CMakeLists.txt): the shared
# op suite (tests/ops) on cpu, and the cpu-only cases (context, precision through ResBlocks, int8).
list(APPEND SWINFER_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../ops/test_ops_cpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_conv3d_list.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_int8.cpp)
