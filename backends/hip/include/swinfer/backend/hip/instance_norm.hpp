// swinfer hip backend: InstanceNorm (no affine, batch statistics) with the residual add and LeakyReLU after it, and
// the moments a convolution gathers of its output so that the norm need not read the tensor for them.
#pragma once

#include <cstdint>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::hip {

/// \brief InstanceNorm's moments of one tensor on the device, per (sample, channel): gathered by the convolution
/// that stored the tensor (conv3d::run with moments; a statistics pass after the kernels that cannot), taken by
/// instance_norm, instance_norm_sum and a convolution that normalises its input on load instead of reading the
/// tensor again. Records as api.hpp's; the statistics for a norm's eps are finalized where they are used.
class channel_moments {
 public:
  /// Room for the moments of x (kept where it is large enough), to be filled through the returned sink.
  moment_sink prepare(const shape5& shape, const strided5& desc) {
    const std::size_t records = instance_norm_records_bytes(desc);
    const std::size_t bytes = records + static_cast<std::size_t>(shape.n * shape.c) * 2 * sizeof(float);
    if (buffer_.bytes() < bytes) buffer_ = device_buffer(bytes);
    shape_ = shape;
    statistics_offset_ = records;
    chunks_ = 0;  // nothing gathered for this shape until the sink is filled
    return {static_cast<float*>(buffer_.get()), 0};
  }
  /// What the filled sink says: the records per (sample, channel).
  void gathered(const moment_sink& sink) { chunks_ = sink.chunks; }

  /// Fails, naming `op` and both shapes, unless these are moments gathered for a tensor of shape s.
  void check_for(const shape5& s, const char* op) const {
    if (chunks_ == 0 || !(shape_ == s)) {
      detail::fail(op, ": the moments given were gathered for ", chunks_ == 0 ? "no tensor" : shape_.str(),
                   ", not for the tensor ", s.str(), " it normalises");
    }
  }
  /// {mean, 1/sqrt(var + eps)} per (sample, channel) on the device (16-byte aligned), finalized on ctx's stream.
  const float* statistics(context& ctx, float eps) const {
    const float* records = static_cast<const float*>(buffer_.get());
    float* stats = static_cast<float*>(static_cast<void*>(static_cast<unsigned char*>(buffer_.get()) +
                                                          statistics_offset_));
    launch_instance_norm_finalize(ctx.env(), records, shape_.n * shape_.c, chunks_, eps, stats);
    return stats;
  }

 private:
  device_buffer buffer_;
  shape5 shape_{};
  std::size_t statistics_offset_ = 0;
  std::int64_t chunks_ = 0;
};

/// x = act(InstanceNorm(x) [+ residual]) in place on a device volume of S (src/norm.cu): float32 statistics per
/// chunk merged in float64.
template <class S>
void instance_norm(context& ctx, device_tensor<S>& x, const device_tensor<S>* residual,
                   const ops::instance_norm_epilogue& e) {
  ops::check_instance_norm(x.shape(), residual ? &residual->shape() : nullptr);
  void* scratch = ctx.scratch(instance_norm_scratch_bytes(x.desc()));
  launch_instance_norm(ctx.env(), dtype_of<S>(), x.data(), x.desc(), residual ? residual->data() : nullptr,
                       residual ? residual->desc() : x.desc(), e.eps, e.negative_slope.has_value(),
                       e.negative_slope.value_or(0.0f), scratch);
}

/// The same with x's moments given (gathered by the convolution that stored x): x is read once, to normalise it.
template <class S>
void instance_norm(context& ctx, device_tensor<S>& x, const channel_moments& x_moments,
                   const device_tensor<S>* residual, const ops::instance_norm_epilogue& e) {
  ops::check_instance_norm(x.shape(), residual ? &residual->shape() : nullptr);
  x_moments.check_for(x.shape(), "instance_norm");
  launch_instance_norm_apply(ctx.env(), dtype_of<S>(), x.data(), x.desc(), x_moments.statistics(ctx, e.eps),
                             residual ? residual->data() : nullptr, residual ? residual->desc() : x.desc(), nullptr,
                             e.negative_slope.has_value(), e.negative_slope.value_or(0.0f));
}

/// x = act(InstanceNorm(x) + InstanceNorm(residual)) in place, both from their gathered moments (a residual block's
/// projected residual, normalised as it is added and never stored normalised; the same eps for both).
template <class S>
void instance_norm_sum(context& ctx, device_tensor<S>& x, const channel_moments& x_moments,
                       const device_tensor<S>& residual, const channel_moments& residual_moments,
                       const ops::instance_norm_epilogue& e) {
  ops::check_instance_norm(x.shape(), &residual.shape());
  x_moments.check_for(x.shape(), "instance_norm_sum");
  residual_moments.check_for(residual.shape(), "instance_norm_sum (the residual's)");
  const float* residual_stats = residual_moments.statistics(ctx, e.eps);
  launch_instance_norm_apply(ctx.env(), dtype_of<S>(), x.data(), x.desc(), x_moments.statistics(ctx, e.eps),
                             residual.data(), residual.desc(), residual_stats, e.negative_slope.has_value(),
                             e.negative_slope.value_or(0.0f));
}

}  // namespace swinfer::hip
