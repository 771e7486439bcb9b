// swinfer: how much one int8 quantization point loses (docs/int8.md, per-layer fallback): calibration keeps a small
// sample of the point's inputs, and once the scale is chosen, the point's product runs on it twice through the
// naive references, in float and in int8; the relative L2 error of the int8 product decides whether the point
// falls back to float. The error is the median over the sample's parts (crops, blocks of rows) of each part's own:
// a rare outlier that the scale covers exactly would otherwise dominate the norm and hide that the bulk of the
// values quantized to nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <variant>
#include <vector>

#include "swinfer/core/tensor.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/block_specs.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/linear.hpp"

namespace swinfer {

/// \brief A sample of one point's float32 inputs, drawn with a fixed seed (a calibration is reproducible):
/// - a convolution keeps up to `crops` crops of at most `crop_edge`^3 voxels, one candidate per observed tensor at a
///   random place, so every output of a crop has the neighbourhood its kernel reads (zero padded at the crop's edge,
///   as at the volume's); each crop is one part;
/// - a linear or a transposed convolution, whose outputs each read one row (a token, a voxel), keeps up to `rows`
///   rows, `rows_per_input` candidates per observed tensor; each `rows_per_part` of them are one part.
/// Candidates enter by reservoir sampling, so the sample spreads evenly over every window of every volume.
class int8_input_sample {
 public:
  static constexpr std::int64_t crops = 8, crop_edge = 6, rows = 2048, rows_per_input = 256, rows_per_part = 256;

  explicit int8_input_sample(int8_product product) : product_(std::move(product)), random_(20260) {}

  /// One observed input (N, C, D, H, W), any layout (a linear's rows as (1, C, 1, 1, rows)).
  void add(const tensor<float>& input) {
    const shape5& s = input.shape();
    if (s.n * s.spatial() == 0) return;
    if (std::holds_alternative<ops::conv3d_problem>(product_.problem)) {
      offer(crops_, crops, [&] { return crop(input); });
      return;
    }
    const std::int64_t voxels = s.n * s.spatial();
    for (std::int64_t i = 0; i < std::min(voxels, rows_per_input); ++i) {
      const std::int64_t v = pick(voxels);
      offer(rows_, rows, [&] {
        std::vector<float> row(static_cast<std::size_t>(s.c));
        const std::int64_t n = v / s.spatial(), z = (v / (s.h * s.w)) % s.d, y = (v / s.w) % s.h, x = v % s.w;
        for (std::int64_t c = 0; c < s.c; ++c) row[static_cast<std::size_t>(c)] = input(n, c, z, y, x);
        return row;
      });
    }
  }

  bool empty() const { return crops_.empty() && rows_.empty(); }

  /// The median over the sample's parts of ||int8 - float|| / ||float|| of the point's product (bias left out),
  /// its input quantized with `scale` and its weight (from `weights`) per output channel; a part whose product is
  /// all zero counts as exact, an empty sample is 0.
  double relative_error(float scale, const state_dict& weights) const {
    const float* w = weights.at(product_.weight_key).values.data();
    const ops::int8_input quantized{product_.point, scale};
    std::vector<double> errors;
    const auto add_part = [&](const tensor<float>& exact, const tensor<float>& int8) {
      double error = 0, norm = 0;
      for (std::int64_t i = 0; i < exact.size(); ++i) {
        const double e = double{exact.data()[i]}, d = double{int8.data()[i]} - e;
        error += d * d;
        norm += e * e;
      }
      errors.push_back(norm > 0 ? std::sqrt(error / norm) : 0.0);
    };
    std::visit(
        [&](auto p) {
          using problem = decltype(p);
          if constexpr (std::is_same_v<problem, ops::conv3d_problem>) {
            p.bias = false;
            for (const auto& x : crops_) add_part(run_conv(p, x, w, {}), run_conv(p, x, w, quantized));
          } else {
            for (std::size_t r0 = 0; r0 < rows_.size(); r0 += rows_per_part) {
              const tensor<float> x = stacked_rows(r0, std::min(rows_.size(), r0 + rows_per_part));
              if constexpr (std::is_same_v<problem, ops::linear_problem>) {
                p.bias = p.gelu = p.accumulate = false;
                add_part(run_linear(p, x, w, {}), run_linear(p, x, w, quantized));
              } else {
                add_part(run_transposed(p, x, w, {}), run_transposed(p, x, w, quantized));
              }
            }
          }
        },
        product_.problem);
    if (errors.empty()) return 0.0;
    std::sort(errors.begin(), errors.end());
    const std::size_t mid = errors.size() / 2;
    return errors.size() % 2 ? errors[mid] : 0.5 * (errors[mid - 1] + errors[mid]);
  }

 private:
  /// Reservoir sampling: the k-th candidate (counted per kind) replaces a random kept one with probability cap / k.
  template <class T, class Make>
  void offer(std::vector<T>& kept, std::int64_t cap, Make&& make) {
    const std::int64_t seen = ++offered_;
    if (static_cast<std::int64_t>(kept.size()) < cap) {
      kept.push_back(make());
      return;
    }
    const std::int64_t slot = pick(seen);
    if (slot < cap) kept[static_cast<std::size_t>(slot)] = make();
  }
  std::int64_t pick(std::int64_t n) { return std::uniform_int_distribution<std::int64_t>(0, n - 1)(random_); }

  /// A crop of sample 0..N-1 at a random place, at most crop_edge per axis, whole strides for a strided kernel.
  tensor<float> crop(const tensor<float>& in) {
    const shape5& s = in.shape();
    const auto& p = std::get<ops::conv3d_problem>(product_.problem);
    const std::int64_t extent[3] = {s.d, s.h, s.w};
    std::int64_t edge[3], start[3];
    for (int a = 0; a < 3; ++a) {
      edge[a] = std::min(extent[a], std::max<std::int64_t>(crop_edge / p.stride[a], 1) * p.stride[a]);
      edge[a] = std::max<std::int64_t>(edge[a], std::min<std::int64_t>(extent[a], p.kernel[a]));
      start[a] = pick(extent[a] - edge[a] + 1);
    }
    const std::int64_t n = pick(s.n);
    tensor<float> out({1, s.c, edge[0], edge[1], edge[2]}, layout_kind::ncdhw);
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < edge[0]; ++z)
        for (std::int64_t y = 0; y < edge[1]; ++y)
          for (std::int64_t x = 0; x < edge[2]; ++x) out(0, c, z, y, x) = in(n, c, start[0] + z, start[1] + y, start[2] + x);
    return out;
  }

  /// Kept rows [r0, r1) as (r1 - r0, C, 1, 1, 1): rows of C floats.
  tensor<float> stacked_rows(std::size_t r0, std::size_t r1) const {
    const auto c = static_cast<std::int64_t>(rows_.front().size());
    tensor<float> x({static_cast<std::int64_t>(r1 - r0), c, 1, 1, 1}, layout_kind::ncdhw);
    for (std::size_t r = r0; r < r1; ++r) std::copy(rows_[r].begin(), rows_[r].end(), x.data() + (r - r0) * c);
    return x;
  }

  static tensor<float> run_conv(ops::conv3d_problem p, const tensor<float>& x, const float* w, ops::int8_input in) {
    p.int8 = in;
    tensor<float> y(p.output_shape(x.shape()), layout_kind::ncdhw);
    ops::ref::conv3d(p, x, w, nullptr, y);
    return y;
  }
  static tensor<float> run_linear(ops::linear_problem p, const tensor<float>& x, const float* w, ops::int8_input in) {
    p.int8 = in;
    tensor<float> y({x.shape().n, p.out_features, 1, 1, 1}, layout_kind::ncdhw);
    ops::ref::linear(p, x.data(), x.shape().n, w, nullptr, y.data());
    return y;
  }
  static tensor<float> run_transposed(ops::conv_transpose3d_problem p, const tensor<float>& x, const float* w,
                                      ops::int8_input in) {
    p.int8 = in;
    tensor<float> y(p.output_shape(x.shape()), layout_kind::ncdhw);
    ops::ref::conv_transpose3d(p, x, w, y);
    return y;
  }

  int8_product product_;
  std::mt19937_64 random_;
  std::int64_t offered_ = 0;
  std::vector<tensor<float>> crops_;
  std::vector<std::vector<float>> rows_;
};

}  // namespace swinfer
