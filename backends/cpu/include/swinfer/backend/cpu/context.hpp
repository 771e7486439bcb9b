// swinfer cpu backend: the worker pool every kernel parallelises over, and per-worker scratch memory.
#pragma once

#include <algorithm>
#include <chrono>
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
#include "swinfer/core/op_profile.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/thread_pool.hpp"
#include "swinfer/ops/quantization.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

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

using profile_clock = std::chrono::steady_clock;

inline double seconds_since(profile_clock::time_point start) {
  return std::chrono::duration<double>(profile_clock::now() - start).count();
}

/// The process's CPU seconds in the kernel so far (0 where getrusage is missing): page faults of fresh tensors.
inline double process_system_seconds() {
#if defined(__unix__) || defined(__APPLE__)
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_stime.tv_sec) + 1e-6 * static_cast<double>(usage.ru_stime.tv_usec);
#else
  return 0;
#endif
}

/// \brief The cpu backend's execution context: a pool of `threads` workers (the calling thread is worker 0) and
/// one growing scratch buffer per worker, shared by all kernels since they run one after another.
class context {
 public:
  using options = backend_options<backend::cpu>;

  explicit context(const options& o)
      : pool_(resolve_threads(o.threads)),
        round_bf16_weights_(o.bf16_weights == bf16_weight_mode::rounded),
        kernels_(o.kernels),
        workspaces_(static_cast<std::size_t>(pool_.threads())),
        profile_(o.profile),
        busy_(profile_ ? static_cast<std::size_t>(pool_.threads()) : 0) {}

  int threads() const { return pool_.threads(); }
  /// Where the kernels run, for reports: the CPU's brand string and the instruction sets the kernels can use.
  /// The CPU and the instruction sets its kernels were compiled for, e.g. "AMD EPYC (avx2 fma); kernels avx2 fma".
  std::string describe_device() const { return host_cpu().describe() + "; kernels " + compiled_kernel_isa(); }
  /// Whether bf16 kernels may round their weights to bf16 (backend_options<cpu>::bf16_weights).
  bool round_bf16_weights() const { return round_bf16_weights_; }
  /// The kernel variants forced per op (backend_options<cpu>::kernels).
  const kernel_choices& kernels() const { return kernels_; }

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
  /// Scratch that every worker of one op may use, for what an op hands from one parallel loop to the next.
  aligned_floats& shared_workspace() { return shared_workspace_; }

  /// thread_pool::parallel_for on this context's workers: body(begin, end, worker). Each worker's streaming stores
  /// are fenced before the loop returns. While an op is timed for the profile, each worker's time inside `body` is
  /// summed too.
  template <class Body>
  void parallel_for(std::int64_t count, std::int64_t grain, Body&& body) {
    if (!timing_) {
      pool_.parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end, int worker) {
        body(begin, end, worker);
        store_fence();
      });
      return;
    }
    pool_.parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end, int worker) {
      const auto start = profile_clock::now();
      body(begin, end, worker);
      store_fence();
      busy_[static_cast<std::size_t>(worker)].seconds += seconds_since(start);
    });
  }

  /// \brief Times one op into engine_options::profile from construction to destruction (nothing without a
  /// profile; an op inside a timed op is part of it).
  class op_timer {
   public:
    op_timer() = default;
    op_timer(context& ctx, op_label label) : ctx_(&ctx), label_(std::move(label)) {
      ctx.timing_ = true;
      for (auto& b : ctx.busy_) b.seconds = 0;
      system_ = process_system_seconds();
      start_ = profile_clock::now();
    }
    op_timer(const op_timer&) = delete;
    op_timer& operator=(const op_timer&) = delete;
    ~op_timer() {
      if (!ctx_) return;
      const double seconds = seconds_since(start_);
      double busy = 0;
      for (const auto& b : ctx_->busy_) busy += b.seconds;
      ctx_->profile_->add(std::move(label_), seconds, busy, ctx_->threads(), process_system_seconds() - system_);
      ctx_->timing_ = false;
    }

   private:
    context* ctx_ = nullptr;
    op_label label_;
    double system_ = 0;
    profile_clock::time_point start_;
  };

  /// An op_timer for the op `label()` names when a profile is recorded and no op is being timed already; `label`
  /// (which builds strings) is called only then.
  template <class Label>
  [[nodiscard]] op_timer time_op(Label&& label) {
    return profile_ && !timing_ ? op_timer(*this, label()) : op_timer();
  }

  /// Grain that splits `count` items into one contiguous range per worker.
  std::int64_t even_grain(std::int64_t count) const { return pool_.even_grain(count); }
  /// For a loop over `planes` planes of `rows` rows each: rows per work item, all of a plane's unless there are
  /// fewer than four planes per worker (small grids on many cores), where planes split into blocks of rows.
  std::int64_t rows_per_item(std::int64_t planes, std::int64_t rows) const {
    const std::int64_t blocks = std::clamp<std::int64_t>((4 * threads() + planes - 1) / planes, 1, rows);
    return (rows + blocks - 1) / blocks;
  }

 private:
  static int resolve_threads(int requested) {
    check_thread_count(requested, "engine_options");
    if (requested > 0) return requested;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  /// One worker's busy time, on its own cache line (workers add to theirs concurrently).
  struct alignas(64) busy_time {
    double seconds = 0;
  };

  thread_pool pool_;
  bool round_bf16_weights_;
  kernel_choices kernels_;
  std::vector<aligned_floats> workspaces_;
  aligned_floats shared_workspace_;
  ops::calibration_observer input_observer_;
  std::shared_ptr<op_profile> profile_;
  std::vector<busy_time> busy_;  ///< per worker, while an op is timed
  bool timing_ = false;          ///< an op_timer is running
};

}  // namespace swinfer::cpu
