// libFuzzer harness: the .npy reader (preamble, header dict, dtype, shape, data length) on arbitrary bytes.
#include <swinfer/io/npy.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = swinfer_fuzz::input_file(data, size, ".npy");
  swinfer_fuzz::expect_success_or_error([&] {
    const auto a = swinfer::read_npy(path);
    std::size_t elements = 1;
    for (auto d : a.shape) elements *= static_cast<std::size_t>(d);
    if (elements != a.data.size()) __builtin_trap();  // the shape must describe what was read
  });
  return 0;
}
