# swinfer inference tests (sliding window, importance map, post-processing, label metrics), for the shared Catch2
# test executable.
# They need nlohmann_json (the goldens' cases.json) and read tests/data/sliding_window/ through SWINFER_TEST_DATA_DIR;
# tools/goldens/make_sliding_window_goldens.py regenerates that folder.
list(APPEND SWINFER_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_window_grid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_sliding_window.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_postprocess.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_label_metrics.cpp)
