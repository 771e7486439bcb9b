# cpu backend kernel tests, compiled into the shared swinfer_tests executable (included by tests/CMakeLists.txt).
list(APPEND SWINFER_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_window_attention.cpp)
