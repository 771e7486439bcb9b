// swinfer: the parallel loop of the host-side passes around the network (resampling, gather, blend,
// post-processing), on one shared thread_pool instead of threads started per call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>

#include "swinfer/core/thread_pool.hpp"

namespace swinfer::detail {

/// Threads to use for `items` independent items of roughly `work_per_item` element operations each: `requested`
/// (0 = one per hardware thread), but no more than keeps about 64 Ki operations per thread, so small passes stay
/// on the calling thread instead of paying for waking workers.
inline int loop_threads(int requested, std::int64_t items, std::int64_t work_per_item) {
  const int wanted = requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr std::int64_t min_work_per_thread = 1 << 16;
  const std::int64_t by_work = std::max<std::int64_t>(1, items * std::max<std::int64_t>(1, work_per_item) /
                                                             min_work_per_thread);
  return static_cast<int>(std::min<std::int64_t>({wanted, items, by_work}));
}

/// The pool the host passes share: one worker per hardware thread, started on first use.
inline thread_pool& host_thread_pool() {
  static thread_pool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

/// Calls body(begin, end) on contiguous blocks covering [0, items), one block per thread (at most one per hardware
/// thread), on the shared host pool; the caller runs the first block. Blocks must not overlap in what they write;
/// an exception from a body is rethrown here once every block has stopped.
template <class Body>
void parallel_for(std::int64_t items, int threads, const Body& body) {
  if (items <= 0) return;
  if (threads <= 1) {
    body(std::int64_t{0}, items);
    return;
  }
  host_thread_pool().parallel_for(
      items, (items + threads - 1) / threads, [&](std::int64_t begin, std::int64_t end, int) { body(begin, end); },
      threads);
}

}  // namespace swinfer::detail
