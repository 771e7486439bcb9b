// swinfer hip backend: how the tiled GEMMs (gemm_core.cuh) stage their operands and keep their epilogue's row
// and column tables: the loader interface, the tile staging with the optional norm on load, the block's two
// operand stages. Included only through gemm_core.cuh.
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
/// coalesce. Sized for MinThreads threads; a block with more leaves the surplus packs unused. Where BK / V does not
/// divide the block, the last threads' `first` is past the tile (their packs are all outside it): each pack of the
/// tile has exactly one thread, else two would write it (a race, if of equal values).
template <int Rows, int BK, int V, int MinThreads, class Load>
struct operand_stage {
  using E = typename Load::element;
  using row_type = typename Load::row_type;
  static constexpr int per_row = BK / V, rows_per_pass = MinThreads / per_row;
  static_assert(rows_per_pass > 0, "a block stages at least one row of the tile per pass");
  static constexpr int packs = (Rows + rows_per_pass - 1) / rows_per_pass;
  int kv, first, step;
  pack<E, V> v[packs];

  SWINFER_GPU_DEVICE operand_stage()
      : kv(static_cast<int>(threadIdx.x) % per_row),
        first(static_cast<int>(threadIdx.x) / per_row < static_cast<int>(blockDim.x) / per_row
                  ? static_cast<int>(threadIdx.x) / per_row
                  : Rows),
        step(static_cast<int>(blockDim.x) / per_row) {}

  /// rows[i] = l.row(r0 + i) for the rows inside `total`; returns how many there are. Call once per block, then
  /// synchronise.
  SWINFER_GPU_DEVICE static int stage_rows(const Load& l, std::int64_t r0, std::int64_t total, row_type* rows) {
    const std::int64_t left = total - r0;
    const int valid = left < Rows ? static_cast<int>(left) : Rows;
    for (int i = static_cast<int>(threadIdx.x); i < valid; i += static_cast<int>(blockDim.x)) rows[i] = l.row(r0 + i);
    return valid;
  }

  /// f(j, r, col, p) for each of the thread's packs j of K step k0: its row r in the tile, its column's shared part,
  /// and where it is read from (null where it reads as 0: rows past the tile or the matrix, columns past K, the
  /// loader's padding).
  template <class F>
  SWINFER_GPU_DEVICE void for_each_pack(const Load& l, const row_type* rows, int valid_rows, int k0, int K,
                                        const F& f) const {
    const int k = k0 + kv * V;
    const bool k_inside = k < K;  // for V > 1, V divides K: the whole pack is inside
    typename Load::col_type col{};
    if (k_inside) col = l.col(k);
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int r = first + j * step;
      f(j, r, col, (k_inside && r < valid_rows) ? l.find(rows[r], col) : nullptr);
    }
  }

  /// The packs of K step k0 into registers, normalised where the loader normalises.
  SWINFER_GPU_DEVICE void fetch(const Load& l, const row_type* rows, int valid_rows, int k0, int K) {
    for_each_pack(l, rows, valid_rows, k0, K, [&](int j, int r, const auto& col, const E* p) {
      v[j] = p ? load_pack<E, V>(p) : zero_pack<E, V>();
      if constexpr (normalizes_v<Load>) {
        if (p) l.normalize(rows[r], col, v[j]);
      }
    });
  }

  /// The packs of K step k0 straight to a row-major tile (tile[r * ld + k]) with asynchronous copies, zeros where
  /// they read as 0: for 16-byte packs that are not normalised. They land at the copies' wait
  /// (gpu::copy_async_wait).
  SWINFER_GPU_DEVICE void copy_async(const Load& l, const row_type* rows, int valid_rows, int k0, int K, E* tile,
                                     int ld) const {
    static_assert(V == pack_width<E> && !normalizes_v<Load>, "asynchronous copies move whole packs as they are");
    for_each_pack(l, rows, valid_rows, k0, K, [&](int, int r, const auto&, const E* p) {
      if (r >= Rows) return;
      E* dst = tile + r * ld + kv * V;
      if (p) {
        gpu::copy_async_16(dst, p);
      } else {
        store_pack(dst, zero_pack<E, V>());
      }
    });
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
      } else if constexpr (std::is_same_v<E, U>) {
#pragma unroll
        for (int i = 0; i < V; ++i) dst[i] = v[j].e[i];
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) dst[i] = gpu::from_f32<U>(gpu::to_f32(v[j].e[i]));
      }
    }
  }

  /// To a row-major tile of signed bytes (tile[r * ld + k]), each value of tile row r quantized with
  /// inverse_of(r) (quantize_s8); a pack of 4 values goes in one 4-byte store (tile and ld keep them aligned).
  template <class InverseScale>
  SWINFER_GPU_DEVICE void store_quantized(std::int8_t* tile, int ld, const InverseScale& inverse_of) const {
#pragma unroll
    for (int j = 0; j < packs; ++j) {
      const int r = first + j * step;
      if (r >= Rows) continue;
      const float inverse_scale = inverse_of(r);
      std::int8_t* dst = tile + r * ld + kv * V;
      if constexpr (V % 4 == 0) {
#pragma unroll
        for (int w = 0; w < V / 4; ++w) {
          std::uint32_t word = 0;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const auto q = static_cast<std::uint8_t>(quantize_s8(gpu::to_f32(v[j].e[4 * w + i]), inverse_scale));
            word |= static_cast<std::uint32_t>(q) << (8 * i);
          }
          *reinterpret_cast<std::uint32_t*>(dst + 4 * w) = word;
        }
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) dst[i] = quantize_s8(gpu::to_f32(v[j].e[i]), inverse_scale);
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

/// The block's output rows m0 .. m0 + Rows - 1 of the M rows of C (the tiled GEMMs').
struct row_range {
  std::int64_t m0, M;
  SWINFER_GPU_DEVICE bool inside(int i) const { return m0 + i < M; }
  SWINFER_GPU_DEVICE std::int64_t global(int i) const { return m0 + i; }
};

/// The epilogue's row and column tables of a block (its output rows through `Rows`: inside(i), and global(i) the
/// row of C, as row_range; columns n0 .. n0 + BN - 1), in the kernel's shared memory: filled by the constructor
/// (synchronise before use), read by store().
template <int BM, int BN, class Epi, class Rows = row_range>
struct epilogue_tables {
  typename Epi::row_type* rows;
  typename Epi::col_type* cols;
  Rows block_rows;
  int n0, N;

  SWINFER_GPU_DEVICE epilogue_tables(const Epi& epi, typename Epi::row_type* r, typename Epi::col_type* c,
                                     const Rows& rows_, int n0_, int N_)
      : rows(r), cols(c), block_rows(rows_), n0(n0_), N(N_) {
    for (int i = static_cast<int>(threadIdx.x); i < BM; i += static_cast<int>(blockDim.x)) {
      if (block_rows.inside(i)) rows[i] = epi.row(block_rows.global(i));
    }
    for (int j = static_cast<int>(threadIdx.x); j < BN; j += static_cast<int>(blockDim.x)) {
      if (n0 + j < N) cols[j] = epi.col(n0 + j);
    }
  }

  /// Output (block row i, n0 + j), if it is inside C.
  SWINFER_GPU_DEVICE void store(const Epi& epi, int i, int j, float v) const {
    if (block_rows.inside(i) && n0 + j < N) epi(rows[i], cols[j], v);
  }
};

}  // namespace swinfer::hip::kern
