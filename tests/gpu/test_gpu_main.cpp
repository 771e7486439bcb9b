// The Catch2 main of the [gpu] tests: without a usable GPU nothing runs and the exit status 77 makes ctest report
// the test as skipped (Catch2 v2 has no SKIP). Listing and help work without a GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstring>
#include <iostream>
#include <string>

#include "gpu_test_support.hpp"
#include "tensor_testing.hpp"

std::mt19937_64& swinfer_test::rng() {
  static std::mt19937_64 generator(Catch::rngSeed());
  return generator;
}

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const auto& cfg = session.configData();
  const bool listing = cfg.listTests || cfg.listTestNamesOnly || cfg.listTags || cfg.listReporters || cfg.showHelp;
  if (!listing) {
    std::string why;
    if (swinfer::hip::device_count(&why) == 0) {
      std::cout << "SKIPPED: no usable GPU (" << why << "); the [gpu] tests of the hip backend ("
                << swinfer::hip::platform() << ") did not run\n";
      return swinfer_gpu_test::skip_exit_code;
    }
    const auto& d = swinfer_gpu_test::gpu().device();
    std::cout << "swinfer [gpu] tests on device " << d.index << ": " << d.name << " (" << d.arch << ", warp size "
              << d.warp_size << ", " << d.multiprocessors << " multiprocessors); matrix cores "
              << d.matrix_cores_note << "; wgmma convolutions " << d.warpgroup_mma_note << "\n";
  }
  return session.run();
}
