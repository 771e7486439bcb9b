// swinfer cpu backend: what a convolution reads: one volume, a decoder's two-part concatenation, or a volume
// InstanceNorm-ed on load, each read where it is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/dynamic_scale.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// \brief A convolution's input (N, C, D, H, W), read row by row as the convolution stages it, channels-last:
/// - one volume;
/// - the channel concatenation [first, second] of two volumes of one layout and extent (a decoder's upsampled map
///   and its skip), never written: each staged voxel holds the first part's channels, then the second's;
/// - one volume normalised on load, act((x - mean) * inv) per (sample, channel) with InstanceNorm's statistics, the
///   values rounded to S as cpu::instance_norm would store them, so both ways agree; the volume is left as it is.
/// A view refers to the tensors it was made from, which must outlive it (the statistics it copies).
template <class S>
class conv_input {
 public:
  explicit conv_input(const tensor<S>& whole) : first_(whole), shape_(whole.shape()) {}
  conv_input(const tensor<S>& first, const tensor<S>& second)
      : first_(first), second_(&second), shape_(ops::concat_channels_shape({first.shape(), second.shape()})) {
    if (first.layout() != second.layout()) detail::fail("conv3d: the concatenated inputs need one layout");
  }
  conv_input(const tensor<S>& whole, const instance_statistics& stats, const ops::instance_norm_epilogue& e)
      : first_(whole), normalised_(true), epilogue_(e), shape_(whole.shape()),
        block_voxels_(std::max<std::int64_t>(1, block_floats / shape_.c)) {
    // normalize_run takes the statistics per channel, or (internal::repeats_per_voxel) repeated for each voxel of
    // one of its steps (norm_voxels_per_step voxels): laid out here once per sample.
    const bool repeated = internal::repeats_per_voxel(shape_.c);
    statistics_stride_ = repeated ? internal::norm_voxels_per_step * shape_.c : shape_.c;
    const auto lay_out = [&](const std::vector<float>& per_channel, std::vector<float>& laid_out) {
      laid_out.resize(static_cast<std::size_t>(shape_.n * statistics_stride_));
      for (std::int64_t n = 0; n < shape_.n; ++n) {
        const float* sample = per_channel.data() + n * shape_.c;
        float* to = laid_out.data() + n * statistics_stride_;
        if (repeated) {
          internal::repeat_per_voxel(sample, shape_.c, to);
        } else {
          std::copy_n(sample, shape_.c, to);
        }
      }
    };
    lay_out(stats.mean, mean_);
    lay_out(stats.inv, inv_);
  }

  const shape5& shape() const { return shape_; }

  /// Voxels [x0, x0 + count) of row (n, z, y) into dst channels-last as D: dst[(x - x0) * C + c].
  template <class D>
  void load_run(std::int64_t n, std::int64_t z, std::int64_t y, std::int64_t x0, std::int64_t count, D* dst) const {
    if (!normalised_) {
      load_voxel_run(first_, n, z, y, x0, count, dst, shape_.c);
      if (second_) load_voxel_run(*second_, n, z, y, x0, count, dst + first_.shape().c, shape_.c);
      return;
    }
    for (std::int64_t x = 0; x < count; x += block_voxels_) {
      const std::int64_t voxels = std::min(block_voxels_, count - x);
      D* block = dst + x * shape_.c;
      if constexpr (std::is_same_v<D, S>) {
        load_voxel_run(first_, n, z, y, x0 + x, voxels, block);
        normalize_block(n, voxels, block);
      } else {  // float32 staging of 16-bit storage: normalised and rounded as S, then widened
        S* rounded = scratch<S>(1);
        load_voxel_run(first_, n, z, y, x0 + x, voxels, rounded);
        normalize_block(n, voxels, rounded);
        convert_run(rounded, block, voxels * shape_.c);
      }
    }
  }

  /// The whole row (n, z, y): load_run from x = 0.
  template <class D>
  void load_row(std::int64_t n, std::int64_t z, std::int64_t y, D* dst) const {
    load_run(n, z, y, 0, shape_.w, dst);
  }

  /// load_row quantized to uint8 (int8 + zero point) with 1 / scale = `inverse_scale`.
  void quantize_row(std::int64_t n, std::int64_t z, std::int64_t y, std::uint8_t* dst, float inverse_scale) const {
    if (!normalised_) {
      quantize_voxel_row(first_, n, z, y, dst, inverse_scale, shape_.c);
      if (second_) quantize_voxel_row(*second_, n, z, y, dst + first_.shape().c, inverse_scale, shape_.c);
      return;
    }
    float* block = scratch<float>(2);
    for (std::int64_t x = 0; x < shape_.w; x += block_voxels_) {
      const std::int64_t voxels = std::min(block_voxels_, shape_.w - x);
      load_run(n, z, y, x, voxels, block);
      int8_dot::quantize_run(block, dst + x * shape_.c, voxels * shape_.c, inverse_scale);
    }
  }

  /// The largest magnitude of the values a load reads (a dynamic int8 scale's measure), on the workers.
  float largest_magnitude(context& ctx) const {
    if (!normalised_) {
      const float first = largest_input_magnitude(ctx, first_);
      return second_ ? std::max(first, largest_input_magnitude(ctx, *second_)) : first;
    }
    const std::int64_t rows = shape_.n * shape_.d * shape_.h;
    std::vector<float> largest(static_cast<std::size_t>(rows), 0.0f);
    ctx.parallel_for(rows, 1, [&](std::int64_t r0, std::int64_t r1, int) {
      float* block = scratch<float>(2);
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t y = r % shape_.h, z = (r / shape_.h) % shape_.d, n = r / (shape_.h * shape_.d);
        float m = 0;
        for (std::int64_t x = 0; x < shape_.w; x += block_voxels_) {
          const std::int64_t voxels = std::min(block_voxels_, shape_.w - x);
          load_run(n, z, y, x, voxels, block);
          m = std::max(m, ops::largest_magnitude(block, voxels * shape_.c));
        }
        largest[static_cast<std::size_t>(r)] = m;
      }
    });
    return largest.empty() ? 0.0f : *std::max_element(largest.begin(), largest.end());
  }

  /// The input as one volume (calibration hands it to its observer): the volume itself, or the concatenation or
  /// the normalised volume written out.
  tensor<S> materialized(context& ctx) const {
    tensor<S> out(shape_, first_.layout());
    if (second_) {
      concat_channels(ctx, {&first_, second_}, out);
    } else {
      convert(ctx, first_, out);
      if (normalised_) instance_norm(ctx, out, static_cast<const tensor<S>*>(nullptr), epilogue_);
    }
    return out;
  }

 private:
  /// Values normalised at a time: a block of voxels' channels (at least one voxel).
  static constexpr std::int64_t block_floats = 2048;

  /// Thread-local scratch `slot` (0: normalize_run's float32 values, 1: a block rounded to S, 2: a float32 block for
  /// quantizing) of one block, as T; any worker may stage.
  template <class T>
  T* scratch(int slot) const {
    thread_local std::vector<float> buffers[3];
    auto& b = buffers[slot];
    const std::int64_t floats = block_voxels_ * shape_.c;
    if (static_cast<std::int64_t>(b.size()) < floats) b.resize(static_cast<std::size_t>(floats));
    return reinterpret_cast<T*>(b.data());
  }

  /// x = act((x - mean) * inv) in place for `voxels` voxels of sample n held as S, rounded to S (cpu::instance_norm's
  /// arithmetic, which this must equal).
  void normalize_block(std::int64_t n, std::int64_t voxels, S* x) const {
    internal::normalize_run(x, static_cast<const S*>(nullptr), voxels, shape_.c, mean_.data() + n * statistics_stride_,
                            inv_.data() + n * statistics_stride_, epilogue_, scratch<float>(0), nullptr);
  }

  const tensor<S>& first_;
  const tensor<S>* second_ = nullptr;
  bool normalised_ = false;
  ops::instance_norm_epilogue epilogue_;
  shape5 shape_;
  std::int64_t block_voxels_ = 0;       ///< voxels normalised at a time
  std::int64_t statistics_stride_ = 0;  ///< per sample in mean_ and inv_
  std::vector<float> mean_, inv_;       ///< the statistics, laid out for normalize_run
};

}  // namespace swinfer::cpu
