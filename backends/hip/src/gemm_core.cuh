// swinfer hip backend: the portable tiled GEMM every GEMM-shaped op shares (linear, conv3d, conv_transpose3d in
// gemm.cu; the qkv and proj products of window attention in attention.cu). Included only by backends/hip/src/*.cu.
//
// C[M, N] = A[M, K] B[K, N]: A read through an op-specific loader functor (converting the storage type to float32,
// generating im2col rows or gathering window tokens on the fly), B float32 row-major weights packed at load, float32
// accumulation, and an op-specific epilogue functor that receives each finished accumulator. Instantiate it only
// with functor types of internal linkage (anonymous namespaces), so no kernel instantiation is shared between
// translation units.
//
// Two kernels share that interface: with 16-bit operands (fp16/bf16 models) and matrix cores enabled on the device
// (launch_env::matrix_cores), gemm_mma_kernel stages A and B in the storage type and multiplies them on the matrix
// cores (vendor/matrix_core.hpp); otherwise gemm_kernel multiplies float32 tiles with FMA (fp32 models stay exact to
// float32 rounding).
#pragma once

#include <cmath>
#include <type_traits>

#include "common.cuh"
#include "swinfer/backend/hip/vendor/matrix_core.hpp"

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

constexpr int mma_bm = 64, mma_bn = 64, mma_bk = 32, mma_warps = 4;

/// The matrix-core GEMM, operands rounded to T (half_t or bf16_t), float32 accumulation.
/// Shapes: as gemm_kernel. Geometry: grid (ceil(M/64), ceil(N/64)), 4 warps (128 threads on NVIDIA, 256 on CDNA)
/// as a 2 x 2 grid of 32 x 32 warp tiles, each 2 x 2 matrix-core tiles of 16 x 16. K advances in steps of 32: the
/// block stages a 64 x 32 slice of A (row-major, consecutive threads along k so im2col loads coalesce in NDHWC) and
/// a 32 x 64 slice of B in T in shared memory (9.5 KiB), zero filled past the edges; each warp then runs two
/// 16-deep matrix-core steps. Fragments are placed through gpu::mma_*_coord, so the source holds for any lane layout.
template <class T, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    gemm_mma_kernel(ALoad a, const float* __restrict__ b, std::int64_t M, int N, int K, Epi epi) {
  __shared__ T as[mma_bm][mma_bk + 8];
  __shared__ T bs[mma_bk][mma_bn + 8];
  const int threads = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int lane = tid % SWINFER_GPU_WARP_SIZE, warp = tid / SWINFER_GPU_WARP_SIZE;
  const int wm = (warp / 2) * 32, wn = (warp % 2) * 32, elems = gpu::mma_elems();
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * mma_bm;
  const int n0 = static_cast<int>(blockIdx.y) * mma_bn;
  float acc[2][2][gpu::mma_max_elems] = {};
  for (int k0 = 0; k0 < K; k0 += mma_bk) {
    for (int e = tid; e < mma_bm * mma_bk; e += threads) {
      const int mm = e / mma_bk, kk = e % mma_bk;
      const std::int64_t m = m0 + mm;
      const int k = k0 + kk;
      as[mm][kk] = gpu::from_f32<T>((m < M && k < K) ? a(m, k) : 0.0f);
    }
    for (int e = tid; e < mma_bk * mma_bn; e += threads) {
      const int kk = e / mma_bn, nn = e % mma_bn;
      const int k = k0 + kk, n = n0 + nn;
      bs[kk][nn] = gpu::from_f32<T>((k < K && n < N) ? b[static_cast<std::int64_t>(k) * N + n] : 0.0f);
    }
    __syncthreads();
    for (int ks = 0; ks < mma_bk; ks += 16) {
      T af[2][gpu::mma_max_elems], bf[2][gpu::mma_max_elems];
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        int r = 0, c = 0;
        if (e < elems) {
          gpu::mma_a_coord(lane, e, r, c);
          af[0][e] = as[wm + r][ks + c];
          af[1][e] = as[wm + 16 + r][ks + c];
          gpu::mma_b_coord(lane, e, r, c);
          bf[0][e] = bs[ks + r][wn + c];
          bf[1][e] = bs[ks + r][wn + 16 + c];
        } else {
          af[0][e] = af[1][e] = bf[0][e] = bf[1][e] = gpu::from_f32<T>(0.0f);
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < elems; ++e) {
        int r = 0, c = 0;
        gpu::mma_c_coord(lane, e, r, c);
        const std::int64_t m = m0 + wm + 16 * i + r;
        const int n = n0 + wn + 16 * j + c;
        if (m < M && n < N) epi(m, n, acc[i][j][e]);
      }
}

/// C = A B through the loader and epilogue: on the matrix cores when the operands are 16-bit (Operand = half_t or
/// bf16_t, the model's storage type) and the device has them enabled, else in float32 FMA.
template <class Operand, class ALoad, class Epi>
void run_gemm(const launch_env& env, const ALoad& a, const float* b, std::int64_t M, int N, int K, const Epi& epi,
              const char* what) {
  if (M == 0 || N == 0) return;
  if constexpr (!std::is_same_v<Operand, float>) {
    if (env.matrix_cores) {
      const dim3 grid(static_cast<unsigned>((M + mma_bm - 1) / mma_bm),
                      static_cast<unsigned>((N + mma_bn - 1) / mma_bn));
      gpu::launch(what, gemm_mma_kernel<Operand, ALoad, Epi>, grid, mma_warps * env.warp_size, stream_of(env), a, b,
                  M, N, K, epi);
      return;
    }
  }
  const dim3 grid(static_cast<unsigned>((M + gemm_bm - 1) / gemm_bm),
                  static_cast<unsigned>((N + gemm_bn - 1) / gemm_bn));
  gpu::launch(what, gemm_kernel<ALoad, Epi>, grid, gemm_threads, stream_of(env), a, b, M, N, K, epi);
}

SWINFER_GPU_DEVICE inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

}  // namespace swinfer::hip::kern
