// swinfer oneDNN backend: the quantized 3-D convolution and k2s2 transposed convolution of precision::int8
// (docs/int8.md).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/int8_weights.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::onednn {

/// The convolution of an int8_convolution: its oneDNN primitive and descriptor, weight dims (cout, cin, k...) and
/// the input's int8 scheme.
struct int8_conv3d_geometry {
  using primitive = dnnl::convolution_forward;
  static constexpr const char* name = "int8 conv3d";
  ops::conv3d_problem p;

  int cout() const { return p.cout; }
  dnnl::memory::dims weight_dims() const { return {p.cout, p.cin, p.kernel[0], p.kernel[1], p.kernel[2]}; }
  primitive::desc desc(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                       const dnnl::memory::desc& dst) const {
    const dnnl::memory::dims stride{p.stride[0], p.stride[1], p.stride[2]}, pad{p.pad[0], p.pad[1], p.pad[2]};
    return {dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, weights, dst, stride, pad,
            pad};
  }
};

/// The kernel-2, stride-2 transposed convolution (oneDNN's deconvolution: the adjoint of its convolution, which is
/// PyTorch's definition).
struct int8_conv_transpose3d_geometry {
  using primitive = dnnl::deconvolution_forward;
  static constexpr const char* name = "int8 conv_transpose3d";
  ops::conv_transpose3d_problem p;

  int cout() const { return p.cout; }
  dnnl::memory::dims weight_dims() const { return {p.cout, p.cin, 2, 2, 2}; }
  primitive::desc desc(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                       const dnnl::memory::desc& dst) const {
    return {dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src, weights, dst, {2, 2, 2},
            {0, 0, 0}, {0, 0, 0}};
  }
};

/// \brief A convolution (Geometry) on int8: out[o] = float(sum q_x q_w[o]) * s_x * s_w[o] + bias[o], float32
/// volumes in and out.
///
/// The input is quantized by a reorder into the s8 layout the primitive chose (x * (1 / s_x), rounded half to even
/// and saturated to [-128, 127]: ops::quantize_activation; s_x calibrated, or the input's own when dynamic), the
/// weights per output channel (ops::channel_quantized_weights, given in (cout, cin, k...) order). Primitive:
/// convolution_forward or deconvolution_forward with s8 src and weights, f32 dst (layouts format_tag::any), s32
/// accumulation, per-output-channel output scales s_w[o] (mask 1 << 1), then post-ops: binary_mul by s_x (a
/// one-value memory given at run time, so a dynamic scale needs no new primitive) and binary_add of the bias
/// (oneDNN 2.x adds a convolution's own bias before the output scales in int8, a post-op after them, as the scheme
/// does).
///
/// oneDNN's s8 x s8 convolution adds 128 to the source to use u8 x s8 instructions. Without VNNI (vpmaddubsw sums
/// byte pairs into int16) it halves the weights to keep those sums from saturating: the weights descriptor's
/// scale_adjust 0.5, which drops the last bit of every odd weight. To stay exact there the weights are split
/// (split_int8_weights), each part stored exactly (the weight reorder's scale 1 / scale_adjust undoes the halving),
/// and run as two convolutions into one output, the second adding to the first (sum post-op): twice the products on
/// those CPUs (AVX2, AVX-512 without VNNI), one pass with VNNI.
template <class Geometry>
class int8_convolution {
 public:
  /// `weights` holds the quantized weights in (cout, cin, k...) order; `g.p` must be quantized, its parameters
  /// checked by the caller.
  int8_convolution(context& ctx, const Geometry& g, ops::channel_quantized_weights weights, const float* bias_or_null)
      : ctx_(ctx), g_(g), quantized_(std::move(weights)) {
    if (bias_or_null) bias_ = f32_memory(ctx, {1, g.cout(), 1, 1, 1}, bias_or_null);
  }

  void run(const tensor<float>& in, tensor<float>& out) {
    const dnnl::memory src = wrap_volume(ctx_, in), dst = wrap_volume(ctx_, out);
    const plan& pl = plan_for(src.get_desc(), dst.get_desc());
    float scale = g_.p.int8.scale_for(in);
    dnnl::memory q(pl.passes.front().pd.src_desc(), ctx_.engine());
    ctx_.reorder_scaled(src, q, 1.0f / scale);
    const dnnl::memory input_scale(scalar_md(), ctx_.engine(), &scale);
    const auto& dst_desc = pl.passes.front().pd.dst_desc();
    const dnnl::memory d = dst_desc == dst.get_desc() ? dst : dnnl::memory(dst_desc, ctx_.engine());
    for (std::size_t i = 0; i < pl.passes.size(); ++i) {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, q},
                                                 {DNNL_ARG_WEIGHTS, pl.passes[i].weights},
                                                 {DNNL_ARG_DST, d},
                                                 {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, input_scale}};
      if (i == 0 && bias_) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = bias_;
      ctx_.execute(pl.passes[i].prim, args);
    }
    if (d != dst) ctx_.reorder(d, dst);
  }

 private:
  /// One convolution over the quantized input: weights `multiplier` x its stored values (q, or h and l).
  struct pass {
    typename Geometry::primitive::primitive_desc pd;
    typename Geometry::primitive prim;
    dnnl::memory weights;
  };
  /// The passes for one pair of input and output descriptors.
  struct plan {
    std::vector<pass> passes;
  };

  const plan& plan_for(const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    const std::string key = cache_key(context::desc_key(src), context::desc_key(dst));
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      it = plans_.emplace(key, context::created(Geometry::name, [&] { return make_plan(src, dst); })).first;
    }
    return it->second;
  }

  /// The activation scale's memory: one value, broadcast by the binary_mul post-op.
  static dnnl::memory::desc scalar_md() { return {{1, 1, 1, 1, 1}, dt::f32, tag::abcde}; }

  /// Output scales of a pass whose weights count `multiplier` times: s_w[o] * multiplier, times the weights'
  /// scale_adjust, which the convolution divides its sums by. The activation scale follows as a post-op.
  std::vector<float> output_scales(float multiplier, float adjust) const {
    std::vector<float> s(quantized_.scales.size());
    for (std::size_t o = 0; o < s.size(); ++o) s[o] = quantized_.scales[o] * multiplier * adjust;
    return s;
  }

  typename Geometry::primitive::primitive_desc make_pd(const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                                                       const std::vector<float>& scales, bool first) const {
    const auto desc = g_.desc(dnnl::memory::desc(src.dims(), dt::s8, tag::any),
                              dnnl::memory::desc(g_.weight_dims(), dt::s8, tag::any),
                              dnnl::memory::desc(dst.dims(), dt::f32, tag::any));
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_mul, scalar_md());
    if (!first) {
      po.append_sum(1.0f);
    } else if (bias_) {
      po.append_binary(dnnl::algorithm::binary_add, bias_.get_desc());
    }
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, scales);
    attr.set_post_ops(po);
    return {desc, attr, ctx_.engine()};
  }

  plan make_plan(const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    // The weight layout and its scale_adjust do not depend on the output scales: ask once with any.
    const auto probe = make_pd(src, dst, output_scales(1, 1), true);
    const auto& extra = probe.weights_desc().data.extra;
    const float adjust = extra.flags & dnnl_memory_extra_flag_scale_adjust ? extra.scale_adjust : 1.0f;
    if (adjust != 1.0f && adjust != 0.5f) {
      detail::fail("oneDNN's ", Geometry::name, " scales its weights by ", adjust,
                   ", which swinfer cannot undo exactly");
    }
    auto parts = split_int8_weights(quantized_.values, adjust == 1.0f ? 127 : 64);
    plan pl;
    for (auto& [multiplier, values] : parts) {
      auto pd = make_pd(src, dst, output_scales(multiplier, adjust), pl.passes.empty());
      if (pd.src_desc() != probe.src_desc() || pd.dst_desc() != probe.dst_desc()) {
        detail::fail("oneDNN's ", Geometry::name, " chose other layouts for the two halves of its weights");
      }
      pl.passes.push_back(
          {pd, typename Geometry::primitive(pd), stored_weights(pl.passes.size(), pd, values, adjust)});
    }
    return pl;
  }

  /// Part `index` of the weights in the layout `pd` wants: another plan's copy where one has that layout, else
  /// reordered from `values` scaled by 1 / adjust (stored exactly).
  dnnl::memory stored_weights(std::size_t index, const typename Geometry::primitive::primitive_desc& pd,
                              std::vector<std::int8_t>& values, float adjust) const {
    for (const auto& [key, other] : plans_) {
      if (index < other.passes.size() && other.passes[index].pd.weights_desc() == pd.weights_desc()) {
        return other.passes[index].weights;
      }
    }
    const dnnl::memory plain({g_.weight_dims(), dt::s8, tag::oidhw}, ctx_.engine(), values.data());
    dnnl::memory stored(pd.weights_desc(), ctx_.engine());
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {1.0f / adjust});
    const dnnl::reorder::primitive_desc rpd(ctx_.engine(), plain.get_desc(), ctx_.engine(), stored.get_desc(), attr);
    ctx_.execute(dnnl::reorder(rpd), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, stored}});
    return stored;
  }

  context& ctx_;
  Geometry g_;
  ops::channel_quantized_weights quantized_;
  dnnl::memory bias_;  ///< (1, cout, 1, 1, 1) for the binary_add post-op; empty without a bias
  std::unordered_map<std::string, plan> plans_;
};

}  // namespace swinfer::onednn
