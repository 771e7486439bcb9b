// libFuzzer harness: a pipeline run on a tiny image and inverted back, as segment does. The input is the pipeline's
// JSON, optionally followed by a NUL byte and bytes that choose the image: its shape (1..8 per axis), channels,
// layout, voxel values and affine (any 3x4 doubles, NaN and infinities included, as a corrupt header gives).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstring>

#include <swinfer/preprocess/pipeline.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t text_size = nul ? static_cast<std::size_t>(nul - data) : size;
  const auto j = nlohmann::ordered_json::parse(data, data + text_size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  FuzzedDataProvider image_bytes(nul ? nul + 1 : data + size, nul ? size - text_size - 1 : 0);

  const std::int64_t c = image_bytes.ConsumeIntegralInRange<std::int64_t>(1, 2);
  const std::int64_t d = image_bytes.ConsumeIntegralInRange<std::int64_t>(1, 8);
  const std::int64_t h = image_bytes.ConsumeIntegralInRange<std::int64_t>(1, 8);
  const std::int64_t w = image_bytes.ConsumeIntegralInRange<std::int64_t>(1, 8);
  const auto layout = image_bytes.ConsumeBool() ? swinfer::layout_kind::ndhwc : swinfer::layout_kind::ncdhw;
  swinfer::spatial_image image{swinfer::tensor<float>({1, c, d, h, w}, layout), swinfer::affine4::Identity()};
  if (image_bytes.remaining_bytes() >= 12 * sizeof(double)) {
    for (int r = 0; r < 3; ++r)
      for (int col = 0; col < 4; ++col) image.affine(r, col) = image_bytes.ConsumeFloatingPoint<double>();
  }
  // Scattered positive voxels among zeros (CropForeground's box), then as many values as the bytes give.
  float* voxels = image.data.data();
  for (std::int64_t i = 0; i < image.data.size(); ++i) voxels[i] = i % 7 == 3 ? 1.0f + static_cast<float>(i % 5) : 0.0f;
  for (std::int64_t i = 0; i < image.data.size() && image_bytes.remaining_bytes() >= sizeof(float); ++i) {
    voxels[i] = image_bytes.ConsumeFloatingPoint<float>();
  }

  swinfer_fuzz::expect_success_or_error([&] {
    const auto spec = swinfer::pipeline_from_json(j, "fuzz.json");
    const auto prepared = swinfer::preprocess(image.clone(), spec);
    // A "prediction" on the network grid, mapped back onto the input grid both ways segment can.
    for (auto mode : {swinfer::interpolation::bilinear, swinfer::interpolation::nearest}) {
      const auto back = prepared.invert(prepared.image.data, mode);
      if (back.spatial_shape() != image.spatial_shape()) __builtin_trap();
    }
  });
  return 0;
}
