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
// Implemented: conv3d, conv_transpose3d, linear, layer_norm, window_attention, instance_norm (+ residual, LeakyReLU),
// concat_channels (N-ary), pool3d, patch_merge_gather, convert: everything swin_unetr<backend::hip, P, L> needs; and
// the fused overloads of swinfer/core/backend.hpp (conv3d after an InstanceNorm or on a concatenation of two
// inputs, linear and window_attention after a LayerNorm), which apply the norm or read the parts as the GEMM loads
// its input.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/window_ops.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// fp32, fp16 and bf16 in both layouts; int8 is not implemented.
template <class P, class L>
inline constexpr bool is_supported_v<backend::hip, P, L> = detail::float_storage_any_layout<P, L>();

namespace hip {

/// Checks that every tensor has the same layout (the kernels follow strides, but the contract keeps one layout).
template <class T, class U>
void require_same_layout(const char* op, const device_tensor<T>& a, const device_tensor<U>& b) {
  if (a.layout() != b.layout()) detail::fail(op, ": input and output need one layout");
}

/// (cout, K) packing of a PyTorch conv weight (cout, cin, kd, kh, kw): the GEMM's B rows, column
/// k = ((a*kh + b)*kw + c)*cin + ci (taps outside, channels inside, as the implicit GEMM's A columns).
inline std::vector<float> pack_conv3d_weight(const ops::conv3d_problem& p, const float* w) {
  const int kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  const auto k_total = static_cast<std::size_t>(kd) * kh * kw * p.cin;
  std::vector<float> packed(static_cast<std::size_t>(p.weight_count()));
  for (int co = 0; co < p.cout; ++co)
    for (int ci = 0; ci < p.cin; ++ci)
      for (int a = 0; a < kd; ++a)
        for (int b = 0; b < kh; ++b)
          for (int c = 0; c < kw; ++c) {
            const std::size_t k = static_cast<std::size_t>(((a * kh + b) * kw + c) * p.cin + ci);
            packed[co * k_total + k] = w[(((static_cast<std::size_t>(co) * p.cin + ci) * kd + a) * kh + b) * kw + c];
          }
  return packed;
}

/// (8*cout, cin) packing of a PyTorch transposed-conv weight (cin, cout, 2, 2, 2): row (a*4+b*2+c)*cout+o.
inline std::vector<float> pack_conv_transpose3d_weight(int cin, int cout, const float* w) {
  std::vector<float> packed(static_cast<std::size_t>(cin) * 8 * cout);
  for (int i = 0; i < cin; ++i)
    for (int o = 0; o < cout; ++o)
      for (int s = 0; s < 8; ++s)
        packed[(static_cast<std::size_t>(s) * cout + o) * cin + i] =
            w[(static_cast<std::size_t>(i) * cout + o) * 8 + s];
  return packed;
}

/// A PyTorch linear weight (out, in) is already the GEMM's (N, K) rows: copied as it is.
inline std::vector<float> pack_linear_weight(int in, int out, const float* w) {
  return std::vector<float>(w, w + static_cast<std::size_t>(in) * out);
}

}  // namespace hip

/// The hip backend's kernels. Differs from the host backends in one point of the contract in
/// swinfer/core/backend.hpp: volumes are `volume` = hip::device_tensor<S> instead of tensor<S>, and token-row
/// pointers are device pointers (docs/gpu.md says how the model uses it).
template <class P, class L>
struct kernels<backend::hip, P, L> {
  static_assert(detail::float_storage_any_layout<P, L>(),
                "swinfer: the hip backend implements fp32, fp16 and bf16 in the ncdhw and ndhwc layouts; int8 is not "
                "implemented. Check swinfer::is_supported_v<Backend, Precision, Layout>.");

  using storage = storage_t<P>;
  using context = hip::context;
  /// The tensor type of every volume this backend's ops take.
  using volume = hip::device_tensor<storage>;
  template <class T>
  using tensor_type = hip::device_tensor<T>;
  /// The sliding window's blending on the device (swinfer/inference/model_sliding_window.hpp).
  using window_ops = hip::window_ops;

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

  // ---- Parameterised ops ---------------------------------------------------------------------------------

  /// 3-D convolution as an implicit GEMM; weights packed (cout, K) in the storage type at construction.
  class conv3d {
   public:
    conv3d(context& ctx, const ops::conv3d_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
      if (p.cin <= 0 || p.cout <= 0) detail::fail("conv3d needs positive channel counts, got ", p.cin, " -> ", p.cout);
      for (int a = 0; a < 3; ++a)
        if (p.kernel[a] <= 0 || p.stride[a] <= 0 || p.pad[a] < 0) detail::fail("conv3d: invalid kernel/stride/pad");
      if (!weight) detail::fail("conv3d: null weight");
      if (p.bias && !bias) detail::fail("conv3d: the problem has a bias but no bias values were given");
      weight_ = ctx.upload_weights<storage>(hip::pack_conv3d_weight(p, weight));
      if (p.bias) bias_ = ctx.upload(bias, static_cast<std::size_t>(p.cout));
    }
    void run(const volume& in, volume& out) { launch(in, nullptr, out, nullptr); }
    /// out = conv(act(InstanceNorm(in))): the statistics of `in` taken, then the norm and LeakyReLU applied as the
    /// convolution loads its input (the normalised tensor is never written; `in` is left as it was).
    void run(const volume& in, const ops::instance_norm_epilogue& in_norm, volume& out) {
      if (in.shape().c != p_.cin) detail::fail("conv3d input ", in.shape().str(), " should have ", p_.cin, " channels");
      void* scratch = ctx_.scratch(hip::instance_norm_scratch_bytes(in.desc()));
      const hip::instance_norm_args args{
          hip::launch_instance_norm_statistics(ctx_.env(), volume::type, in.data(), in.desc(), in_norm.eps, scratch),
          in_norm.negative_slope.has_value(), in_norm.negative_slope.value_or(0.0f)};
      launch(in, nullptr, out, &args);
    }
    /// out = conv(concat_channels(first, second)), each part read where it is (the concatenation is never
    /// written).
    void run(const volume& first, const volume& second, volume& out) { launch(first, &second, out, nullptr); }

   private:
    void launch(const volume& in, const volume* second, volume& out, const hip::instance_norm_args* in_norm) {
      shape5 joined = in.shape();
      if (second) {
        const shape5& b = second->shape();
        if (b.n != joined.n || b.d != joined.d || b.h != joined.h || b.w != joined.w) {
          detail::fail("conv3d: the two inputs ", joined.str(), " and ", b.str(), " differ beyond their channels");
        }
        hip::require_same_layout("conv3d", in, *second);
        joined.c += b.c;
      }
      const shape5 os = p_.output_shape(joined);
      if (!(out.shape() == os)) detail::fail("conv3d output shape ", out.shape().str(), " should be ", os.str());
      hip::require_same_layout("conv3d", in, out);
      const hip::conv_geometry g{p_.cin, p_.cout, p_.kernel, p_.stride, p_.pad};
      const hip::strided5 second_desc = second ? second->desc() : hip::strided5{};
      hip::launch_conv3d(ctx_.env(), volume::type, in.data(), in.desc(), g, weight_.get(),
                         static_cast<const float*>(bias_.get()), out.data(), out.desc(), in_norm,
                         second ? second->data() : nullptr, second ? &second_desc : nullptr);
    }

    context& ctx_;
    ops::conv3d_problem p_;
    hip::device_buffer weight_, bias_;
  };

  /// Kernel-2 stride-2 transposed convolution (no bias) as one GEMM with a scattering epilogue.
  class conv_transpose3d {
   public:
    conv_transpose3d(context& ctx, int cin, int cout, const float* weight) : ctx_(ctx), cin_(cin), cout_(cout) {
      if (cin <= 0 || cout <= 0) detail::fail("conv_transpose3d needs positive channel counts, got ", cin, " -> ", cout);
      if (!weight) detail::fail("conv_transpose3d: null weight");
      weight_ = ctx.upload_weights<storage>(hip::pack_conv_transpose3d_weight(cin, cout, weight));
    }
    void run(const volume& in, volume& out) {
      const shape5 os = ops::conv_transpose3d_output_shape(in.shape(), cin_, cout_);
      if (!(out.shape() == os)) detail::fail("conv_transpose3d output shape ", out.shape().str(), " should be ", os.str());
      hip::require_same_layout("conv_transpose3d", in, out);
      hip::launch_conv_transpose3d(ctx_.env(), volume::type, in.data(), in.desc(), cout_,
                                   weight_.get(), out.data(), out.desc());
    }

   private:
    context& ctx_;
    int cin_, cout_;
    hip::device_buffer weight_;
  };

  /// LayerNorm over device token rows; gamma/beta uploaded at construction.
  class layer_norm {
   public:
    layer_norm(context& ctx, int channels, const float* gamma, const float* beta, float eps)
        : ctx_(ctx), channels_(channels), eps_(eps) {
      if (channels <= 0) detail::fail("layer_norm needs a positive channel count, got ", channels);
      if (gamma) gamma_ = ctx.upload(gamma, static_cast<std::size_t>(channels));
      if (beta) beta_ = ctx.upload(beta, static_cast<std::size_t>(channels));
    }
    /// x, y: (rows, channels) device pointers; may alias.
    void run(const storage* x, std::int64_t rows, storage* y) {
      if (rows < 0) detail::fail("layer_norm: negative row count ", rows);
      hip::launch_layer_norm(ctx_.env(), volume::type, x, rows, channels_, static_cast<const float*>(gamma_.get()),
                             static_cast<const float*>(beta_.get()), eps_, y);
    }

    int channels() const { return channels_; }
    /// The norm as the GEMMs that apply it on load take it.
    hip::layer_norm_args args() const {
      return {static_cast<const float*>(gamma_.get()), static_cast<const float*>(beta_.get()), eps_};
    }

   private:
    context& ctx_;
    int channels_;
    float eps_;
    hip::device_buffer gamma_, beta_;
  };

  /// y (=|+=) act(x W^T + b) on device token rows; W (out, in) stored in the storage type at construction.
  class linear {
   public:
    linear(context& ctx, const ops::linear_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
      if (p.in_features <= 0 || p.out_features <= 0) {
        detail::fail("linear needs positive feature counts, got ", p.in_features, " -> ", p.out_features);
      }
      if (!weight) detail::fail("linear: null weight");
      if (p.bias && !bias) detail::fail("linear: the problem has a bias but no bias values were given");
      weight_ = ctx.upload_weights<storage>(hip::pack_linear_weight(p.in_features, p.out_features, weight));
      if (p.bias) bias_ = ctx.upload(bias, static_cast<std::size_t>(p.out_features));
    }
    /// x: (rows, in) and y: (rows, out), device pointers.
    void run(const storage* x, std::int64_t rows, storage* y) { launch(x, rows, y, nullptr); }
    /// y (=|+=) act(pre_norm(x) W^T + b): the rows' LayerNorm statistics taken, then the norm applied as the GEMM
    /// loads x (the normalised rows are never written). y must not alias x.
    void run(const layer_norm& pre_norm, const storage* x, std::int64_t rows, storage* y) {
      if (pre_norm.channels() != p_.in_features) {
        detail::fail("linear: a pre-norm over ", pre_norm.channels(), " channels for ", p_.in_features, " inputs");
      }
      const hip::layer_norm_args args = pre_norm.args();
      launch(x, rows, y, &args);
    }

   private:
    void launch(const storage* x, std::int64_t rows, storage* y, const hip::layer_norm_args* pre_norm) {
      if (rows < 0) detail::fail("linear: negative row count ", rows);
      void* scratch = ctx_.scratch(hip::linear_scratch_bytes(rows, pre_norm));
      hip::launch_linear(ctx_.env(), volume::type, x, rows, p_.in_features, p_.out_features, weight_.get(),
                         static_cast<const float*>(bias_.get()), p_.gelu, p_.accumulate, y, pre_norm, scratch);
    }

    context& ctx_;
    ops::linear_problem p_;
    hip::device_buffer weight_, bias_;
  };

  /// x += WindowAttention(y) on device token tensors (any layout, one for both): qkv and proj weights stored in
  /// the storage type at construction; the dense relative bias of the plan's clamped window and the region ids of
  /// its shifted grid are built on the host (ops::dense_relative_bias, ops::shift_region_ids) and uploaded when the
  /// plan changes (once per stage in the model). See src/attention.cu for the kernels.
  class window_attention {
   public:
    window_attention(context& ctx, const ops::window_attention_weights& w)
        : ctx_(ctx), channels_(w.channels), heads_(w.heads), configured_(w.configured_window) {
      if (w.channels <= 0 || w.heads <= 0 || w.channels % w.heads) {
        detail::fail("window_attention: ", w.channels, " channels do not split into ", w.heads, " heads");
      }
      if (!w.qkv_weight || !w.proj_weight || !w.bias_table || !w.relative_index) {
        detail::fail("window_attention: qkv/proj weights, the bias table and the relative index are required");
      }
      if (w.head_dim() > hip::window_attention_max_head_dim()) {
        detail::fail("window_attention: head dim ", w.head_dim(), " exceeds the hip backend's ",
                     hip::window_attention_max_head_dim());
      }
      scale_ = w.scale();
      const int c = w.channels;
      qkv_weight_ = ctx.upload_weights<storage>(hip::pack_linear_weight(c, 3 * c, w.qkv_weight));
      if (w.qkv_bias) qkv_bias_ = ctx.upload(w.qkv_bias, static_cast<std::size_t>(3 * c));
      proj_weight_ = ctx.upload_weights<storage>(hip::pack_linear_weight(c, c, w.proj_weight));
      if (w.proj_bias) proj_bias_ = ctx.upload(w.proj_bias, static_cast<std::size_t>(c));
      // Own the bias table and index: the op must not depend on the checkpoint's lifetime.
      const std::int64_t n = w.configured_tokens();
      bias_table_.assign(w.bias_table, w.bias_table + ops::relative_bias_table_rows(w.configured_window) * w.heads);
      relative_index_.assign(w.relative_index, w.relative_index + n * n);
    }

    /// y, x: (N, C, D, H, W) device tokens of one shape and layout; x += attn(y). `shifted` for odd blocks.
    void run(const volume& y, const ops::window_plan& plan, bool shifted, volume& x) {
      launch(y, plan, shifted, x, nullptr);
    }
    /// x += attn(pre_norm(x)): the norm applied as the qkv GEMM gathers the shifted windows' tokens (norm, cyclic
    /// shift and window partition in one pass; the normalised tokens are never written).
    void run(const layer_norm& pre_norm, volume& x, const ops::window_plan& plan, bool shifted) {
      if (pre_norm.channels() != channels_) {
        detail::fail("window_attention: a pre-norm over ", pre_norm.channels(), " channels for C=", channels_);
      }
      const hip::layer_norm_args args = pre_norm.args();
      launch(x, plan, shifted, x, &args);
    }

   private:
    void launch(const volume& y, const ops::window_plan& plan, bool shifted, volume& x,
                const hip::layer_norm_args* pre_norm) {
      const shape5& s = y.shape();
      if (s.c != channels_ || !(x.shape() == s) || x.layout() != y.layout()) {
        detail::fail("window_attention: tokens ", s.str(), " and x ", x.shape().str(), " must match with C=", channels_);
      }
      if (plan.grid != std::array<std::int64_t, 3>{s.d, s.h, s.w}) {
        detail::fail("window_attention: the window plan was made for a different grid than ", s.str());
      }
      for (int a = 0; a < 3; ++a) {
        if (plan.window[a] > configured_[a]) detail::fail("window_attention: plan window exceeds the configured one");
      }
      const bool masked = shifted && plan.has_shift();
      update_caches(plan, masked);
      hip::window_geometry g;
      g.grid = plan.grid;
      g.padded = plan.padded;
      g.windows = plan.windows;
      g.window = plan.window;
      g.shift = plan.shift;
      g.shifted = shifted;
      hip::window_attention_args a;
      a.channels = channels_;
      a.heads = heads_;
      a.scale = scale_;
      a.qkv_weight = qkv_weight_.get();
      a.qkv_bias = static_cast<const float*>(qkv_bias_.get());
      a.proj_weight = proj_weight_.get();
      a.proj_bias = static_cast<const float*>(proj_bias_.get());
      a.bias_t = static_cast<const float*>(bias_.get());
      a.regions = masked ? static_cast<const std::uint8_t*>(regions_.get()) : nullptr;
      void* scratch = ctx_.scratch(hip::window_attention_scratch_bytes(s.n, g, channels_));
      hip::launch_window_attention(ctx_.env(), volume::type, y.data(), y.desc(), g, a, x.data(), x.desc(), scratch,
                                   pre_norm);
    }

    /// Rebuilds the dense bias when the clamped window changes and the region ids when the shifted grid changes.
    void update_caches(const ops::window_plan& plan, bool masked) {
      if (plan.window != bias_window_) {
        const int t = plan.tokens();
        const auto dense = ops::dense_relative_bias(bias_table_.data(), heads_, relative_index_.data(),
                                                    configured_[0] * configured_[1] * configured_[2], t);
        std::vector<float> transposed(dense.size());  // [h][i][j] -> [h][j][i]
        for (std::int64_t h = 0; h < heads_; ++h)
          for (std::int64_t i = 0; i < t; ++i)
            for (std::int64_t j = 0; j < t; ++j) transposed[(h * t + j) * t + i] = dense[(h * t + i) * t + j];
        bias_ = ctx_.upload(transposed);  // the old table is freed after the runs that read it
        bias_window_ = plan.window;
      }
      if (!masked || (plan.window == region_window_ && plan.shift == region_shift_ && plan.padded == region_padded_)) {
        return;
      }
      const std::vector<std::uint8_t> ids = ops::shift_region_ids(plan);
      regions_ = hip::device_buffer(ids.size());
      hip::copy_to_device(regions_.get(), ids.data(), ids.size(), ctx_.stream());
      ctx_.synchronize();  // `ids` dies here
      region_window_ = plan.window;
      region_shift_ = plan.shift;
      region_padded_ = plan.padded;
    }

    context& ctx_;
    int channels_, heads_;
    std::array<int, 3> configured_;
    float scale_ = 1.0f;
    hip::device_buffer qkv_weight_, qkv_bias_, proj_weight_, proj_bias_;
    std::vector<float> bias_table_;
    std::vector<std::int64_t> relative_index_;
    hip::device_buffer bias_;     ///< dense relative bias of bias_window_, [heads][t][t] as [h][j][i]
    std::array<int, 3> bias_window_{};
    hip::device_buffer regions_;  ///< region ids [windows][t] of the cached shifted grid
    std::array<int, 3> region_window_{}, region_shift_{};
    std::array<std::int64_t, 3> region_padded_{};
  };

  // ---- Stateless ops ---------------------------------------------------------------------------------------

  static void instance_norm(context& ctx, volume& x, const volume* residual, const ops::instance_norm_epilogue& e) {
    if (residual && !(residual->shape() == x.shape())) {
      detail::fail("instance_norm residual shape ", residual->shape().str(), " differs from ", x.shape().str());
    }
    void* scratch = ctx.scratch(hip::instance_norm_scratch_bytes(x.desc()));
    hip::launch_instance_norm(ctx.env(), volume::type, x.data(), x.desc(), residual ? residual->data() : nullptr,
                              residual ? residual->desc() : x.desc(), e.eps, e.negative_slope.has_value(),
                              e.negative_slope.value_or(0.0f), scratch);
  }

  /// out = [parts[0], parts[1], ...] along channels: one copy kernel per part into its channel range.
  static void concat_channels(context& ctx, const std::vector<const volume*>& parts, volume& out) {
    std::vector<shape5> shapes;
    for (const volume* p : parts) {
      if (p->layout() != out.layout()) detail::fail("concat: all tensors need one layout");
      shapes.push_back(p->shape());
    }
    const shape5 s = ops::concat_channels_shape(shapes);
    if (!(out.shape() == s)) detail::fail("concat output shape ", out.shape().str(), " should be ", s.str());
    std::int64_t first = 0;
    for (const volume* p : parts) {
      hip::launch_copy(ctx.env(), volume::type, p->data(), p->desc(), volume::type, out.data(), out.desc(), first);
      first += p->shape().c;
    }
  }

  /// Max or average pooling, kernel^3 windows at stride kernel, no padding, floor mode.
  static void pool3d(context& ctx, const volume& in, const ops::pool3d_problem& p, volume& out) {
    const shape5 os = p.output_shape(in.shape());
    if (!(out.shape() == os)) detail::fail("pool3d output shape ", out.shape().str(), " should be ", os.str());
    hip::require_same_layout("pool3d", in, out);
    hip::launch_pool3d(ctx.env(), volume::type, in.data(), in.desc(), p.mode == ops::pool_mode::max, p.kernel,
                       out.data(), out.desc());
  }

  static void patch_merge_gather(context& ctx, const volume& x, ops::merge_order order, volume& out) {
    const shape5 os = ops::patch_merge_shape(x.shape());
    if (!(out.shape() == os)) detail::fail("patch merge output shape ", out.shape().str(), " should be ", os.str());
    hip::require_same_layout("patch_merge_gather", x, out);
    hip::launch_patch_merge_gather(ctx.env(), volume::type, x.data(), x.desc(), ops::merge_offsets(order), out.data(),
                                   out.desc());
  }

  /// dst = src element by element, converting the element type and the layout.
  template <class A, class B>
  static void convert(context& ctx, const hip::device_tensor<A>& src, hip::device_tensor<B>& dst) {
    if (!(dst.shape() == src.shape())) {
      detail::fail("convert: source shape ", src.shape().str(), " differs from destination ", dst.shape().str());
    }
    hip::launch_copy(ctx.env(), hip::dtype_of<A>(), src.data(), src.desc(), hip::dtype_of<B>(), dst.data(), dst.desc(),
                     0);
  }
};

// conv3d, linear and window_attention also take the norm before them and apply it on load; conv3d also reads a
// concatenation of two inputs where they are. The model relies on both for the device's speed.
static_assert(implements_contract<backend::hip, precision::fp32, precision::fp16, precision::bf16>,
              "swinfer: kernels<backend::hip, P, L> must satisfy swinfer::backend_kernels (swinfer/backend/contract.hpp)");
static_assert(fuses_norms<kernels<backend::hip, precision::fp16, layout::ndhwc>> &&
                  fuses_concat<kernels<backend::hip, precision::fp16, layout::ndhwc>>,
              "swinfer: the hip backend's conv3d, linear and window_attention must keep their fused overloads "
              "(swinfer::fuses_norms, swinfer::fuses_concat)");

}  // namespace swinfer
