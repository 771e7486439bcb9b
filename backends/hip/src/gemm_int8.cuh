// swinfer hip backend: the tiled GEMM of precision::int8 (docs/int8.md) on the int8 matrix cores (gemm_mma_kernel
// with int8 operands): the A operand (any loader: token rows, im2col rows, gathered window tokens) quantized per
// tensor (or, a linear's dynamic scales, per row) as it is staged, the weights int8 (N, K) rows quantized per
// output at load, int32 sums, and the op's epilogue given each sum scaled back to float (input scale x the output's
// weight scale). Included only by backends/hip/src/*.cu.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gemm_core.cuh"
#include "swinfer/core/error.hpp"

namespace swinfer::hip::kern {

/// s_x of a product's input: calibrated (a value), dynamic per tensor (on the device, written by
/// launch_int8_input_scale earlier in the stream) or dynamic per row (rows[m] for the M rows, written by
/// row_scale_kernel).
struct input_scale {
  float value;
  const float* device;
  const float* rows = nullptr;
  std::int64_t M = 0;
  SWINFER_GPU_DEVICE float get() const { return device ? *device : value; }
  /// Row m's s_x; past the last row (a tile's padding, zeros) any finite scale.
  SWINFER_GPU_DEVICE float of_row(std::int64_t m) const { return rows ? (m < M ? rows[m] : 1.0f) : get(); }
};

/// The op's epilogue behind the int8 GEMM: an output's int32 sum times s_x * s_w[n] (s_x its row's with per-row
/// scales), then the op's own epilogue (bias, GELU, residual, scatter) in float32, as the float GEMM would have
/// stored it.
template <class Epi>
struct dequantize_epilogue {
  struct row_type {
    typename Epi::row_type inner;
    float scale;  ///< s_x of the row with per-row scales, else 1
  };
  struct col_type {
    typename Epi::col_type inner;
    float scale;  ///< s_w[n], times s_x unless per row
  };
  Epi epi;
  const float* weight_scales;
  kern::input_scale input;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return {epi.row(m), input.rows ? input.of_row(m) : 1.0f}; }
  SWINFER_GPU_DEVICE col_type col(int n) const {
    return {epi.col(n), (input.rows ? 1.0f : input.get()) * weight_scales[n]};
  }
  SWINFER_GPU_DEVICE void operator()(const row_type& r, const col_type& c, float sum) const {
    epi(r.inner, c.inner, sum * (r.scale * c.scale));
  }
};

/// rows[m] = the dynamic scale of A's row m as the GEMM stages it: max |a(m, k)| over k (normalised where the
/// loader normalises) / 127, 1 for an all-zero row (ops::dynamic_activation_scale).
/// Shapes: A (M, K) through `a`, rows (M). Geometry: 1-D grid of 256-thread blocks, a warp per row, grid-stride
/// over the rows; the warp's lanes stride over k.
template <class ALoad>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    row_scale_kernel(ALoad a, std::int64_t M, int K, float* __restrict__ rows) {
  using E = typename ALoad::element;
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  const int warps = static_cast<int>(blockDim.x) / SWINFER_GPU_WARP_SIZE;
  for (std::int64_t m = blockIdx.x * std::int64_t{warps} + static_cast<int>(threadIdx.x) / SWINFER_GPU_WARP_SIZE;
       m < M; m += std::int64_t{gridDim.x} * warps) {
    const auto row = a.row(m);
    float largest = 0.0f;
    for (int k = lane; k < K; k += SWINFER_GPU_WARP_SIZE) {
      const auto col = a.col(k);
      const E* p = a.find(row, col);
      if (!p) continue;  // padding: 0
      pack<E, 1> x = load_pack<E, 1>(p);
      if constexpr (normalizes_v<ALoad>) a.normalize(row, col, x);
      largest = fmaxf(largest, fabsf(gpu::to_f32(x.e[0])));
    }
    largest = gpu::warp_max(largest);
    if (lane == 0) rows[m] = largest > 0.0f ? largest / 127.0f : 1.0f;
  }
}

/// The int8 operands of the matrix-core GEMM (gemm_mma_kernel): the A operand quantized with 1 / s_x as it goes to
/// shared memory, int8 weights, int32 sums exact; one 16 x 16 x 32 matrix-core operation per tile and K step of 32,
/// in 48-byte rows (16-byte aligned, and the 8 rows of an ldmatrix phase in distinct banks).
struct mma_s8_operands {
  using element = std::int8_t;
  using accumulator = int;
  static constexpr int bk = 32, ld = bk + 16;
  input_scale scale;
  /// The A tile of the block from row m0, each value times 1 / s_x (the inverse as ops::quantize_activation's
  /// callers take it).
  template <class Stage>
  SWINFER_GPU_DEVICE void store_a(const Stage& stage, std::int8_t* tile, std::int64_t m0) const {
    if (scale.rows) {
      stage.store_quantized(tile, ld, [&](int r) { return 1.0f / scale.of_row(m0 + r); });
    } else {
      const float inverse = 1.0f / scale.get();
      stage.store_quantized(tile, ld, [=](int) { return inverse; });
    }
  }
  template <int TM, int TN>
  SWINFER_GPU_DEVICE static void multiply(const std::int8_t* a, const std::int8_t* b, int wm, int wn,
                                          int (&acc)[TM][TN][gpu::mma_max_elems]) {
    std::uint32_t af[TM][gpu::mma_s8_max_words], bf[TN][gpu::mma_s8_max_words];
#pragma unroll
    for (int i = 0; i < TM; ++i) gpu::mma_s8_load_a(a + (wm + 16 * i) * ld, ld, af[i]);
#pragma unroll
    for (int j = 0; j < TN; ++j) gpu::mma_s8_load_b(b + (wn + 16 * j) * ld, ld, bf[j]);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) gpu::mma_16x16x32_s8(af[i], bf[j], acc[i][j]);
  }
};

/// C = A B on the int8 matrix cores: `w` int8 (N, K) rows with q.weight_scales, A quantized with q's input scale
/// (with per-row scales each row's, taken first by row_scale_kernel) as it is staged; the op's epilogue gets each
/// sum scaled back (dequantize_epilogue).
template <class ALoad, class Epi>
void run_gemm_s8(const launch_env& env, const ALoad& a, const std::int8_t* w, const int8_product& q, std::int64_t M,
                 int N, int K, const Epi& epi, const char* what) {
  if (M == 0 || N == 0) return;
  const rows_loader<std::int8_t> b{w, K, packs_fit<std::int8_t>(w, {K})};
  input_scale scale{q.input_scale, q.d_input_scale};
  if (q.per_row) {
    if (!q.d_row_scales) detail::fail("swinfer hip backend: ", what, ": per-row int8 scales need their scratch");
    gpu::launch("int8 row scales kernel launch", row_scale_kernel<ALoad>, grid_for_warp_rows(M, 256, env), 256,
                stream_of(env), a, M, K, q.d_row_scales);
    scale = {0.0f, nullptr, q.d_row_scales, M};
  }
  const dequantize_epilogue<Epi> scaled{epi, q.weight_scales, scale};
  constexpr int VA = vector_width<ALoad>, VB = pack_width<std::int8_t>;
  const bool packed_a = a.vector_ok && K % VA == 0;
  const auto threads = static_cast<unsigned>(mma_warps * env.warp_size);
  const mma_s8_operands operands{scale};
  const auto launch = [&](auto tile, auto kernel) {
    launch_tiled<decltype(tile)>(env, kernel, threads, mma_s8_operands::bk, M, N, K, scaled, what, a, b, operands);
  };
  using D = dequantize_epilogue<Epi>;
  using O = mma_s8_operands;
  if (packed_a && b.vector_ok && N % tall_tile_n == 0) {
    launch(mma_tall48_tile{}, gemm_mma_kernel<mma_tall48_tile, VA, VB, O, ALoad, D>);
  } else if (packed_a && b.vector_ok) {
    launch(mma_square_tile{}, gemm_mma_kernel<mma_square_tile, VA, VB, O, ALoad, D>);
  } else if (b.vector_ok) {
    launch(mma_square_tile{}, gemm_mma_kernel<mma_square_tile, 1, VB, O, ALoad, D>);
  } else {
    launch(mma_square_tile{}, gemm_mma_kernel<mma_square_tile, 1, 1, O, ALoad, D>);
  }
}

/// The int8 product of one launch: `q`, with its per-row dynamic scales (if it has them) in the M floats at
/// `d_rows` of the launch's scratch (`launch` holds the copy).
inline const int8_product* with_row_scales(const int8_product* q, float* d_rows, int8_product& launch) {
  if (!q || !q->per_row) return q;
  launch = *q;
  launch.d_row_scales = d_rows;
  return &launch;
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
