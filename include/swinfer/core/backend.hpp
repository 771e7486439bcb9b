// swinfer: backend tags, the support matrix, and the primary kernels template every backend specialises.
#pragma once

#include <string_view>
#include <type_traits>

#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"

namespace swinfer {

/// Backend tags. A backend is chosen statically; its header must be included to use it:
/// cpu (<swinfer/backend/cpu.hpp>, header-only, the default), onednn (<swinfer/backend/onednn.hpp>), hip (GPU).
namespace backend {
struct cpu {
  static constexpr std::string_view name = "cpu";
};
struct onednn {
  static constexpr std::string_view name = "onednn";
};
struct hip {
  static constexpr std::string_view name = "hip";
};
}  // namespace backend

/// True when backend B implements precision P with layout L *and* its header is included.
/// Backend headers specialise this for what they implement.
template <class B, class P, class L>
inline constexpr bool is_supported_v = false;

namespace detail {
template <class...>
inline constexpr bool dependent_false_v = false;

/// fp32, fp16 or bf16 storage in the ncdhw or ndhwc layout: what the cpu and hip backends implement.
template <class P, class L>
constexpr bool float_storage_any_layout() {
  constexpr bool precision_implemented =
      std::is_same_v<P, precision::fp32> || std::is_same_v<P, precision::fp16> || std::is_same_v<P, precision::bf16>;
  constexpr bool layout_implemented = std::is_same_v<L, layout::ncdhw> || std::is_same_v<L, layout::ndhwc>;
  return precision_implemented && layout_implemented;
}
}  // namespace detail

/// \brief The kernels one backend provides for one precision and layout.
///
/// A specialisation provides (S = storage_t<P>; volumes are tensor<S> in layout L; token tensors are
/// tensor<S> in layout::ndhwc, i.e. rows of C channels):
///   struct context;  constructible from const engine_options&
///   class conv3d;             conv3d(context&, const conv3d_problem&, const float* weight_oidhw, const float* bias_or_null)
///                             void run(const tensor<S>& in, tensor<S>& out)
///   class conv_transpose3d;   conv_transpose3d(context&, int cin, int cout, const float* weight_io222)
///                             void run(const tensor<S>& in, tensor<S>& out)
///   class linear;             linear(context&, const linear_problem&, const float* weight_oi, const float* bias_or_null)
///                             void run(const S* x, std::int64_t rows, S* y)   (y = or += per problem.accumulate)
///   class layer_norm;         layer_norm(context&, int channels, const float* gamma_or_null, const float* beta_or_null, float eps)
///                             void run(const S* x, std::int64_t rows, S* y)
///   class window_attention;   window_attention(context&, const window_attention_weights&)
///                             void run(const tensor<S>& y, const window_plan& plan, bool shifted, tensor<S>& x)  (x += attn(y))
///   static void instance_norm(context&, tensor<S>& x, const tensor<S>* residual, const instance_norm_epilogue&)
///   static void concat_channels(context&, const std::vector<const tensor<S>*>& parts, tensor<S>& out)
///   static void pool3d(context&, const tensor<S>& in, const pool3d_problem&, tensor<S>& out)
///   static void patch_merge_gather(context&, const tensor<S>& x, merge_order, tensor<S>& out)
///   template <class A, class B> static void convert(context&, const tensor<A>& src, tensor<B>& dst)
/// The op headers in swinfer/ops/ define the problems and hold the naive references these are tested against.
///
/// A specialisation may also set `static constexpr bool fuses_norms = true` and then provides the norm before an
/// op as part of the op, applied as the op loads its input (the normalised tensor is never written):
///   conv3d::run(const tensor<S>& in, const instance_norm_epilogue&, tensor<S>& out)     out = conv(act(IN(in)))
///   linear::run(const layer_norm& pre_norm, const S* x, std::int64_t rows, S* y)        y (=|+=) act(LN(x) W^T + b)
///   window_attention::run(const layer_norm& pre_norm, tensor<S>& x, const window_plan&, bool shifted)
///                                                                                      x += attn(LN(x))
/// The normalised values are rounded to S as the separate op would store them, so both ways give the same result;
/// the model takes the fused ops where fuses_norms_v says they exist. Likewise `fuses_concat = true` provides
///   conv3d::run(const tensor<S>& first, const tensor<S>& second, tensor<S>& out)
///                                                          out = conv(concat_channels(first, second))
/// reading each part where it is (fuses_concat_v).
template <class B, class P, class L>
struct kernels {
  static_assert(detail::dependent_false_v<B, P, L>,
                "swinfer: this backend does not implement this precision/layout combination, or the backend's "
                "header is not included. Check swinfer::is_supported_v<Backend, Precision, Layout>.");
};

/// Whether kernels K provides the fused norm overloads described above.
template <class K, class = void>
inline constexpr bool fuses_norms_v = false;
template <class K>
inline constexpr bool fuses_norms_v<K, std::enable_if_t<K::fuses_norms>> = true;

/// Whether kernels K provides the two-input conv3d described above.
template <class K, class = void>
inline constexpr bool fuses_concat_v = false;
template <class K>
inline constexpr bool fuses_concat_v<K, std::enable_if_t<K::fuses_concat>> = true;

}  // namespace swinfer
