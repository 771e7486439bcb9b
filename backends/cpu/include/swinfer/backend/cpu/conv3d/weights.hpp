// swinfer cpu conv3d: what every implementation packs its weights from, and the float32 panels two of them share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/ops/conv3d.hpp"

namespace swinfer::cpu {

/// The implementations a convolution has prepared so far (the automatic choice asks it while it walks the list).
class conv3d_prepared {
 public:
  bool operator()(conv3d_kernel k) const { return (bits_ >> static_cast<unsigned>(k) & 1u) != 0; }
  void add(conv3d_kernel k) { bits_ |= 1u << static_cast<unsigned>(k); }

 private:
  std::uint32_t bits_ = 0;
};

/// \brief The weights (cout, cin, kd, kh, kw) and bias (cout or null) of one convolution, as its implementations read
/// them while they pack. Lives for the op's construction only; the float32 panels it packs are shared by the
/// implementations that multiply them (direct, whole grid), so they are packed once.
class conv3d_weights {
 public:
  conv3d_weights(const ops::conv3d_problem& p, const float* weight, const float* bias)
      : p_(p), weight_(weight), bias_(bias) {}

  const ops::conv3d_problem& problem() const { return p_; }
  const float* weight() const { return weight_; }
  const float* bias() const { return bias_; }

  /// The weight at GEMM depth k and column co, depth ordered (kz, ky, kx, ci) like the staged input rows.
  float element(std::int64_t k, std::int64_t co) const {
    const std::int64_t cin = p_.cin, kw = p_.kernel[2], kh = p_.kernel[1], kd = p_.kernel[0];
    const std::int64_t ci = k % cin, tap = k / cin;
    const std::int64_t kx = tap % kw, ky = (tap / kw) % kh, kz = tap / (kw * kh);
    return weight_[(((co * cin + ci) * kd + kz) * kh + ky) * kw + kx];
  }
  /// The bias zero padded to whole column groups (the accumulators' start); zeros without bias.
  std::vector<float> padded_bias() const {
    std::vector<float> b(static_cast<std::size_t>(round_up(p_.cout, group_width)), 0.0f);
    // "&& bias_" is implied by check_parameters; it spares GCC 12 at -O3 a false -Wnonnull.
    if (p_.bias && bias_) std::copy(bias_, bias_ + p_.cout, b.begin());
    return b;
  }
  /// GEMM depth: kd * kh * kw * cin.
  std::int64_t depth() const { return std::int64_t{p_.kernel[0]} * p_.kernel[1] * p_.kernel[2] * p_.cin; }
  /// The float32 panels [depth][cout] of the FMA micro-kernel, packed on the first request.
  std::shared_ptr<const packed_matrix> float_panels() const {
    if (!panels_) {
      panels_ = std::make_shared<const packed_matrix>(depth(), p_.cout,
                                                      [&](std::int64_t k, std::int64_t co) { return element(k, co); });
    }
    return panels_;
  }

 private:
  const ops::conv3d_problem& p_;
  const float* weight_;
  const float* bias_;
  mutable std::shared_ptr<const packed_matrix> panels_;
};

}  // namespace swinfer::cpu
