// swinfer hip backend: the portable tiled GEMM every GEMM-shaped op shares (linear, conv3d, conv_transpose3d in
// gemm.cu; the qkv and proj products of window attention in attention.cu). Included only by backends/hip/src/*.cu.
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
// cores (vendor/matrix_core.hpp); otherwise gemm_kernel multiplies float32 tiles with FMA (fp32 models stay exact to
// float32 rounding).
#pragma once

#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "norm_core.cuh"
#include "swinfer/backend/hip/vendor/matrix_core.hpp"

namespace swinfer::hip::kern {

// ---- Operand staging: what both kernels share -----------------------------------------------------------------
//
// Each operand tile (BM or BN rows x BK columns of k) is read through a loader, which provides
//   using element = ...                  the element type of the tensor the operand is read from (converted to
//                                        float32 or to the matrix cores' operand type on the way to shared memory)
//   row_type row(std::int64_t m) const   what every element of row m shares (a base offset, a position): computed
//                                        once per block for the block's rows and kept in shared memory
//   col_type col(int k) const            what every element of column k shares: computed once per K step by each
//                                        thread, which stages one column (or one pack of columns) of the tile
//   const element* find(const row_type&, const col_type&) const   where [m, k] is, or null where it is 0 (padding)
//   bool vector_ok                       set on the host: for every row and every k that is a multiple of
//                                        V = 16 / sizeof(element), [m, k .. k+V-1] are contiguous in memory and
//                                        16-byte aligned (or all null); run_gemm also requires that V divides K
// and optionally
//   template <int V> void normalize(const row_type&, const col_type&, pack<element, V>&) const
//                                        applied to every pack that was read (never to padding, which stays 0): a
//                                        norm of the operand and its activation, evaluated on the way to shared
//                                        memory and rounded back to the element type as the unfused op stores it,
//                                        so the normalised tensor is never written
// so the index arithmetic (divisions by extents) is paid per row and per column, never per element, and where
// vector_ok holds (channels-last tensors whose channel count is a multiple of V, weights whose K is) each thread
// moves V columns with one 16-byte load. Both kernels prefetch the next K step's tiles into registers while the
// current ones are multiplied from shared memory (two shared buffers, one barrier per step).

/// Whether a loader normalises what it reads (has the optional normalize member).
template <class Load, class = void>
inline constexpr bool normalizes_v = false;
template <class Load>
inline constexpr bool normalizes_v<Load, std::void_t<decltype(std::declval<const Load&>().normalize(
                                             std::declval<const typename Load::row_type&>(),
                                             std::declval<const typename Load::col_type&>(),
                                             std::declval<pack<typename Load::element, 1>&>()))>> = true;

/// Elements per 16-byte pack of a loader's element type.
template <class Load>
inline constexpr int vector_width = pack_width<typename Load::element>;

/// The row-major (rows, k_total) matrix at x: token rows of a linear, and every GEMM's weights (N, K).
template <class T>
struct rows_loader {
  using element = T;
  using row_type = std::int64_t;  ///< the row's offset
  using col_type = int;
  const T* x;
  int k_total;
  bool vector_ok;  ///< k_total a multiple of the pack width and x 16-byte aligned
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return m * k_total; }
  SWINFER_GPU_DEVICE col_type col(int k) const { return k; }
  SWINFER_GPU_DEVICE const T* find(row_type r, col_type k) const { return x + r + k; }
};

/// A row's offset and its LayerNorm moments (mean 0 and inv 1 where nothing is normalised).
struct norm_row {
  std::int64_t offset;
  float mean, inv;
};

/// The LayerNorm a loader of token rows applies on load: per-row moments (mean, 1/sqrt(var + eps)) in the loader's
/// row order, null when the rows are read as they are, and the norm's gamma and beta (null where absent).
template <class T>
struct row_layer_norm {
  const float* moments;
  const float* gamma;
  const float* beta;
  SWINFER_GPU_DEVICE norm_row row(std::int64_t m, std::int64_t offset) const {
    if (!moments) return {offset, 0.0f, 1.0f};
    return {offset, moments[m * 2], moments[m * 2 + 1]};
  }
  /// Channels k .. k+V-1 of the row.
  template <int V>
  SWINFER_GPU_DEVICE void apply(const norm_row& r, int k, pack<T, V>& p) const {
    if (!moments) return;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      p.e[i] = gpu::from_f32<T>(layer_norm_value(gpu::to_f32(p.e[i]), r.mean, r.inv, gamma, beta, k + i));
    }
  }
};

/// One operand tile of Rows x BK staged by a block in packs of V (1, or vector_width<Load>): a thread holds the
/// packs of columns kv * V .. kv * V + V - 1 with kv = tid % (BK / V), rows first + j * step, between their load
/// and their store to shared memory. Consecutive threads take consecutive columns, so channels-last loads
/// coalesce. Sized for MinThreads threads; a block with more leaves the surplus packs unused.
template <int Rows, int BK, int V, int MinThreads, class Load>
struct operand_stage {
  using E = typename Load::element;
  using row_type = typename Load::row_type;
  static constexpr int per_row = BK / V, packs = (Rows * per_row + MinThreads - 1) / MinThreads;
  int kv, first, step;
  pack<E, V> v[packs];

  SWINFER_GPU_DEVICE operand_stage()
      : kv(static_cast<int>(threadIdx.x) % per_row),
        first(static_cast<int>(threadIdx.x) / per_row),
        step(static_cast<int>(blockDim.x) / per_row) {}

  /// rows[i] = l.row(r0 + i) for the rows inside `total`; returns how many there are. Call once per block, then
  /// synchronise.
  SWINFER_GPU_DEVICE static int stage_rows(const Load& l, std::int64_t r0, std::int64_t total, row_type* rows) {
    const std::int64_t left = total - r0;
    const int valid = left < Rows ? static_cast<int>(left) : Rows;
    for (int i = static_cast<int>(threadIdx.x); i < valid; i += static_cast<int>(blockDim.x)) rows[i] = l.row(r0 + i);
    return valid;
  }

  /// The packs of K step k0 into registers (rows past the tile or the matrix, and columns past K, read as 0).
  SWINFER_GPU_DEVICE void fetch(const Load& l, const row_type* rows, int valid_rows, int k0, int K) {
    const int k = k0 + kv * V;
    const bool k_inside = k < K;  // for V > 1, V divides K: the whole pack is inside
    typename Load::col_type col{};
    if (k_inside) col = l.col(k);
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int r = first + j * step;
      const E* p = (k_inside && r < valid_rows) ? l.find(rows[r], col) : nullptr;
      v[j] = p ? load_pack<E, V>(p) : zero_pack<E, V>();
      if constexpr (normalizes_v<Load>) {
        if (p) l.normalize(rows[r], col, v[j]);
      }
    }
  }

  /// To a row-major tile of U (tile[r * ld + k]); a 16-byte pack of U goes in one store (tile and ld keep packs
  /// 16-byte aligned).
  template <class U>
  SWINFER_GPU_DEVICE void store_row_major(U* tile, int ld) const {
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int r = first + j * step;
      if (r >= Rows) continue;
      U* dst = tile + r * ld + kv * V;
      if constexpr (std::is_same_v<E, U> && V == pack_width<U>) {
        store_pack(dst, v[j]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) dst[i] = gpu::from_f32<U>(gpu::to_f32(v[j].e[i]));
      }
    }
  }

  /// To a k-major float32 tile (tile[k * ld + r]).
  SWINFER_GPU_DEVICE void store_k_major(float* tile, int ld) const {
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int r = first + j * step;
      if (r >= Rows) continue;
#pragma unroll
      for (int i = 0; i < V; ++i) tile[(kv * V + i) * ld + r] = gpu::to_f32(v[j].e[i]);
    }
  }
};

/// Both operand tiles of one block (A: BM rows through ALoad, B: BN weight rows), staged in packs of VA / VB: the
/// row tables (in the kernel's shared memory) and the registers between load and store. The constructor fills the
/// row tables of block (m0, n0); synchronise before the first fetch.
template <int BM, int BN, int BK, int VA, int VB, int MinThreads, class ALoad, class BT>
struct block_operands {
  operand_stage<BM, BK, VA, MinThreads, ALoad> a;
  operand_stage<BN, BK, VB, MinThreads, rows_loader<BT>> b;
  const typename ALoad::row_type* a_rows;
  const std::int64_t* b_rows;
  int a_valid, b_valid;

  SWINFER_GPU_DEVICE block_operands(const ALoad& al, const rows_loader<BT>& bl, typename ALoad::row_type* ar,
                                    std::int64_t* br, std::int64_t m0, std::int64_t M, int n0, int N)
      : a_rows(ar),
        b_rows(br),
        a_valid(decltype(a)::stage_rows(al, m0, M, ar)),
        b_valid(decltype(b)::stage_rows(bl, n0, N, br)) {}

  /// Both tiles of K step k0 into registers.
  SWINFER_GPU_DEVICE void fetch(const ALoad& al, const rows_loader<BT>& bl, int k0, int K) {
    a.fetch(al, a_rows, a_valid, k0, K);
    b.fetch(bl, b_rows, b_valid, k0, K);
  }
};

/// What the epilogues keep of an output column: its offset from the row's, and its bias (0 where the op has none).
struct out_col {
  std::int64_t offset;
  float bias;
};

/// The epilogue's row and column tables of block (m0, n0), in the kernel's shared memory: filled by the
/// constructor (synchronise before use), read by store().
template <int BM, int BN, class Epi>
struct epilogue_tables {
  typename Epi::row_type* rows;
  typename Epi::col_type* cols;
  std::int64_t m0, M;
  int n0, N;

  SWINFER_GPU_DEVICE epilogue_tables(const Epi& epi, typename Epi::row_type* r, typename Epi::col_type* c,
                                     std::int64_t m0_, std::int64_t M_, int n0_, int N_)
      : rows(r), cols(c), m0(m0_), M(M_), n0(n0_), N(N_) {
    for (int i = static_cast<int>(threadIdx.x); i < BM; i += static_cast<int>(blockDim.x)) {
      if (m0 + i < M) rows[i] = epi.row(m0 + i);
    }
    for (int j = static_cast<int>(threadIdx.x); j < BN; j += static_cast<int>(blockDim.x)) {
      if (n0 + j < N) cols[j] = epi.col(n0 + j);
    }
  }

  /// Output (m0 + i, n0 + j), if it is inside C.
  SWINFER_GPU_DEVICE void store(const Epi& epi, int i, int j, float v) const {
    if (m0 + i < M && n0 + j < N) epi(rows[i], cols[j], v);
  }
};

constexpr int gemm_bk = 16, gemm_threads = 256;
/// The width of the tall tiles: every layer of a feature_size-48 model has N a multiple of it (cout = 48 * 2^k,
/// qkv 3C, fc1 4C), so no column of those tiles is padding.
constexpr int tall_tile_n = 48;

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
/// multiples of anything. Thread-to-element maps do not depend on the warp size.
template <class Tile, int VA, int VB, class ALoad, class BT, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(gemm_threads)
    gemm_kernel(ALoad a, rows_loader<BT> b, std::int64_t M, int N, int K, Epi epi) {
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
  const epilogue_tables<BM, BN, Epi> out(epi, c_rows, c_cols, m0, M, n0, N);
  __syncthreads();
  ops.fetch(a, b, 0, K);
  ops.a.store_k_major(&as[0][0][0], lda);
  ops.b.store_k_major(&bs[0][0][0], ldb);
  __syncthreads();
  float acc[TM][TN] = {};
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += gemm_bk, buf ^= 1) {
    const bool more = k0 + gemm_bk < K;
    if (more) ops.fetch(a, b, k0 + gemm_bk, K);  // in flight while this step multiplies
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
    for (int j = 0; j < TN; ++j) out.store(epi, ty * TM + i, tx * TN + j, acc[i][j]);
}

constexpr int mma_bk = 32, mma_warps = 4;

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

/// The matrix-core GEMM, operands rounded to T (half_t or bf16_t), float32 accumulation.
/// Shapes: as gemm_kernel, B (the weights) in T. Geometry: grid (ceil(M/Tile::bm), ceil(N/Tile::bn)), 4 warps (128
/// threads on NVIDIA, 256 on CDNA), each owning Tile::tm x Tile::tn matrix-core tiles of 16 x 16 (64 x 64 blocks
/// of 2 x 2 warps, or 128 x 48 blocks of 4 x 1). K advances in steps of 32: bm x 32 and bn x 32 slices of A and B
/// in T, both k-contiguous (16-byte packs go to shared memory as they came), double-buffered in shared memory (20
/// or 27.5 KiB), zero filled past the edges; each warp runs two 16-deep matrix-core steps per slice, reading its
/// fragments in runs of consecutive k (one 4- or 8-byte load each, gpu::mma_k_run). Fragments are placed through
/// gpu::mma_*_coord, so the source holds for any lane layout.
template <class Tile, int VA, int VB, class T, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    gemm_mma_kernel(ALoad a, rows_loader<T> b, std::int64_t M, int N, int K, Epi epi) {
  constexpr int BM = Tile::bm, BN = Tile::bn, TM = Tile::tm, TN = Tile::tn;
  constexpr int ld = mma_bk + 8;  // 80-byte rows: 16-byte aligned packs, and rows 4 banks apart
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
  const int lane = tid % SWINFER_GPU_WARP_SIZE, warp = tid / SWINFER_GPU_WARP_SIZE;
  const int wm = (warp / Tile::warps_n) * TM * 16, wn = (warp % Tile::warps_n) * TN * 16;
  const int elems = gpu::mma_elems();
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * BM;
  const int n0 = static_cast<int>(blockIdx.y) * BN;
  block_operands<BM, BN, mma_bk, VA, VB, mma_warps * 32, ALoad, T> ops(a, b, a_rows, b_rows, m0, M, n0, N);
  const epilogue_tables<BM, BN, Epi> out(epi, c_rows, c_cols, m0, M, n0, N);
  __syncthreads();
  ops.fetch(a, b, 0, K);
  ops.a.store_row_major(&smem.a[0][0][0], ld);
  ops.b.store_row_major(&smem.b[0][0][0], ld);
  __syncthreads();
  float acc[TM][TN][gpu::mma_max_elems] = {};
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += mma_bk, buf ^= 1) {
    const bool more = k0 + mma_bk < K;
    if (more) ops.fetch(a, b, k0 + mma_bk, K);  // in flight while this step multiplies
#pragma unroll
    for (int ks = 0; ks < mma_bk; ks += 16) {
      T af[TM][gpu::mma_max_elems], bf[TN][gpu::mma_max_elems];
#pragma unroll
      for (int i = 0; i < TM; ++i) gpu::mma_load_a(&smem.a[buf][wm + 16 * i][ks], ld, af[i]);
#pragma unroll
      for (int j = 0; j < TN; ++j) gpu::mma_load_b(&smem.b[buf][wn + 16 * j][ks], ld, bf[j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
    }
    if (more) {  // the other buffers were last read before the previous barrier
      ops.a.store_row_major(&smem.a[buf ^ 1][0][0], ld);
      ops.b.store_row_major(&smem.b[buf ^ 1][0][0], ld);
    }
    __syncthreads();
  }
  // Unrolled, so the accumulators stay in registers (a loop bound the compiler cannot see puts them in local
  // memory).
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        if (e >= elems) continue;
        int r = 0, c = 0;
        gpu::mma_c_coord(lane, e, r, c);
        out.store(epi, wm + 16 * i + r, wn + 16 * j + c, acc[i][j][e]);
      }
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
/// model's storage type): on the matrix cores when the operands are 16-bit (half_t or bf16_t) and the device has
/// them enabled, else in float32 FMA; both operands in 16-byte packs where both loaders allow it.
template <class Operand, class ALoad, class Epi>
void run_gemm(const launch_env& env, const ALoad& a, const Operand* weights, std::int64_t M, int N, int K,
              const Epi& epi, const char* what) {
  if (M == 0 || N == 0) return;
  const rows_loader<Operand> b{weights, K, packs_fit<Operand>(weights, {K})};
  constexpr int VA = vector_width<ALoad>, VB = vector_width<rows_loader<Operand>>;
  const bool packed = a.vector_ok && b.vector_ok && K % VA == 0;
  const bool tall = packed && N % tall_tile_n == 0;
  const auto launch = [&](auto kernel, auto tile, unsigned threads) {
    using Tile = decltype(tile);
    const dim3 grid(static_cast<unsigned>((M + Tile::bm - 1) / Tile::bm),
                    static_cast<unsigned>((N + Tile::bn - 1) / Tile::bn));
    gpu::launch(what, kernel, grid, threads, stream_of(env), a, b, M, N, K, epi);
  };
  if constexpr (!std::is_same_v<Operand, float>) {
    if (env.matrix_cores) {
      const auto threads = static_cast<unsigned>(mma_warps * env.warp_size);
      if (tall) {
        launch(gemm_mma_kernel<mma_tall48_tile, VA, VB, Operand, ALoad, Epi>, mma_tall48_tile{}, threads);
      } else if (packed) {
        launch(gemm_mma_kernel<mma_square_tile, VA, VB, Operand, ALoad, Epi>, mma_square_tile{}, threads);
      } else {
        launch(gemm_mma_kernel<mma_square_tile, 1, 1, Operand, ALoad, Epi>, mma_square_tile{}, threads);
      }
      return;
    }
  }
  if (tall) {
    launch(gemm_kernel<fma_tall48_tile, VA, VB, ALoad, Operand, Epi>, fma_tall48_tile{}, gemm_threads);
  } else if (packed) {
    launch(gemm_kernel<fma_square_tile, VA, VB, ALoad, Operand, Epi>, fma_square_tile{}, gemm_threads);
  } else {
    launch(gemm_kernel<fma_square_tile, 1, 1, ALoad, Operand, Epi>, fma_square_tile{}, gemm_threads);
  }
}

SWINFER_GPU_DEVICE inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

}  // namespace swinfer::hip::kern
