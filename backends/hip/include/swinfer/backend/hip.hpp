// swinfer: the hip GPU backend (NVIDIA via CUDA, AMD via HIP; one kernel source for both). Link swinfer::hip,
// which exists when swinfer is configured with -DSWINFER_GPU_PLATFORM=nvidia or amd.
//
// Storage is storage_t<P> (float, Eigen::half, Eigen::bfloat16) in device memory, float32 accumulation in every
// kernel, weights packed once when an op is constructed and uploaded in the storage type (biases and norm
// parameters in float32). Volumes are hip::device_tensor<S> (device-resident, in layout L); token rows are device
// pointers. Ops enqueue work on the context's stream and return without waiting; device_tensor::download waits.
// The host edges (kernels::upload / kernels::download) take and give swinfer::tensor in either layout and any of
// the three element types, converting on the device.
//
// Implemented, one header per op in swinfer/backend/hip/: conv3d, conv_transpose3d, linear, layer_norm,
// window_attention, instance_norm (+ residual, LeakyReLU), concat_channels (N-ary), pool3d, patch_merge_gather,
// convert: everything swin_unetr<backend::hip, P, L> needs; and the fused overloads of swinfer/backend/contract.hpp
// (conv3d after an InstanceNorm or on a concatenation of two inputs, linear and window_attention after a LayerNorm),
// which apply the norm or read the parts as the GEMM loads its input, and conv3d gathering its output's
// InstanceNorm moments for the norm after it (gathers_instance_norm_moments). Each op checks its arguments with the
// check functions beside its problem in swinfer/ops/.
#pragma once

#include <type_traits>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/conv3d.hpp"
#include "swinfer/backend/hip/conv_transpose3d.hpp"
#include "swinfer/backend/hip/data_movement.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/instance_norm.hpp"
#include "swinfer/backend/hip/layer_norm.hpp"
#include "swinfer/backend/hip/linear.hpp"
#include "swinfer/backend/hip/pool3d.hpp"
#include "swinfer/backend/hip/window_attention.hpp"
#include "swinfer/backend/hip/window_ops.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer {

/// fp32, fp16 and bf16 in both layouts, and int8 (float32 activations; the products its calibration quantizes on
/// the int8 matrix cores, docs/int8.md).
template <class P, class L>
inline constexpr bool is_supported_v<backend::hip, P, L> = detail::float_storage_or_int8_any_layout<P, L>();

/// The hip backend's kernels. Differs from the host backends in one point of the contract in
/// swinfer/backend/contract.hpp: volumes are `volume` = hip::device_tensor<S> instead of tensor<S>, and token-row
/// pointers are device pointers (docs/gpu.md says how the model uses it).
template <class P, class L>
struct kernels<backend::hip, P, L> {
  static_assert(is_supported_v<backend::hip, P, L>,
                "swinfer: the hip backend implements fp32, fp16, bf16 and int8 in the ncdhw and ndhwc layouts. Check "
                "swinfer::is_supported_v<Backend, Precision, Layout>.");

  using storage = storage_t<P>;
  using context = hip::context;
  /// The tensor type of every volume this backend's ops take.
  using volume = hip::device_tensor<storage>;
  template <class T>
  using tensor_type = hip::device_tensor<T>;
  /// The sliding window's blending on the device (swinfer/inference/model_sliding_window.hpp).
  using window_ops = hip::window_ops;

  using conv3d = hip::conv3d<storage>;
  using conv_transpose3d = hip::conv_transpose3d<storage>;
  using linear = hip::linear<storage>;
  using layer_norm = hip::layer_norm<storage>;
  using window_attention = hip::window_attention<storage>;

  /// InstanceNorm's moments of a volume, gathered by the convolution that stores it (gathers_instance_norm_moments).
  using channel_moments = hip::channel_moments;

  static void instance_norm(context& ctx, volume& x, const volume* residual, const ops::instance_norm_epilogue& e) {
    hip::instance_norm(ctx, x, residual, e);
  }
  static void instance_norm(context& ctx, volume& x, const channel_moments& x_moments, const volume* residual,
                            const ops::instance_norm_epilogue& e) {
    hip::instance_norm(ctx, x, x_moments, residual, e);
  }
  static void instance_norm_sum(context& ctx, volume& x, const channel_moments& x_moments, const volume& residual,
                                const channel_moments& residual_moments, const ops::instance_norm_epilogue& e) {
    hip::instance_norm_sum(ctx, x, x_moments, residual, residual_moments, e);
  }
  static void concat_channels(context& ctx, const std::vector<const volume*>& parts, volume& out) {
    hip::concat_channels(ctx, parts, out);
  }
  static void pool3d(context& ctx, const volume& in, const ops::pool3d_problem& p, volume& out) {
    hip::pool3d(ctx, in, p, out);
  }
  static void patch_merge_gather(context& ctx, const volume& x, ops::merge_order order, volume& out) {
    hip::patch_merge_gather(ctx, x, order, out);
  }
  template <class A, class B>
  static void convert(context& ctx, const hip::device_tensor<A>& src, hip::device_tensor<B>& dst) {
    hip::convert(ctx, src, dst);
  }

  // ---- Host edges --------------------------------------------------------------------------------------------

  /// A host tensor (any of the three element types, either layout) as a device volume of S in layout L.
  template <class A>
  static volume upload(context& ctx, const tensor<A>& host) {
    auto staged = hip::device_tensor<A>::upload(ctx, host);
    if constexpr (std::is_same_v<A, storage>) {
      if (host.layout() == L::kind) return staged;
    }
    volume out(host.shape(), L::kind);
    convert(ctx, staged, out);
    return out;
  }
  /// A device volume as a host tensor of B in layout `layout`; waits for the device.
  template <class B = float>
  static tensor<B> download(context& ctx, const volume& v, layout_kind layout = L::kind) {
    if constexpr (std::is_same_v<B, storage>) {
      if (layout == v.layout()) return v.download(ctx);
    }
    hip::device_tensor<B> staged(v.shape(), layout);
    convert(ctx, v, staged);
    return staged.download(ctx);
  }
};

// conv3d, linear and window_attention also take the norm before them and apply it on load; conv3d also reads a
// concatenation of two inputs where they are and gathers its output's moments. The model relies on these for the
// device's speed.
static_assert(implements_contract<backend::hip, precision::fp32, precision::fp16, precision::bf16,
                                  precision::int8>,
              "swinfer: kernels<backend::hip, P, L> must satisfy swinfer::backend_kernels (swinfer/backend/contract.hpp)");
static_assert(fuses_instance_norm<kernels<backend::hip, precision::fp16, layout::ndhwc>> &&
                  fuses_layer_norm<kernels<backend::hip, precision::fp16, layout::ndhwc>> &&
                  fuses_concat<kernels<backend::hip, precision::fp16, layout::ndhwc>> &&
                  gathers_instance_norm_moments<kernels<backend::hip, precision::fp16, layout::ndhwc>>,
              "swinfer: the hip backend's conv3d, linear and window_attention must keep their fused overloads "
              "(swinfer::fuses_instance_norm, swinfer::fuses_layer_norm, swinfer::fuses_concat, "
              "swinfer::gathers_instance_norm_moments)");

}  // namespace swinfer
