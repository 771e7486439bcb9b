// swinfer hip backend: what the GPU translation units share: the vendor header, dtype dispatch to the device
// storage types, launch-geometry helpers and strided indexing. Included only by backends/hip/src/*.cu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/vendor/gpu.hpp"

namespace swinfer::hip::kern {

using gpu::bf16_t;
using gpu::half_t;

/// Calls f(T{}) with T the device storage type of `t` (float, half_t, bf16_t): the three instantiations of every
/// templated kernel are made here, once, in the library.
template <class F>
void dispatch(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: f(float{}); return;
    case dtype::f16: f(half_t{}); return;
    case dtype::bf16: f(bf16_t{}); return;
  }
}

/// x quantized as the int8 scheme's activations (ops::quantize_activation, docs/int8.md): x * inverse_scale rounded
/// half to even, clamped to [-128, 127].
SWINFER_GPU_DEVICE inline std::int8_t quantize_s8(float x, float inverse_scale) {
  return static_cast<std::int8_t>(fminf(fmaxf(rintf(x * inverse_scale), -128.0f), 127.0f));
}

/// V consecutive elements moved as one: a single element, or 16 bytes in one load or store.
template <class E, int V>
struct alignas(V * sizeof(E)) pack {
  E e[V];
};

/// Elements of E in one 16-byte pack.
template <class E>
inline constexpr int pack_width = static_cast<int>(sizeof(gpu::bytes16) / sizeof(E));

template <class E, int V>
SWINFER_GPU_DEVICE pack<E, V> load_pack(const E* p) {
  if constexpr (V == 1) {
    return {{*p}};
  } else {
    return gpu::bit_cast<pack<E, V>>(gpu::load16(p));
  }
}

template <class E, int V>
SWINFER_GPU_DEVICE void store_pack(E* p, const pack<E, V>& v) {
  if constexpr (V == 1) {
    *p = v.e[0];
  } else {
    gpu::store16(p, gpu::bit_cast<gpu::bytes16>(v));
  }
}

template <class E, int V>
SWINFER_GPU_DEVICE pack<E, V> zero_pack() {
  if constexpr (V == 1 && std::is_integral_v<E>) {
    return {{E{0}}};
  } else if constexpr (V == 1) {
    return {{gpu::from_f32<E>(0.0f)}};
  } else {
    return gpu::bit_cast<pack<E, V>>(gpu::bytes16{});  // all-zero bits: +0 in every element type
  }
}

/// out = p[0 .. N-1]: in 16-byte loads where N is a multiple of 4 (p must then be 16-byte aligned), else one by one.
template <int N>
SWINFER_GPU_DEVICE void load_floats(const float* p, float (&out)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int q = 0; q < N / 4; ++q) {
      const pack<float, 4> v = load_pack<float, 4>(p + 4 * q);
#pragma unroll
      for (int e = 0; e < 4; ++e) out[4 * q + e] = v.e[e];
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = p[i];
  }
}

/// Whether p is 16-byte aligned (null counts as aligned: an absent operand).
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % sizeof(gpu::bytes16) == 0; }

/// Strides and extents passed to kernels by value (kernel arguments live in constant memory).
struct dims5 {
  std::int64_t n, c, d, h, w;
  std::int64_t sn, sc, sd, sh, sw;
  SWINFER_GPU_HOST_DEVICE std::int64_t offset(std::int64_t in, std::int64_t ic, std::int64_t iz, std::int64_t iy,
                                              std::int64_t ix) const {
    return in * sn + ic * sc + iz * sd + iy * sh + ix * sw;
  }
  SWINFER_GPU_HOST_DEVICE std::int64_t numel() const { return n * c * d * h * w; }
  SWINFER_GPU_HOST_DEVICE std::int64_t spatial() const { return d * h * w; }
};

inline dims5 to_dims(const strided5& s) {
  return {s.shape[0], s.shape[1], s.shape[2], s.shape[3], s.shape[4],
          s.stride[0], s.stride[1], s.stride[2], s.stride[3], s.stride[4]};
}

/// True when the strides are the packed channels-last strides (C fastest): the element order of a linear index
/// in (n, d, h, w, c) order then equals memory order, so one-thread-per-element kernels coalesce.
inline bool channels_last(const dims5& s) { return s.sc == 1 && s.sw == s.c; }

/// Blocks for a grid-stride loop over `work` items with `threads` per block: enough to fill the device a few
/// times over, never more than there is work.
inline unsigned grid_for(std::int64_t work, int threads, const launch_env& env) {
  const std::int64_t needed = (work + threads - 1) / threads;
  const std::int64_t cap = std::int64_t{env.multiprocessors} * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, cap)));
}

/// `bytes` rounded up to whole 256-byte steps: where the next array of a launch's scratch starts.
inline std::size_t align_up(std::size_t bytes) {
  constexpr std::size_t scratch_align = 256;
  return (bytes + scratch_align - 1) / scratch_align * scratch_align;
}

/// Blocks of `threads` threads for a grid-stride loop that gives each of `rows` rows one warp.
inline unsigned grid_for_warp_rows(std::int64_t rows, int threads, const launch_env& env) {
  const int rows_per_block = threads / env.warp_size;
  return grid_for((rows + rows_per_block - 1) / rows_per_block, 1, env);
}

/// True when the strides are the packed strides of either layout: element i of the tensor's memory order is then
/// at offset i, and elementwise kernels need no index split.
inline bool packed(const dims5& s) {
  const std::int64_t S = s.d * s.h * s.w;
  const bool last = s.sc == 1 && s.sw == s.c && s.sh == s.w * s.c && s.sd == s.h * s.w * s.c && s.sn == S * s.c;
  const bool first = s.sw == 1 && s.sh == s.w && s.sd == s.h * s.w && s.sc == S && s.sn == s.c * S;
  return last || first;
}

inline gpu::stream_t stream_of(const launch_env& env) { return static_cast<gpu::stream_t>(env.stream); }

/// True when i and every extent fit in 32 bits: index splits then use 32-bit division, several times cheaper on
/// GPUs than 64-bit division (every volume of a realistic scan qualifies; larger ones take the 64-bit path).
SWINFER_GPU_HOST_DEVICE inline bool fits_32(std::int64_t i, std::int64_t a, std::int64_t b, std::int64_t c,
                                            std::int64_t d) {
  return (static_cast<std::uint64_t>(i) | static_cast<std::uint64_t>(a) | static_cast<std::uint64_t>(b) |
          static_cast<std::uint64_t>(c) | static_cast<std::uint64_t>(d)) <= 0xffffffffu;
}

/// i = ((q * e0 + r0) * e1 + r1) * e2 + r2 split into (q, r0, r1, r2), computed in the integer type I.
template <class I>
SWINFER_GPU_HOST_DEVICE inline void split3(I i, I e0, I e1, I e2, std::int64_t& q, std::int64_t& r0,
                                           std::int64_t& r1, std::int64_t& r2) {
  const I a = i / e2, b = a / e1, c = b / e0;
  r2 = static_cast<std::int64_t>(i - a * e2);
  r1 = static_cast<std::int64_t>(a - b * e1);
  r0 = static_cast<std::int64_t>(b - c * e0);
  q = static_cast<std::int64_t>(c);
}

/// Voxel index m = ((n*D + z)*H + y)*W + x (x fastest) split into (n, z, y, x): GEMM rows of convolutions and the
/// per-voxel loops.
SWINFER_GPU_HOST_DEVICE inline void split_position(std::int64_t m, std::int64_t d, std::int64_t h, std::int64_t w,
                                                   std::int64_t& n, std::int64_t& z, std::int64_t& y, std::int64_t& x) {
  if (fits_32(m, d, h, w, 0)) {
    split3<std::uint32_t>(static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(h),
                          static_cast<std::uint32_t>(w), n, z, y, x);
  } else {
    split3<std::int64_t>(m, d, h, w, n, z, y, x);
  }
}

/// Division by a divisor fixed at launch without the GPU's integer division (tens of instructions): for
/// 0 <= n < 2^31, n / d = umulhi(n, m) >> (p - 32) with p = 31 + ceil(log2 d) and m = ceil(2^p / d) (round-up
/// multiplier; d = 1 divides by passing n through). Made on the host, passed in a kernel's arguments.
struct fast_divisor {
  std::uint32_t d = 1, multiplier = 0, shift = 0;
  fast_divisor() = default;
  explicit fast_divisor(std::uint32_t divisor) : d(divisor) {
    if (d <= 1) return;
    std::uint32_t log2_ceil = 0;
    while ((std::uint64_t{1} << log2_ceil) < d) ++log2_ceil;
    const std::uint32_t p = 31 + log2_ceil;
    multiplier = static_cast<std::uint32_t>(((std::uint64_t{1} << p) + d - 1) / d);
    shift = p - 32;
  }
  /// n = q * d + r, for 0 <= n < 2^31.
  SWINFER_GPU_HOST_DEVICE void divmod(std::uint32_t n, int& q, int& r) const {
    const std::uint32_t quotient =
        d == 1 ? n : static_cast<std::uint32_t>((std::uint64_t{n} * multiplier) >> 32) >> shift;
    q = static_cast<int>(quotient);
    r = static_cast<int>(n - quotient * d);
  }
};

/// i = q * e + r split into (q, r), in 32 bits when both fit.
SWINFER_GPU_HOST_DEVICE inline void divide(std::int64_t i, std::int64_t e, std::int64_t& q, std::int64_t& r) {
  if (fits_32(i, e, 0, 0, 0)) {
    const auto u = static_cast<std::uint32_t>(i), ue = static_cast<std::uint32_t>(e), uq = u / ue;
    q = uq;
    r = u - uq * ue;
  } else {
    q = i / e;
    r = i - q * e;
  }
}

/// Splits a linear index into (n, c, z, y, x) in channels-last order (c fastest) or channels-first order (x
/// fastest), matching the memory order of the tensor being written.
SWINFER_GPU_HOST_DEVICE inline void unravel(const dims5& s, bool c_fastest, std::int64_t i, std::int64_t& n,
                                            std::int64_t& c, std::int64_t& z, std::int64_t& y, std::int64_t& x) {
  std::int64_t rest = 0;  // channels-last: the voxel index; channels-first: n * C + c
  if (c_fastest) {
    divide(i, s.c, rest, c);
    split_position(rest, s.d, s.h, s.w, n, z, y, x);
  } else {
    split_position(i, s.d, s.h, s.w, rest, z, y, x);
    divide(rest, s.c, n, c);
  }
}

}  // namespace swinfer::hip::kern
