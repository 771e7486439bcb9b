// swinfer: the per-plan tables a window attention op reads, shared by every backend: the dense relative-position
// bias of the plan's clamped window and the shift-region ids of its shifted grid, rebuilt only when they change.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::ops {

/// \brief The host tables of one WindowAttention module for the last plan it ran with.
///
/// The dense bias [heads][t][t] (float32, ops::dense_relative_bias: MONAI's truncated index for a clamped window)
/// depends only on the clamped window; the region ids [window][token] (ops::shift_region_ids) and whether each
/// window mixes regions depend on the clamped window, the shift and the padded grid. update() rebuilds what the
/// plan changes and says so, so a backend re-derives its own layout (padded, transposed, uploaded) only then: in
/// the model that is once per stage. Owns a copy of the bias table and the index, so the op does not depend on
/// the checkpoint's lifetime.
class window_bias_cache {
 public:
  /// What update() rebuilt.
  struct changes {
    bool bias = false;
    bool regions = false;
  };

  window_bias_cache() = default;
  /// Copies the bias table ((2w0-1)(2w1-1)(2w2-1), heads) and the relative index (n, n) of `w` (w.check() first).
  explicit window_bias_cache(const window_attention_weights& w)
      : heads_(w.heads),
        configured_tokens_(w.configured_tokens()),
        table_(w.bias_table, w.bias_table + relative_bias_table_rows(w.configured_window) * w.heads),
        index_(w.relative_index, w.relative_index + std::int64_t{configured_tokens_} * configured_tokens_) {}

  /// Brings the tables up to date for `plan`: the dense bias when the clamped window changed; when `masked`
  /// (shifted and plan.has_shift()), the region ids when the shifted grid changed. Unmasked runs keep the ids.
  changes update(const window_plan& plan, bool masked) {
    changes c;
    if (plan.window != bias_window_) {
      bias_ = dense_relative_bias(table_.data(), heads_, index_.data(), configured_tokens_, plan.tokens());
      bias_window_ = plan.window;
      c.bias = true;
    }
    if (masked && !(plan.window == region_window_ && plan.shift == region_shift_ && plan.padded == region_padded_)) {
      regions_ = shift_region_ids(plan);
      const int t = plan.tokens();
      mixed_.assign(static_cast<std::size_t>(plan.num_windows()), 0);
      for (std::int64_t win = 0; win < plan.num_windows(); ++win) {
        const std::uint8_t* r = regions_.data() + win * t;
        mixed_[static_cast<std::size_t>(win)] = std::any_of(r, r + t, [&](std::uint8_t id) { return id != r[0]; });
      }
      region_window_ = plan.window;
      region_shift_ = plan.shift;
      region_padded_ = plan.padded;
      c.regions = true;
    }
    return c;
  }

  int heads() const { return heads_; }
  /// Tokens t of the clamped window of the last update().
  int tokens() const { return bias_window_[0] * bias_window_[1] * bias_window_[2]; }
  /// Dense relative bias [heads][t][t] of the last update()'s clamped window: bias(h, i, j) at (h * t + i) * t + j.
  const std::vector<float>& bias() const { return bias_; }
  /// Region id of every token of every window, [window][token], of the last masked update(): tokens i and j of
  /// a window attend unmasked iff their ids are equal (otherwise ops::shift_mask_value is added).
  const std::vector<std::uint8_t>& regions() const { return regions_; }
  /// Per window of the last masked update(): 1 where it holds more than one region (only those need the mask).
  const std::vector<std::uint8_t>& mixed_windows() const { return mixed_; }

 private:
  int heads_ = 0, configured_tokens_ = 0;
  std::vector<float> table_;
  std::vector<std::int64_t> index_;
  std::vector<float> bias_;
  std::array<int, 3> bias_window_{};
  std::vector<std::uint8_t> regions_, mixed_;
  std::array<int, 3> region_window_{}, region_shift_{};
  std::array<std::int64_t, 3> region_padded_{};
};

}  // namespace swinfer::ops
