# swinfer preprocessing tests: MONAI's transforms, pipelines and Invertd against the MONAI 1.5.0 goldens in
# tests/data/preprocess/ (regenerate with tools/goldens/make_preprocess_goldens.py). Include this file from
# tests/CMakeLists.txt. The test reads its data through SWINFER_TEST_DATA_DIR (tests/data) and needs nlohmann_json,
# ZLIB and xtensor, which swinfer::swinfer already links.
list(APPEND SWINFER_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_preprocess.cpp)
