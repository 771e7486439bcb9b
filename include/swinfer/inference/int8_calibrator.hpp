// swinfer: making an int8 calibration (docs/int8.md): the float32 model runs over calibration volumes through the
// sliding window on the cpu backend (a network the caller builds, so the tool's run-time CPU dispatch applies), a
// histogram of |x| and a small sample of the inputs are kept for every quantization point, each point's threshold
// (scale = threshold / 127) is chosen by max, percentile or mse, and a point whose product loses more than the
// fallback threshold in int8 on its sample is left in float.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/detail/parallel_for.hpp"
#include "swinfer/inference/int8_error.hpp"
#include "swinfer/model/int8_calibration.hpp"
#include "swinfer/model/network.hpp"
#include "swinfer/model/network_spec.hpp"

namespace swinfer {

/// \brief A histogram of |x| over [0, range) whose range doubles (merging bin pairs) when a larger value arrives,
/// so one pass suffices.
class magnitude_histogram {
 public:
  static constexpr int bins = 4096;

  void add(const float* v, std::int64_t n) {
    float top = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float a = std::fabs(v[i]);
      if (!std::isfinite(a)) detail::fail("calibration: a non-finite activation (", v[i], ") reached a product");
      top = std::max(top, a);
    }
    max_ = std::max(max_, double{top});
    if (counts_.empty()) {
      counts_.assign(bins, 0);
      range_ = top > 0 ? std::exp2(std::ceil(std::log2(double{top}) + 1e-9)) : 1.0;
    }
    while (top >= range_) grow();
    const double per_bin = bins / range_;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto b = static_cast<std::int64_t>(std::fabs(v[i]) * per_bin);
      ++counts_[static_cast<std::size_t>(std::min<std::int64_t>(b, bins - 1))];
    }
    total_ += static_cast<std::uint64_t>(n);
  }

  double max() const { return max_; }

  /// The |x| below which `percent` of the values lie (the upper edge of that bin, at most the maximum).
  double percentile(double percent) const {
    const double wanted = static_cast<double>(total_) * percent / 100.0;
    double seen = 0;
    for (int b = 0; b < bins; ++b) {
      seen += static_cast<double>(counts_[static_cast<std::size_t>(b)]);
      if (seen >= wanted) return std::min(max_, (b + 1) * range_ / bins);
    }
    return max_;
  }

  /// The threshold that minimises the expected squared error of quantizing to [-127, 127] x threshold / 127:
  /// rounding error (step^2 / 12) inside, clipping error outside; searched over 1/256 .. 1 of the maximum.
  double mse_threshold() const {
    double best = max_, best_error = INFINITY;
    for (int i = 1; i <= 256; ++i) {
      const double t = max_ * i / 256.0;
      if (t <= 0) continue;
      const double step = t / ops::weight_max;
      double error = 0;
      for (int b = 0; b < bins; ++b) {
        const double c = static_cast<double>(counts_[static_cast<std::size_t>(b)]);
        if (c == 0) continue;
        const double x = (b + 0.5) * range_ / bins;
        error += c * (x > t ? (x - t) * (x - t) : step * step / 12.0);
      }
      if (error < best_error) {
        best_error = error;
        best = t;
      }
    }
    return best;
  }

 private:
  void grow() {
    for (int b = 0; b < bins / 2; ++b)
      counts_[static_cast<std::size_t>(b)] = counts_[static_cast<std::size_t>(2 * b)] + counts_[static_cast<std::size_t>(2 * b + 1)];
    std::fill(counts_.begin() + bins / 2, counts_.end(), 0);
    range_ *= 2;
  }

  std::vector<std::uint64_t> counts_;
  double range_ = 1, max_ = 0;
  std::uint64_t total_ = 0;
};

/// How a calibration picks each point's threshold, and which points it leaves in float.
struct calibration_method {
  std::string name = "percentile";  ///< max, percentile or mse
  double percentile = 99.99;        ///< for percentile: the share of |x| kept unclipped
  /// A point whose int8 product's relative L2 error on the calibration sample exceeds this runs in float. Every
  /// point of the demo model stays under 0.03 (docs/int8.md); a point past 0.1 has an input that one scale cannot
  /// cover (outliers far beyond the bulk). Infinity keeps every point in int8.
  double fallback_error = 0.1;

  void check() const {
    if (name != "max" && name != "percentile" && name != "mse") {
      detail::fail("calibration method '", name, "' is not one of max, percentile, mse");
    }
    if (name == "percentile" && !(percentile > 50 && percentile <= 100)) {
      detail::fail("calibration percentile ", percentile, " is outside (50, 100]");
    }
    if (!(fallback_error > 0)) detail::fail("calibration fallback error ", fallback_error, " must be positive");
  }
};

/// \brief Runs a float32 cpu model over calibration images and writes the calibration for `weights`.
/// `model` holds those weights, e.g. make_network<backend::cpu, precision::fp32, layout::ndhwc>(config, weights);
/// any other backend or precision is refused here. `weights` must outlive the calibrator (finish() reads them to
/// measure each point's int8 error).
class int8_calibrator {
 public:
  int8_calibrator(std::unique_ptr<network> model, const state_dict& weights)
      : model_(std::move(model)), weights_(weights), checksum_(weights_checksum(weights)) {
    for (auto& product : model::describe_network(model_->config()).int8_products()) {
      std::string point = product.point;
      samples_.emplace(std::move(point), int8_input_sample(std::move(product)));
    }
    model_->set_input_observer([this](const std::string& point, const tensor<float>& x) {
      if (x.size() == 0) return;
      histograms_[point].add(x.data(), x.size());
      if (const auto it = samples_.find(point); it != samples_.end()) it->second.add(x);
    });
  }
  int8_calibrator(const int8_calibrator&) = delete;  // the observer holds `this`
  int8_calibrator& operator=(const int8_calibrator&) = delete;

  const swin_unetr_config& config() const { return model_->config(); }
  /// Where the model runs (network::device()).
  std::string device() const { return model_->device(); }

  /// Observes every product's input over the sliding window of one preprocessed image (N, in_channels, D, H, W).
  void add(const tensor<float>& image, const sliding_window_options& options, const std::string& name,
           const progress_callback& progress = {}) {
    model_->infer_volume(image, options, progress);
    volumes_.push_back(name);
  }

  /// One scale per observed point, by `method`, and its int8 error on the sample; a point whose error exceeds
  /// method.fallback_error is left in float. The errors (each point's product run twice through the naive references:
  /// most of a calibration's time for a large model) are measured on `threads` threads (0: one per hardware thread),
  /// a point at a time, so they are the same on any number; `progress` (points measured, points to measure) is called
  /// after each, one call at a time.
  int8_calibration finish(const calibration_method& method, int threads = 0,
                          const progress_callback& progress = {}) const {
    method.check();
    check_thread_count(threads, "calibration");
    if (volumes_.empty()) detail::fail("calibration needs at least one volume");
    int8_calibration c;
    c.weights_checksum = checksum_;
    c.method = method.name;
    c.percentile = method.name == "percentile" ? method.percentile : 0;
    c.fallback_error = method.fallback_error;
    c.volumes = volumes_;
    std::vector<std::pair<const int8_input_sample*, int8_point*>> measured;
    for (const auto& [point, h] : histograms_) {
      const double t = method.name == "max"          ? h.max()
                       : method.name == "percentile" ? h.percentile(method.percentile)
                                                     : h.mse_threshold();
      int8_point p;
      p.max_abs = static_cast<float>(h.max());
      p.scale = static_cast<float>(std::max(t, 1e-12) / ops::weight_max);
      int8_point& kept = c.points.emplace(point, p).first->second;
      if (const auto it = samples_.find(point); it != samples_.end() && !it->second.empty()) {
        measured.emplace_back(&it->second, &kept);
      }
    }
    const auto count = static_cast<std::int64_t>(measured.size());
    std::int64_t done = 0;
    std::mutex progress_mutex;
    detail::host_thread_pool().parallel_for(
        count, 1,
        [&](std::int64_t begin, std::int64_t end, int) {
          for (std::int64_t i = begin; i < end; ++i) {
            auto [sample, p] = measured[static_cast<std::size_t>(i)];
            p->error = static_cast<float>(sample->relative_error(p->scale, weights_));
            p->quantized = !(p->error > method.fallback_error);
            const std::lock_guard<std::mutex> lock(progress_mutex);
            ++done;
            if (progress) progress(done, count);
          }
        },
        detail::loop_threads(threads, count, std::int64_t{1} << 20));
    return c;
  }

 private:
  std::unique_ptr<network> model_;
  const state_dict& weights_;
  std::uint32_t checksum_;
  std::map<std::string, int8_input_sample> samples_;  ///< per point of the network
  std::map<std::string, magnitude_histogram> histograms_;
  std::vector<std::string> volumes_;
};

}  // namespace swinfer
