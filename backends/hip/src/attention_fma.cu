// swinfer hip backend: the FMA kernel of window attention's step 3 (attention_core.cuh), for every model: one thread
// per query, float32 throughout, the online softmax in registers.
#include <cmath>

#include "attention_core.cuh"

namespace swinfer::hip::kern {
namespace {

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
/// Shapes: core_args (attention_core.cuh); this head's columns h*hd..h*hd+hd-1 of att are written.
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
  // The biases of a step's keys (clamped to the last key past t, where the score is -inf anyway), loaded a step
  // ahead: a bias is the only operand of a score in global memory, and read where it is used its L2 round trip
  // would stall every key.
  const auto load_biases = [&](int j, float (&b)[attn_step]) {
#pragma unroll
    for (int u = 0; u < attn_step; ++u) b[u] = bias_i[static_cast<std::int64_t>(j + u < t ? j + u : t - 1) * t];
  };
  float bias_now[attn_step], bias_next[attn_step];
  load_biases(0, bias_next);
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
#pragma unroll
      for (int u = 0; u < attn_step; ++u) bias_now[u] = bias_next[u];
      load_biases(j0 + s0 + attn_step, bias_next);
      // Every key of the step is scored without a branch (rows past t are zero in shared memory), so the compiler
      // can interleave the steps' 16 independent dot products; each sums its head dim in order, as before.
      float sc[attn_step];
      float step_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < attn_step; ++u) {
        const int jj = s0 + u;  // < key_tile: steps divide tiles
        float dot = 0.0f;
#pragma unroll
        for (int k = 0; k < HDP; ++k) dot = fmaf(q[k], ks[jj][k], dot);
        float v = dot + bias_now[u];
        if (win_regions && rs[jj] != region_i) v += -100.0f;  // ops::shift_mask_value
        sc[u] = jj < keys ? v : -INFINITY;                    // keys past t take no part (exp(-inf) = 0)
        step_max = fmaxf(step_max, sc[u]);
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
        for (int k = 0; k < HDP; ++k) o[k] = fmaf(p, vs[s0 + u][k], o[k]);
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

/// The FMA kernel for a padded head dim.
template <int HDP>
void launch_attention_fma(const launch_env& env, const core_args& c) {
  const dim3 grid(static_cast<unsigned>(c.windows_total), static_cast<unsigned>(c.heads),
                  static_cast<unsigned>((c.t + attn_queries - 1) / attn_queries));
  gpu::launch("window_attention kernel launch", window_attention_kernel<HDP>, grid, attn_queries, stream_of(env), c.qkv,
              c.att, c.t, c.C, c.hd, c.scale, c.bias_t, c.regions, c.windows_per_sample);
}

}  // namespace

void launch_attention_fma(const launch_env& env, const core_args& c) {
  if (c.hd <= 8) return launch_attention_fma<8>(env, c);
  if (c.hd <= 16) return launch_attention_fma<16>(env, c);
  if (c.hd <= 32) return launch_attention_fma<32>(env, c);
  if (c.hd <= 64) return launch_attention_fma<64>(env, c);
  launch_attention_fma<128>(env, c);
}

}  // namespace swinfer::hip::kern
