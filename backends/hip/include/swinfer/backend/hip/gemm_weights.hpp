// swinfer hip backend: the weights of a GEMM-shaped op (conv3d, conv_transpose3d, linear, window attention's qkv and
// proj) on the device: in the storage type, or int8 rows with their scales where precision::int8 quantizes the
// op's input (docs/int8.md).
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::hip {

/// \brief One product's (N, K) weight rows on the device: in the storage type S, or, where `input` quantizes the
/// product, int8 with one scale per row and the input's calibrated scale or, dynamic, each input row's own (int8():
/// a linear's), or a dynamic scale taken on the device from each input tensor (int8_for(): a convolution's).
template <class S>
class gemm_weights {
 public:
  gemm_weights() = default;
  /// `packed`: the float rows; `quantize()`: their int8_rows, called only for a quantized input. `what` names the
  /// op in errors.
  template <class Quantize>
  gemm_weights(context& ctx, const char* what, const ops::int8_input& input, const std::vector<float>& packed,
               Quantize&& quantize) {
    if (!input.quantized()) {
      values_ = ctx.upload_weights<S>(packed);
      return;
    }
    check_int8(ctx, what);
    const int8_rows q = std::forward<Quantize>(quantize)();
    values_ = ctx.upload(q.values);
    scales_ = ctx.upload(q.scales);
    int8_ = {static_cast<const float*>(scales_.get()), input.scale};
    int8_.per_row = input.dynamic;
    dynamic_ = input.dynamic;
  }

  const void* data() const { return values_.get(); }
  /// The int8 form for the launch, or null where the product runs in S.
  const int8_product* int8() const { return int8_.weight_scales ? &int8_ : nullptr; }

  /// Scratch bytes int8_for() takes: the scale (16-byte aligned) and its reduction's partial maxima; 0 unless the
  /// scale is dynamic.
  std::size_t dynamic_scale_bytes() const { return dynamic_ ? 16 + int8_input_scale_scratch_bytes() : 0; }
  /// The int8 form for a launch that reads x (channels as the product reads them: act(InstanceNorm(x)) with
  /// `in_norm`, the concatenation [x, x2] with x2): int8(), or with a dynamic scale the same with s_x reduced from
  /// this input on the device into `scratch` (dynamic_scale_bytes()), written to and returned as `launch`.
  const int8_product* int8_for(context& ctx, const void* x, const strided5& desc, const instance_norm_args* in_norm,
                               const void* x2, const strided5* desc2, unsigned char* scratch,
                               int8_product& launch) const {
    if (!dynamic_) return int8();
    auto* scale = reinterpret_cast<float*>(scratch);
    launch_int8_input_scale(ctx.env(), dtype_of<S>(), x, desc, in_norm, x2, desc2, scale, scratch + 16);
    launch = int8_;
    launch.d_input_scale = scale;
    launch.per_row = false;
    return &launch;
  }

 private:
  static void check_int8(const context& ctx, const char* what) {
    if constexpr (!std::is_same_v<S, float>) {
      detail::fail("hip ", what, ": int8 products take float32 activations (precision::int8)");
    }
    if (!ctx.device().matrix_cores) {
      detail::fail("hip ", what, ": int8 runs on the int8 matrix cores (NVIDIA sm_80 and newer, AMD gfx90a and ",
                   "gfx94x), and they are ", ctx.device().matrix_cores_note, " on ", ctx.device().name,
                   "; use --precision fp16 or bf16 there");
    }
  }

  device_buffer values_, scales_;
  int8_product int8_;
  bool dynamic_ = false;
};

}  // namespace swinfer::hip
