// swinfer hip backend: convolutions of inputs with few channels (a scan's 1 channel, or BraTS's 4: encoder1's 3x3x3
// convolution and 1x1x1 projection, the 2x2x2 stride-2 patch embedding) by direct float32 FMA. Included only by
// conv3d.cu.
//
// As implicit GEMMs these have K = 27, 1 or 8 against 48 outputs: the tiled GEMM pads K to its 16- or 32-wide
// steps and gathers A element by element through the im2col arithmetic, so on an H200 encoder1's 1 -> 48 3x3x3
// convolution took 0.35 ms and the patch embedding and projection 0.23 ms of a 9.9 ms fs48 window (docs/gpu.md),
// where they read 1.7 MB and write 85 MB each. Here a thread owns one output position and 16 output channels, reads
// its taps' input values straight from global memory (the input is small and stays in L1 and L2) and takes the
// weights as float32 broadcasts from shared memory: K FMAs per output, the same products in the same order (tap,
// then channel) as the tiled GEMM's float32 accumulation, then the tiled GEMM's epilogue.
#pragma once

#include <cstdint>

#include "gemm_core.cuh"

namespace swinfer::hip::kern {

/// Input channels the direct kernel takes at most, and its other limits: output channels per thread, threads per
/// block, and the longest K (a 3x3x3 kernel over 4 channels).
constexpr int direct_conv_max_cin = 4;
constexpr int direct_conv_channels = 16;
constexpr int direct_conv_threads = 128;
constexpr int direct_conv_max_k = 27 * direct_conv_max_cin;

/// The geometry as kernel arguments: input extents and strides, output extents, kernel, stride, padding.
struct direct_conv_args {
  dims5 in;
  std::int64_t od, oh, ow, M;  ///< M = N * od * oh * ow
  int cin, cout, kd, kh, kw, sd, sh, sw, pd, ph, pw;
};

/// Shapes: in (N, cin, D, H, W) of T, any strides; weights (cout, K) of T, K = kd*kh*kw*cin in (tap, channel)
///         order (weight_packing.hpp); out through the tiled GEMM's epilogue (conv_epilogue in conv3d.cu: its layout,
///         the bias, 16-byte packs where channels are contiguous).
/// Geometry: grid (ceil(M / 128), ceil(cout / 16)), 128 threads; thread x of block (b, c) owns output position
///         m = 128 b + x in (n, z, y, x) order (a warp's threads are consecutive x: its input reads and channels-first
///         stores coalesce) and channels 16 c .. 16 c + 15. The block first stages those channels' weights as
///         float32 in shared memory, [K][16] (zero past cout); each thread then reads one input value per tap and
///         channel and adds it times a shared row (every thread reads the same row: a broadcast).
template <class T, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(direct_conv_threads)
    conv3d_direct_kernel(const T* __restrict__ in, const T* __restrict__ weights, direct_conv_args a, Epi epi) {
  constexpr int C = direct_conv_channels;
  alignas(16) __shared__ float w[direct_conv_max_k][C];
  const int c0 = static_cast<int>(blockIdx.y) * C;
  const int K = a.kd * a.kh * a.kw * a.cin;
  for (int e = static_cast<int>(threadIdx.x); e < K * C; e += static_cast<int>(blockDim.x)) {
    const int k = e / C, j = e % C;
    w[k][j] = c0 + j < a.cout ? gpu::to_f32(weights[static_cast<std::int64_t>(c0 + j) * K + k]) : 0.0f;
  }
  __syncthreads();
  const std::int64_t m = static_cast<std::int64_t>(blockIdx.x) * direct_conv_threads + threadIdx.x;
  if (m >= a.M) return;

  std::int64_t n, z, y, x;
  split_position(m, a.od, a.oh, a.ow, n, z, y, x);
  const dims5& s = a.in;
  const std::int64_t z0 = z * a.sd - a.pd, y0 = y * a.sh - a.ph, x0 = x * a.sw - a.pw;
  float acc[C] = {};
  // k runs over (tap, channel) as the weights do; taps in the zero padding add nothing and are skipped whole.
  for (int kz = 0, k = 0; kz < a.kd; ++kz) {
    const std::int64_t iz = z0 + kz;
    if (iz < 0 || iz >= s.d) {
      k += a.kh * a.kw * a.cin;
      continue;
    }
    for (int ky = 0; ky < a.kh; ++ky) {
      const std::int64_t iy = y0 + ky;
      if (iy < 0 || iy >= s.h) {
        k += a.kw * a.cin;
        continue;
      }
      for (int kx = 0; kx < a.kw; ++kx) {
        const std::int64_t ix = x0 + kx;
        if (ix < 0 || ix >= s.w) {
          k += a.cin;
          continue;
        }
        const T* voxel = in + s.offset(n, 0, iz, iy, ix);
        for (int ci = 0; ci < a.cin; ++ci, ++k) {
          const float v = gpu::to_f32(voxel[ci * s.sc]);
#pragma unroll
          for (int j = 0; j < C; ++j) acc[j] = fmaf(v, w[k][j], acc[j]);
        }
      }
    }
  }

  const auto row = epi.row(m);
#pragma unroll
  for (int h = 0; h < C; h += 8) {
    const int co = c0 + h;
    if (co + 8 <= a.cout) {
      typename Epi::col_type cols[8];
      float v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        cols[e] = epi.col(co + e);
        v[e] = acc[h + e];
      }
      epi.store8(row, cols, v);
    } else {
      for (int e = 0; e < 8 && co + e < a.cout; ++e) epi(row, epi.col(co + e), acc[h + e]);
    }
  }
}

/// Runs the convolution on conv3d_direct_kernel and returns true where it applies: at most direct_conv_max_cin
/// input channels, one input tensor read as it is (no norm on load, no concatenation), not int8, and the choice
/// automatic or direct (SWINFER_GPU_CONV); otherwise returns false and launches nothing.
template <class T, class Epi>
bool run_conv3d_direct(const launch_env& env, const T* in, const dims5& s, const conv_geometry& g,
                       const dims5& out, const T* weights, const Epi& epi) {
  if ((env.kernels.conv != conv_kernel_choice::automatic && env.kernels.conv != conv_kernel_choice::direct) ||
      g.cin > direct_conv_max_cin || g.kernel[0] * g.kernel[1] * g.kernel[2] > 27) {
    return false;
  }
  const direct_conv_args a{s,           out.d,       out.h,       out.w,       out.n * out.d * out.h * out.w,
                           g.cin,       g.cout,      g.kernel[0], g.kernel[1], g.kernel[2],
                           g.stride[0], g.stride[1], g.stride[2], g.pad[0],    g.pad[1],
                           g.pad[2]};
  const std::int64_t blocks = (a.M + direct_conv_threads - 1) / direct_conv_threads;
  if (blocks > 0x7fffffff) return false;
  if (blocks == 0) return true;
  const dim3 grid(static_cast<unsigned>(blocks),
                  static_cast<unsigned>((g.cout + direct_conv_channels - 1) / direct_conv_channels));
  gpu::launch("conv3d direct kernel launch", conv3d_direct_kernel<T, Epi>, grid, direct_conv_threads, stream_of(env),
              in, weights, a, epi);
  return true;
}

}  // namespace swinfer::hip::kern
