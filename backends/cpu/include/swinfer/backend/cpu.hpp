// swinfer: the default cpu backend. Header-only: Eigen for SIMD packets and the thread pool, float32 accumulation.
//
// Storage is storage_t<P> (float, Eigen::half, Eigen::bfloat16) for activations. Weights are packed once as
// float32, or for bf16 convolutions on AMX hardware as bf16 hi + lo pairs (16 significant bits), so low precision
// only rounds where an activation is stored. int8 stores activations as float32 and runs the convolutions that
// its calibration quantizes on int8 (int8_dot.hpp). Every kernel follows the run-time layout of its tensors, so
// kernels<cpu, P, ncdhw> and kernels<cpu, P, ndhwc> share one implementation; channels-last is the fast path
// (convolutions stage channels-first input through a transpose). The float32 path runs 3x3x3 convolutions on grids
// of 4^3 and more as Winograd F(2x2x2, 3x3x3), the 16-bit storage precisions on grids of 8^3 and more as
// F(4x4x4, 3x3x3) (conv3d_winograd.hpp), the rest as direct implicit GEMMs.
#pragma once

#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv3d.hpp"
#include "swinfer/backend/cpu/conv_transpose3d.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/layer_norm.hpp"
#include "swinfer/backend/cpu/linear.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/backend/cpu/pool3d.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/backend/cpu/window_attention.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer {

/// fp32, fp16, bf16 and int8 in both layouts.
template <class P, class L>
inline constexpr bool is_supported_v<backend::cpu, P, L> = detail::float_storage_or_int8_any_layout<P, L>();

/// The cpu backend's kernels (see the contract above `kernels` in swinfer/core/backend.hpp).
template <class P, class L>
struct kernels<backend::cpu, P, L> {
  static_assert(is_supported_v<backend::cpu, P, L>,
                "swinfer: the cpu backend implements fp32, fp16, bf16 and int8 in the ncdhw and ndhwc layouts. Check "
                "swinfer::is_supported_v<Backend, Precision, Layout>.");

  using storage = storage_t<P>;
  using context = cpu::context;
  using conv3d = cpu::conv3d<storage>;
  using conv_transpose3d = cpu::conv_transpose3d<storage>;
  using linear = cpu::linear<storage>;
  using layer_norm = cpu::layer_norm<storage>;
  using window_attention = cpu::window_attention<storage>;
  using channel_moments = cpu::channel_moments;

  static void instance_norm(context& ctx, tensor<storage>& x, const tensor<storage>* residual,
                            const ops::instance_norm_epilogue& e) {
    cpu::instance_norm(ctx, x, residual, e);
  }
  static void instance_norm(context& ctx, tensor<storage>& x, const channel_moments& x_moments,
                            const tensor<storage>* residual, const ops::instance_norm_epilogue& e) {
    cpu::instance_norm(ctx, x, x_moments, residual, e);
  }
  static void instance_norm_sum(context& ctx, tensor<storage>& x, const tensor<storage>& residual,
                                const ops::instance_norm_epilogue& e) {
    cpu::instance_norm_sum(ctx, x, residual, e);
  }
  static void instance_norm_sum(context& ctx, tensor<storage>& x, const channel_moments& x_moments,
                                const tensor<storage>& residual, const channel_moments& residual_moments,
                                const ops::instance_norm_epilogue& e) {
    cpu::instance_norm_sum(ctx, x, x_moments, residual, residual_moments, e);
  }
  static void concat_channels(context& ctx, const std::vector<const tensor<storage>*>& parts, tensor<storage>& out) {
    cpu::concat_channels(ctx, parts, out);
  }
  static void pool3d(context& ctx, const tensor<storage>& in, const ops::pool3d_problem& p, tensor<storage>& out) {
    cpu::pool3d(ctx, in, p, out);
  }
  static void patch_merge_gather(context& ctx, const tensor<storage>& x, ops::merge_order order, tensor<storage>& out) {
    cpu::patch_merge_gather(ctx, x, order, out);
  }
  template <class A, class B>
  static void convert(context& ctx, const tensor<A>& src, tensor<B>& dst) {
    cpu::convert(ctx, src, dst);
  }
};

static_assert(implements_contract<backend::cpu, precision::fp32, precision::fp16, precision::bf16, precision::int8>,
              "swinfer: kernels<backend::cpu, P, L> must satisfy swinfer::backend_kernels (swinfer/backend/contract.hpp)");

}  // namespace swinfer
