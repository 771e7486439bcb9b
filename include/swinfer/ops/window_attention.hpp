// swinfer: (shifted-)window multi-head self-attention of a Swin block, and its naive reference.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/quantization.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::ops {

/// MACs of one window attention over `plan`'s padded grid with C channels, per sample: the qkv and proj linears
/// (4 C^2 per token) and the two attention products (2 t C per token, t tokens per window).
inline double window_attention_macs(const window_plan& plan, double channels) {
  const double padded = double(plan.padded[0]) * plan.padded[1] * plan.padded[2];
  return padded * 4 * channels * channels + 2 * padded * plan.tokens() * channels;
}

/// \brief The parameters of one WindowAttention module, as float32/int64 host arrays (PyTorch layouts).
struct window_attention_weights {
  int channels = 0, heads = 0;
  std::array<int, 3> configured_window{7, 7, 7};
  const float* qkv_weight = nullptr;               ///< (3C, C); output channel = which*C + head*hd + j
  const float* qkv_bias = nullptr;                 ///< (3C) or null (qkv_bias=False)
  const float* proj_weight = nullptr;              ///< (C, C)
  const float* proj_bias = nullptr;                ///< (C)
  const float* bias_table = nullptr;               ///< ((2w0-1)(2w1-1)(2w2-1), heads)
  const std::int64_t* relative_index = nullptr;    ///< (n, n), n = prod(configured_window)
  /// Under precision::int8: the inputs of the qkv and proj linears (the window's tokens, the heads' concatenated
  /// outputs, pad tokens included as MONAI pads them), each with its calibration point and scale, dynamic (each
  /// token row's own scale), or float (scale 0).
  int8_input qkv_int8, proj_int8;

  int head_dim() const { return channels / heads; }
  int configured_tokens() const { return configured_window[0] * configured_window[1] * configured_window[2]; }
  /// q is scaled by hd^-0.5, computed in double and applied as float32, *before* q.k (as MONAI does).
  float scale() const { return static_cast<float>(std::pow(static_cast<double>(head_dim()), -0.5)); }

  /// Whether an op can be built from these parameters: channels that split into heads, the qkv and proj weights,
  /// the bias table and the relative index. Throws swinfer::error naming what is wrong.
  void check() const {
    if (channels <= 0 || heads <= 0 || channels % heads) {
      detail::fail("window_attention: ", channels, " channels do not split into ", heads, " heads");
    }
    if (!qkv_weight || !proj_weight || !bias_table || !relative_index) {
      detail::fail("window_attention: qkv/proj weights, the bias table and the relative position index are required");
    }
    qkv_int8.check();
    proj_int8.check();
  }

  /// Whether x += attn(y) runs on token tensors of shapes `y` and `x` with `plan`: one shape (N, C, D, H, W) with
  /// C = channels, the plan made for its grid, the plan's window no larger than the configured one.
  void check(const shape5& y, const shape5& x, const window_plan& plan) const {
    if (y.c != channels || !(x == y)) {
      detail::fail("window_attention: tokens ", y.str(), " and x ", x.str(), " must match with C=", channels);
    }
    if (plan.grid != std::array<std::int64_t, 3>{y.d, y.h, y.w}) {
      detail::fail("window_attention: the window plan was made for a different grid than ", y.str());
    }
    for (int a = 0; a < 3; ++a) {
      if (plan.window[a] > configured_window[a]) {
        detail::fail("window_attention: plan window ", plan.window[0], "x", plan.window[1], "x", plan.window[2],
                     " exceeds the configured ", configured_window[0], "x", configured_window[1], "x",
                     configured_window[2]);
      }
    }
  }

  /// Whether a LayerNorm over `norm_channels` can be applied to the tokens as they are gathered.
  void check_pre_norm(int norm_channels) const {
    if (norm_channels != channels) {
      detail::fail("window_attention: a pre-norm over ", norm_channels, " channels for C=", channels);
    }
  }
};

/// Where window w's token t (on the rolled, padded grid) lives in the un-rolled grid; false for a pad token.
/// Rolling by -shift then partitioning means rolled position r holds original position (r + shift) mod padded.
inline bool window_token_source(const window_plan& p, bool shifted, std::int64_t win, int t,
                                std::array<std::int64_t, 3>& src) {
  const std::int64_t b[3] = {win / (p.windows[1] * p.windows[2]), (win / p.windows[2]) % p.windows[1],
                             win % p.windows[2]};
  const int tz = t / (p.window[1] * p.window[2]), ty = (t / p.window[2]) % p.window[1], tx = t % p.window[2];
  const int tt[3] = {tz, ty, tx};
  bool real = true;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t r = b[a] * p.window[a] + tt[a];
    src[a] = shifted ? (r + p.shift[a]) % p.padded[a] : r;
    real = real && src[a] < p.grid[a];
  }
  return real;
}

namespace ref {

/// A rounding applied to a value where a backend stores an operand in lower precision (e.g. to bf16 and back).
using operand_rounding = float (*)(float);

/// x += WindowAttention(y) for token tensors (N, C, D, H, W) of any layout. Pad tokens are exact zeros and take
/// part in attention (their k and v are the qkv bias alone), unmasked; the mask (-100) only separates shift regions.
/// Quantized linears (wt.qkv_int8, wt.proj_int8) run the int8 scheme on their window rows (docs/int8.md).
/// `round`, where given, rounds the inner products' operands as a backend running them in bf16 does: q (scaled),
/// k and v, the softmax numerators exp(s - max) (normalised by their unrounded sum), and the heads' output.
inline void window_attention(const window_attention_weights& wt, const tensor<float>& y, const window_plan& plan,
                             bool shifted, tensor<float>& x, operand_rounding round = nullptr) {
  wt.check();
  wt.check(y.shape(), x.shape(), plan);
  const auto& s = y.shape();
  const int C = wt.channels, H = wt.heads, hd = wt.head_dim(), t = plan.tokens();
  const bool masked = shifted && plan.has_shift();
  const auto bias = dense_relative_bias(wt.bias_table, H, wt.relative_index, wt.configured_tokens(), t);
  const auto regions = masked ? shift_region_ids(plan) : std::vector<std::uint8_t>{};
  const float scale = wt.scale();
  std::vector<float> in(static_cast<std::size_t>(t) * C), qkv(static_cast<std::size_t>(t) * 3 * C),
      att(static_cast<std::size_t>(t) * C), projected(static_cast<std::size_t>(t) * C), prob(t);
  // The two linears, each quantized where wt says so.
  const linear_problem qkv_problem{C, 3 * C, wt.qkv_bias != nullptr, false, false, wt.qkv_int8};
  const linear_problem proj_problem{C, C, wt.proj_bias != nullptr, false, false, wt.proj_int8};
  std::vector<std::array<std::int64_t, 3>> src(t);
  std::vector<char> real(t);

  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t w = 0; w < plan.num_windows(); ++w) {
      for (int i = 0; i < t; ++i) {
        real[i] = window_token_source(plan, shifted, w, i, src[i]);
        for (int c = 0; c < C; ++c) in[i * C + c] = real[i] ? y(n, c, src[i][0], src[i][1], src[i][2]) : 0.0f;
      }
      ref::linear(qkv_problem, in.data(), t, wt.qkv_weight, wt.qkv_bias, qkv.data());
      const auto rounded = [round](float v) { return round ? round(v) : v; };
      for (int i = 0; i < t; ++i)
        for (int c = 0; c < 3 * C; ++c) {
          float& v = qkv[i * 3 * C + c];
          v = rounded(c < C ? v * scale : v);
        }
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < t; ++i) {
          float mx = -INFINITY;
          for (int j = 0; j < t; ++j) {
            double dot = 0;
            for (int k = 0; k < hd; ++k)
              dot += double{qkv[i * 3 * C + h * hd + k]} * qkv[j * 3 * C + C + h * hd + k];
            float v = static_cast<float>(dot) + bias[(static_cast<std::size_t>(h) * t + i) * t + j];
            if (masked && regions[w * t + i] != regions[w * t + j]) v += shift_mask_value;
            prob[j] = v;
            mx = std::max(mx, v);
          }
          double sum = 0;
          for (int j = 0; j < t; ++j) sum += (prob[j] = std::exp(prob[j] - mx));
          for (int k = 0; k < hd; ++k) {
            double acc = 0;
            for (int j = 0; j < t; ++j) acc += double{rounded(prob[j])} * qkv[j * 3 * C + 2 * C + h * hd + k];
            att[i * C + h * hd + k] = rounded(static_cast<float>(acc / sum));
          }
        }
      ref::linear(proj_problem, att.data(), t, wt.proj_weight, wt.proj_bias, projected.data());
      for (int i = 0; i < t; ++i) {
        if (!real[i]) continue;  // pad tokens are cropped after the reverse roll
        for (int o = 0; o < C; ++o) x(n, o, src[i][0], src[i][1], src[i][2]) += projected[i * C + o];
      }
    }
}

}  // namespace ref
}  // namespace swinfer::ops
