// swinfer: after the blended logits: softmax or sigmoid, argmax labels, largest connected components, label volumes.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/detail/parallel_for.hpp"

namespace swinfer {

namespace detail {

/// Calls per_voxel(in, out, channel_stride_in, channel_stride_out) for every voxel of (N, K, D, H, W) `in`, with
/// pointers at channel 0; rows are split over threads.
template <class In, class Out, class PerVoxel>
void for_each_voxel(const tensor<In>& in, tensor<Out>& out, int threads, const PerVoxel& per_voxel) {
  const shape5& s = in.shape();
  const std::int64_t rows = s.n * s.d * s.h;
  parallel_for(rows, loop_threads(threads, rows, s.w * s.c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t n = r / (s.d * s.h), z = r / s.h % s.d, y = r % s.h;
      for (std::int64_t x = 0; x < s.w; ++x)
        per_voxel(&in(n, 0, z, y, x), &out(n, 0, z, y, x), in.strides()[1], out.strides()[1]);
    }
  });
}

template <class Label>
void check_label_volume(const tensor<Label>& labels, const char* what) {
  if (labels.shape().c != 1)
    fail(what, ": expected a label volume (N, 1, D, H, W), got shape ", labels.shape().str());
}

}  // namespace detail

/// \brief Softmax over the channel axis of (N, K, D, H, W) logits, as torch.softmax(x, 1) and MONAI's
/// Activations(softmax=True) per item: max subtracted, exp, divided by the sum. Same shape and layout.
inline tensor<float> softmax_channels(const tensor<float>& logits, int threads = 0) {
  tensor<float> out(logits.shape(), logits.layout());
  const std::int64_t k = logits.shape().c;
  detail::for_each_voxel(logits, out, threads, [k](const float* in, float* o, std::int64_t is, std::int64_t os) {
    float max = in[0];
    for (std::int64_t c = 1; c < k; ++c) max = std::max(max, in[c * is]);
    float sum = 0.0f;
    for (std::int64_t c = 0; c < k; ++c) sum += o[c * os] = std::exp(in[c * is] - max);
    for (std::int64_t c = 0; c < k; ++c) o[c * os] /= sum;
  });
  return out;
}

/// \brief Element-wise logistic sigmoid, as MONAI's Activations(sigmoid=True) (multi-label outputs).
inline tensor<float> sigmoid(const tensor<float>& logits, int threads = 0) {
  tensor<float> out(logits.shape(), logits.layout());
  const std::int64_t k = logits.shape().c;
  detail::for_each_voxel(logits, out, threads, [k](const float* in, float* o, std::int64_t is, std::int64_t os) {
    for (std::int64_t c = 0; c < k; ++c) o[c * os] = 1.0f / (1.0f + std::exp(-in[c * is]));
  });
  return out;
}

/// \brief MONAI's AsDiscrete(threshold=t) for multi-label (sigmoid) outputs: 1 where a score is >= t, else 0, per
/// channel. Returns (N, K, D, H, W) in the scores' layout.
inline tensor<std::uint8_t> threshold_channels(const tensor<float>& scores, float threshold, int threads = 0) {
  tensor<std::uint8_t> out(scores.shape(), scores.layout());
  const std::int64_t k = scores.shape().c;
  detail::for_each_voxel(scores, out, threads,
                         [k, threshold](const float* in, std::uint8_t* o, std::int64_t is, std::int64_t os) {
                           for (std::int64_t c = 0; c < k; ++c) o[c * os] = in[c * is] >= threshold ? 1 : 0;
                         });
  return out;
}

/// \brief The channel of the largest score per voxel, as torch.argmax(x, 1, keepdim=True) and MONAI's
/// AsDiscrete(argmax=True): ties go to the lowest channel, a NaN counts as the largest. Returns (N, 1, D, H, W).
/// \tparam Label an integer type wide enough for K - 1 (checked).
template <class Label = std::uint8_t>
tensor<Label> argmax_channels(const tensor<float>& scores, int threads = 0) {
  static_assert(std::is_integral_v<Label>, "labels are integers");
  const shape5& s = scores.shape();
  if (s.c < 1 || static_cast<std::uint64_t>(s.c - 1) > static_cast<std::uint64_t>(std::numeric_limits<Label>::max()))
    detail::fail("argmax_channels: ", s.c, " channels do not fit the label type (max ",
                 static_cast<std::int64_t>(std::numeric_limits<Label>::max()), ")");
  tensor<Label> out({s.n, 1, s.d, s.h, s.w}, scores.layout());
  detail::for_each_voxel(scores, out, threads, [k = s.c](const float* in, Label* o, std::int64_t is, std::int64_t) {
    float best = in[0];
    std::int64_t arg = 0;
    for (std::int64_t c = 1; c < k; ++c) {
      const float v = in[c * is];
      if (v > best || (std::isnan(v) && !std::isnan(best))) {
        best = v;
        arg = c;
      }
    }
    *o = static_cast<Label>(arg);
  });
  return out;
}

/// Options of keep_largest_connected_component, after MONAI's KeepLargestConnectedComponent (independent=True).
struct largest_component_options {
  /// Voxels are neighbours when they share a face (6), a face or an edge (18), or also a corner (26). MONAI's default
  /// (connectivity=None, i.e. full connectivity for 3-D) is 26; its connectivity 1 / 2 / 3 are 6 / 18 / 26.
  int connectivity = 26;
  /// Labels to clean; empty (MONAI's None) means every non-zero label present.
  std::vector<std::int64_t> applied_labels;
  /// How many of the largest components of each label to keep.
  std::int64_t num_components = 1;
};

/// \brief MONAI's KeepLargestConnectedComponent on (N, 1, D, H, W) labels, in place, each item on its own: for each
/// applied label, only its `num_components` largest connected components are kept and the other voxels of that label
/// become 0 (background). A label with no more components than that is left alone. Equal-sized components rank by
/// their first voxel in raster order, the later one first: that is MONAI's order (skimage numbering, numpy argsort
/// reversed) whenever a label has at most 16 components; beyond that numpy's unstable sort decides.
template <class Label>
void keep_largest_connected_component(tensor<Label>& labels, const largest_component_options& options = {}) {
  static_assert(std::is_integral_v<Label>, "labels are integers");
  detail::check_label_volume(labels, "keep_largest_connected_component");
  const int conn = options.connectivity;
  if (conn != 6 && conn != 18 && conn != 26)
    detail::fail("keep_largest_connected_component: connectivity ", conn, " must be 6, 18 or 26");
  if (options.num_components < 1)
    detail::fail("keep_largest_connected_component: num_components ", options.num_components, " must be >= 1");
  const shape5& s = labels.shape();
  const std::int64_t voxels = s.d * s.h * s.w;
  if (voxels >= std::numeric_limits<std::int32_t>::max())
    detail::fail("keep_largest_connected_component: ", voxels, " voxels per item is more than it indexes");
  std::vector<std::int64_t> applied = options.applied_labels;
  std::sort(applied.begin(), applied.end());
  const auto is_applied = [&](Label v) {
    return applied.empty() ? v != 0 : std::binary_search(applied.begin(), applied.end(), static_cast<std::int64_t>(v));
  };

  std::vector<std::array<std::int64_t, 3>> offsets;
  for (std::int64_t dz = -1; dz <= 1; ++dz)
    for (std::int64_t dy = -1; dy <= 1; ++dy)
      for (std::int64_t dx = -1; dx <= 1; ++dx) {
        const auto hops = std::abs(dz) + std::abs(dy) + std::abs(dx);
        if (hops > 0 && hops <= (conn == 6 ? 1 : conn == 18 ? 2 : 3)) offsets.push_back({dz, dy, dx});
      }

  std::vector<std::int32_t> component(static_cast<std::size_t>(voxels));
  std::vector<std::int64_t> stack;
  for (std::int64_t n = 0; n < s.n; ++n) {
    // Both layouts store a one-channel volume in plain (D, H, W) order.
    Label* volume = labels.data() + n * voxels;
    std::fill(component.begin(), component.end(), -1);
    std::vector<std::int64_t> size;  // per component, numbered in raster order of their first voxel (as skimage)
    std::vector<Label> label_of;
    for (std::int64_t first = 0; first < voxels; ++first) {
      const Label l = volume[first];
      if (component[static_cast<std::size_t>(first)] >= 0 || !is_applied(l)) continue;
      const auto id = static_cast<std::int32_t>(size.size());
      std::int64_t count = 0;
      component[static_cast<std::size_t>(first)] = id;
      stack.assign(1, first);
      while (!stack.empty()) {
        const std::int64_t v = stack.back();
        stack.pop_back();
        ++count;
        const std::int64_t z = v / (s.h * s.w), y = v / s.w % s.h, x = v % s.w;
        for (const auto& [dz, dy, dx] : offsets) {
          const std::int64_t nz = z + dz, ny = y + dy, nx = x + dx;
          if (nz < 0 || nz >= s.d || ny < 0 || ny >= s.h || nx < 0 || nx >= s.w) continue;
          const std::int64_t u = (nz * s.h + ny) * s.w + nx;
          if (volume[u] != l || component[static_cast<std::size_t>(u)] >= 0) continue;
          component[static_cast<std::size_t>(u)] = id;
          stack.push_back(u);
        }
      }
      size.push_back(count);
      label_of.push_back(l);
    }

    // Rank each label's components: larger first, then later-numbered first (MONAI's reversed argsort).
    std::vector<std::int32_t> order(size.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      if (label_of[a] != label_of[b]) return label_of[a] < label_of[b];
      if (size[a] != size[b]) return size[a] > size[b];
      return a > b;
    });
    std::vector<char> keep(size.size(), 1);
    for (std::size_t begin = 0, end = 0; begin < order.size(); begin = end) {
      end = begin;
      while (end < order.size() && label_of[order[end]] == label_of[order[begin]]) ++end;
      if (static_cast<std::int64_t>(end - begin) <= options.num_components) continue;
      for (std::size_t i = begin + static_cast<std::size_t>(options.num_components); i < end; ++i) keep[order[i]] = 0;
    }
    for (std::int64_t v = 0; v < voxels; ++v) {
      const std::int32_t c = component[static_cast<std::size_t>(v)];
      if (c >= 0 && !keep[static_cast<std::size_t>(c)]) volume[v] = 0;
    }
  }
}

/// Voxel count and physical volume of one label.
struct label_volume {
  std::int64_t label = 0;
  std::int64_t voxels = 0;
  double millilitres = 0.0;
};

/// \brief Voxels and volume (mL) of every label present in batch item `item` of (N, 1, D, H, W) labels, in label
/// order, background included. `spacing_mm` is the voxel size along D, H, W (MONAI's pixdim order: i, j, k).
template <class Label>
std::vector<label_volume> label_volumes(const tensor<Label>& labels, const std::array<double, 3>& spacing_mm,
                                        std::int64_t item = 0) {
  static_assert(std::is_integral_v<Label>, "labels are integers");
  detail::check_label_volume(labels, "label_volumes");
  for (const double sp : spacing_mm)
    if (!(sp > 0.0) || !std::isfinite(sp))
      detail::fail("label_volumes: voxel spacing ", sp, " mm must be positive and finite");
  const shape5& s = labels.shape();
  if (item < 0 || item >= s.n) detail::fail("label_volumes: item ", item, " is outside the batch of ", s.n);
  const std::int64_t voxels = s.d * s.h * s.w;
  const Label* volume = labels.data() + item * voxels;
  if (voxels == 0) return {};
  const auto [lo, hi] = std::minmax_element(volume, volume + voxels);
  const std::int64_t low = *lo, range = static_cast<std::int64_t>(*hi) - low + 1;
  if (range > (std::int64_t{1} << 24))
    detail::fail("label_volumes: labels span ", low, " .. ", static_cast<std::int64_t>(*hi), ", too wide a range");
  std::vector<std::int64_t> counts(static_cast<std::size_t>(range));
  for (std::int64_t v = 0; v < voxels; ++v) ++counts[static_cast<std::size_t>(volume[v] - low)];
  const double voxel_ml = spacing_mm[0] * spacing_mm[1] * spacing_mm[2] / 1000.0;
  std::vector<label_volume> out;
  for (std::int64_t i = 0; i < range; ++i)
    if (const std::int64_t c = counts[static_cast<std::size_t>(i)])
      out.push_back({low + i, c, static_cast<double>(c) * voxel_ml});
  return out;
}

}  // namespace swinfer
