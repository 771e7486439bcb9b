// swinfer tests: where the committed test data is. $SWINFER_TEST_DATA_DIR when set (test executables carried to
// another machine, e.g. the GPU bundle of tools/gpu-bundle.sh, find the data where it landed), else the source tree's
// tests/data that the build configured (the SWINFER_TEST_DATA_DIR macro).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace swinfer_test {

inline std::filesystem::path test_data_dir() {
  if (const char* moved = std::getenv("SWINFER_TEST_DATA_DIR"); moved && *moved) return moved;
  return SWINFER_TEST_DATA_DIR;
}

}  // namespace swinfer_test
