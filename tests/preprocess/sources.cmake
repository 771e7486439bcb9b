# swinfer preprocessing tests: MONAI's transforms, pipelines and Invertd against the MONAI 1.5.0 goldens in
# tests/data/preprocess/ (regenerate with tools/goldens/make_preprocess_goldens.py). Include this file from
# tests/CMakeLists.txt, then link the test target with ${SWINFER_PREPROCESS_TEST_LIBRARIES}. The test reads its data
# through SWINFER_TEST_DATA_DIR (tests/data) and needs nlohmann_json and ZLIB, which swinfer::swinfer already links.
find_package(xtensor 0.24 REQUIRED)
list(APPEND SWINFER_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_preprocess.cpp)
set(SWINFER_PREPROCESS_TEST_LIBRARIES xtensor)
