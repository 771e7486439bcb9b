# Test sources of the oneDNN backend; the test CMakeLists links them with swinfer::onednn: the shared op suite
# (tests/ops) on onednn, and the onednn-only cases (context, exact statistics).
list(APPEND SWINFER_ONEDNN_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../ops/test_ops_onednn.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_onednn_kernels.cpp)
