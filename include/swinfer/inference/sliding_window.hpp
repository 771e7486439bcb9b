// swinfer: MONAI's sliding_window_inference: windows over a volume, batched predictor calls, weighted blending.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/importance_map.hpp"
#include "swinfer/detail/parallel_for.hpp"
#include "swinfer/inference/spatial_pad.hpp"
#include "swinfer/inference/sliding_window_options.hpp"
#include "swinfer/inference/window_grid.hpp"

namespace swinfer {

/// Called after each predictor call with the number of windows done so far and the total (over the whole batch).
using progress_callback = std::function<void(std::int64_t windows_done, std::int64_t windows_total)>;

namespace detail {

/// Everything about a run that follows from the image shape and the options alone.
struct sliding_window_plan {
  std::array<std::int64_t, 3> image{};     ///< spatial size of the input
  std::array<std::int64_t, 3> pad_low{};   ///< padding before each axis when the image is smaller than the roi
  std::array<std::int64_t, 3> pad_high{};  ///< ... and after (the odd voxel goes here)
  window_grid grid;                        ///< windows over the padded volume
  tensor<float> importance;                ///< (1, 1, roi) weights

  bool padded() const { return pad_low != std::array<std::int64_t, 3>{} || pad_high != std::array<std::int64_t, 3>{}; }
};

/// The window size over an image of shape `s`: the roi, or the image's extent where it is 0 or less (MONAI's
/// fall_back_tuple).
inline std::array<std::int64_t, 3> window_roi(const shape5& s, const sliding_window_options& o) {
  auto roi = o.roi.resolve("roi");
  const std::array<std::int64_t, 3> image{s.d, s.h, s.w};
  for (std::size_t a = 0; a < 3; ++a)
    if (roi[a] <= 0) roi[a] = image[a];
  return roi;
}

/// The grid the windows run over and the blended sum covers: the image, grown to the roi where it is smaller.
inline std::array<std::int64_t, 3> padded_grid(const shape5& s, const sliding_window_options& o) {
  const auto roi = window_roi(s, o);
  return {std::max(s.d, roi[0]), std::max(s.h, roi[1]), std::max(s.w, roi[2])};
}

inline sliding_window_plan plan_sliding_window(const shape5& s, const sliding_window_options& o) {
  if (s.n < 1 || s.c < 1 || s.d < 1 || s.h < 1 || s.w < 1)
    fail("sliding_window_inference: the image has shape ", s.str(), "; every extent must be at least 1");
  check_sliding_window_options(o, "sliding_window_inference");
  const auto overlap = o.overlap.resolve("overlap");
  sliding_window_plan p;
  p.image = {s.d, s.h, s.w};
  const auto roi = window_roi(s, o);
  const auto padded_size = padded_grid(s, o);
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t diff = padded_size[a] - p.image[a];
    p.pad_low[a] = diff / 2;
    p.pad_high[a] = diff - diff / 2;
  }
  p.grid = make_window_grid(padded_size, roi, overlap);
  p.importance = importance_map(roi, o.mode, o.mode == blend_mode::gaussian ? o.sigma_scale.resolve("sigma_scale")
                                                                            : std::array<double, 3>{1.0, 1.0, 1.0});
  return p;
}

/// Copies the window at `start` of batch item `b` of `source` into slot `slot` of `batch` (same layout).
inline void gather_window(const tensor<float>& source, std::int64_t b, const std::array<std::int64_t, 3>& start,
                          tensor<float>& batch, std::int64_t slot) {
  const shape5& w = batch.shape();
  const bool channels_last = source.layout() == layout_kind::ndhwc;
  for (std::int64_t z = 0; z < w.d; ++z)
    for (std::int64_t y = 0; y < w.h; ++y) {
      if (channels_last) {
        std::memcpy(&batch(slot, 0, z, y, 0), &source(b, 0, start[0] + z, start[1] + y, start[2]),
                    static_cast<std::size_t>(w.w * w.c) * sizeof(float));
      } else {
        for (std::int64_t c = 0; c < w.c; ++c)
          std::memcpy(&batch(slot, c, z, y, 0), &source(b, c, start[0] + z, start[1] + y, start[2]),
                      static_cast<std::size_t>(w.w) * sizeof(float));
      }
    }
}

/// out[k, x] += prediction[k, x] * weight[x] over one window row of `channels` x `width`, for any strides; the two
/// packed layouts get unit-stride inner loops the compiler vectorises.
inline void blend_row(float* __restrict out, std::int64_t out_k, std::int64_t out_x, const float* __restrict pred,
                      std::int64_t pred_k, std::int64_t pred_x, const float* __restrict weight, std::int64_t channels,
                      std::int64_t width) {
  if (out_x == 1 && pred_x == 1) {
    for (std::int64_t k = 0; k < channels; ++k) {
      float* o = out + k * out_k;
      const float* p = pred + k * pred_k;
      for (std::int64_t x = 0; x < width; ++x) o[x] += p[x] * weight[x];
    }
  } else if (out_k == 1 && pred_k == 1) {
    for (std::int64_t x = 0; x < width; ++x) {
      float* o = out + x * out_x;
      const float* p = pred + x * pred_x;
      const float w = weight[x];
      for (std::int64_t k = 0; k < channels; ++k) o[k] += p[k] * w;
    }
  } else {
    for (std::int64_t k = 0; k < channels; ++k)
      for (std::int64_t x = 0; x < width; ++x) out[k * out_k + x * out_x] += pred[k * pred_k + x * pred_x] * weight[x];
  }
}

/// Adds slot `slot` of `prediction`, weighted by the importance map, into batch item `b` of `sum` at `start`.
/// Rows are independent, so they are split over threads; windows are blended one after another, which keeps every
/// voxel's sum in MONAI's window order.
inline void blend_window(const tensor<float>& prediction, std::int64_t slot, const float* importance,
                         tensor<float>& sum, std::int64_t b, const std::array<std::int64_t, 3>& start, int threads) {
  const shape5& p = prediction.shape();
  const auto& ps = prediction.strides();
  const auto& ss = sum.strides();
  const std::int64_t rows = p.d * p.h;
  parallel_for(rows, loop_threads(threads, rows, p.c * p.w), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t z = r / p.h, y = r % p.h;
      blend_row(&sum(b, 0, start[0] + z, start[1] + y, start[2]), ss[1], ss[4], &prediction(slot, 0, z, y, 0), ps[1],
                ps[4], importance + r * p.w, p.c, p.w);
    }
  });
}

/// Row (z, y) of MONAI's count map over the image's own voxels (x = 0 .. W-1, padding excluded), in MONAI's float32
/// summation order.
inline void cropped_count_row(const sliding_window_plan& plan, std::int64_t z, std::int64_t y, float* row) {
  const auto [lz, ly, lx] = plan.pad_low;
  importance_count_row(plan.grid, plan.importance.data(), z + lz, y + ly, lx, lx + plan.image[2], row);
}

/// Divides the weighted sum by the importance count and crops the padding away (in place when there is none).
inline tensor<float> normalise_and_crop(tensor<float> sum, const sliding_window_plan& plan, int threads) {
  const shape5 s = sum.shape();
  // Named copies, not structured bindings: the lambda below captures them, which clang < 16 rejects.
  const std::int64_t d = plan.image[0], h = plan.image[1], w = plan.image[2];
  const std::int64_t lz = plan.pad_low[0], ly = plan.pad_low[1], lx = plan.pad_low[2];
  tensor<float> out = plan.padded() ? tensor<float>({s.n, s.c, d, h, w}, sum.layout()) : std::move(sum);
  const tensor<float>& source = plan.padded() ? sum : out;
  const bool channels_last = out.layout() == layout_kind::ndhwc;
  const std::int64_t out_k = out.strides()[1], in_k = source.strides()[1];
  const std::int64_t rows = d * h;
  parallel_for(rows, loop_threads(threads, rows, s.n * s.c * w), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> count_row(static_cast<std::size_t>(w));
    const float* count = count_row.data();
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t z = r / h, y = r % h;
      cropped_count_row(plan, z, y, count_row.data());
      for (std::int64_t n = 0; n < s.n; ++n) {
        float* o = &out(n, 0, z, y, 0);
        const float* in = &source(n, 0, z + lz, y + ly, lx);
        if (channels_last) {  // innermost loop over the contiguous axis
          for (std::int64_t x = 0; x < w; ++x)
            for (std::int64_t k = 0; k < s.c; ++k) o[x * s.c + k] = in[x * s.c + k] / count[x];
        } else {
          for (std::int64_t k = 0; k < s.c; ++k)
            for (std::int64_t x = 0; x < w; ++x) o[k * out_k + x] = in[k * in_k + x] / count[x];
        }
      }
    }
  });
  return out;
}

/// \brief The sliding-window loop's volume operations in host memory. A device backend supplies the same members
/// over its own tensors (hip::window_ops), so one loop (run_sliding_window) serves both.
struct host_window_ops {
  using volume = tensor<float>;
  int threads = 0;

  void begin(const sliding_window_plan&) {}
  /// The (padded) input as the loop reads it: here the host tensor itself; `staged` holds what a device copies.
  const volume* stage(const tensor<float>& host, std::vector<volume>& /*staged*/) { return &host; }
  volume zeros(const shape5& s, layout_kind layout) {
    volume v(s, layout);
    parallel_for(v.size(), loop_threads(threads, v.size(), 1), [&](std::int64_t begin, std::int64_t end) {
      std::fill(v.data() + begin, v.data() + end, 0.0f);
    });
    return v;
  }
  /// Windows first .. first + batch.n - 1 of the run (window g is window g % per_item of batch item g / per_item).
  void gather(const volume& source, const window_grid& grid, std::int64_t first, volume& batch) {
    const std::int64_t n = batch.shape().n, per_item = grid.count();
    parallel_for(n, loop_threads(threads, n, batch.size() / n), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t slot = begin; slot < end; ++slot)
        gather_window(source, (first + slot) / per_item, grid.start((first + slot) % per_item), batch, slot);
    });
  }
  void blend(const tensor<float>& prediction, std::int64_t slot, const sliding_window_plan& plan, volume& sum,
             std::int64_t b, const std::array<std::int64_t, 3>& start) {
    blend_window(prediction, slot, plan.importance.data(), sum, b, start, threads);
  }
  volume finish(volume sum, const sliding_window_plan& plan) {
    return normalise_and_crop(std::move(sum), plan, threads);
  }
};

/// The loop shared by every entry point: `inputs` are the image and any inputs windowed alongside it (same shape);
/// `call` maps the vector of window batches (Ops::volume, one per input) to the prediction; `ops` keeps the volumes
/// in host memory (host_window_ops) or on a device. Padding happens on the host, before anything is staged.
template <class Ops, class CallPredictor>
typename Ops::volume run_sliding_window(Ops& ops, const std::vector<const tensor<float>*>& inputs,
                                        const sliding_window_options& o, CallPredictor&& call,
                                        const progress_callback& progress) {
  using volume = typename Ops::volume;
  const tensor<float>& image = *inputs[0];
  const sliding_window_plan plan = plan_sliding_window(image.shape(), o);
  ops.begin(plan);
  std::vector<tensor<float>> padded;
  std::vector<volume> staged;
  padded.reserve(inputs.size());  // `sources` may point into both
  staged.reserve(inputs.size());
  std::vector<const volume*> sources;
  for (const tensor<float>* input : inputs) {
    if (plan.padded())
      padded.push_back(pad_spatial(*input, plan.pad_low, plan.pad_high, o.padding_mode, o.cval, o.threads));
    sources.push_back(ops.stage(plan.padded() ? padded.back() : *input, staged));
  }

  const auto [rd, rh, rw] = plan.grid.roi;
  const std::int64_t batch_items = image.shape().n, per_item = plan.grid.count(), total = batch_items * per_item;
  volume sum;
  std::vector<volume> batches(inputs.size());
  for (std::int64_t first = 0; first < total; first += o.sw_batch_size) {
    const std::int64_t n = std::min(o.sw_batch_size, total - first);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const shape5 want{n, sources[i]->shape().c, rd, rh, rw};
      if (!(batches[i].shape() == want) || batches[i].layout() != sources[i]->layout())
        batches[i] = volume(want, sources[i]->layout());
      ops.gather(*sources[i], plan.grid, first, batches[i]);
    }

    const auto prediction = call(std::as_const(batches));
    const shape5& ps = prediction.shape();
    const std::int64_t channels = sum.size() ? sum.shape().c : ps.c;
    if (!(ps == shape5{n, channels, rd, rh, rw}) || channels < 1)
      fail("sliding_window_inference: the predictor returned shape ", ps.str(), " for a window batch of shape ",
           batches[0].shape().str(), "; expected (", n, ", ", sum.size() ? std::to_string(channels) : "K >= 1", ", ",
           rd, ", ", rh, ", ", rw, "): one output per window, the same channel count every call, and the roi's size");
    if (!sum.size()) {
      const shape5& padded_shape = sources[0]->shape();
      sum = ops.zeros({batch_items, channels, padded_shape.d, padded_shape.h, padded_shape.w}, image.layout());
    }
    for (std::int64_t slot = 0; slot < n; ++slot) {
      const std::int64_t g = first + slot;
      ops.blend(prediction, slot, plan, sum, g / per_item, plan.grid.start(g % per_item));
    }
    if (progress) progress(first + n, total);
  }
  return ops.finish(std::move(sum), plan);
}

template <class Predictor, class... Batches>
tensor<float> invoke_predictor(Predictor& predict, const Batches&... batches) {
  using result = std::invoke_result_t<Predictor&, const Batches&...>;
  static_assert(std::is_same_v<std::remove_const_t<result>, tensor<float>>,
                "the predictor must return a swinfer::tensor<float> (B, K, rd, rh, rw) by value");
  return std::invoke(predict, batches...);
}

}  // namespace detail

/// The windows sliding_window_inference will run over one batch item of an image of shape `s` (for progress and
/// reports before the run starts).
inline window_grid sliding_window_grid(const shape5& s, const sliding_window_options& options) {
  return detail::plan_sliding_window(s, options).grid;
}

/// \brief MONAI's sliding_window_inference (1.5.0 and 1.6.1 give identical results) on a (N, C, D, H, W) float32
/// image in either layout.
///
/// `predict` maps a window batch (B, C, rd, rh, rw), B <= sw_batch_size, in the image's layout to float32 logits
/// (B, K, rd, rh, rw) in any layout; K is taken from its first call. Windows are taken in MONAI's order (first
/// spatial axis slowest, then over the batch), their outputs weighted by the importance map, summed in place and
/// divided by the summed weights. An image smaller than the roi is padded (half before, the odd voxel after) and the
/// result cropped back. Returns (N, K, D, H, W) in the image's layout. Holds one window batch at a time.
template <class Predictor>
tensor<float> sliding_window_inference(const tensor<float>& image, const sliding_window_options& options,
                                       Predictor&& predict, const progress_callback& progress = {}) {
  detail::host_window_ops ops{options.threads};
  return detail::run_sliding_window(
      ops, {&image}, options,
      [&](const std::vector<tensor<float>>& batches) { return detail::invoke_predictor(predict, batches[0]); },
      progress);
}

/// \brief The same with MONAI 1.6's `condition`: a second input of the image's shape, padded and windowed alongside it;
/// `predict(window_batch, condition_batch)` receives both.
template <class Predictor>
tensor<float> sliding_window_inference(const tensor<float>& image, const tensor<float>& condition,
                                       const sliding_window_options& options, Predictor&& predict,
                                       const progress_callback& progress = {}) {
  if (!(condition.shape() == image.shape()))
    detail::fail("sliding_window_inference: condition has shape ", condition.shape().str(), " but the image has ",
                 image.shape().str(), "; they must match");
  detail::host_window_ops ops{options.threads};
  return detail::run_sliding_window(
      ops, {&image, &condition}, options,
      [&](const std::vector<tensor<float>>& batches) {
        return detail::invoke_predictor(predict, batches[0], batches[1]);
      },
      progress);
}

}  // namespace swinfer
