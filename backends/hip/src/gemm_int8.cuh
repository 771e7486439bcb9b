// swinfer hip backend: the tiled GEMM of precision::int8 (docs/int8.md) on the int8 matrix cores (gemm_mma_kernel
// with int8 operands): the A operand (any loader: token rows, im2col rows, gathered window tokens) quantized per
// tensor as it is staged, the weights int8 (N, K) rows quantized per output at load, int32 sums, and the op's
// epilogue given each sum scaled back to float (input scale x the output's weight scale). Included only by
// backends/hip/src/*.cu.
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

/// The int8 operands of the matrix-core GEMM (gemm_mma_kernel): the A operand quantized with 1 / s_x as it goes to
/// shared memory, int8 weights, int32 sums exact; one 16 x 16 x 32 matrix-core operation per tile and K step of 32,
/// in 48-byte rows (16-byte aligned, and the 8 rows of an ldmatrix phase in distinct banks).
struct mma_s8_operands {
  using element = std::int8_t;
  using accumulator = int;
  static constexpr int bk = 32, ld = bk + 16;
  input_scale scale;
  template <class Stage>
  SWINFER_GPU_DEVICE void store_a(const Stage& stage, std::int8_t* tile) const {
    stage.store_quantized(tile, ld, 1.0f / scale.get());  // the inverse as ops::quantize_activation's callers take it
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
