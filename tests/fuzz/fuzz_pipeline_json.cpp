// libFuzzer harness: the preprocessing pipeline reader (steps, keys, ranges) on arbitrary JSON, then the grid the
// pipeline would give a small image (the up-front size and growth checks), without running it.
#include <swinfer/preprocess/pipeline.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;  // not JSON: load_pipeline reports that before the reader sees anything
  swinfer_fuzz::expect_success_or_error([&] {
    const auto spec = swinfer::pipeline_from_json(j, "fuzz.json");
    swinfer::spatial_image image{swinfer::tensor<float>({1, 1, 6, 5, 4}, swinfer::layout_kind::ncdhw),
                                 swinfer::affine4::Identity()};
    swinfer::check_preprocessing(spec, image, "fuzz");
  });
  return 0;
}
