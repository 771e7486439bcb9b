// swinfer cpu backend: the worker pool every kernel parallelises over, and per-worker scratch memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/core/thread_pool.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// \brief 64-byte aligned float scratch that only grows; new memory is zeroed so slack rows that the
/// micro-kernels read past a block's end always hold finite, initialised values.
class aligned_floats {
 public:
  float* reserve(std::int64_t count) {
    if (count > capacity_) {
      const std::size_t bytes = ((static_cast<std::size_t>(count) * sizeof(float) + 63) / 64) * 64;
      void* p = std::aligned_alloc(64, bytes);
      if (!p) detail::fail("out of memory allocating ", bytes >> 20, " MiB of cpu kernel scratch");
      std::memset(p, 0, bytes);
      data_.reset(static_cast<float*>(p));
      capacity_ = count;
    }
    return data_.get();
  }
  float* data() const { return data_.get(); }

 private:
  struct free_deleter {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], free_deleter> data_;
  std::int64_t capacity_ = 0;
};

/// \brief The cpu backend's execution context: a pool of `threads` workers (the calling thread is worker 0) and
/// one growing scratch buffer per worker, shared by all kernels since they run one after another.
class context {
 public:
  explicit context(const engine_options& options)
      : pool_(resolve_threads(options.threads)),
        round_bf16_weights_(options.bf16_weights == bf16_weight_mode::rounded),
        workspaces_(static_cast<std::size_t>(pool_.threads())) {}

  int threads() const { return pool_.threads(); }
  /// Where the kernels run, for reports: the CPU's brand string and the instruction sets the kernels can use.
  /// The CPU and the instruction sets its kernels were compiled for, e.g. "AMD EPYC (avx2 fma); kernels avx2 fma".
  std::string describe_device() const { return host_cpu().describe() + "; kernels " + compiled_kernel_isa(); }
  /// Whether bf16 kernels may round their weights to bf16 (engine_options::bf16_weights).
  bool round_bf16_weights() const { return round_bf16_weights_; }

  /// Calibration (precision::int8): receives the float32 input of every product at its calibration point
  /// (ops::int8_input::point) on the calling thread; {} stops.
  void set_input_observer(ops::calibration_observer observer) { input_observer_ = std::move(observer); }
  void observe_input(const std::string& point, const tensor<float>& input) const {
    if (observes(point)) input_observer_(point, input);
  }
  /// Whether calibration observes the product at `point` (an observer is set and the product is named).
  bool observes(const std::string& point) const { return input_observer_ && !point.empty(); }
  /// observe_input for `rows` rows of `channels` floats (row r at x + r * channels), handed over as a copy shaped
  /// (1, channels, 1, 1, rows) channels-last, i.e. row-major rows x channels.
  void observe_rows(const std::string& point, const float* x, std::int64_t rows, std::int64_t channels) const {
    if (!observes(point)) return;
    tensor<float> copy({1, channels, 1, 1, rows}, layout_kind::ndhwc);
    if (copy.size() > 0) std::memcpy(copy.data(), x, static_cast<std::size_t>(copy.size()) * sizeof(float));
    input_observer_(point, copy);
  }

  /// Scratch of worker `worker`; only that worker may touch it inside parallel_for.
  aligned_floats& workspace(int worker) { return workspaces_[static_cast<std::size_t>(worker)]; }

  /// thread_pool::parallel_for on this context's workers: body(begin, end, worker).
  template <class Body>
  void parallel_for(std::int64_t count, std::int64_t grain, Body&& body) {
    pool_.parallel_for(count, grain, std::forward<Body>(body));
  }

  /// Grain that splits `count` items into one contiguous range per worker.
  std::int64_t even_grain(std::int64_t count) const { return pool_.even_grain(count); }

 private:
  static int resolve_threads(int requested) {
    check_thread_count(requested, "engine_options");
    if (requested > 0) return requested;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  thread_pool pool_;
  bool round_bf16_weights_;
  std::vector<aligned_floats> workspaces_;
  ops::calibration_observer input_observer_;
};

}  // namespace swinfer::cpu
