// swinfer: the memory this machine has free, and the one up-front check that a buffer fits in it. A volume that
// cannot fit is refused with the numbers before any work, instead of failing (or being killed) halfway through.
#pragma once

#include <climits>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "swinfer/core/error.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace swinfer {

/// \brief Bytes of memory available to a new allocation (Linux's MemAvailable: free memory plus reclaimable
/// caches); 0 when unknown (no /proc/meminfo), in which case nothing is refused.
inline std::int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

/// \brief Keeps the memory of freed tensors in the process for the next ones (glibc: every allocation from the
/// heap, none of it returned to the system below 2 GiB free at its top; elsewhere nothing changes).
///
/// A forward pass frees and allocates the same activation sizes again (every sliding window, every volume); glibc
/// maps allocations of 32 MiB and more afresh each time and unmaps them on free, so every forward page-faults its
/// activations in and the kernel zeroes them. Reused instead (fs48 at 96^3, cpu fp32, 2 threads, 2-core Zen 2):
/// 0.45 s less CPU time in the kernel per forward and 9 % less wall time, at the price of the peak resident memory
/// staying with the process (+14 %). Programs call it once at start-up (the swinfer tool and bench_forward do); a
/// library should not decide it for its host.
inline void reuse_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

namespace detail {

/// Bytes as "12.3 GiB" for messages.
inline std::string gibibytes(double bytes) {
  std::ostringstream s;
  s.precision(3);
  s << bytes / double(std::int64_t{1} << 30) << " GiB";
  return s.str();
}

/// \brief Fails unless `bytes` fit in the memory available now: "<what> needs about X GiB but only Y GiB is
/// available<hint>". `bytes` is a double so that an estimate past int64 is still a clean refusal.
inline void require_memory(double bytes, std::string_view what, std::string_view hint = {}) {
  const auto available = static_cast<double>(available_memory_bytes());
  if (available > 0 && bytes > available) {
    fail(what, " needs about ", gibibytes(bytes), " of memory but only ", gibibytes(available), " is available",
         hint);
  }
}

}  // namespace detail
}  // namespace swinfer
