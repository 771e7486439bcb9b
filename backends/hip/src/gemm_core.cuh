// swinfer hip backend: the portable tiled GEMM every GEMM-shaped op shares (linear, conv3d, conv_transpose3d in
// gemm.cu; the qkv and proj products of window attention in attention.cu). Included only by backends/hip/src/*.cu.
//
// C[M, N] = A[M, K] B[K, N]: A read through an op-specific loader (converting the storage type to float32,
// generating im2col rows or gathering window tokens on the fly), B the row-major weights packed at load in the
// model's storage type, float32 accumulation, and an op-specific epilogue functor that receives each finished
// accumulator. Instantiate it only with functor types of internal linkage (anonymous namespaces), so no kernel
// instantiation is shared between translation units.
//
// Two kernels share that interface: with 16-bit operands (fp16/bf16 models) and matrix cores enabled on the device
// (launch_env::matrix_cores), gemm_mma_kernel stages A and B in the storage type and multiplies them on the matrix
// cores (vendor/matrix_core.hpp); otherwise gemm_kernel multiplies float32 tiles with FMA (fp32 models stay exact to
// float32 rounding).
#pragma once

#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "common.cuh"
#include "swinfer/backend/hip/vendor/matrix_core.hpp"

namespace swinfer::hip::kern {

// ---- Staging: what both kernels share -----------------------------------------------------------------------
//
// An A loader provides
//   using element = ...                  the element type of the tensor A is read from (converted to float32 or
//                                        to the matrix cores' operand type on the way to shared memory)
//   row_type row(std::int64_t m) const   what every element of row m shares (a base offset, a position): computed
//                                        once per block for the block's rows and kept in shared memory
//   col_type col(int k) const            what every element of column k shares: computed once per K step by each
//                                        thread, which stages one column (or one pack of columns) of the tile
//   const element* find(const row_type&, const col_type&) const   where A[m, k] is, or null where A is 0 (padding)
//   bool vector_ok                       set on the host: for every row and every k that is a multiple of
//                                        V = 16 / sizeof(element), A[m, k .. k+V-1] are contiguous in memory and
//                                        16-byte aligned (or all null), and V divides K
// so the index arithmetic (divisions by extents) is paid per row and per column, never per element, and where
// vector_ok holds (channels-last tensors whose channel count is a multiple of V) each thread moves V columns with
// one 16-byte load. Both kernels prefetch the next K step's tile into registers while the current one is
// multiplied from shared memory (two shared buffers, one barrier per step).

/// V consecutive elements of a row of A moved as one: a single element, or 16 bytes in one load.
template <class E, int V>
struct alignas(V * sizeof(E)) pack {
  E e[V];
};

template <class E, int V>
SWINFER_GPU_DEVICE pack<E, V> load_pack(const E* p) {
  if constexpr (V == 1) {
    return {{*p}};
  } else {
    return gpu::bit_cast<pack<E, V>>(gpu::load16(p));
  }
}

template <class E, int V>
SWINFER_GPU_DEVICE pack<E, V> zero_pack() {
  if constexpr (V == 1) {
    return {{gpu::from_f32<E>(0.0f)}};
  } else {
    return gpu::bit_cast<pack<E, V>>(gpu::bytes16{});  // all-zero bits: +0 in every element type
  }
}

/// The block's rows of A: rows[i] = a.row(m0 + i) for the rows inside M. Returns how many there are.
template <int BM, class ALoad>
SWINFER_GPU_DEVICE int stage_rows(const ALoad& a, std::int64_t m0, std::int64_t M, typename ALoad::row_type* rows) {
  const std::int64_t left = M - m0;
  const int valid = left < BM ? static_cast<int>(left) : BM;
  for (int i = static_cast<int>(threadIdx.x); i < valid; i += static_cast<int>(blockDim.x)) rows[i] = a.row(m0 + i);
  return valid;
}

/// Which packs of a BM x BK tile of A a thread stages: columns kv * V .. kv * V + V - 1 with kv = tid % (BK / V),
/// rows first + j * step. Consecutive threads take consecutive columns, so channels-last loads coalesce.
template <int BK, int V>
struct a_packs {
  static constexpr int per_row = BK / V;
  int kv, first, step;
  SWINFER_GPU_DEVICE a_packs()
      : kv(static_cast<int>(threadIdx.x) % per_row),
        first(static_cast<int>(threadIdx.x) / per_row),
        step(static_cast<int>(blockDim.x) / per_row) {}
  SWINFER_GPU_DEVICE int row(int j) const { return first + j * step; }
};

/// One K step of A into registers (packs past the tile or M, and columns past K, read as 0).
template <int BM, int BK, int V, int Packs, class ALoad>
SWINFER_GPU_DEVICE void fetch_a(const ALoad& a, const typename ALoad::row_type* rows, int valid_rows, int k0, int K,
                                pack<typename ALoad::element, V> (&v)[Packs]) {
  using E = typename ALoad::element;
  const a_packs<BK, V> at;
  const int k = k0 + at.kv * V;
  const bool k_inside = k < K;  // for V > 1, V divides K: the whole pack is inside
  typename ALoad::col_type col{};
  if (k_inside) col = a.col(k);
#pragma unroll
  for (int j = 0; j < Packs; ++j) {
    const int mm = at.row(j);
    const E* p = (k_inside && mm < valid_rows) ? a.find(rows[mm], col) : nullptr;
    v[j] = p ? load_pack<E, V>(p) : zero_pack<E, V>();
  }
}

/// One K step of B (row-major (K, N) in BT) into registers: the thread's column is n0 + tid % BN (consecutive
/// threads along n), its rows tid / BN + j * (threads / BN) of the BK x BN tile; zero past K, N or the tile.
template <int BK, int BN, int Elems, class BT>
SWINFER_GPU_DEVICE void fetch_b(const BT* __restrict__ b, int k0, int n0, int K, int N, float (&v)[Elems]) {
  const int tid = static_cast<int>(threadIdx.x), step = static_cast<int>(blockDim.x) / BN;
  const int n = n0 + tid % BN, first = tid / BN;
  const BT* p = b + static_cast<std::int64_t>(k0 + first) * N + n;
  const std::int64_t stride = static_cast<std::int64_t>(step) * N;
#pragma unroll
  for (int j = 0; j < Elems; ++j, p += stride) {
    const int kk = first + j * step;
    v[j] = (kk < BK && k0 + kk < K && n < N) ? gpu::to_f32(*p) : 0.0f;
  }
}

/// Packs per thread for a BM x BK tile of A in packs of V with at least MinThreads threads (more threads leave
/// some unused).
template <int BM, int BK, int V, int MinThreads>
inline constexpr int packs_per_thread = (BM * BK / V + MinThreads - 1) / MinThreads;

constexpr int gemm_bm = 64, gemm_bn = 64, gemm_bk = 16, gemm_threads = 256;
constexpr int gemm_b_elems = gemm_bk * gemm_bn / gemm_threads;

/// The float32 FMA GEMM. Shapes: A (M, K) through the loader `a` in packs of V columns (1, or 16 bytes where
/// a.vector_ok), B (K, N) row-major in BT (float32 for fp32 models, the storage type otherwise), C (M, N) through
/// `epi(m, n, v)`.
/// Geometry: grid (ceil(M/64), ceil(N/64)), 256 threads as a 16 x 16 grid, each thread owning a 4 x 4 micro-tile
/// of the block's 64 x 64 output tile. K advances in steps of 16: a 64 x 16 slice of A (transposed, k-major, so the
/// inner loop reads rows) and a 16 x 64 slice of B in float32, double-buffered in shared memory (17 KiB), zero
/// filled past the edges so M, N and K need not be multiples of anything. Thread-to-element maps do not depend on
/// the warp size.
template <int V, class BT, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(gemm_threads)
    gemm_kernel(ALoad a, const BT* __restrict__ b, std::int64_t M, int N, int K, Epi epi) {
  using E = typename ALoad::element;
  constexpr int packs = packs_per_thread<gemm_bm, gemm_bk, V, gemm_threads>;
  __shared__ float as[2][gemm_bk][gemm_bm + 4];
  __shared__ float bs[2][gemm_bk][gemm_bn];
  __shared__ typename ALoad::row_type rows[gemm_bm];
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * gemm_bm;
  const int n0 = static_cast<int>(blockIdx.y) * gemm_bn;
  const int valid_rows = stage_rows<gemm_bm>(a, m0, M, rows);
  __syncthreads();
  pack<E, V> va[packs];
  float vb[gemm_b_elems];
  const a_packs<gemm_bk, V> at;
  const auto stash = [&](int buf) {
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int mm = at.row(j);
      if (mm >= gemm_bm) continue;
#pragma unroll
      for (int i = 0; i < V; ++i) as[buf][at.kv * V + i][mm] = gpu::to_f32(va[j].e[i]);
    }
#pragma unroll
    for (int j = 0; j < gemm_b_elems; ++j) bs[buf][tid / gemm_bn + j * (gemm_threads / gemm_bn)][tid % gemm_bn] = vb[j];
  };
  fetch_a<gemm_bm, gemm_bk>(a, rows, valid_rows, 0, K, va);
  fetch_b<gemm_bk, gemm_bn>(b, 0, n0, K, N, vb);
  stash(0);
  __syncthreads();
  float acc[4][4] = {};
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += gemm_bk, buf ^= 1) {
    const bool more = k0 + gemm_bk < K;
    if (more) {  // in flight while this step multiplies
      fetch_a<gemm_bm, gemm_bk>(a, rows, valid_rows, k0 + gemm_bk, K, va);
      fetch_b<gemm_bk, gemm_bn>(b, k0 + gemm_bk, n0, K, N, vb);
    }
#pragma unroll
    for (int kk = 0; kk < gemm_bk; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[buf][kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[buf][kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (more) stash(buf ^ 1);  // the other buffer was last read before the previous barrier
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
/// Registers per thread for one K step's B elements: sized for 32-lane warps (128 threads); 64-lane warps use
/// half of them.
constexpr int mma_b_elems = mma_bk * mma_bn / (mma_warps * 32);

/// The matrix-core GEMM, operands rounded to T (half_t or bf16_t), float32 accumulation.
/// Shapes: as gemm_kernel, B in T. Geometry: grid (ceil(M/64), ceil(N/64)), 4 warps (128 threads on NVIDIA, 256
/// on CDNA) as a 2 x 2 grid of 32 x 32 warp tiles, each 2 x 2 matrix-core tiles of 16 x 16. K advances in steps of
/// 32: a 64 x 32 slice of A (row-major; 16-byte packs go to shared memory as they came) and a 32 x 64 slice of B
/// in T, double-buffered in shared memory (19 KiB), zero filled past the edges; each warp runs two 16-deep
/// matrix-core steps per slice. Fragments are placed through gpu::mma_*_coord, so the source holds for any lane
/// layout.
template <int V, class T, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    gemm_mma_kernel(ALoad a, const T* __restrict__ b, std::int64_t M, int N, int K, Epi epi) {
  using E = typename ALoad::element;
  constexpr int packs = packs_per_thread<mma_bm, mma_bk, V, mma_warps * 32>;
  // 16-byte aligned with 80-byte rows, so a 16-byte pack lands in one store.
  struct alignas(16) a_tiles {
    T at[2][mma_bm][mma_bk + 8];
  };
  __shared__ a_tiles a_smem;
  auto& as = a_smem.at;
  __shared__ T bs[2][mma_bk][mma_bn + 8];
  __shared__ typename ALoad::row_type rows[mma_bm];
  const int threads = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int lane = tid % SWINFER_GPU_WARP_SIZE, warp = tid / SWINFER_GPU_WARP_SIZE;
  const int wm = (warp / 2) * 32, wn = (warp % 2) * 32, elems = gpu::mma_elems();
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * mma_bm;
  const int n0 = static_cast<int>(blockIdx.y) * mma_bn;
  const int valid_rows = stage_rows<mma_bm>(a, m0, M, rows);
  __syncthreads();
  pack<E, V> va[packs];
  float vb[mma_b_elems];
  const a_packs<mma_bk, V> at;
  const int b_step = threads / mma_bn, b_elems = mma_bk / b_step;
  const auto stash = [&](int buf) {
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int mm = at.row(j);
      if (mm >= mma_bm) continue;
      T* dst = &as[buf][mm][at.kv * V];
      if constexpr (std::is_same_v<E, T> && V * sizeof(T) == sizeof(gpu::bytes16)) {
        gpu::store16(dst, gpu::bit_cast<gpu::bytes16>(va[j]));
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) dst[i] = gpu::from_f32<T>(gpu::to_f32(va[j].e[i]));
      }
    }
#pragma unroll
    for (int j = 0; j < mma_b_elems; ++j)
      if (j < b_elems) bs[buf][tid / mma_bn + j * b_step][tid % mma_bn] = gpu::from_f32<T>(vb[j]);
  };
  fetch_a<mma_bm, mma_bk>(a, rows, valid_rows, 0, K, va);
  fetch_b<mma_bk, mma_bn>(b, 0, n0, K, N, vb);
  stash(0);
  __syncthreads();
  float acc[2][2][gpu::mma_max_elems] = {};
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += mma_bk, buf ^= 1) {
    const bool more = k0 + mma_bk < K;
    if (more) {  // in flight while this step multiplies
      fetch_a<mma_bm, mma_bk>(a, rows, valid_rows, k0 + mma_bk, K, va);
      fetch_b<mma_bk, mma_bn>(b, k0 + mma_bk, n0, K, N, vb);
    }
#pragma unroll
    for (int ks = 0; ks < mma_bk; ks += 16) {
      T af[2][gpu::mma_max_elems], bf[2][gpu::mma_max_elems];
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        int r = 0, c = 0;
        if (e < elems) {
          gpu::mma_a_coord(lane, e, r, c);
          af[0][e] = as[buf][wm + r][ks + c];
          af[1][e] = as[buf][wm + 16 + r][ks + c];
          gpu::mma_b_coord(lane, e, r, c);
          bf[0][e] = bs[buf][ks + r][wn + c];
          bf[1][e] = bs[buf][ks + r][wn + 16 + c];
        } else {
          af[0][e] = af[1][e] = bf[0][e] = bf[1][e] = gpu::from_f32<T>(0.0f);
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
    }
    if (more) stash(buf ^ 1);  // the other buffer was last read before the previous barrier
    __syncthreads();
  }
  // Unrolled, so the accumulators stay in registers (a loop bound the compiler cannot see puts them in local
  // memory).
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        if (e >= elems) continue;
        int r = 0, c = 0;
        gpu::mma_c_coord(lane, e, r, c);
        const std::int64_t m = m0 + wm + 16 * i + r;
        const int n = n0 + wn + 16 * j + c;
        if (m < M && n < N) epi(m, n, acc[i][j][e]);
      }
}

/// Elements per 16-byte pack of A's element type.
template <class ALoad>
inline constexpr int vector_width = static_cast<int>(sizeof(gpu::bytes16) / sizeof(typename ALoad::element));

/// For a loader's vector_ok: `base` is 16-byte aligned and every offset step in `multiples` (the strides and the
/// extent along which packs are taken) is a multiple of the pack width of E, the axis packed along having unit
/// stride (the caller checks that).
template <class E>
bool packs_fit(const void* base, std::initializer_list<std::int64_t> multiples) {
  constexpr auto width = static_cast<std::int64_t>(sizeof(gpu::bytes16) / sizeof(E));
  if (reinterpret_cast<std::uintptr_t>(base) % sizeof(gpu::bytes16) != 0) return false;
  for (const std::int64_t v : multiples) {
    if (v % width != 0) return false;
  }
  return true;
}

/// C = A B through the loader and epilogue, B (K, N) row-major in the operand type (the model's storage type,
/// packed at load): on the matrix cores when the operands are 16-bit (half_t or bf16_t) and the device has them
/// enabled, else in float32 FMA; A in 16-byte packs where the loader says its rows allow it.
template <class Operand, class ALoad, class Epi>
void run_gemm(const launch_env& env, const ALoad& a, const Operand* b, std::int64_t M, int N, int K, const Epi& epi,
              const char* what) {
  if (M == 0 || N == 0) return;
  constexpr int V = vector_width<ALoad>;
  const bool packed = a.vector_ok && K % V == 0;
  if constexpr (!std::is_same_v<Operand, float>) {
    if (env.matrix_cores) {
      const dim3 grid(static_cast<unsigned>((M + mma_bm - 1) / mma_bm),
                      static_cast<unsigned>((N + mma_bn - 1) / mma_bn));
      const unsigned threads = static_cast<unsigned>(mma_warps * env.warp_size);
      if (packed) {
        gpu::launch(what, gemm_mma_kernel<V, Operand, ALoad, Epi>, grid, threads, stream_of(env), a, b, M, N, K, epi);
      } else {
        gpu::launch(what, gemm_mma_kernel<1, Operand, ALoad, Epi>, grid, threads, stream_of(env), a, b, M, N, K, epi);
      }
      return;
    }
  }
  const dim3 grid(static_cast<unsigned>((M + gemm_bm - 1) / gemm_bm),
                  static_cast<unsigned>((N + gemm_bn - 1) / gemm_bn));
  if (packed) {
    gpu::launch(what, gemm_kernel<V, Operand, ALoad, Epi>, grid, gemm_threads, stream_of(env), a, b, M, N, K, epi);
  } else {
    gpu::launch(what, gemm_kernel<1, Operand, ALoad, Epi>, grid, gemm_threads, stream_of(env), a, b, M, N, K, epi);
  }
}

SWINFER_GPU_DEVICE inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

}  // namespace swinfer::hip::kern
