// swinfer CLI: the sliding-window flags that segment and crosscheck share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <swinfer/core/error.hpp>
#include <swinfer/core/options.hpp>
#include <swinfer/core/value_range.hpp>
#include <swinfer/inference/sliding_window.hpp>

#include "checked_flags.hpp"

namespace swinfer_tool {

struct window_flags {
  std::vector<std::int64_t> roi{96};
  std::vector<double> overlap{0.25}, sigma_scale{0.125};
  std::int64_t sw_batch = 4;
  std::string blend = "constant", padding_mode = "constant";
  float cval = 0.0f;

  swinfer::sliding_window_options options(int threads) const {
    swinfer::sliding_window_options w;
    w.roi = swinfer::per_axis<std::int64_t>(roi);
    w.overlap = swinfer::per_axis<double>(overlap);
    w.sigma_scale = swinfer::per_axis<double>(sigma_scale);
    w.sw_batch_size = sw_batch;
    w.mode = swinfer::parse_blend_mode(blend);
    w.padding_mode = swinfer::parse_pad_mode(padding_mode);
    w.cval = cval;
    w.threads = threads;
    return w;
  }
};

/// Adds --roi, --overlap, --sw-batch, --blend, --sigma-scale, --padding-mode, --cval in option group `group`.
/// Each flag's values are checked against swinfer::sliding_window_ranges while parsing.
inline void add_window_options(CLI::App& cmd, window_flags& f, const std::string& group) {
  using ranges = swinfer::sliding_window_ranges;
  cmd.add_option("--roi", f.roi, "window size: one value or D,H,W (0: the image's extent)")
      ->delimiter(',')
      ->check(checked_by<std::int64_t>([](std::int64_t v) { swinfer::detail::check_roi_value(v, ""); },
                                       ranges::roi.str()))
      ->group(group);
  cmd.add_option("--overlap", f.overlap, "overlap fraction: one value or per axis")
      ->delimiter(',')
      ->check(within<double>(ranges::overlap, "overlap"))
      ->group(group);
  cmd.add_option("--sw-batch", f.sw_batch, "windows per network call")
      ->check(within<std::int64_t>(ranges::sw_batch_size, "sw_batch_size"))
      ->group(group);
  cmd.add_option("--blend", f.blend, "constant or gaussian")->check(CLI::IsMember({"constant", "gaussian"}))->group(group);
  cmd.add_option("--sigma-scale", f.sigma_scale, "gaussian sigma as a fraction of the roi")
      ->delimiter(',')
      ->check(within<double>(ranges::sigma_scale, "sigma_scale"))
      ->group(group);
  cmd.add_option("--padding-mode", f.padding_mode, "padding of images smaller than the roi")
      ->check(CLI::IsMember({"constant", "replicate"}))
      ->group(group);
  cmd.add_option("--cval", f.cval, "fill value for constant padding")
      ->check(within<float>(ranges::cval, "cval"))
      ->group(group);
}

}  // namespace swinfer_tool
