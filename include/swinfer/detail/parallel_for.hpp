// swinfer: a small static-partition parallel loop for the host-side passes around the network (resampling,
// gather, blend, post-processing). Backends have their own pools.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace swinfer::detail {

/// Threads to use for `items` independent items of roughly `work_per_item` element operations each: `requested`
/// (0 = one per hardware thread), but no more than keeps about 64 Ki operations per thread, so small passes stay
/// on the calling thread instead of paying for thread start-up.
inline int loop_threads(int requested, std::int64_t items, std::int64_t work_per_item) {
  const int wanted = requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr std::int64_t min_work_per_thread = 1 << 16;
  const std::int64_t by_work = std::max<std::int64_t>(1, items * std::max<std::int64_t>(1, work_per_item) /
                                                             min_work_per_thread);
  return static_cast<int>(std::min<std::int64_t>({wanted, items, by_work}));
}

/// Calls body(begin, end) on contiguous blocks covering [0, items), one block per thread; the caller runs the
/// first block. The body must not throw (these loops only move and add floats) and blocks must not overlap in
/// what they write.
template <class Body>
void parallel_for(std::int64_t items, int threads, const Body& body) {
  if (items <= 0) return;
  if (threads <= 1) {
    body(std::int64_t{0}, items);
    return;
  }
  const auto block = [&](int t) { return items * t / threads; };
  std::vector<std::jthread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) workers.emplace_back([&body, b = block(t), e = block(t + 1)] { body(b, e); });
  body(block(0), block(1));
}

}  // namespace swinfer::detail
