// swinfer CLI: mid-plane preview PNG (stb_image_write, header-only, compiled here once).
#include "preview.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include <swinfer/core/error.hpp>
#include <swinfer/io/atomic_file.hpp>
#include <swinfer/preprocess/orientation.hpp>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO_DEPRECATION
#include <stb/stb_image_write.h>
#undef STB_IMAGE_WRITE_IMPLEMENTATION
#undef STBI_WRITE_NO_STDIO_DEPRECATION

namespace swinfer_tool {
namespace {

constexpr std::array<std::array<std::uint8_t, 3>, 8> kPalette{{{230, 25, 75},  {60, 180, 75},  {0, 130, 200},
                                                               {245, 130, 48}, {145, 30, 180}, {70, 240, 240},
                                                               {240, 50, 230}, {210, 245, 60}}};
constexpr int kMaxPanel = 512;  // longest panel side in pixels
constexpr int kGap = 6;

struct rgb_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // row-major RGB
  std::uint8_t* at(int x, int y) { return &pixels[(static_cast<std::size_t>(y) * width + x) * 3]; }
};

/// Grey value window from the 1st and 99th percentiles of a strided sample of channel 0.
std::pair<float, float> intensity_window(const swinfer::tensor<float>& image) {
  const auto& s = image.shape();
  const std::int64_t voxels = s.spatial(), step = std::max<std::int64_t>(1, voxels / 200000);
  std::vector<float> sample;
  for (std::int64_t v = 0; v < voxels; v += step) {
    const float x = image(0, 0, v / (s.h * s.w), (v / s.w) % s.h, v % s.w);
    if (std::isfinite(x)) sample.push_back(x);
  }
  if (sample.empty()) return {0.0f, 1.0f};
  auto pick = [&](double q) {
    auto it = sample.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(sample.size() - 1));
    std::nth_element(sample.begin(), it, sample.end());
    return *it;
  };
  const float lo = pick(0.01), hi = pick(0.99);
  return {lo, hi > lo ? hi : lo + 1.0f};
}

}  // namespace

void write_preview_png(const std::filesystem::path& path, const swinfer::tensor<float>& image,
                       const swinfer::tensor<std::uint8_t>& labels, const swinfer::affine4& affine) {
  // LPS order: index 0 grows toward the patient's left, 1 toward posterior, 2 toward superior.
  swinfer::tensor<float> label_values(labels.shape(), labels.layout());
  for (std::int64_t i = 0; i < labels.size(); ++i) label_values.data()[i] = labels.data()[i];
  const auto scan = swinfer::reorient(swinfer::spatial_image{image.clone(), affine}, "LPS");
  const auto mask = swinfer::reorient(swinfer::spatial_image{std::move(label_values), affine}, "LPS");
  const auto& s = scan.data.shape();
  const std::array<std::int64_t, 3> n{s.d, s.h, s.w};
  std::array<double, 3> spacing{};
  for (int a = 0; a < 3; ++a) spacing[a] = scan.affine.block<3, 1>(0, a).norm();
  const auto [lo, hi] = intensity_window(scan.data);

  // A panel shows two axes (columns, rows) at the middle of the third; rows of the S axis run top = superior.
  struct panel_axes {
    int col, row, fixed;
    bool flip_row;
  };
  const std::array<panel_axes, 3> panels{{{0, 1, 2, false}, {0, 2, 1, true}, {1, 2, 0, true}}};
  const double pitch = std::max({spacing[0] * n[0], spacing[1] * n[1], spacing[2] * n[2]}) / kMaxPanel;
  std::array<std::array<int, 2>, 3> size{};
  rgb_image out;
  for (int p = 0; p < 3; ++p) {
    size[p] = {std::max(1, static_cast<int>(std::lround(spacing[panels[p].col] * n[panels[p].col] / pitch))),
               std::max(1, static_cast<int>(std::lround(spacing[panels[p].row] * n[panels[p].row] / pitch)))};
    out.width += size[p][0] + (p ? kGap : 0);
    out.height = std::max(out.height, size[p][1]);
  }
  out.pixels.assign(static_cast<std::size_t>(out.width) * out.height * 3, 0);
  int x0 = 0;
  for (int p = 0; p < 3; ++p) {
    const auto& ax = panels[p];
    for (int y = 0; y < size[p][1]; ++y)
      for (int x = 0; x < size[p][0]; ++x) {
        std::array<std::int64_t, 3> v{};
        v[ax.fixed] = n[ax.fixed] / 2;
        v[ax.col] = std::min<std::int64_t>(n[ax.col] - 1, x * n[ax.col] / size[p][0]);
        const std::int64_t r = std::min<std::int64_t>(n[ax.row] - 1, y * n[ax.row] / size[p][1]);
        v[ax.row] = ax.flip_row ? n[ax.row] - 1 - r : r;
        const float g = std::clamp((scan.data(0, 0, v[0], v[1], v[2]) - lo) / (hi - lo), 0.0f, 1.0f) * 255.0f;
        std::uint8_t* px = out.at(x0 + x, y);
        px[0] = px[1] = px[2] = static_cast<std::uint8_t>(g);
        if (const int label = static_cast<int>(mask.data(0, 0, v[0], v[1], v[2]))) {
          const auto& c = kPalette[static_cast<std::size_t>(label - 1) % kPalette.size()];
          for (int k = 0; k < 3; ++k) px[k] = static_cast<std::uint8_t>(0.55f * px[k] + 0.45f * c[k]);
        }
      }
    x0 += size[p][0] + kGap;
  }
  swinfer::write_file_atomically(path, [&](const std::filesystem::path& temporary) {
    if (!stbi_write_png(temporary.c_str(), out.width, out.height, 3, out.pixels.data(), out.width * 3)) {
      swinfer::detail::fail("cannot write preview ", swinfer::detail::printable(path), " (stb_image_write failed)");
    }
  });
}

}  // namespace swinfer_tool
