// swinfer hip backend: the matrix-core kernel of window attention's step 3 (attention_core.cuh), for fp16/bf16
// models on devices with matrix cores: q.k^T and p.v as 16 x 16 x 16 products of hi/lo operand pairs, so the result
// keeps the FMA kernel's (attention_fma.cu) float32 accuracy.
#include <cmath>

#include "attention_core.cuh"
#include "gemm_core.cuh"

namespace swinfer::hip::kern {
namespace {

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
/// Shapes: core_args (attention_core.cuh).
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

    for_each_mma_element(o, 0, 0, [&](int r, int, float& v) { v *= sm.rescale[warp][r]; });
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
  for_each_mma_element(o, 0, 0, [&](int r, int d, float v) {
    const int i = q0 + r;
    if (i < t && d < hd) att[(row0 + i) * C + h * hd + d] = v * sm.rescale[warp][r];
  });
}

/// The matrix-core kernel for operand type T and a padded head dim.
template <class T, int HDP>
void launch_attention_mma(const launch_env& env, const core_args& c) {
  const dim3 grid(static_cast<unsigned>(c.windows_total), static_cast<unsigned>(c.heads),
                  static_cast<unsigned>((c.t + attn_mma_queries - 1) / attn_mma_queries));
  gpu::launch("window_attention matrix-core kernel launch", window_attention_mma_kernel<T, HDP>, grid,
              static_cast<unsigned>(mma_warps * env.warp_size), stream_of(env), c.qkv, c.att, c.t, c.C, c.hd, c.scale,
              c.bias_t, c.regions, c.windows_per_sample);
}

template <class T>
void launch_attention_mma(const launch_env& env, const core_args& c) {
  if (c.hd <= 16) return launch_attention_mma<T, 16>(env, c);
  if (c.hd <= 32) return launch_attention_mma<T, 32>(env, c);
  launch_attention_mma<T, 64>(env, c);
}

}  // namespace

void launch_attention_mma(const launch_env& env, dtype type, const core_args& c) {
  static_assert(attention_mma_max_head_dim == 64);
  if (type == dtype::f16) return launch_attention_mma<half_t>(env, c);
  launch_attention_mma<bf16_t>(env, c);
}

}  // namespace swinfer::hip::kern
