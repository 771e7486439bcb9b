// swinfer hip backend: what the GPU translation units share: the vendor header, dtype dispatch to the device
// storage types, launch-geometry helpers and strided indexing. Included only by backends/hip/src/*.cu.
#pragma once

#include <algorithm>
#include <cstdint>

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

inline gpu::stream_t stream_of(const launch_env& env) { return static_cast<gpu::stream_t>(env.stream); }

/// Splits a linear index into (n, c, z, y, x) in channels-last order (c fastest) or channels-first order (x
/// fastest), matching the memory order of the tensor being written.
SWINFER_GPU_HOST_DEVICE inline void unravel(const dims5& s, bool c_fastest, std::int64_t i, std::int64_t& n,
                                            std::int64_t& c, std::int64_t& z, std::int64_t& y, std::int64_t& x) {
  if (c_fastest) {
    c = i % s.c; i /= s.c;
    x = i % s.w; i /= s.w;
    y = i % s.h; i /= s.h;
    z = i % s.d; n = i / s.d;
  } else {
    x = i % s.w; i /= s.w;
    y = i % s.h; i /= s.h;
    z = i % s.d; i /= s.d;
    c = i % s.c; n = i / s.c;
  }
}

/// Voxel index m = ((n*D + z)*H + y)*W + x (x fastest) split into (n, z, y, x): GEMM rows of convolutions and the
/// per-voxel loops.
SWINFER_GPU_HOST_DEVICE inline void split_position(std::int64_t m, std::int64_t d, std::int64_t h, std::int64_t w,
                                                   std::int64_t& n, std::int64_t& z, std::int64_t& y, std::int64_t& x) {
  x = m % w;
  m /= w;
  y = m % h;
  m /= h;
  z = m % d;
  n = m / d;
}

}  // namespace swinfer::hip::kern
