// swinfer oneDNN backend: Linear on token rows (qkv, proj, MLP, patch-merging reduction) as one matmul.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/int8_matmul.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/ops/linear.hpp"

namespace swinfer::onednn {

/// \brief y (rows, out) = epilogue(x (rows, in) . W^T + b): one oneDNN matmul, f32 accumulation, f32 bias.
///
/// Primitive: matmul with src/dst row-major (the callers' buffers, no copies), weights in format_tag::any
/// (PyTorch's (out, in) matrix is W^T in oneDNN's "ba" order, reordered once per primitive weight layout) and
/// the epilogue as post-ops [binary_mul column scale] [eltwise_gelu_erf] [sum]. Post-ops run on the f32
/// accumulator, so the result is rounded to the destination type once. A quantized input (precision::int8,
/// int8.quantized(): float32 rows) runs as int8_matmul instead.
class matmul_layer {
 public:
  matmul_layer(context& ctx, dt src_type, int in_features, int out_features, const float* weight_oi,
               const float* bias_or_null, matmul_epilogue epilogue, const ops::int8_input& int8 = {})
      : ctx_(ctx),
        src_type_(src_type),
        dst_type_(epilogue.dst_type == dt::undef ? src_type : epilogue.dst_type),
        in_(in_features),
        out_(out_features),
        epilogue_(std::move(epilogue)) {
    if (!epilogue_.column_scale.empty() && static_cast<int>(epilogue_.column_scale.size()) != out_) {
      detail::fail("matmul column scale needs ", out_, " values");
    }
    if (int8.quantized()) {
      if (src_type != dt::f32) detail::fail("linear: int8 products read float32 rows");
      int8_ = std::make_unique<int8_matmul>(ctx, in_features, out_features, weight_oi, bias_or_null, epilogue_, int8);
      return;
    }
    weights_.emplace(ctx, dnnl::memory::dims{in_features, out_features}, tag::ba, src_type, weight_oi);
    if (bias_or_null) bias_ = f32_memory(ctx, {1, out_}, bias_or_null);
    if (!epilogue_.column_scale.empty()) {
      column_scale_ = f32_memory(ctx, {1, out_}, epilogue_.column_scale.data());
    }
  }

  /// x: rows x in values of the source type; y: rows x out values of the destination type.
  void run(const void* x, std::int64_t rows, void* y) {
    if (int8_) {
      int8_->run(static_cast<const float*>(x), rows, y);
      return;
    }
    if (rows == 0) return;
    const dnnl::memory::desc src_md({rows, in_}, src_type_, tag::ab), dst_md({rows, out_}, dst_type_, tag::ab);
    const bool has_bias = static_cast<bool>(bias_), has_scale = static_cast<bool>(column_scale_);
    const auto& e = ctx_.cached<entry>(
        cache_key("matmul", rows, in_, out_, static_cast<int>(src_type_), static_cast<int>(dst_type_), has_bias,
                  has_scale, epilogue_.gelu, epilogue_.accumulate),
        [&] {
          dnnl::post_ops po;
          if (has_scale) po.append_binary(dnnl::algorithm::binary_mul, column_scale_.get_desc());
          if (epilogue_.gelu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
          if (epilogue_.accumulate) po.append_sum(1.0f);
          auto attr = context::strict_attr();
          attr.set_post_ops(po);
          const dnnl::memory::desc wei_any({in_, out_}, src_type_, tag::any);
          const auto desc = has_bias ? dnnl::matmul::desc(src_md, wei_any, bias_.get_desc(), dst_md)
                                     : dnnl::matmul::desc(src_md, wei_any, dst_md);
          const dnnl::matmul::primitive_desc pd(desc, attr, ctx_.engine());
          return entry{pd, dnnl::matmul(pd)};
        });
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap(ctx_, src_md, x)},
                                               {DNNL_ARG_WEIGHTS, weights_->get(e.pd.weights_desc())},
                                               {DNNL_ARG_DST, wrap(ctx_, dst_md, y)}};
    if (has_bias) args[DNNL_ARG_BIAS] = bias_;
    if (has_scale) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = column_scale_;
    ctx_.execute(e.prim, args);
  }

 private:
  struct entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };

  context& ctx_;
  dt src_type_, dst_type_;
  int in_, out_;
  matmul_epilogue epilogue_;
  std::optional<weights_store> weights_;  ///< float path
  dnnl::memory bias_, column_scale_;
  std::unique_ptr<int8_matmul> int8_;  ///< int8 path (a quantized input)
};

/// \brief The Linear layer of the kernels contract: y (rows, out) = or += act(x (rows, in) W^T + b).
/// One matmul_layer: bias as the matmul bias, GELU and accumulate as post-ops.
template <class S>
class linear {
 public:
  linear(context& ctx, const ops::linear_problem& p, const float* weight_oi, const float* bias_or_null)
      : p_(checked(p, weight_oi, bias_or_null)),
        layer_(ctx, data_type_of<S>(), p.in_features, p.out_features, weight_oi, p.bias ? bias_or_null : nullptr,
               matmul_epilogue{{}, p.gelu, p.accumulate, dt::undef}, p.int8) {}

  void run(const S* x, std::int64_t rows, S* y) {
    p_.check(rows);
    layer_.run(x, rows, y);
  }

 private:
  static const ops::linear_problem& checked(const ops::linear_problem& p, const float* weight, const float* bias) {
    p.check_parameters(weight, bias);
    return p;
  }

  ops::linear_problem p_;
  matmul_layer layer_;
};

}  // namespace swinfer::onednn
