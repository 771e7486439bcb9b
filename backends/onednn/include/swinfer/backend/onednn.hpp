// swinfer: the oneDNN backend, the trusted CPU reference every other backend is checked against.
//
// Include this header (and link DNNL::dnnl, plus OpenMP for engine_options::threads) to use
// swinfer::backend::onednn. It implements fp32 and bf16 (storage float / Eigen::bfloat16, f32 accumulation inside
// oneDNN) with both layouts, and int8 (the products a calibration quantizes run on oneDNN's s8 convolution,
// deconvolution and matmul, int8_convolution.hpp and int8_matmul.hpp; everything else in float32). fp16 is not
// offered: oneDNN 2.6's CPU fp16 coverage is too thin to be a reference.
// Every op builds its oneDNN primitive once per problem shape (cached in the context) and reorders its weights
// once per primitive weight layout; caller tensors are wrapped in place.
#pragma once

#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/concat.hpp"
#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/conv3d.hpp"
#include "swinfer/backend/onednn/conv_transpose3d.hpp"
#include "swinfer/backend/onednn/convert.hpp"
#include "swinfer/backend/onednn/instance_norm.hpp"
#include "swinfer/backend/onednn/layer_norm.hpp"
#include "swinfer/backend/onednn/linear.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/backend/onednn/patch_merging.hpp"
#include "swinfer/backend/onednn/pool3d.hpp"
#include "swinfer/backend/onednn/window_attention.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer {

template <>
inline constexpr bool is_supported_v<backend::onednn, precision::fp32, layout::ncdhw> = true;
template <>
inline constexpr bool is_supported_v<backend::onednn, precision::fp32, layout::ndhwc> = true;
template <>
inline constexpr bool is_supported_v<backend::onednn, precision::bf16, layout::ncdhw> = true;
template <>
inline constexpr bool is_supported_v<backend::onednn, precision::bf16, layout::ndhwc> = true;
template <>
inline constexpr bool is_supported_v<backend::onednn, precision::int8, layout::ncdhw> = true;
template <>
inline constexpr bool is_supported_v<backend::onednn, precision::int8, layout::ndhwc> = true;

/// \brief The oneDNN kernels (see the contract above swinfer::kernels in swinfer/core/backend.hpp).
/// Ops accept volumes of either layout (each tensor's own layout is used); L names the model's choice.
template <class P, class L>
struct kernels<backend::onednn, P, L> {
  static_assert(is_supported_v<backend::onednn, P, L>,
                "swinfer: the onednn backend implements fp32, bf16 and int8 only (oneDNN 2.6's CPU fp16 coverage is "
                "too thin); use swinfer::backend::cpu for fp16");

  using storage = storage_t<P>;
  using context = onednn::context;
  using conv3d = onednn::conv3d<storage>;
  using conv_transpose3d = onednn::conv_transpose3d<storage>;
  using linear = onednn::linear<storage>;
  using layer_norm = onednn::layer_norm<storage>;
  using window_attention = onednn::window_attention<storage>;

  static void instance_norm(context& ctx, tensor<storage>& x, const tensor<storage>* residual,
                            const ops::instance_norm_epilogue& e) {
    onednn::instance_norm(ctx, x, residual, e);
  }
  static void concat_channels(context& ctx, const std::vector<const tensor<storage>*>& parts, tensor<storage>& out) {
    onednn::concat_channels(ctx, parts, out);
  }
  static void pool3d(context& ctx, const tensor<storage>& in, const ops::pool3d_problem& p, tensor<storage>& out) {
    onednn::pool3d(ctx, in, p, out);
  }
  static void patch_merge_gather(context& ctx, const tensor<storage>& x, ops::merge_order order, tensor<storage>& out) {
    onednn::patch_merge_gather(ctx, x, order, out);
  }
  template <class A, class B>
  static void convert(context& ctx, const tensor<A>& src, tensor<B>& dst) {
    onednn::convert(ctx, src, dst);
  }
};

static_assert(implements_contract<backend::onednn, precision::fp32, precision::bf16, precision::int8>,
              "swinfer: kernels<backend::onednn, P, L> must satisfy swinfer::backend_kernels "
              "(swinfer/backend/contract.hpp)");

}  // namespace swinfer
