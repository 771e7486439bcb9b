// swinfer hip backend: the tiled GEMM of precision::int8 (docs/int8.md) on the int8 matrix cores: the A operand
// (any loader: token rows, im2col rows, gathered window tokens) quantized per tensor as it is staged, the weights
// int8 (N, K) rows quantized per output at load, int32 sums, and the op's epilogue given each sum scaled back to
// float (input scale x the output's weight scale). Included only by backends/hip/src/*.cu.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gemm_core.cuh"
#include "swinfer/core/error.hpp"

namespace swinfer::hip::kern {

/// s_x of a product's input: calibrated (a value) or dynamic (on the device, written by launch_int8_input_scale
/// earlier in the stream).
struct input_scale {
  float value;
  const float* device;
  SWINFER_GPU_DEVICE float get() const { return device ? *device : value; }
};

/// The op's epilogue behind the int8 GEMM: an output's int32 sum times s_x * s_w[n], then the op's own epilogue
/// (bias, GELU, residual, scatter) in float32, as the float GEMM would have stored it.
template <class Epi>
struct dequantize_epilogue {
  using row_type = typename Epi::row_type;
  struct col_type {
    typename Epi::col_type inner;
    float scale;  ///< s_x * s_w[n]
  };
  Epi epi;
  const float* weight_scales;
  kern::input_scale input;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return epi.row(m); }
  SWINFER_GPU_DEVICE col_type col(int n) const { return {epi.col(n), input.get() * weight_scales[n]}; }
  SWINFER_GPU_DEVICE void operator()(const row_type& r, const col_type& c, float sum) const {
    epi(r, c.inner, sum * c.scale);
  }
};

constexpr int s8_bk = 32;

/// The int8 matrix-core GEMM. Shapes: A (M, K) through the loader `a` (any element type, quantized with 1 / s_x as
/// it goes to shared memory, s_x from `scale`), B (N, K) int8 weights, C (M, N) through `epi` (a
/// dequantize_epilogue). Geometry: as gemm_mma_kernel's (grid (ceil(M/Tile::bm), ceil(N/Tile::bn)), 4 warps of
/// Tile::tm x Tile::tn matrix-core tiles of 16 x 16); K advances in steps of 32, one 16 x 16 x 32 operation per
/// tile and step: bm x 32 and bn x 32 byte slices of A and B, k-contiguous in 48-byte rows (16-byte aligned, and
/// the 8 rows of an ldmatrix phase in distinct banks), double-buffered in shared memory (9 or 10.5 KiB), zero
/// filled past the edges (0 quantizes to 0). Sums exact in int32; split K as gemm_kernel's (the slices' sums added
/// in float32).
template <class Tile, int VA, int VB, class ALoad, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    gemm_s8_kernel(ALoad a, rows_loader<std::int8_t> b, input_scale scale, std::int64_t M, int N, int K,
                   int k_slice, float* partial, Epi epi) {
  constexpr int BM = Tile::bm, BN = Tile::bn, TM = Tile::tm, TN = Tile::tn;
  constexpr int ld = s8_bk + 16;
  struct alignas(16) tiles {
    std::int8_t a[2][BM][ld];
    std::int8_t b[2][BN][ld];
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
  block_operands<BM, BN, s8_bk, VA, VB, mma_warps * 32, ALoad, std::int8_t> ops(a, b, a_rows, b_rows, m0, M, n0, N);
  const epilogue_tables<BM, BN, Epi> out(epi, c_rows, c_cols, row_range{m0, M}, n0, N);
  const split_k_partials sums{partial, M, N};
  const int k_begin = static_cast<int>(blockIdx.z) * k_slice, k_end = k_begin + k_slice < K ? k_begin + k_slice : K;
  const float inverse_scale = 1.0f / scale.get();  // as ops::quantize_activation's callers compute it
  __syncthreads();
  ops.fetch(a, b, k_begin, k_end);
  ops.a.store_quantized(&smem.a[0][0][0], ld, inverse_scale);
  ops.b.store_row_major(&smem.b[0][0][0], ld);
  __syncthreads();
  int acc[TM][TN][gpu::mma_max_elems] = {};
  int buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += s8_bk, buf ^= 1) {
    const bool more = k0 + s8_bk < k_end;
    if (more) ops.fetch(a, b, k0 + s8_bk, k_end);  // in flight while this step multiplies
    std::uint32_t af[TM][gpu::mma_s8_max_words], bf[TN][gpu::mma_s8_max_words];
#pragma unroll
    for (int i = 0; i < TM; ++i) gpu::mma_s8_load_a(&smem.a[buf][wm + 16 * i][0], ld, af[i]);
#pragma unroll
    for (int j = 0; j < TN; ++j) gpu::mma_s8_load_b(&smem.b[buf][wn + 16 * j][0], ld, bf[j]);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) gpu::mma_16x16x32_s8(af[i], bf[j], acc[i][j]);
    if (more) {  // the other buffers were last read before the previous barrier
      ops.a.store_quantized(&smem.a[buf ^ 1][0][0], ld, inverse_scale);
      ops.b.store_row_major(&smem.b[buf ^ 1][0][0], ld);
    }
    __syncthreads();
  }
  float sum[TM][TN][gpu::mma_max_elems];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) sum[i][j][e] = static_cast<float>(acc[i][j][e]);
  for_each_mma_output(sum, wm, wn, [&](int r, int c, float v) {
    if (partial) {
      sums.store(m0 + r, n0 + c, v);
    } else {
      out.store(epi, r, c, v);
    }
  });
}

/// C = A B on the int8 matrix cores: `w` int8 (N, K) rows with q.weight_scales, A quantized with q's input scale
/// as it is staged; the op's epilogue gets each sum scaled back (dequantize_epilogue).
template <class ALoad, class Epi>
void run_gemm_s8(const launch_env& env, const ALoad& a, const std::int8_t* w, const int8_product& q, std::int64_t M,
                 int N, int K, const Epi& epi, const char* what) {
  if (M == 0 || N == 0) return;
  const rows_loader<std::int8_t> b{w, K, packs_fit<std::int8_t>(w, {K})};
  const input_scale scale{q.input_scale, q.d_input_scale};
  const dequantize_epilogue<Epi> scaled{epi, q.weight_scales, scale};
  constexpr int VA = vector_width<ALoad>, VB = pack_width<std::int8_t>;
  const bool packed_a = a.vector_ok && K % VA == 0;
  const auto threads = static_cast<unsigned>(mma_warps * env.warp_size);
  const auto launch = [&](auto tile, auto kernel) {
    launch_tiled<decltype(tile)>(env, kernel, threads, s8_bk, M, N, K, scaled, what, a, b, scale);
  };
  using D = dequantize_epilogue<Epi>;
  if (packed_a && b.vector_ok && N % tall_tile_n == 0) {
    launch(mma_tall48_tile{}, gemm_s8_kernel<mma_tall48_tile, VA, VB, ALoad, D>);
  } else if (packed_a && b.vector_ok) {
    launch(mma_square_tile{}, gemm_s8_kernel<mma_square_tile, VA, VB, ALoad, D>);
  } else if (b.vector_ok) {
    launch(mma_square_tile{}, gemm_s8_kernel<mma_square_tile, 1, VB, ALoad, D>);
  } else {
    launch(mma_square_tile{}, gemm_s8_kernel<mma_square_tile, 1, 1, ALoad, D>);
  }
}

/// C = A B through the loader and the op's epilogue: on the int8 matrix cores when `int8` is given (`weights`
/// then int8 (N, K) rows with int8->weight_scales, A quantized with int8's input scale; the caller has checked that
/// the device has matrix cores), else run_gemm with weights in Operand.
template <class Operand, class ALoad, class Epi>
void run_product(const launch_env& env, const ALoad& a, const void* weights, const int8_product* int8,
                 std::int64_t M, int N, int K, const Epi& epi, const char* what) {
  if (!int8) {
    run_gemm(env, a, static_cast<const Operand*>(weights), M, N, K, epi, what);
    return;
  }
  if constexpr (!std::is_same_v<Operand, float>) {
    detail::fail("swinfer hip backend: ", what, ": int8 products take float32 activations (precision::int8)");
  } else {
    run_gemm_s8(env, a, static_cast<const std::int8_t*>(weights), *int8, M, N, K, epi, what);
  }
}

}  // namespace swinfer::hip::kern
