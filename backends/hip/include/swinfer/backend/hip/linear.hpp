// swinfer hip backend: the Linear layer on device token rows, with its bias, GELU and residual-add epilogues, and
// the LayerNorm before it applied on load.
#pragma once

#include <cstddef>
#include <cstdint>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/gemm_weights.hpp"
#include "swinfer/backend/hip/layer_norm.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/ops/linear.hpp"

namespace swinfer::hip {

/// \brief y (=|+=) act(x W^T + b) on device rows of S: W (out, in) stored in S at construction (int8 where
/// precision::int8 quantizes it), the bias in float32 (src/gemm_linear.cu).
template <class S>
class linear {
 public:
  linear(context& ctx, const ops::linear_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    p.check_parameters(weight, bias);
    const std::vector<float> packed = pack_linear_weight(p.in_features, p.out_features, weight);
    weight_ = gemm_weights<S>(ctx, "linear", p.int8, packed, [&] { return quantize_rows(packed, p.out_features); });
    if (p.bias) bias_ = ctx.upload(bias, static_cast<std::size_t>(p.out_features));
  }
  /// x: (rows, in) and y: (rows, out), device pointers.
  void run(const S* x, std::int64_t rows, S* y) { launch(x, rows, y, nullptr); }
  /// y (=|+=) act(pre_norm(x) W^T + b): the rows' LayerNorm statistics taken, then the norm applied as the GEMM
  /// loads x (the normalised rows are never written). y must not alias x.
  void run(const layer_norm<S>& pre_norm, const S* x, std::int64_t rows, S* y) {
    p_.check_pre_norm(pre_norm.channels());
    const layer_norm_args args = pre_norm.args();
    launch(x, rows, y, &args);
  }

 private:
  void launch(const S* x, std::int64_t rows, S* y, const layer_norm_args* pre_norm) {
    p_.check(rows);
    void* scratch = ctx_.scratch(linear_scratch_bytes(rows, pre_norm));
    launch_linear(ctx_.env(), dtype_of<S>(), x, rows, p_.in_features, p_.out_features, weight_.data(),
                  static_cast<const float*>(bias_.get()), p_.gelu, p_.accumulate, y, pre_norm, scratch,
                  weight_.int8());
  }

  context& ctx_;
  ops::linear_problem p_;
  gemm_weights<S> weight_;
  device_buffer bias_;
};

}  // namespace swinfer::hip
