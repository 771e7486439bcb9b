// A test-only backend made of the naive ops::ref kernels: the model graph run on the references, so the graph
// itself is checked against MONAI independently of any optimised backend. fp32 only, any layout.
#pragma once

#include <string>
#include <vector>

#include <swinfer/backend/contract.hpp>
#include <swinfer/core/backend.hpp>
#include <swinfer/core/options.hpp>
#include <swinfer/ops/concat.hpp>
#include <swinfer/ops/conv3d.hpp>
#include <swinfer/ops/conv_transpose3d.hpp>
#include <swinfer/ops/convert.hpp>
#include <swinfer/ops/instance_norm.hpp>
#include <swinfer/ops/layer_norm.hpp>
#include <swinfer/ops/linear.hpp>
#include <swinfer/ops/patch_merging.hpp>
#include <swinfer/ops/pool3d.hpp>
#include <swinfer/ops/window_attention.hpp>

namespace swinfer_test {
struct reference_backend {
  static constexpr std::string_view name = "reference";
};
}  // namespace swinfer_test

namespace swinfer {

template <class L>
inline constexpr bool is_supported_v<swinfer_test::reference_backend, precision::fp32, L> = true;

template <class L>
struct kernels<swinfer_test::reference_backend, precision::fp32, L> {
  struct context {
    explicit context(const engine_options&) {}
    std::string describe_device() const { return "host CPU (naive reference kernels)"; }
  };
  class conv3d {
   public:
    conv3d(context&, const ops::conv3d_problem& p, const float* w, const float* b)
        : p_(p), w_(w, w + p.weight_count()), b_(b ? std::vector<float>(b, b + p.cout) : std::vector<float>{}) {}
    void run(const tensor<float>& in, tensor<float>& out) { ops::ref::conv3d(p_, in, w_.data(), b_.empty() ? nullptr : b_.data(), out); }

   private:
    ops::conv3d_problem p_;
    std::vector<float> w_, b_;
  };
  class conv_transpose3d {
   public:
    conv_transpose3d(context&, const ops::conv_transpose3d_problem& p, const float* w)
        : p_(p), w_(w, w + p.weight_count()) {}
    void run(const tensor<float>& in, tensor<float>& out) { ops::ref::conv_transpose3d(p_, in, w_.data(), out); }

   private:
    ops::conv_transpose3d_problem p_;
    std::vector<float> w_;
  };
  class linear {
   public:
    linear(context&, const ops::linear_problem& p, const float* w, const float* b)
        : p_(p), w_(w, w + std::size_t(p.in_features) * p.out_features),
          b_(b ? std::vector<float>(b, b + p.out_features) : std::vector<float>{}) {}
    void run(const float* x, std::int64_t rows, float* y) { ops::ref::linear(p_, x, rows, w_.data(), b_.empty() ? nullptr : b_.data(), y); }

   private:
    ops::linear_problem p_;
    std::vector<float> w_, b_;
  };
  class layer_norm {
   public:
    layer_norm(context&, int c, const float* g, const float* b, float eps)
        : c_(c), eps_(eps), g_(g ? std::vector<float>(g, g + c) : std::vector<float>{}),
          b_(b ? std::vector<float>(b, b + c) : std::vector<float>{}) {}
    void run(const float* x, std::int64_t rows, float* y) {
      ops::ref::layer_norm(x, rows, c_, g_.empty() ? nullptr : g_.data(), b_.empty() ? nullptr : b_.data(), eps_, y);
    }

   private:
    int c_;
    float eps_;
    std::vector<float> g_, b_;
  };
  class window_attention {
   public:
    window_attention(context&, const ops::window_attention_weights& w) : w_(w) {
      const std::size_t C = w.channels, n = w.configured_tokens();
      qkv_w_.assign(w.qkv_weight, w.qkv_weight + 3 * C * C);
      if (w.qkv_bias) qkv_b_.assign(w.qkv_bias, w.qkv_bias + 3 * C);
      proj_w_.assign(w.proj_weight, w.proj_weight + C * C);
      proj_b_.assign(w.proj_bias, w.proj_bias + C);
      table_.assign(w.bias_table, w.bias_table + ops::relative_bias_table_rows(w.configured_window) * w.heads);
      index_.assign(w.relative_index, w.relative_index + n * n);
      w_.qkv_weight = qkv_w_.data();
      w_.qkv_bias = qkv_b_.empty() ? nullptr : qkv_b_.data();
      w_.proj_weight = proj_w_.data();
      w_.proj_bias = proj_b_.data();
      w_.bias_table = table_.data();
      w_.relative_index = index_.data();
    }
    void run(const tensor<float>& y, const ops::window_plan& plan, bool shifted, tensor<float>& x) {
      ops::ref::window_attention(w_, y, plan, shifted, x);
    }

   private:
    ops::window_attention_weights w_;
    std::vector<float> qkv_w_, qkv_b_, proj_w_, proj_b_, table_;
    std::vector<std::int64_t> index_;
  };
  static void instance_norm(context&, tensor<float>& x, const tensor<float>* r, const ops::instance_norm_epilogue& e) {
    ops::ref::instance_norm(x, r, e);
  }
  static void concat_channels(context&, const std::vector<const tensor<float>*>& parts, tensor<float>& out) {
    ops::ref::concat_channels(parts, out);
  }
  static void pool3d(context&, const tensor<float>& in, const ops::pool3d_problem& p, tensor<float>& out) {
    ops::ref::pool3d(in, p, out);
  }
  static void patch_merge_gather(context&, const tensor<float>& x, ops::merge_order m, tensor<float>& out) {
    ops::ref::patch_merge_gather(x, m, out);
  }
  template <class A, class B>
  static void convert(context&, const tensor<A>& src, tensor<B>& dst) {
    ops::ref::convert(src, dst);
  }
};

static_assert(implements_contract<swinfer_test::reference_backend, precision::fp32>,
              "the reference backend must satisfy swinfer::backend_kernels");

}  // namespace swinfer
