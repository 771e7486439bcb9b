// swinfer cpu backend: the worker pool every kernel parallelises over, and per-worker scratch memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unsupported/Eigen/CXX11/ThreadPool>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"

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

/// \brief The cpu backend's execution context: `threads` workers (the calling thread is worker 0, an Eigen
/// thread pool supplies the others) and one growing scratch buffer per worker, shared by all kernels since
/// they run one after another.
class context {
 public:
  explicit context(const engine_options& options)
      : threads_(resolve_threads(options.threads)), round_bf16_weights_(options.bf16_weights == bf16_weight_mode::rounded) {
    if (threads_ > 1) pool_ = std::make_unique<Eigen::ThreadPool>(threads_ - 1);
    workspaces_.resize(static_cast<std::size_t>(threads_));
  }

  int threads() const { return threads_; }
  /// Whether bf16 kernels may round their weights to bf16 (engine_options::bf16_weights).
  bool round_bf16_weights() const { return round_bf16_weights_; }

  /// Scratch of worker `worker`; only that worker may touch it inside parallel_for.
  aligned_floats& workspace(int worker) { return workspaces_[static_cast<std::size_t>(worker)]; }

  /// Runs body(begin, end, worker) over [0, count) in chunks of `grain` items that idle workers claim in
  /// order (so a grain of count/threads gives each worker one contiguous range). Blocks until all are done.
  /// If a body throws (e.g. out of memory for scratch), the chunks not yet claimed are skipped and the first
  /// exception is rethrown here once every worker has stopped.
  template <class Body>
  void parallel_for(std::int64_t count, std::int64_t grain, Body&& body) {
    if (count <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    const std::int64_t chunks = (count + grain - 1) / grain;
    const int helpers = static_cast<int>(std::min<std::int64_t>(threads_ - 1, chunks - 1));
    if (helpers <= 0) {
      body(std::int64_t{0}, count, 0);
      return;
    }
    std::atomic<std::int64_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&](int worker) {
      try {
        for (std::int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
          body(c * grain, std::min(count, (c + 1) * grain), worker);
        }
      } catch (...) {
        next.store(chunks);
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    };
    Eigen::Barrier done(static_cast<unsigned>(helpers));
    for (int w = 1; w <= helpers; ++w) {
      pool_->Schedule([&work, &done, w] {
        work(w);
        done.Notify();
      });
    }
    work(0);
    done.Wait();
    if (failure) std::rethrow_exception(failure);
  }

  /// Grain that splits `count` items into one contiguous range per worker.
  std::int64_t even_grain(std::int64_t count) const { return (count + threads_ - 1) / threads_; }

 private:
  static int resolve_threads(int requested) {
    if (requested < 0)
      detail::fail("engine_options::threads must be >= 0 (0 = one per hardware thread), got ", requested);
    if (requested > 0) return requested;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  int threads_;
  bool round_bf16_weights_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::vector<aligned_floats> workspaces_;
};

}  // namespace swinfer::cpu
