// swinfer hip backend: the portable tiled GEMM every GEMM-shaped op shares (linear, conv3d, conv_transpose3d in
// gemm_linear.cu, conv3d.cu, conv_transpose3d.cu; the qkv and proj products of window attention in attention.cu).
// Included only by backends/hip/src/*.cu.
//
// C[M, N] = A[M, K] B[K, N]: A read through an op-specific loader (generating im2col rows or gathering window
// tokens on the fly), B the weights packed at load in the model's storage type as (N, K) rows (PyTorch's linear
// layout: each output's weights contiguous along k, so both operands are staged the same way), float32
// accumulation, and an op-specific epilogue functor that receives each finished accumulator. Instantiate it only
// with functor types of internal linkage (anonymous namespaces), so no kernel instantiation is shared between
// translation units.
//
// An epilogue provides
//   row_type row(std::int64_t m) const   what every output of row m shares (where the row is written): computed
//                                        once per block for its rows and kept in shared memory
//   col_type col(int n) const            what every output of column n shares (its offset, its bias): likewise
//   void operator()(const row_type&, const col_type&, float acc) const   stores one output
// so storing an output costs no index split (an output position's three divisions, a scattered column's one).
//
// Two kernels share that interface: with 16-bit operands (fp16/bf16 models) and matrix cores enabled on the device
// (launch_env::matrix_cores), gemm_mma_kernel stages A and B in the storage type and multiplies them on the matrix
// cores (vendor/matrix_core.hpp; under precision::int8 the same kernel with int8 operands, gemm_int8.cuh);
// otherwise gemm_kernel multiplies float32 tiles with FMA (fp32 models stay exact to float32 rounding).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "gemm_stage.cuh"
#include "swinfer/backend/hip/vendor/matrix_core.hpp"

namespace swinfer::hip::kern {

constexpr int gemm_bk = 16, gemm_threads = 256;
/// The width of the tall tiles: every layer of a feature_size-48 model has N a multiple of it (cout = 48 * 2^k,
/// qkv 3C, fc1 4C), so no column of those tiles is padding.
constexpr int tall_tile_n = 48;

// ---- Split K: GEMMs with too few output tiles to fill the device ------------------------------------------------
//
// At the bottom of the U (3^3 to 12^3 voxels, 384 to 768 channels) a convolution has a handful of 128 x 48 tiles
// and K in the tens of thousands: one block per tile would leave most multiprocessors idle through a long serial K
// loop. Those GEMMs run with K cut into slices, a grid layer per slice storing float32 sums, and a second kernel
// that adds the slices in a fixed order (the same result on every run) and hands each sum to the op's epilogue, as
// the tile kernel would have.

/// Where the blocks of slice blockIdx.z store their sums: partial[(z * M + m) * N + n].
struct split_k_partials {
  float* partial;
  std::int64_t M;
  int N;
  SWINFER_GPU_DEVICE void store(std::int64_t m, int n, float v) const {
    if (m < M && n < N) partial[(static_cast<std::int64_t>(blockIdx.z) * M + m) * N + n] = v;
  }
};

/// K slices for a GEMM of `tiles` output tiles and `steps` steps of K: 1 while the tiles alone give every
/// multiprocessor two blocks, otherwise enough slices for four blocks per multiprocessor, each slice at least
/// `min_steps` steps.
inline int split_k_slices(std::int64_t tiles, int steps, int min_steps, int multiprocessors) {
  const std::int64_t wanted = 4 * std::int64_t{std::max(1, multiprocessors)};
  if (2 * tiles >= wanted) return 1;
  const std::int64_t most = std::max(1, steps / min_steps);
  return static_cast<int>(std::min<std::int64_t>(most, (wanted + tiles - 1) / tiles));
}

/// C[m, n] = the sum over the slices of partial, through the op's epilogue.
/// Shapes: partial (slices, M, N) float32. Geometry: 1-D grid of 256-thread blocks, grid-stride over M * N in
/// row-major order.
template <class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    split_k_reduce_kernel(const float* __restrict__ partial, int slices, std::int64_t M, int N, Epi epi) {
  const std::int64_t total = M * N;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int z = 0; z < slices; ++z) sum += partial[z * total + i];
    std::int64_t m = 0, n = 0;
    divide(i, N, m, n);
    epi(epi.row(m), epi.col(static_cast<int>(n)), sum);
  }
}

/// Launches a GEMM-shaped kernel over `slices` slices of K (launch_slices(partial): the tile kernel's launch, with
/// partial null for one slice) and, for more than one, the reduction of their float32 sums through the op's
/// epilogue. C is M x N.
template <class Epi, class LaunchSlices>
void launch_with_slices(const launch_env& env, int slices, std::int64_t M, int N, const Epi& epi, const char* what,
                        const LaunchSlices& launch_slices) {
  if (slices == 1) {
    launch_slices(static_cast<float*>(nullptr));
    return;
  }
  const std::size_t bytes = static_cast<std::size_t>(slices) * static_cast<std::size_t>(M * N) * sizeof(float);
  const std::unique_ptr<void, void (*)(void*)> partial(device_alloc(bytes), [](void* p) { device_free(p); });
  launch_slices(static_cast<float*>(partial.get()));
  gpu::launch(what, split_k_reduce_kernel<Epi>, grid_for(M * N, 256, env), 256, stream_of(env),
              static_cast<const float*>(partial.get()), slices, M, N, epi);
}  // the partial sums go back to the pool in stream order, after the reduction

/// A block tile of the FMA GEMM: BM x BN outputs, each of the 256 threads owning a TM x TN micro-tile.
template <int BM, int BN, int TM, int TN>
struct fma_tile {
  static_assert((BM / TM) * (BN / TN) == gemm_threads && BM % TM == 0 && BN % TN == 0);
  static constexpr int bm = BM, bn = BN, tm = TM, tn = TN, threads_n = BN / TN;
};
/// The general tile: 16 x 16 threads of 4 x 4.
using fma_square_tile = fma_tile<64, 64, 4, 4>;
/// For N a multiple of tall_tile_n: 32 x 8 threads of 4 x 6.
using fma_tall48_tile = fma_tile<128, tall_tile_n, 4, 6>;

/// The float32 FMA GEMM. Shapes: A (M, K) through the loader `a`, B (N, K) through `b` (the weights in BT: float32
/// for fp32 models, the storage type otherwise), C (M, N) through the epilogue `epi`; both operands in packs of
/// VA / VB columns (1 each, or 16 bytes each where both loaders allow it).
/// Geometry: grid (ceil(M/Tile::bm), ceil(N/Tile::bn)), 256 threads, each owning a Tile::tm x Tile::tn micro-tile
/// of the block's output tile (64 x 64 as 16 x 16 threads of 4 x 4, or 128 x 48 as 32 x 8 threads of 4 x 6). K
/// advances in steps of 16: bm x 16 and bn x 16 slices of A and B, k-major in float32 (so the inner loop reads
/// rows), double-buffered in shared memory (17 or 23.5 KiB), zero filled past the edges so M, N and K need not be
/// multiples of anything. Thread-to-element maps do not depend on the warp size. Split K (`partial` not null):
/// block z sums k in [z * k_slice, (z + 1) * k_slice) and stores its float32 sums (split_k_partials).
template <class Tile, int VA, int VB, class ALoad, class BT, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(gemm_threads)
    gemm_kernel(ALoad a, rows_loader<BT> b, std::int64_t M, int N, int K, int k_slice, float* partial, Epi epi) {
  constexpr int BM = Tile::bm, BN = Tile::bn, TM = Tile::tm, TN = Tile::tn;
  constexpr int lda = BM + 4, ldb = BN + 4;
  __shared__ float as[2][gemm_bk][lda];
  __shared__ float bs[2][gemm_bk][ldb];
  __shared__ typename ALoad::row_type a_rows[BM];
  __shared__ std::int64_t b_rows[BN];
  __shared__ typename Epi::row_type c_rows[BM];
  __shared__ typename Epi::col_type c_cols[BN];
  const int tid = static_cast<int>(threadIdx.x), tx = tid % Tile::threads_n, ty = tid / Tile::threads_n;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * BM;
  const int n0 = static_cast<int>(blockIdx.y) * BN;
  block_operands<BM, BN, gemm_bk, VA, VB, gemm_threads, ALoad, BT> ops(a, b, a_rows, b_rows, m0, M, n0, N);
  const epilogue_tables<BM, BN, Epi> out(epi, c_rows, c_cols, row_range{m0, M}, n0, N);
  const split_k_partials sums{partial, M, N};
  const int k_begin = static_cast<int>(blockIdx.z) * k_slice, k_end = k_begin + k_slice < K ? k_begin + k_slice : K;
  __syncthreads();
  ops.fetch(a, b, k_begin, k_end);
  ops.a.store_k_major(&as[0][0][0], lda);
  ops.b.store_k_major(&bs[0][0][0], ldb);
  __syncthreads();
  float acc[TM][TN] = {};
  int buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += gemm_bk, buf ^= 1) {
    const bool more = k0 + gemm_bk < k_end;
    if (more) ops.fetch(a, b, k0 + gemm_bk, k_end);  // in flight while this step multiplies
#pragma unroll
    for (int kk = 0; kk < gemm_bk; ++kk) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = as[buf][kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = bs[buf][kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (more) {  // the other buffers were last read before the previous barrier
      ops.a.store_k_major(&as[buf ^ 1][0][0], lda);
      ops.b.store_k_major(&bs[buf ^ 1][0][0], ldb);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      if (partial) {
        sums.store(m0 + ty * TM + i, n0 + tx * TN + j, acc[i][j]);
      } else {
        out.store(epi, ty * TM + i, tx * TN + j, acc[i][j]);
      }
    }
}

constexpr int mma_warps = 4;

/// f(r, c, acc[j][e]) for every accumulator element of a warp's row of TN matrix-core tiles of 16 x 16 (side by
/// side from block column wn, rows from wm): (r, c) its place in the block's tile. Acc is float (f may update the
/// element) or const float.
template <int TN, class Acc, class F>
SWINFER_GPU_DEVICE void for_each_mma_element(Acc (&acc)[TN][gpu::mma_max_elems], int wm, int wn, const F& f) {
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE, elems = gpu::mma_elems();
  // Unrolled, so the accumulators stay in registers (a loop bound the compiler cannot see puts them in local
  // memory).
#pragma unroll
  for (int j = 0; j < TN; ++j)
#pragma unroll
    for (int e = 0; e < gpu::mma_max_elems; ++e) {
      if (e >= elems) continue;
      int r = 0, c = 0;
      gpu::mma_c_coord(lane, e, r, c);
      f(wm + r, wn + 16 * j + c, acc[j][e]);
    }
}

/// store(r, c, acc[i][j][e]) for every accumulator element (float or int32) of a warp owning TM x TN matrix-core
/// tiles of 16 x 16 from block row wm and column wn: (r, c) its place in the block's output tile.
template <int TM, int TN, class Acc, class Store>
SWINFER_GPU_DEVICE void for_each_mma_output(const Acc (&acc)[TM][TN][gpu::mma_max_elems], int wm, int wn,
                                            const Store& store) {
#pragma unroll
  for (int i = 0; i < TM; ++i) for_each_mma_element(acc[i], wm + 16 * i, wn, store);
}

/// A block tile of the matrix-core GEMM: BM x BN outputs, its 4 warps as WarpsM x WarpsN, each warp owning
/// tm x tn matrix-core tiles of 16 x 16.
template <int BM, int BN, int WarpsM, int WarpsN>
struct mma_tile {
  static_assert(WarpsM * WarpsN == mma_warps && BM % (16 * WarpsM) == 0 && BN % (16 * WarpsN) == 0);
  static constexpr int bm = BM, bn = BN, warps_n = WarpsN;
  static constexpr int tm = BM / WarpsM / 16, tn = BN / WarpsN / 16;
};
/// The general tile: 2 x 2 warps of 32 x 32.
using mma_square_tile = mma_tile<64, 64, 2, 2>;
/// For N a multiple of tall_tile_n: each weight tile serves 128 rows. 4 x 1 warps of 32 x 48.
using mma_tall48_tile = mma_tile<128, tall_tile_n, 4, 1>;

/// The 16-bit operands of the matrix-core GEMM: T (half_t or bf16_t) tiles, float32 accumulators, two 16-deep
/// matrix-core operations per K step of 32, fragments read with gpu::mma_load_a / mma_load_b (one ldmatrix each
/// on NVIDIA, runs of k on AMD).
template <class T>
struct mma_16bit_operands {
  using element = T;
  using accumulator = float;
  static constexpr int bk = 32, ld = bk + 8;  // 80-byte rows: 16-byte aligned packs, and rows 4 banks apart
  /// The A tile's packs to shared memory, rounded to T.
  template <class Stage>
  SWINFER_GPU_DEVICE void store_a(const Stage& stage, T* tile, std::int64_t /*m0*/) const {
    stage.store_row_major(tile, ld);
  }
  /// acc += A B over one K step for a warp's TM x TN tiles: A rows from wm of `a`, B columns from wn of `b`.
  template <int TM, int TN>
  SWINFER_GPU_DEVICE static void multiply(const T* a, const T* b, int wm, int wn,
                                          float (&acc)[TM][TN][gpu::mma_max_elems]) {
#pragma unroll
    for (int ks = 0; ks < bk; ks += 16) {
      T af[TM][gpu::mma_max_elems], bf[TN][gpu::mma_max_elems];
#pragma unroll
      for (int i = 0; i < TM; ++i) gpu::mma_load_a(a + (wm + 16 * i) * ld + ks, ld, af[i]);
#pragma unroll
      for (int j = 0; j < TN; ++j) gpu::mma_load_b(b + (wn + 16 * j) * ld + ks, ld, bf[j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
    }
  }
};

/// The matrix-core GEMM, its operand types and arithmetic given by `Operands` (mma_16bit_operands: fp16/bf16
/// rounded operands and float32 sums; mma_s8_operands in gemm_int8.cuh: the A operand quantized to int8 as it is
/// staged, int32 sums).
/// Shapes: as gemm_kernel, B (the weights) in Operands::element. Geometry: grid (ceil(M/Tile::bm),
/// ceil(N/Tile::bn)), 4 warps (128 threads on NVIDIA, 256 on CDNA), each owning Tile::tm x Tile::tn matrix-core
/// tiles of 16 x 16 (64 x 64 blocks of 2 x 2 warps, or 128 x 48 blocks of 4 x 1). K advances in steps of
/// Operands::bk (32): bm x bk and bn x bk slices of A and B, both k-contiguous (16-byte packs go to shared memory as
/// they came), double-buffered in shared memory (fp16/bf16: 20 or 27.5 KiB; int8: 9 or 10.5 KiB), zero filled past
/// the edges; Operands::multiply runs each warp's matrix-core operations on them, reading fragments through
/// vendor/matrix_core.hpp, which keeps the source right for any lane layout. Split K as gemm_kernel's.
template <class Tile, int VA, int VB, class Operands, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    gemm_mma_kernel(ALoad a, rows_loader<typename Operands::element> b, Operands operands, std::int64_t M, int N,
                    int K, int k_slice, float* partial, Epi epi) {
  using T = typename Operands::element;
  constexpr int BM = Tile::bm, BN = Tile::bn, TM = Tile::tm, TN = Tile::tn;
  constexpr int ld = Operands::ld, BK = Operands::bk;
  struct alignas(16) tiles {
    T a[2][BM][ld];
    T b[2][BN][ld];
  };
  __shared__ tiles smem;
  __shared__ typename ALoad::row_type a_rows[BM];
  __shared__ std::int64_t b_rows[BN];
  __shared__ typename Epi::row_type c_rows[BM];
  __shared__ typename Epi::col_type c_cols[BN];
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / SWINFER_GPU_WARP_SIZE;
  const int wm = (warp / Tile::warps_n) * TM * 16, wn = (warp % Tile::warps_n) * TN * 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * BM;
  const int n0 = static_cast<int>(blockIdx.y) * BN;
  block_operands<BM, BN, BK, VA, VB, mma_warps * 32, ALoad, T> ops(a, b, a_rows, b_rows, m0, M, n0, N);
  const epilogue_tables<BM, BN, Epi> out(epi, c_rows, c_cols, row_range{m0, M}, n0, N);
  const split_k_partials sums{partial, M, N};
  const int k_begin = static_cast<int>(blockIdx.z) * k_slice, k_end = k_begin + k_slice < K ? k_begin + k_slice : K;
  __syncthreads();
  ops.fetch(a, b, k_begin, k_end);
  operands.store_a(ops.a, &smem.a[0][0][0], m0);
  ops.b.store_row_major(&smem.b[0][0][0], ld);
  __syncthreads();
  typename Operands::accumulator acc[TM][TN][gpu::mma_max_elems] = {};
  int buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += BK, buf ^= 1) {
    const bool more = k0 + BK < k_end;
    if (more) ops.fetch(a, b, k0 + BK, k_end);  // in flight while this step multiplies
    Operands::template multiply<TM, TN>(&smem.a[buf][0][0], &smem.b[buf][0][0], wm, wn, acc);
    if (more) {  // the other buffers were last read before the previous barrier
      operands.store_a(ops.a, &smem.a[buf ^ 1][0][0], m0);
      ops.b.store_row_major(&smem.b[buf ^ 1][0][0], ld);
    }
    __syncthreads();
  }
  for_each_mma_output(acc, wm, wn, [&](int r, int c, float v) {
    if (partial) {
      sums.store(m0 + r, n0 + c, v);
    } else {
      out.store(epi, r, c, v);
    }
  });
}

// ---- GEMMs with a short K read element by element -----------------------------------------------------------

/// At most this K, N a multiple of small_k_columns and N * K at most small_k_weights: small_k_gemm_kernel. Not
/// beyond one matrix-core K step: a 1-channel 3x3x3 convolution (K 27, 48 outputs at 96^3) took 0.98 ms here and
/// 0.37 ms on the tiled GEMM (H200, docs/gpu.md "Fourth GPU session"); the 2x2x2 patch embedding (K 8) and the
/// 1x1x1 projection (K 1) are faster here.
constexpr int small_k_most = 16, small_k_columns = 4, small_k_weights = 4096;

/// C = A B for a short K read element by element: the convolutions of a 1- or 2-channel input (the patch
/// embedding, encoder1's 1x1x1 projection), where a tiled kernel's K step of 16 or 32 would
/// be mostly padding. One thread per (row, 4 consecutive columns), float32 FMA over k in order; the weights and
/// the loader's column parts in shared memory, a row's part computed by each of its threads.
/// Shapes: A (M, K) through `a`, B (N, K) weights in BT, C (M, N) through `epi`. Geometry: 1-D grid of 256-thread
/// blocks, grid-stride over M * N / 4 in row-major order (a row's column groups side by side, so its outputs are
/// stored together); shared memory N * K floats (at most 16 KiB) and K column parts.
template <class ALoad, class BT, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    small_k_gemm_kernel(ALoad a, const BT* __restrict__ weights, std::int64_t M, int N, int K, Epi epi) {
  using E = typename ALoad::element;
  constexpr int C = small_k_columns;
  __shared__ float w[small_k_weights];  // w[k * N + n]
  __shared__ typename ALoad::col_type cols[small_k_most];
  for (int i = static_cast<int>(threadIdx.x); i < N * K; i += static_cast<int>(blockDim.x)) {
    const int n = i / K, k = i % K;
    w[k * N + n] = gpu::to_f32(weights[i]);
  }
  for (int k = static_cast<int>(threadIdx.x); k < K; k += static_cast<int>(blockDim.x)) cols[k] = a.col(k);
  __syncthreads();
  const int groups = N / C;
  const std::int64_t total = M * groups;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t m = 0, g = 0;
    divide(i, groups, m, g);
    const int n0 = static_cast<int>(g) * C;
    const auto row = a.row(m);
    float acc[C] = {};
    for (int k = 0; k < K; ++k) {
      const E* p = a.find(row, cols[k]);
      if (!p) continue;  // padding: 0
      pack<E, 1> x = load_pack<E, 1>(p);
      if constexpr (normalizes_v<ALoad>) a.normalize(row, cols[k], x);
      const float v = gpu::to_f32(x.e[0]);
#pragma unroll
      for (int j = 0; j < C; ++j) acc[j] = fmaf(v, w[k * N + n0 + j], acc[j]);
    }
    const auto out_row = epi.row(m);
#pragma unroll
    for (int j = 0; j < C; ++j) epi(out_row, epi.col(n0 + j), acc[j]);
  }
}

/// Launches a tiled GEMM kernel (Tile::bm x Tile::bn blocks, `threads` each, K in steps of bk) over C (M x N),
/// cutting K into slices where the tiles alone would not fill the device (split_k_slices, whole K steps per
/// slice): kernel(operands..., M, N, K, k_slice, partial, epi).
template <class Tile, class Kernel, class Epi, class... Operands>
void launch_tiled(const launch_env& env, Kernel kernel, unsigned threads, int bk, std::int64_t M, int N, int K,
                  const Epi& epi, const char* what, const Operands&... operands) {
  const std::int64_t tiles_m = (M + Tile::bm - 1) / Tile::bm, tiles_n = (N + Tile::bn - 1) / Tile::bn;
  int slices = split_k_slices(tiles_m * tiles_n, K / bk, 4, env.multiprocessors);
  const int k_slice = ((K + slices - 1) / slices + bk - 1) / bk * bk;  // whole K steps
  slices = (K + k_slice - 1) / k_slice;
  const dim3 grid(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n), static_cast<unsigned>(slices));
  launch_with_slices(env, slices, M, N, epi, what, [&](float* partial) {
    gpu::launch(what, kernel, grid, threads, stream_of(env), operands..., M, N, K, k_slice, partial, epi);
  });
}

/// For a loader's vector_ok: `base` is 16-byte aligned and every offset step in `multiples` (the strides and the
/// extent along which packs are taken) is a multiple of the pack width of E, the axis packed along having unit
/// stride (the caller checks that).
template <class E>
bool packs_fit(const void* base, std::initializer_list<std::int64_t> multiples) {
  if (!aligned16(base)) return false;
  for (const std::int64_t v : multiples) {
    if (v % pack_width<E> != 0) return false;
  }
  return true;
}

/// C = A B through the loader and epilogue, B the weights packed at load as (N, K) rows in the operand type (the
/// model's storage type): a short K read element by element on small_k_gemm_kernel; otherwise on the matrix cores
/// when the operands are 16-bit (half_t or bf16_t) and the device has them enabled, else in float32 FMA; both
/// operands in 16-byte packs where both loaders allow it.
template <class Operand, class ALoad, class Epi>
void run_gemm(const launch_env& env, const ALoad& a, const Operand* weights, std::int64_t M, int N, int K,
              const Epi& epi, const char* what) {
  if (M == 0 || N == 0) return;
  const rows_loader<Operand> b{weights, K, packs_fit<Operand>(weights, {K})};
  constexpr int VA = vector_width<ALoad>, VB = vector_width<rows_loader<Operand>>;
  const bool packed = a.vector_ok && b.vector_ok && K % VA == 0;
  const bool tall = packed && N % tall_tile_n == 0;
  const auto launch = [&](auto kernel, auto tile, unsigned threads, int bk, const auto&... operands) {
    launch_tiled<decltype(tile)>(env, kernel, threads, bk, M, N, K, epi, what, a, b, operands...);
  };
  if (!packed && K <= small_k_most && N % small_k_columns == 0 && N * K <= small_k_weights) {
    gpu::launch(what, small_k_gemm_kernel<ALoad, Operand, Epi>, grid_for(M * (N / small_k_columns), 256, env), 256,
                stream_of(env), a, weights, M, N, K, epi);
    return;
  }
  if constexpr (!std::is_same_v<Operand, float>) {
    if (env.matrix_cores) {
      using O = mma_16bit_operands<Operand>;
      const auto threads = static_cast<unsigned>(mma_warps * env.warp_size);
      if (tall) {
        launch(gemm_mma_kernel<mma_tall48_tile, VA, VB, O, ALoad, Epi>, mma_tall48_tile{}, threads, O::bk, O{});
      } else if (packed) {
        launch(gemm_mma_kernel<mma_square_tile, VA, VB, O, ALoad, Epi>, mma_square_tile{}, threads, O::bk, O{});
      } else {
        launch(gemm_mma_kernel<mma_square_tile, 1, 1, O, ALoad, Epi>, mma_square_tile{}, threads, O::bk, O{});
      }
      return;
    }
  }
  if (tall) {
    launch(gemm_kernel<fma_tall48_tile, VA, VB, ALoad, Operand, Epi>, fma_tall48_tile{}, gemm_threads, gemm_bk);
  } else if (packed) {
    launch(gemm_kernel<fma_square_tile, VA, VB, ALoad, Operand, Epi>, fma_square_tile{}, gemm_threads, gemm_bk);
  } else {
    launch(gemm_kernel<fma_square_tile, 1, 1, ALoad, Operand, Epi>, fma_square_tile{}, gemm_threads, gemm_bk);
  }
}

SWINFER_GPU_DEVICE inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

}  // namespace swinfer::hip::kern
