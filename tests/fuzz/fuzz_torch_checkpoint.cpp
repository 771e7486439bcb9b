// libFuzzer harness: the torch.save loader (ZIP archive, restricted unpickler, storages and views) on arbitrary bytes.
#include <swinfer/io/torch_checkpoint.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = swinfer_fuzz::input_file(data, size, ".pt");
  swinfer_fuzz::expect_success_or_error([&] { swinfer::load_torch_checkpoint(path); });
  return 0;
}
