// libFuzzer harness: the safetensors loader (header JSON, dtypes, shapes, offsets) on arbitrary bytes.
#include <swinfer/io/safetensors.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = swinfer_fuzz::input_file(data, size, ".safetensors");
  swinfer_fuzz::expect_success_or_error([&] { swinfer::load_safetensors(path); });
  return 0;
}
