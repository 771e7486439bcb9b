// swinfer: the one worker pool behind every parallel loop: the cpu backend's kernels (one pool per model context,
// sized by engine_options::threads) and the host passes around the network (one shared pool, see
// detail/parallel_for.hpp). Workers claim chunks in order; the calling thread is worker 0.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <unsupported/Eigen/CXX11/ThreadPool>

namespace swinfer {

/// \brief `threads` workers: the calling thread and an Eigen thread pool of threads - 1 for the others.
/// A body must not call parallel_for on the pool that runs it (its helpers could wait for each other).
class thread_pool {
 public:
  explicit thread_pool(int threads) : threads_(std::max(1, threads)) {
    if (threads_ > 1) pool_ = std::make_unique<Eigen::ThreadPool>(threads_ - 1);
  }

  int threads() const { return threads_; }

  /// Runs body(begin, end, worker) over [0, count) in chunks of `grain` items that idle workers claim in order
  /// (so a grain of count/threads gives each worker one contiguous range), on at most `max_workers` workers
  /// (0: all). Blocks until all are done. If a body throws, the chunks not yet claimed are skipped and the first
  /// exception is rethrown here once every worker has stopped.
  template <class Body>
  void parallel_for(std::int64_t count, std::int64_t grain, Body&& body, int max_workers = 0) {
    if (count <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    const std::int64_t chunks = (count + grain - 1) / grain;
    const int workers = max_workers > 0 ? std::min(max_workers, threads_) : threads_;
    const int helpers = static_cast<int>(std::min<std::int64_t>(workers - 1, chunks - 1));
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
  int threads_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
};

}  // namespace swinfer
