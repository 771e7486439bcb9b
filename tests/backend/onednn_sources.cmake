# Test sources of the oneDNN backend; the test CMakeLists links them with swinfer::onednn.
list(APPEND SWINFER_ONEDNN_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_onednn_kernels.cpp)
