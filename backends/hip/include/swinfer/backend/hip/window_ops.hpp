// swinfer hip backend: the sliding window's volume operations on the device, for the one loop of
// swinfer/inference/sliding_window.hpp (detail::run_sliding_window): the padded image is uploaded once, windows
// are gathered into device batches, predictions blended into a device float32 sum and normalised there; only the
// result leaves the device (logits, or labels by softmax_argmax).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/sliding_window.hpp"

namespace swinfer::hip {

/// A view of item/slot `n` of a device tensor at spatial offset `start`, with extents `extent` (N = 1).
template <class T>
strided5 window_view(const device_tensor<T>& t, std::int64_t n, const std::array<std::int64_t, 3>& start,
                     const std::array<std::int64_t, 3>& extent, std::int64_t* element_offset) {
  const auto& st = t.strides();
  *element_offset = n * st[0] + start[0] * st[2] + start[1] * st[3] + start[2] * st[4];
  return {{1, t.shape().c, extent[0], extent[1], extent[2]}, st};
}

/// \brief detail::run_sliding_window's operations over device tensors (see host_window_ops for the contract).
class window_ops {
 public:
  using volume = device_tensor<float>;

  explicit window_ops(context& ctx) : ctx_(ctx) {}

  /// Uploads the plan's importance map and window starts (the count map is recomputed per voxel from them).
  void begin(const detail::sliding_window_plan& plan) {
    const auto& grid = plan.grid;
    std::vector<std::int64_t> starts;
    for (int a = 0; a < 3; ++a) {
      starts.insert(starts.end(), grid.starts[static_cast<std::size_t>(a)].begin(),
                    grid.starts[static_cast<std::size_t>(a)].end());
      windows_.count[static_cast<std::size_t>(a)] = static_cast<int>(grid.starts[static_cast<std::size_t>(a)].size());
    }
    windows_.roi = grid.roi;
    importance_ = ctx_.upload(plan.importance.data(), static_cast<std::size_t>(plan.importance.size()));
    starts_ = device_buffer(starts.size() * sizeof(std::int64_t));
    copy_to_device(starts_.get(), starts.data(), starts.size() * sizeof(std::int64_t), ctx_.stream());
    ctx_.synchronize();  // `starts` dies here
    windows_.d_starts = static_cast<const std::int64_t*>(starts_.get());
    windows_.d_importance = static_cast<const float*>(importance_.get());
  }
  /// The (padded) host input, uploaded once.
  const volume* stage(const tensor<float>& host, std::vector<volume>& staged) {
    staged.push_back(volume::upload(ctx_, host));
    return &staged.back();
  }
  volume zeros(const shape5& s, layout_kind layout) {
    volume v(s, layout);
    fill_bytes(v.data(), 0, v.bytes(), ctx_.stream());
    return v;
  }
  /// Windows first .. first + batch.n - 1 of the run: one strided device copy each.
  void gather(const volume& source, const window_grid& grid, std::int64_t first, volume& batch) {
    const std::int64_t per_item = grid.count();
    for (std::int64_t slot = 0; slot < batch.shape().n; ++slot) {
      std::int64_t from = 0, to = 0;
      const strided5 src = window_view(source, (first + slot) / per_item, grid.start((first + slot) % per_item),
                                       grid.roi, &from);
      const strided5 dst = window_view(batch, slot, {0, 0, 0}, grid.roi, &to);
      launch_copy(ctx_.env(), dtype::f32, source.data() + from, src, dtype::f32, batch.data() + to, dst, 0);
    }
  }
  /// Adds slot `slot` of a device prediction (any storage type and layout) into batch item `b` of `sum` at `start`.
  template <class T>
  void blend(const device_tensor<T>& prediction, std::int64_t slot, const detail::sliding_window_plan& plan,
             volume& sum, std::int64_t b, const std::array<std::int64_t, 3>& start) {
    std::int64_t from = 0, to = 0;
    const strided5 p = window_view(prediction, slot, {0, 0, 0}, plan.grid.roi, &from);
    const strided5 s = window_view(sum, b, start, plan.grid.roi, &to);
    launch_blend_window(ctx_.env(), device_tensor<T>::type, prediction.data() + from, p, windows_.d_importance,
                        sum.data() + to, s);
  }
  /// Divides by the count map and crops the padding: (N, K, D, H, W) in the sum's layout.
  /// In place when nothing was padded (each voxel is read and written by one thread).
  volume finish(volume sum, const detail::sliding_window_plan& plan) {
    const shape5& s = sum.shape();
    volume out = plan.padded() ? volume({s.n, s.c, plan.image[0], plan.image[1], plan.image[2]}, sum.layout())
                               : std::move(sum);
    const volume& source = plan.padded() ? sum : out;
    launch_normalise_window_sum(ctx_.env(), source.data(), source.desc(), plan.pad_low, windows_, out.data(),
                                out.desc());
    ctx_.synchronize();  // the plan's buffers may be released by the next begin()
    return out;
  }

  /// Labels (N, 1, D, H, W) uint8 on the host: the softmax argmax of device logits, taken on the device.
  tensor<std::uint8_t> softmax_argmax(const volume& logits) {
    const shape5& s = logits.shape();
    if (s.c < 1 || s.c > 256) detail::fail("softmax_argmax: ", s.c, " channels do not fit uint8 labels");
    tensor<std::uint8_t> labels({s.n, 1, s.d, s.h, s.w}, logits.layout());
    device_buffer d_labels(static_cast<std::size_t>(labels.size()));
    const strided5 out{{s.n, 1, s.d, s.h, s.w}, labels.strides()};
    launch_softmax_argmax(ctx_.env(), logits.data(), logits.desc(), static_cast<std::uint8_t*>(d_labels.get()), out);
    copy_to_host(labels.data(), d_labels.get(), d_labels.bytes(), ctx_.stream());
    ctx_.synchronize();
    return labels;
  }

 private:
  context& ctx_;
  device_buffer importance_, starts_;
  window_set windows_;
};

}  // namespace swinfer::hip
