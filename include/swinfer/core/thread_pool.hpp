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
  /// (0: all). Returns once every chunk is done, without waiting for a helper that has not started (it finds
  /// nothing left and never calls body: a sleeping worker's slow wake-up, milliseconds on a busy virtual machine,
  /// does not hold up the loop). If a body throws, the chunks not yet claimed are skipped and the first exception is
  /// rethrown here once every claimed chunk has stopped.
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
    const auto run_chunk = [&](std::int64_t c, int worker) {
      body(c * grain, std::min(count, (c + 1) * grain), worker);
    };
    // Helpers hold the job, not this frame: one that starts after the loop has returned touches only the job.
    const auto job = std::make_shared<chunk_job>(chunks, &run_chunk, [](const void* run, std::int64_t c, int worker) {
      (*static_cast<const decltype(run_chunk)*>(run))(c, worker);
    });
    for (int w = 1; w <= helpers; ++w) pool_->Schedule([job, w] { job->work(w); });
    job->work(0);
    job->wait();
    if (job->failure) std::rethrow_exception(job->failure);
  }

  /// Grain that splits `count` items into one contiguous range per worker.
  std::int64_t even_grain(std::int64_t count) const { return (count + threads_ - 1) / threads_; }

 private:
  /// One parallel_for's chunks: claimed through `next`, each counted in `finished` once run (or skipped after a
  /// failure), so the caller knows when no chunk can still call the body.
  struct chunk_job {
    using runner = void (*)(const void* run, std::int64_t chunk, int worker);
    chunk_job(std::int64_t count, const void* run_chunk, runner run) : chunks(count), run_(run_chunk), runner_(run) {}

    void work(int worker) {
      for (std::int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
        if (!failed.load(std::memory_order_relaxed)) {
          try {
            runner_(run_, c, worker);
          } catch (...) {
            const std::lock_guard<std::mutex> lock(failure_mutex);
            if (!failure) failure = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
          }
        }
        if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) finished.notify_all();
      }
    }
    void wait() {
      for (std::int64_t f = finished.load(std::memory_order_acquire); f < chunks;
           f = finished.load(std::memory_order_acquire)) {
        finished.wait(f, std::memory_order_acquire);
      }
    }

    const std::int64_t chunks;
    std::atomic<std::int64_t> next{0}, finished{0};
    std::atomic<bool> failed{false};
    std::mutex failure_mutex;
    std::exception_ptr failure;

   private:
    const void* run_;  ///< the caller's chunk runner: called only for claimed chunks, all done before wait() returns
    runner runner_;
  };

  int threads_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
};

}  // namespace swinfer
