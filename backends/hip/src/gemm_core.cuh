// swinfer hip backend: the portable tiled GEMM every GEMM-shaped op shares (linear, conv3d, conv_transpose3d in
// gemm.cu; the qkv and proj products of window attention in attention.cu). Included only by backends/hip/src/*.cu.
//
// C[M, N] = A[M, K] B[K, N]: A read through an op-specific loader functor (converting the storage type to float32,
// generating im2col rows or gathering window tokens on the fly), B float32 row-major weights packed at load, float32
// accumulation, and an op-specific epilogue functor that receives each finished accumulator. Instantiate it only
// with functor types of internal linkage (anonymous namespaces), so no kernel instantiation is shared between
// translation units.
#pragma once

#include <cmath>

#include "common.cuh"

namespace swinfer::hip::kern {

constexpr int gemm_bm = 64, gemm_bn = 64, gemm_bk = 16, gemm_threads = 256;

/// The tiled GEMM. Shapes: A (M, K) through `a(m, k)`, B (K, N) float32 row-major, C (M, N) through `epi(m, n, v)`.
/// Geometry: grid (ceil(M/64), ceil(N/64)), 256 threads as a 16 x 16 grid, each thread owning a 4 x 4 micro-tile
/// of the block's 64 x 64 output tile. K advances in steps of 16: the block stages a 64 x 16 slice of A
/// (transposed, k-major, so the inner loop reads rows) and a 16 x 64 slice of B in shared memory (8.5 KiB), zero
/// filled past the edges so M, N and K need not be multiples of anything. Thread-to-element maps do not depend on
/// the warp size.
template <class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(gemm_threads)
    gemm_kernel(ALoad a, const float* __restrict__ b, std::int64_t M, int N, int K, Epi epi) {
  __shared__ float as[gemm_bk][gemm_bm + 4];
  __shared__ float bs[gemm_bk][gemm_bn];
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * gemm_bm;
  const int n0 = static_cast<int>(blockIdx.y) * gemm_bn;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += gemm_bk) {
    for (int r = 0; r < (gemm_bm * gemm_bk) / gemm_threads; ++r) {
      const int e = tid + r * gemm_threads, mm = e / gemm_bk, kk = e % gemm_bk;  // consecutive threads: along k
      const std::int64_t m = m0 + mm;
      const int k = k0 + kk;
      as[kk][mm] = (m < M && k < K) ? a(m, k) : 0.0f;
    }
    for (int r = 0; r < (gemm_bk * gemm_bn) / gemm_threads; ++r) {
      const int e = tid + r * gemm_threads, kk = e / gemm_bn, nn = e % gemm_bn;  // consecutive threads: along n
      const int k = k0 + kk, n = n0 + nn;
      bs[kk][nn] = (k < K && n < N) ? b[static_cast<std::int64_t>(k) * N + n] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < gemm_bk; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::int64_t m = m0 + ty * 4 + i;
      const int n = n0 + tx * 4 + j;
      if (m < M && n < N) epi(m, n, acc[i][j]);
    }
}

template <class ALoad, class Epi>
void run_gemm(const launch_env& env, const ALoad& a, const float* b, std::int64_t M, int N, int K, const Epi& epi,
              const char* what) {
  if (M == 0 || N == 0) return;
  const dim3 grid(static_cast<unsigned>((M + gemm_bm - 1) / gemm_bm),
                  static_cast<unsigned>((N + gemm_bn - 1) / gemm_bn));
  gpu::launch(what, gemm_kernel<ALoad, Epi>, grid, gemm_threads, stream_of(env), a, b, M, N, K, epi);
}

SWINFER_GPU_DEVICE inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

}  // namespace swinfer::hip::kern
