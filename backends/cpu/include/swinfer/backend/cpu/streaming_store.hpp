// swinfer cpu backend: non-temporal stores for outputs too large to stay in the cache. A normal store first reads
// the line it writes (read for ownership), so writing a 96^3 x 48 float32 activation (170 MB) moved 340 MB; streamed,
// 170 MB, and the next op reads it from memory either way (measured: docs/performance.md, stop 48).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "swinfer/backend/cpu/simd.hpp"

namespace swinfer::cpu {

/// Outputs from this size on are written with streaming stores: well past the cache a core can count on, so the
/// reader finds them in memory anyway. 8 MiB measured the same as 32 MiB on the 2-core AMX Xeon (two rounds); no CPU
/// with a small last-level cache has timed it yet.
inline constexpr std::int64_t streaming_store_least_bytes = std::int64_t{32} << 20;

/// Whether an output of `elements` values of S is written with streaming stores.
template <class S>
inline bool streams_output(std::int64_t elements) {
  return elements * static_cast<std::int64_t>(sizeof(S)) >= streaming_store_least_bytes;
}

/// from_floats (the same rounding), with the 64-byte-aligned middle of dst written by non-temporal stores where the
/// target has AVX-512 (plain stores otherwise). The stores are weakly ordered: store_fence() must follow before
/// another thread reads dst (context::parallel_for fences each worker's share).
template <class S>
inline void stream_from_floats(const float* src, S* dst, std::int64_t n) {
#ifdef __AVX512F__
  constexpr auto bytes = static_cast<std::int64_t>(sizeof(S));
  constexpr std::int64_t line = 64 / bytes;  // values per 64-byte line
  const auto misaligned = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst) % 64);
  if (misaligned % bytes == 0) {
    const std::int64_t head = std::min(n, misaligned == 0 ? 0 : (64 - misaligned) / bytes);
    from_floats(src, dst, head);
    std::int64_t i = head;
    for (; i + line <= n; i += line) {
      if constexpr (std::is_same_v<S, float>) {
        _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
      } else {
        alignas(64) S narrowed[line];
        from_floats(src + i, narrowed, line);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_load_si512(narrowed));
      }
    }
    from_floats(src + i, dst + i, n - i);
    return;
  }
#endif
  from_floats(src, dst, n);
}

/// from_floats, or stream_from_floats where `streamed` (streams_output of the tensor dst belongs to).
template <class S>
inline void store_floats(const float* src, S* dst, std::int64_t n, bool streamed) {
  if (streamed) {
    stream_from_floats(src, dst, n);
  } else {
    from_floats(src, dst, n);
  }
}

/// Orders this thread's streaming stores before its later stores (and the pool's completion signal).
inline void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace swinfer::cpu
