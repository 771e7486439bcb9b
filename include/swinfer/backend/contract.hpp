// swinfer: the contract every backend's kernels<B, P, L> fulfils, as concepts. Each backend header static_asserts
// it, so a backend that misses an op fails there, naming the concept, not deep inside the model.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/sliding_window.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// True for kernel tables whose volumes live in device memory (they declare K::volume).
template <class K>
concept device_resident = requires { typename K::volume; };

namespace detail {
template <class K>
struct backend_volume {
  using type = tensor<typename K::storage>;
};
template <device_resident K>
struct backend_volume<K> {
  using type = typename K::volume;
};
template <class K, class T>
struct backend_tensor {
  using type = tensor<T>;
};
template <device_resident K, class T>
struct backend_tensor<K, T> {
  using type = typename K::template tensor_type<T>;
};
}  // namespace detail

/// The tensor type of every volume and token tensor of kernels K: tensor<K::storage> for the host backends,
/// K::volume (hip::device_tensor<S>) for the hip backend. Same constructor (shape, layout), shape(), layout(),
/// size() and data() (a device pointer on the hip backend; never dereferenced by the model).
template <class K>
using backend_volume_t = typename detail::backend_volume<K>::type;

/// A tensor of element type T where kernels K keep their data: tensor<T> on host backends, K::tensor_type<T> on
/// device backends (the float32 window batches and sums of the sliding window).
template <class K, class T>
using backend_tensor_t = typename detail::backend_tensor<K, T>::type;

/// A tensor the model can hold its activations in: empty by default, made from (shape, layout), movable.
template <class V>
concept volume_tensor = std::default_initializable<V> && std::movable<V> && std::constructible_from<V, shape5, layout_kind> &&
                        requires(const V& v) {
                          { v.shape() } -> std::convertible_to<shape5>;
                          { v.layout() } -> std::convertible_to<layout_kind>;
                          { v.size() } -> std::convertible_to<std::int64_t>;
                          v.data();
                        };

/// The sliding window's volume operations (detail::host_window_ops, hip::window_ops): one loop serves both.
template <class W>
concept window_operations =
    volume_tensor<typename W::volume> &&
    requires(W& w, const detail::sliding_window_plan& plan, const tensor<float>& host,
             std::vector<typename W::volume>& staged, const typename W::volume& v, typename W::volume& out,
             const window_grid& grid, const shape5& s, std::int64_t index, const std::array<std::int64_t, 3>& start) {
      w.begin(plan);
      { w.stage(host, staged) } -> std::convertible_to<const typename W::volume*>;
      { w.zeros(s, layout_kind::ndhwc) } -> std::same_as<typename W::volume>;
      w.gather(v, grid, index, out);
      w.blend(v, index, plan, out, index, start);
      { w.finish(typename W::volume{}, plan) } -> std::same_as<typename W::volume>;
    };

/// \brief What every kernels<B, P, L> provides. S = K::storage; volumes are backend_volume_t<K> in layout L; token
/// tensors are volumes in layout::ndhwc (rows of C channels) and ops take their rows as S pointers.
/// Each op's problem, and the naive reference it is tested against, is in swinfer/ops/.
template <class K, class S = typename K::storage, class V = backend_volume_t<K>, class C = typename K::context>
concept kernel_table =
    // context(options): the backend's options (C::options, backend_options<B>: engine_options plus its own), which
    // an engine_options converts to
    volume_tensor<V> && std::constructible_from<C, const engine_options&> &&
    std::constructible_from<C, const context_options_t<C>&> &&
    // context::describe_device(): where the kernels run, for reports ("AMD EPYC 9R14 (avx512, ...)", a GPU's name)
    requires(const C& ctx) {
      { ctx.describe_device() } -> std::convertible_to<std::string>;
    } &&
    // conv3d(ctx, problem, weight (cout, cin, kd, kh, kw), bias or null); run(in, out)
    std::constructible_from<typename K::conv3d, C&, const ops::conv3d_problem&, const float*, const float*> &&
    requires(typename K::conv3d& op, const V& in, V& out) { op.run(in, out); } &&
    // conv_transpose3d(ctx, problem, weight (cin, cout, 2, 2, 2)); run(in, out): kernel = stride = 2
    std::constructible_from<typename K::conv_transpose3d, C&, const ops::conv_transpose3d_problem&, const float*> &&
    requires(typename K::conv_transpose3d& op, const V& in, V& out) { op.run(in, out); } &&
    // linear(ctx, problem, weight (out, in), bias or null); run(x, rows, y): y = or += per problem.accumulate
    std::constructible_from<typename K::linear, C&, const ops::linear_problem&, const float*, const float*> &&
    requires(typename K::linear& op, const S* x, std::int64_t rows, S* y) { op.run(x, rows, y); } &&
    // layer_norm(ctx, channels, gamma or null, beta or null, eps); run(x, rows, y)
    std::constructible_from<typename K::layer_norm, C&, int, const float*, const float*, float> &&
    requires(typename K::layer_norm& op, const S* x, std::int64_t rows, S* y) { op.run(x, rows, y); } &&
    // window_attention(ctx, weights); run(y, plan, shifted, x): x += attn(y) (or the fused form below)
    std::constructible_from<typename K::window_attention, C&, const ops::window_attention_weights&> &&
    requires(C& ctx, V& x, const V& in, const tensor<float>& host, const V* residual,
             const std::vector<const V*>& parts, const ops::instance_norm_epilogue& epilogue,
             const ops::pool3d_problem& pool, ops::merge_order order, const backend_tensor_t<K, float>& floats,
             backend_tensor_t<K, float>& floats_out) {
      K::instance_norm(ctx, x, residual, epilogue);
      K::concat_channels(ctx, parts, x);
      K::pool3d(ctx, in, pool, x);
      K::patch_merge_gather(ctx, in, order, x);
      K::convert(ctx, floats, x);      // float32 in (the model's input, either layout)
      K::convert(ctx, in, x);          // re-layout
      K::convert(ctx, in, floats_out);  // float32 out
    };

/// The fused norm overloads: the norm before an op applied as the op loads its input (the normalised tensor is
/// never written, its values rounded to S as the separate op would store them, so both ways agree). The model takes
/// them where they exist.
///   conv3d::run(in, instance_norm_epilogue, out)             out = conv(act(IN(in)))
template <class K, class V = backend_volume_t<K>>
concept fuses_instance_norm = requires(typename K::conv3d& conv, const V& in, V& out,
                                       const ops::instance_norm_epilogue& epilogue) {
  conv.run(in, epilogue, out);
};

///   linear::run(pre_norm, x, rows, y)                        y (=|+=) act(LN(x) W^T + b)
///   window_attention::run(pre_norm, x, plan, shifted)        x += attn(LN(x))
/// A backend with them need not provide the unfused attention run.
template <class K, class S = typename K::storage, class V = backend_volume_t<K>>
concept fuses_layer_norm = requires(typename K::linear& linear, typename K::window_attention& attention,
                                    const typename K::layer_norm& norm, V& out, const S* x, std::int64_t rows, S* y,
                                    const ops::window_plan& plan, bool shifted) {
  linear.run(norm, x, rows, y);
  attention.run(norm, out, plan, shifted);
};

/// The unfused window attention: run(y, plan, shifted, x), x += attn(y).
template <class K, class V = backend_volume_t<K>>
concept separate_attention_norm = requires(typename K::window_attention& attention, const V& y, V& x,
                                           const ops::window_plan& plan, bool shifted) {
  attention.run(y, plan, shifted, x);
};

/// conv3d::run(first, second, out) = conv(concat_channels(first, second)), each part read where it is.
template <class K, class V = backend_volume_t<K>>
concept fuses_concat = requires(typename K::conv3d& conv, const V& first, const V& second, V& out) {
  conv.run(first, second, out);
};

/// The InstanceNorm of a residual block's projected shortcut applied as it is added (the normalised shortcut is
/// never written; under 16-bit storage it is not rounded to S either, one rounding fewer than the two ops):
///   K::instance_norm_sum(ctx, x, residual, epilogue)      x = act(IN(x) + IN(residual)), residual left as it is
template <class K, class V = backend_volume_t<K>>
concept fuses_instance_norm_sum = requires(typename K::context& ctx, V& x, const V& residual,
                                           const ops::instance_norm_epilogue& epilogue) {
  K::instance_norm_sum(ctx, x, residual, epilogue);
};

/// InstanceNorm's moments gathered where a convolution writes the tensor (its values are in registers there) instead
/// of in a pass that reads it again; K::channel_moments holds them per (sample, channel). The norms given them compute
/// what they compute without them, bit for bit under float32 storage.
///   conv3d::run(in, out, moments)                           out = conv(in), moments of out
///   conv3d::run(first, second, out, moments)                the same on concat_channels(first, second)
///   conv3d::run(in, in_moments, epilogue, out, moments)     out = conv(act(IN(in))), IN from in_moments
///   K::instance_norm(ctx, x, x_moments, residual, epilogue)
///   K::instance_norm_sum(ctx, x, x_moments, residual, residual_moments, epilogue)
template <class K, class V = backend_volume_t<K>>
concept gathers_instance_norm_moments =
    requires(typename K::context& ctx, typename K::conv3d& conv, const V& in, V& out,
             typename K::channel_moments& moments, const typename K::channel_moments& given, const V* residual,
             const ops::instance_norm_epilogue& epilogue) {
      conv.run(in, out, moments);
      conv.run(in, in, out, moments);
      conv.run(in, given, epilogue, out, moments);
      K::instance_norm(ctx, out, given, residual, epilogue);
      K::instance_norm_sum(ctx, out, given, in, given, epilogue);
    };

/// A device backend also moves tensors across the host edge and blends sliding windows where its data is.
template <class K, class V = backend_volume_t<K>>
concept device_kernel_table =
    device_resident<K> && window_operations<typename K::window_ops> &&
    std::constructible_from<typename K::window_ops, typename K::context&> &&
    requires(typename K::context& ctx, const tensor<float>& host, const V& v, layout_kind layout) {
      { K::upload(ctx, host) } -> std::same_as<V>;
      { K::template download<float>(ctx, v, layout) } -> std::same_as<tensor<float>>;
    };

/// The whole contract: a kernel table with one form of the attention, and the device edges where it has device
/// volumes. Each backend header static_asserts this for every precision and layout it supports.
template <class K>
concept backend_kernels = kernel_table<K> && (fuses_layer_norm<K> || separate_attention_norm<K>) &&
                          (!device_resident<K> || device_kernel_table<K>);

/// What the model needs of backend B for precision P and layout L: B claims the combination (is_supported_v) and
/// its kernels satisfy the contract (checked only when claimed, so an unsupported combination names just that).
template <class B, class P, class L>
concept supported_kernels = is_supported_v<B, P, L> && backend_kernels<kernels<B, P, L>>;

/// backend_kernels for each of the precisions Ps in both layouts (what a backend header asserts).
template <class B, class... Ps>
concept implements_contract = (backend_kernels<kernels<B, Ps, layout::ncdhw>> && ...) &&
                              (backend_kernels<kernels<B, Ps, layout::ndhwc>> && ...);

}  // namespace swinfer
