// swinfer hip backend: (shifted-)window multi-head self-attention of a Swin block, x += proj(attn(qkv(y))).
//
// Four launches per call, all on the context's stream:
//   1. token_rows_kernel      the element offset in y/x of every window token (-1 for a pad token): the cyclic
//                             shift and the zero padding are applied by index, nothing is rolled or padded in memory;
//                             with a pre-norm, also the token's LayerNorm moments.
//   2. qkv GEMM               qkv[r, :] = norm(y(token r)) Wqkv^T + b, float32 (pad rows: the bias alone), the tokens
//                             gathered by the A loader straight from y (rows in window order) and LayerNorm-ed on
//                             the way to shared memory: norm, cyclic shift and window partition in one pass.
//   3. window_attention_kernel one block per (sample x window, head, 128-query tile): the head's K and V stream
//      (attention_fma.cu)     through shared memory in key tiles, each thread keeps one query row, its output row and
//                             its running max / sum in registers (online softmax), the relative-position bias and the
//                             shift mask are added on chip. Scores never reach global memory. For fp16/bf16
//                             models on matrix cores, window_attention_mma_kernel (attention_mma.cu) instead:
//                             16-query row tiles per warp, q.k^T and p.v as matrix-core products of hi/lo pairs.
//   4. proj GEMM              out = att Wproj^T + b, the epilogue adds each real token's row into x at its un-rolled
//                             position (pad rows are dropped); every element of x is written by exactly one thread.
//
// The quirks of ops::ref::window_attention are reproduced exactly: the plan's clamped window and shift, the dense
// bias built on the host from MONAI's truncated index (ops::dense_relative_bias), the region ids of
// ops::shift_region_ids with the -100 mask (only when shifted and the plan has a shift), pad tokens taking part in
// attention unmasked (their k and v are the qkv bias), q scaled by hd^-0.5 in float32 before q.k.
#include "attention_core.cuh"
#include "gemm_int8.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

/// The window geometry as kernel arguments.
struct window_dims {
  std::int64_t grid[3], padded[3], windows[3];
  int window[3], shift[3];
  int tokens;            ///< t = window[0]*window[1]*window[2]
  std::int64_t count;    ///< windows per sample
  bool shifted;
};

window_dims to_window_dims(const window_geometry& g) {
  window_dims w{};
  for (int a = 0; a < 3; ++a) {
    w.grid[a] = g.grid[a];
    w.padded[a] = g.padded[a];
    w.windows[a] = g.windows[a];
    w.window[a] = g.window[a];
    w.shift[a] = g.shift[a];
  }
  w.tokens = g.window[0] * g.window[1] * g.window[2];
  w.count = g.windows[0] * g.windows[1] * g.windows[2];
  w.shifted = g.shifted;
  return w;
}

/// Row r = (n * windows + win) * t + i of the window-ordered token matrix: the offset of y(n, 0, src) where src is
/// ops::window_token_source(plan, shifted, win, i), or -1 for a pad token (src beyond the grid on some axis); where
/// `moments` is given, also the LayerNorm moments {mean, 1/sqrt(var + eps)} of the token's C channels.
/// Shapes: offsets (N * windows * t) int64; moments (N * windows * t, 2) float32 or null; y's strides s.
/// Geometry: 1-D grid of 256-thread blocks, one warp per row (the lanes share the moments' reduction),
/// grid-stride over rows.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    token_rows_kernel(window_dims g, const T* __restrict__ y, dims5 s, std::int64_t rows, float eps,
                      std::int64_t* __restrict__ offsets, float* __restrict__ moments) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  const std::int64_t warps_per_block = blockDim.x / ws;
  for (std::int64_t r = blockIdx.x * warps_per_block + threadIdx.x / ws; r < rows;
       r += std::int64_t{gridDim.x} * warps_per_block) {
    const std::int64_t per_sample = g.count * g.tokens;
    const std::int64_t n = r / per_sample, win = (r % per_sample) / g.tokens;
    const int i = static_cast<int>(r % g.tokens);
    const std::int64_t b[3] = {win / (g.windows[1] * g.windows[2]), (win / g.windows[2]) % g.windows[1],
                               win % g.windows[2]};
    const int tt[3] = {i / (g.window[1] * g.window[2]), (i / g.window[2]) % g.window[1], i % g.window[2]};
    std::int64_t src[3];
    bool real = true;
    for (int a = 0; a < 3; ++a) {
      const std::int64_t p = b[a] * g.window[a] + tt[a];
      src[a] = g.shifted ? (p + g.shift[a]) % g.padded[a] : p;
      real = real && src[a] < g.grid[a];
    }
    const std::int64_t offset = real ? n * s.sn + src[0] * s.sd + src[1] * s.sh + src[2] * s.sw : -1;
    float mean = 0.0f, inv = 1.0f;
    if (moments && real) row_moments(y + offset, static_cast<int>(s.c), s.sc, eps, mean, inv);  // the whole warp
    if (threadIdx.x % ws == 0) {
      offsets[r] = offset;
      if (moments) {
        moments[r * 2] = mean;
        moments[r * 2 + 1] = inv;
      }
    }
  }
}

/// A of the qkv GEMM: row m is window token m, column k channel k of y at its source position (LayerNorm-ed when
/// the op has a pre-norm); 0 for pad tokens.
template <class T>
struct gather_loader {
  using element = T;
  using row_type = norm_row;      ///< offset -1 for a pad token
  struct col_type {
    std::int64_t offset;  ///< k * channel_stride
    int k;
  };
  const T* y;
  const std::int64_t* offsets;
  std::int64_t channel_stride;
  row_layer_norm<T> norm;
  bool vector_ok;  ///< channels-last y whose strides and C are multiples of the pack width, aligned
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return norm.row(m, offsets[m]); }
  SWINFER_GPU_DEVICE col_type col(int k) const { return {k * channel_stride, k}; }
  SWINFER_GPU_DEVICE const T* find(const row_type& r, const col_type& c) const {
    return r.offset < 0 ? nullptr : y + r.offset + c.offset;
  }
  template <int V>
  SWINFER_GPU_DEVICE void normalize(const row_type& r, const col_type& c, pack<T, V>& p) const {
    norm.apply(r, c.k, p);
  }
};

/// C of the qkv GEMM: qkv[m, o] = acc + bias[o], float32 rows of 3C (q | k | v, head-major inside each).
struct qkv_epilogue {
  using row_type = std::int64_t;  ///< m * ld
  using col_type = out_col;
  float* qkv;
  const float* bias;
  int ld;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return m * ld; }
  SWINFER_GPU_DEVICE col_type col(int o) const { return {o, bias ? bias[o] : 0.0f}; }
  SWINFER_GPU_DEVICE void operator()(row_type r, const col_type& c, float v) const {
    qkv[r + c.offset] = bias ? v + c.bias : v;
  }
};

// A of the proj GEMM: the attention output, float32 rows of C, a rows_loader (gemm_core.cuh).

/// C of the proj GEMM: x(token m, channel o) += acc + bias[o] for real tokens; pad rows are dropped.
template <class T>
struct scatter_add_epilogue {
  using row_type = std::int64_t;  ///< the token's offset, -1 for a pad token
  using col_type = out_col;       ///< o * channel_stride
  T* x;
  const std::int64_t* offsets;
  std::int64_t channel_stride;
  const float* bias;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return offsets[m]; }
  SWINFER_GPU_DEVICE col_type col(int o) const { return {o * channel_stride, bias ? bias[o] : 0.0f}; }
  SWINFER_GPU_DEVICE void operator()(row_type r, const col_type& c, float v) const {
    if (r < 0) return;
    if (bias) v += c.bias;
    T& out = x[r + c.offset];
    out = gpu::from_f32<T>(gpu::to_f32(out) + v);
  }
};

}  // namespace
}  // namespace kern

int window_attention_max_head_dim() { return 128; }

std::size_t window_attention_scratch_bytes(std::int64_t batch, const window_geometry& g, int channels) {
  const auto w = kern::to_window_dims(g);
  const auto rows = static_cast<std::size_t>(batch * w.count * w.tokens);
  return kern::align_up(rows * sizeof(std::int64_t)) + kern::align_up(rows * 2 * sizeof(float)) +
         kern::align_up(rows * 3 * channels * sizeof(float)) + kern::align_up(rows * channels * sizeof(float)) +
         rows * sizeof(float);
}

void launch_window_attention(const launch_env& env, dtype type, const void* d_y, const strided5& y,
                             const window_geometry& g, const window_attention_args& a, void* d_x, const strided5& x,
                             void* d_scratch, const layer_norm_args* pre_norm) {
  const kern::dims5 ys = kern::to_dims(y), xs = kern::to_dims(x);
  const kern::window_dims w = kern::to_window_dims(g);
  const std::int64_t windows_total = ys.n * w.count, rows = windows_total * w.tokens;
  if (rows == 0) return;
  const int C = a.channels, hd = a.channels / a.heads;
  const auto urows = static_cast<std::size_t>(rows);
  auto* bytes = static_cast<unsigned char*>(d_scratch);
  auto* offsets = reinterpret_cast<std::int64_t*>(bytes);
  bytes += kern::align_up(urows * sizeof(std::int64_t));
  float* moments = pre_norm ? reinterpret_cast<float*>(bytes) : nullptr;
  bytes += kern::align_up(urows * 2 * sizeof(float));
  auto* qkv = reinterpret_cast<float*>(bytes);
  float* att = qkv + kern::align_up(urows * 3 * C * sizeof(float)) / sizeof(float);
  // Per-row int8 scales, the qkv product's and then the proj product's (stream order).
  float* row_scales = att + kern::align_up(urows * C * sizeof(float)) / sizeof(float);
  int8_product qkv_launch, proj_launch;
  const int8_product* qkv_int8 =
      kern::with_row_scales(a.qkv_int8.weight_scales ? &a.qkv_int8 : nullptr, row_scales, qkv_launch);
  const int8_product* proj_int8 =
      kern::with_row_scales(a.proj_int8.weight_scales ? &a.proj_int8 : nullptr, row_scales, proj_launch);
  const layer_norm_args norm = pre_norm ? *pre_norm : layer_norm_args{};

  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const auto yt = static_cast<const T*>(d_y);
    gpu::launch("window_attention token rows kernel launch", kern::token_rows_kernel<T>,
                kern::grid_for_warp_rows(rows, 256, env), 256, kern::stream_of(env), w, yt, ys, rows, norm.eps,
                offsets, moments);
    const kern::gather_loader<T> gather{yt, offsets, ys.sc, {moments, norm.gamma, norm.beta},
                                        ys.sc == 1 && kern::packs_fit<T>(d_y, {C, ys.sn, ys.sd, ys.sh, ys.sw})};
    kern::run_product<T>(env, gather, a.qkv_weight, qkv_int8, rows, 3 * C, C,
                         kern::qkv_epilogue{qkv, a.qkv_bias, 3 * C}, "window_attention qkv kernel launch");
  });

  const kern::core_args core{qkv, att, windows_total, a.heads, w.tokens, C, hd, a.scale, a.bias_t, a.regions, w.count};
  if (env.kernels.attention == attention_kernel_choice::mma && type != dtype::f32 && env.matrix_cores &&
      hd <= kern::attention_mma_max_head_dim) {
    kern::launch_attention_mma(env, type, core);
  } else {
    kern::launch_attention_fma(env, core);
  }
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    kern::run_product<T>(env, kern::rows_loader<float>{att, C, kern::packs_fit<float>(att, {C})}, a.proj_weight,
                         proj_int8, rows, C, C,
                         kern::scatter_add_epilogue<T>{static_cast<T*>(d_x), offsets, xs.sc, a.proj_bias},
                         "window_attention proj kernel launch");
  });
}

}  // namespace swinfer::hip
