# NIfTI I/O tests (include/swinfer/io/nifti.hpp); fixtures in tests/data/nifti/ (SWINFER_TEST_DATA_DIR).
# The test target links swinfer::nifti (NIFTI::nifti2, defined by cmake/SwinferNifti.cmake).
list(APPEND SWINFER_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nifti.cpp)
