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
//                             through shared memory in key tiles, each thread keeps one query row, its output row and
//                             its running max / sum in registers (online softmax), the relative-position bias and the
//                             shift mask are added on chip. Scores never reach global memory. For fp16/bf16
//                             models on matrix cores, window_attention_mma_kernel instead: 16-query row tiles per
//                             warp, q.k^T and p.v as matrix-core products of hi/lo operand pairs.
//   4. proj GEMM              out = att Wproj^T + b, the epilogue adds each real token's row into x at its un-rolled
//                             position (pad rows are dropped); every element of x is written by exactly one thread.
//
// The quirks of ops::ref::window_attention are reproduced exactly: the plan's clamped window and shift, the dense
// bias built on the host from MONAI's truncated index (ops::dense_relative_bias), the region ids of
// ops::shift_region_ids with the -100 mask (only when shifted and the plan has a shift), pad tokens taking part in
// attention unmasked (their k and v are the qkv bias), q scaled by hd^-0.5 in float32 before q.k.
#include <cmath>

#include "gemm_core.cuh"

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

/// Queries per block of the attention kernel, one per thread (a multiple of 64: whole warps on every platform).
constexpr int attn_queries = 128;
/// Keys per online-softmax step: their scores live in registers between the max and the exp/accumulate passes.
constexpr int attn_step = 16;

/// Keys per shared-memory tile for a padded head dim: K and V tiles take 2 * keys * HDP * 4 bytes (16 KiB at
/// HDP = 32, 32 KiB at 64 and 128), inside the 48 KiB of static shared memory (NVIDIA) and 64 KiB of LDS (AMD).
template <int HDP>
inline constexpr int attn_key_tile = HDP <= 64 ? 64 : 32;

/// Window attention of one (sample x window, head) for up to attn_queries queries, scores kept on chip.
///
/// Shapes: qkv (N * windows * t, 3C) float32, row (nw * t + i), q at columns h*hd.., k at C + h*hd.., v at 2C + h*hd..;
///         att (N * windows * t, C) float32, this head's columns h*hd..h*hd+hd-1 written for every query row;
///         bias_t (heads, t, t) float32 as [h][j][i] (transposed, so consecutive query threads read consecutive
///         addresses), the dense relative bias of the clamped window; regions (windows, t) uint8 region ids of the
///         rolled grid, or null when the block is not masked.
/// Geometry: grid (N * windows, heads, ceil(t / 128)), 128 threads; thread x owns query i = blockIdx.z*128 + x
///         (threads past t only help load tiles). HDP >= hd is the head dim padded to 8/16/32/64/128: q and the
///         output accumulator are HDP registers each, zero beyond hd, so the fully unrolled loops index registers.
///         Keys advance in tiles of attn_key_tile<HDP> keys: the block stages the tile's K and V rows (HDP
///         floats each, zero padded) and region ids in shared memory; every thread then reads the same key row
///         (a broadcast, no bank conflicts) and, 16 keys at a time, computes s = q.k*scale + bias (+ -100 across
///         regions), the step's max, rescales its accumulator and sum once, and adds exp(s - max) * v. Nothing
///         depends on the warp size; no warp-level operation is used.
template <int HDP>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(attn_queries)
    window_attention_kernel(const float* __restrict__ qkv, float* __restrict__ att, int t, int C, int hd, float scale,
                            const float* __restrict__ bias_t, const std::uint8_t* __restrict__ regions,
                            std::int64_t windows_per_sample) {
  constexpr int key_tile = attn_key_tile<HDP>;
  __shared__ float ks[key_tile][HDP];
  __shared__ float vs[key_tile][HDP];
  __shared__ std::uint8_t rs[key_tile];

  const std::int64_t nw = blockIdx.x;  // n * windows + win
  const int h = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.z) * attn_queries + tid;
  const bool active = i < t;
  const int ld = 3 * C;
  const std::int64_t row0 = nw * t;
  const std::uint8_t* win_regions = regions ? regions + (nw % windows_per_sample) * t : nullptr;

  float q[HDP], o[HDP];
  {
    const float* qrow = qkv + (row0 + (active ? i : 0)) * ld + h * hd;
#pragma unroll
    for (int k = 0; k < HDP; ++k) {
      q[k] = (active && k < hd) ? qrow[k] * scale : 0.0f;  // float32 q * scale, as the reference
      o[k] = 0.0f;
    }
  }
  const std::uint8_t region_i = (win_regions && active) ? win_regions[i] : 0;
  const float* bias_i = bias_t + static_cast<std::int64_t>(h) * t * t + (active ? i : 0);  // bias(i, j) = bias_i[j*t]
  float m = -INFINITY, l = 0.0f;

  for (int j0 = 0; j0 < t; j0 += key_tile) {
    const int keys = t - j0 < key_tile ? t - j0 : key_tile;
    __syncthreads();  // the previous tile has been consumed
    for (int e = tid; e < key_tile * HDP; e += attn_queries) {
      const int jj = e / HDP, k = e % HDP;
      float kv = 0.0f, vv = 0.0f;  // zero past t and past hd
      if (jj < keys && k < hd) {
        const float* krow = qkv + (row0 + j0 + jj) * ld + C + h * hd + k;
        kv = krow[0];
        vv = krow[C];
      }
      ks[jj][k] = kv;
      vs[jj][k] = vv;
    }
    if (win_regions) {
      for (int e = tid; e < key_tile; e += attn_queries) rs[e] = e < keys ? win_regions[j0 + e] : 0;
    }
    __syncthreads();

    for (int s0 = 0; s0 < keys; s0 += attn_step) {
      float sc[attn_step];
      float step_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < attn_step; ++u) {
        const int jj = s0 + u;
        float v = -INFINITY;  // keys past t take no part (exp(-inf) = 0)
        if (jj < keys) {
          float dot = 0.0f;
#pragma unroll
          for (int k = 0; k < HDP; ++k) dot = fmaf(q[k], ks[jj][k], dot);
          v = dot + (active ? bias_i[static_cast<std::int64_t>(j0 + jj) * t] : 0.0f);
          if (win_regions && rs[jj] != region_i) v += -100.0f;  // ops::shift_mask_value
        }
        sc[u] = v;
        step_max = fmaxf(step_max, v);
      }
      // The first step of the first tile has a real key, so m_new is finite from then on.
      const float m_new = fmaxf(m, step_max);
      const float correction = expf(m - m_new);  // exp(-inf) = 0 on the first step, when o and l are still 0
      l *= correction;
#pragma unroll
      for (int k = 0; k < HDP; ++k) o[k] *= correction;
#pragma unroll
      for (int u = 0; u < attn_step; ++u) {
        const float p = expf(sc[u] - m_new);  // 0 for keys past t, whose V rows are zero too
        l += p;
#pragma unroll
        for (int k = 0; k < HDP; ++k) o[k] = fmaf(p, vs[s0 + u][k], o[k]);  // s0 + u < key_tile: steps divide tiles
      }
      m = m_new;
    }
  }

  if (active) {
    const float inv = 1.0f / l;
    float* orow = att + (row0 + i) * C + h * hd;
#pragma unroll
    for (int k = 0; k < HDP; ++k)
      if (k < hd) orow[k] = o[k] * inv;
  }
}

/// Keys per step of the matrix-core attention kernel; queries per block (a 16-row tile per warp).
constexpr int attn_mma_keys = 32;
constexpr int attn_mma_queries = 16 * mma_warps;

/// x = hi + lo in T, with lo the rounding error of hi: products of such pairs on the matrix cores, keeping all but
/// lo * lo, come within about 2^-22 (fp16) or 2^-16 (bf16) of the float32 product.
template <class T>
SWINFER_GPU_DEVICE inline void split_operand(float x, T& hi, T& lo) {
  hi = gpu::from_f32<T>(x);
  lo = gpu::from_f32<T>(x - gpu::to_f32(hi));
}

/// d += a b for split operands: hi.hi + hi.lo + lo.hi.
template <class T>
SWINFER_GPU_DEVICE inline void mma_split(const T (&a)[2][gpu::mma_max_elems], const T (&b)[2][gpu::mma_max_elems],
                                         float (&d)[gpu::mma_max_elems]) {
  gpu::mma_16x16x16(a[0], b[0], d);
  gpu::mma_16x16x16(a[0], b[1], d);
  gpu::mma_16x16x16(a[1], b[0], d);
}

/// Window attention on the matrix cores, for fp16/bf16 models: the same inputs, outputs and quirks as
/// window_attention_kernel, with q.k^T and p.v as 16 x 16 x 16 matrix-core products. Every operand goes in as a
/// hi/lo pair of T (split_operand: three products per tile), so the float32 scores and output the FMA kernel
/// computes are kept to about float32 accuracy, not rounded to T.
///
/// Shapes: as window_attention_kernel (qkv and att float32 token rows, bias_t (heads, t, t) as [h][j][i], regions).
/// Geometry: grid (N * windows, heads, ceil(t / 64)), 4 warps (128 threads on NVIDIA, 256 on CDNA); warp w owns
///         the 16 queries blockIdx.z * 64 + 16w .. +15 as one matrix-core row tile, its q fragments (HDP / 16 of
///         them, hi and lo) in registers and its output as HDP / 16 accumulator tiles. Keys advance 32 at a time:
///         the block stages their K rows (key-major) and V rows (transposed: head dim-major) as hi/lo pairs in
///         shared memory, zero past t and hd; each warp computes its 16 x 32 scores (+ bias, + -100 across regions,
///         -inf past t) into its shared score tile; then ws / 16 lanes per query row take the row's max and sum
///         with butterflies inside their group (online softmax: m and l live in those lanes), write p = exp(s - m)
///         as hi/lo for the p.v product and the row's rescale factor, which the lanes holding the output tile
///         apply before adding p.v. Shared memory (T 2 bytes): 2*32*(HDP+8) + 2*HDP*40 + 2*4*16*40 elements of T
///         plus 4*16*36 + 64 floats: 25 KiB at HDP = 16, 39 KiB at 64. HDP is 16, 32 or 64.
template <class T, int HDP>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    window_attention_mma_kernel(const float* __restrict__ qkv, float* __restrict__ att, int t, int C, int hd,
                                float scale, const float* __restrict__ bias_t, const std::uint8_t* __restrict__ regions,
                                std::int64_t windows_per_sample) {
  static_assert(HDP % 16 == 0 && HDP <= 64);
  constexpr int KT = attn_mma_keys, D = HDP / 16, ldk = HDP + 8, ldv = KT + 8, lds = KT + 4;
  struct alignas(16) tiles {
    T k[2][KT][ldk];               ///< hi, lo: K rows, B of q.k^T stored column (key) by column
    T v[2][HDP][ldv];              ///< hi, lo: V transposed, B of p.v stored column (head dim) by column
    T p[2][mma_warps][16][ldv];    ///< hi, lo: each warp's probabilities, A of p.v (row-major)
    float s[mma_warps][16][lds];   ///< each warp's scores
    float rescale[mma_warps][16];  ///< per row: the online softmax's correction, at the end 1 / sum
    std::uint8_t key_regions[KT];
    std::uint8_t query_regions[attn_mma_queries];
  };
  __shared__ tiles sm;

  const std::int64_t nw = blockIdx.x;  // n * windows + win
  const int h = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const int ws = SWINFER_GPU_WARP_SIZE, lane = tid % ws, warp = tid / ws;
  const int row_lanes = ws / 16, my_row = lane / row_lanes, row_part = lane % row_lanes;
  const int block_q0 = static_cast<int>(blockIdx.z) * attn_mma_queries, q0 = block_q0 + 16 * warp;
  const int ld = 3 * C, elems = gpu::mma_elems();
  const std::int64_t row0 = nw * t;
  const std::uint8_t* win_regions = regions ? regions + (nw % windows_per_sample) * t : nullptr;
  if (win_regions) {
    for (int e = tid; e < attn_mma_queries; e += threads) {
      sm.query_regions[e] = block_q0 + e < t ? win_regions[block_q0 + e] : 0;
    }
  }

  // This warp's q tile (16 x HDP, scaled in float32 as the reference, zero past t and hd) as A fragments.
  T q[D][2][gpu::mma_max_elems];
#pragma unroll
  for (int kt = 0; kt < D; ++kt)
#pragma unroll
    for (int e = 0; e < gpu::mma_max_elems; ++e) {
      int r = 0, k = 0;
      gpu::mma_a_coord(lane, e, r, k);
      k += 16 * kt;
      const float v = (e < elems && q0 + r < t && k < hd) ? qkv[(row0 + q0 + r) * ld + h * hd + k] * scale : 0.0f;
      split_operand(v, q[kt][0][e], q[kt][1][e]);
    }
  float o[D][gpu::mma_max_elems] = {};
  float m = -INFINITY, l = 0.0f;  // of row my_row, the same in each of its row_lanes lanes

  for (int j0 = 0; j0 < t; j0 += KT) {
    __syncthreads();  // the previous keys' tiles have been consumed
    for (int e = tid; e < KT * HDP; e += threads) {
      const int jj = e / HDP, d = e % HDP;
      float kv = 0.0f, vv = 0.0f;  // zero past t and past hd
      if (j0 + jj < t && d < hd) {
        const float* krow = qkv + (row0 + j0 + jj) * ld + C + h * hd + d;
        kv = krow[0];
        vv = krow[C];
      }
      split_operand(kv, sm.k[0][jj][d], sm.k[1][jj][d]);
      split_operand(vv, sm.v[0][d][jj], sm.v[1][d][jj]);
    }
    if (win_regions) {
      for (int e = tid; e < KT; e += threads) sm.key_regions[e] = j0 + e < t ? win_regions[j0 + e] : 0;
    }
    __syncthreads();

    // Scores of this warp's 16 queries against the 32 keys.
#pragma unroll
    for (int nt = 0; nt < KT / 16; ++nt) {
      float acc[gpu::mma_max_elems] = {};
#pragma unroll
      for (int kt = 0; kt < D; ++kt) {
        T kf[2][gpu::mma_max_elems];
        gpu::mma_load_b(&sm.k[0][16 * nt][16 * kt], ldk, kf[0]);
        gpu::mma_load_b(&sm.k[1][16 * nt][16 * kt], ldk, kf[1]);
        mma_split(q[kt], kf, acc);
      }
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        if (e >= elems) continue;
        int r = 0, c = 0;
        gpu::mma_c_coord(lane, e, r, c);
        const int i = q0 + r, jj = 16 * nt + c, j = j0 + jj;
        float v = -INFINITY;  // keys past t take no part (exp(-inf) = 0)
        if (j < t) {
          v = acc[e] + (i < t ? bias_t[(static_cast<std::int64_t>(h) * t + j) * t + i] : 0.0f);
          if (win_regions && sm.key_regions[jj] != sm.query_regions[i - block_q0]) v += -100.0f;
        }
        sm.s[warp][r][jj] = v;
      }
    }
    __syncthreads();

    // Online softmax of row my_row over these keys; p as hi/lo for p.v.
    {
      const float* srow = sm.s[warp][my_row];
      float step_max = -INFINITY;
      for (int c = row_part; c < KT; c += row_lanes) step_max = fmaxf(step_max, srow[c]);
      // The first step has a real key, so m_new is finite from then on.
      const float m_new = fmaxf(m, gpu::warp_max(step_max, row_lanes));
      const float correction = expf(m - m_new);  // exp(-inf) = 0 on the first step, when o and l are still 0
      float sum = 0.0f;
      for (int c = row_part; c < KT; c += row_lanes) {
        const float p = expf(srow[c] - m_new);
        sum += p;
        split_operand(p, sm.p[0][warp][my_row][c], sm.p[1][warp][my_row][c]);
      }
      l = l * correction + gpu::warp_sum(sum, row_lanes);
      m = m_new;
      if (row_part == 0) sm.rescale[warp][my_row] = correction;
    }
    __syncthreads();

#pragma unroll
    for (int dt = 0; dt < D; ++dt)
#pragma unroll
      for (int e = 0; e < gpu::mma_max_elems; ++e) {
        int r = 0, c = 0;
        gpu::mma_c_coord(lane, e, r, c);
        if (e < elems) o[dt][e] *= sm.rescale[warp][r];
      }
#pragma unroll
    for (int kt = 0; kt < KT / 16; ++kt) {
      T pf[2][gpu::mma_max_elems];
      gpu::mma_load_a(&sm.p[0][warp][0][16 * kt], ldv, pf[0]);
      gpu::mma_load_a(&sm.p[1][warp][0][16 * kt], ldv, pf[1]);
#pragma unroll
      for (int dt = 0; dt < D; ++dt) {
        T vf[2][gpu::mma_max_elems];
        gpu::mma_load_b(&sm.v[0][16 * dt][16 * kt], ldv, vf[0]);
        gpu::mma_load_b(&sm.v[1][16 * dt][16 * kt], ldv, vf[1]);
        mma_split(pf, vf, o[dt]);
      }
    }
  }

  __syncthreads();  // every warp has read its last rescale factors
  if (row_part == 0) sm.rescale[warp][my_row] = 1.0f / l;
  __syncthreads();
#pragma unroll
  for (int dt = 0; dt < D; ++dt)
#pragma unroll
    for (int e = 0; e < gpu::mma_max_elems; ++e) {
      if (e >= elems) continue;
      int r = 0, c = 0;
      gpu::mma_c_coord(lane, e, r, c);
      const int i = q0 + r, d = 16 * dt + c;
      if (i < t && d < hd) att[(row0 + i) * C + h * hd + d] = o[dt][e] * sm.rescale[warp][r];
    }
}

/// What the attention kernels need besides the padded head dim and the operand type.
struct core_args {
  const float* qkv;
  float* att;
  std::int64_t windows_total;  ///< N * windows per sample
  int heads, t, C, hd;
  float scale;
  const float* bias_t;
  const std::uint8_t* regions;
  std::int64_t windows_per_sample;
};

/// The FMA kernel for a padded head dim.
template <int HDP>
void launch_attention_core(const launch_env& env, const core_args& c) {
  const dim3 grid(static_cast<unsigned>(c.windows_total), static_cast<unsigned>(c.heads),
                  static_cast<unsigned>((c.t + attn_queries - 1) / attn_queries));
  gpu::launch("window_attention kernel launch", window_attention_kernel<HDP>, grid, attn_queries, stream_of(env), c.qkv,
              c.att, c.t, c.C, c.hd, c.scale, c.bias_t, c.regions, c.windows_per_sample);
}

/// The matrix-core kernel for operand type T and a padded head dim.
template <class T, int HDP>
void launch_attention_core_mma(const launch_env& env, const core_args& c) {
  const dim3 grid(static_cast<unsigned>(c.windows_total), static_cast<unsigned>(c.heads),
                  static_cast<unsigned>((c.t + attn_mma_queries - 1) / attn_mma_queries));
  gpu::launch("window_attention matrix-core kernel launch", window_attention_mma_kernel<T, HDP>, grid,
              static_cast<unsigned>(mma_warps * env.warp_size), stream_of(env), c.qkv, c.att, c.t, c.C, c.hd, c.scale,
              c.bias_t, c.regions, c.windows_per_sample);
}

/// The attention of a model stored in T: on the matrix cores for 16-bit models with matrix cores enabled and head
/// dims up to 64 (padded to 16, 32 or 64), else the FMA kernel with the smallest padded head dim (8, 16, 32, 64,
/// 128) that holds hd.
template <class T>
void launch_attention_core(const launch_env& env, const core_args& c) {
  if constexpr (!std::is_same_v<T, float>) {
    if (env.matrix_cores && c.hd <= 64) {
      if (c.hd <= 16) return launch_attention_core_mma<T, 16>(env, c);
      if (c.hd <= 32) return launch_attention_core_mma<T, 32>(env, c);
      return launch_attention_core_mma<T, 64>(env, c);
    }
  }
  if (c.hd <= 8) return launch_attention_core<8>(env, c);
  if (c.hd <= 16) return launch_attention_core<16>(env, c);
  if (c.hd <= 32) return launch_attention_core<32>(env, c);
  if (c.hd <= 64) return launch_attention_core<64>(env, c);
  launch_attention_core<128>(env, c);
}

constexpr std::size_t scratch_align = 256;
std::size_t align_up(std::size_t v) { return (v + scratch_align - 1) / scratch_align * scratch_align; }

}  // namespace
}  // namespace kern

int window_attention_max_head_dim() { return 128; }

std::size_t window_attention_scratch_bytes(std::int64_t batch, const window_geometry& g, int channels) {
  const auto w = kern::to_window_dims(g);
  const auto rows = static_cast<std::size_t>(batch * w.count * w.tokens);
  return kern::align_up(rows * sizeof(std::int64_t)) + kern::align_up(rows * 2 * sizeof(float)) +
         kern::align_up(rows * 3 * channels * sizeof(float)) + rows * channels * sizeof(float);
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
  const layer_norm_args norm = pre_norm ? *pre_norm : layer_norm_args{};

  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const auto yt = static_cast<const T*>(d_y);
    gpu::launch("window_attention token rows kernel launch", kern::token_rows_kernel<T>,
                kern::grid_for_warp_rows(rows, 256, env), 256, kern::stream_of(env), w, yt, ys, rows, norm.eps,
                offsets, moments);
    const kern::gather_loader<T> gather{yt, offsets, ys.sc, {moments, norm.gamma, norm.beta},
                                        ys.sc == 1 && kern::packs_fit<T>(d_y, {C, ys.sn, ys.sd, ys.sh, ys.sw})};
    kern::run_gemm(env, gather, static_cast<const T*>(a.qkv_weight), rows, 3 * C, C,
                   kern::qkv_epilogue{qkv, a.qkv_bias, 3 * C}, "window_attention qkv kernel launch");
  });

  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    kern::launch_attention_core<T>(env, {qkv, att, windows_total, a.heads, w.tokens, C, hd, a.scale, a.bias_t,
                                         a.regions, w.count});
    kern::run_gemm(env, kern::rows_loader<float>{att, C, kern::packs_fit<float>(att, {C})},
                   static_cast<const T*>(a.proj_weight), rows, C, C,
                   kern::scatter_add_epilogue<T>{static_cast<T*>(d_x), offsets, xs.sc, a.proj_bias},
                   "window_attention proj kernel launch");
  });
}

}  // namespace swinfer::hip
