// swinfer hip backend: the FMA kernel of window attention's step 3 (attention_core.cuh), for every model: one or two
// queries per thread, float32 throughout, the online softmax in registers.
#include <cmath>

#include "attention_core.cuh"

namespace swinfer::hip::kern {
namespace {

/// Queries per block of the attention kernel (a multiple of 128: whole warps on every platform at two per thread).
constexpr int attn_queries = 128;
/// Keys per online-softmax step at one query per thread: their scores live in registers between the max and the
/// exp/accumulate passes.
constexpr int attn_step = 16;

/// Queries per thread for a padded head dim: two up to 16 (every SwinUNETR and Swin Fusion feature size's heads),
/// so each key row read from shared memory, each region id and the loop's bookkeeping serve two queries; one
/// above, where two queries' registers (q, output, scores, biases) would spill.
template <int HDP>
inline constexpr int attn_queries_per_thread = HDP <= 16 ? 2 : 1;

/// Keys per shared-memory tile for a padded head dim: K and V tiles take 2 * keys * HDP * 4 bytes (16 KiB at
/// HDP = 32, 32 KiB at 64 and 128), inside the 48 KiB of static shared memory (NVIDIA) and 64 KiB of LDS (AMD).
template <int HDP>
inline constexpr int attn_key_tile = HDP <= 64 ? 64 : 32;

/// Window attention of one (sample x window, head) for up to attn_queries queries, scores kept on chip.
///
/// Shapes: core_args (attention_core.cuh); this head's columns h*hd..h*hd+hd-1 of att are written.
/// Geometry: grid (N * windows, heads, ceil(t / 128)), 128 / QPT threads; thread x owns the QPT queries
///         i_a = blockIdx.z*128 + x + a*(128 / QPT) (threads' queries past t only help load tiles). HDP >= hd is
///         the head dim padded to 8/16/32/64/128: each query and its output accumulator are HDP registers, zero
///         beyond hd, so the fully unrolled loops index registers. Keys advance in tiles of attn_key_tile<HDP>
///         keys: the block stages the tile's K and V rows (HDP floats each, zero padded) and region ids in shared
///         memory; every thread then reads the same key row (a broadcast, no bank conflicts) and, 16 / QPT keys
///         at a time, computes each query's s = q.k*scale + bias (+ -100 across regions), the step's max, rescales
///         that query's accumulator and sum once, and adds exp(s - max) * v. Each query's arithmetic is the same
///         sequence at any QPT. Nothing depends on the warp size; no warp-level operation is used.
template <int HDP>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(attn_queries / attn_queries_per_thread<HDP>)
    window_attention_kernel(const float* __restrict__ qkv, float* __restrict__ att, int t, int C, int hd, float scale,
                            const float* __restrict__ bias_t, const std::uint8_t* __restrict__ regions,
                            std::int64_t windows_per_sample) {
  constexpr int qpt = attn_queries_per_thread<HDP>;
  constexpr int threads = attn_queries / qpt;
  constexpr int step = attn_step / qpt;
  constexpr int key_tile = attn_key_tile<HDP>;
  __shared__ float ks[key_tile][HDP];
  __shared__ float vs[key_tile][HDP];
  __shared__ std::uint8_t rs[key_tile];

  const std::int64_t nw = blockIdx.x;  // n * windows + win
  const int h = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x);
  const int ld = 3 * C;
  const std::int64_t row0 = nw * t;
  const std::uint8_t* win_regions = regions ? regions + (nw % windows_per_sample) * t : nullptr;

  int query[qpt];
  bool active[qpt];
  float q[qpt][HDP], o[qpt][HDP];
  std::uint8_t region[qpt];
  const float* bias_row[qpt];  // bias(i, j) = bias_row[j*t]
#pragma unroll
  for (int a = 0; a < qpt; ++a) {
    query[a] = static_cast<int>(blockIdx.z) * attn_queries + tid + a * threads;
    active[a] = query[a] < t;
    const int i = active[a] ? query[a] : 0;
    const float* qrow = qkv + (row0 + i) * ld + h * hd;
#pragma unroll
    for (int k = 0; k < HDP; ++k) {
      q[a][k] = (active[a] && k < hd) ? qrow[k] * scale : 0.0f;  // float32 q * scale, as the reference
      o[a][k] = 0.0f;
    }
    region[a] = (win_regions && active[a]) ? win_regions[i] : 0;
    bias_row[a] = bias_t + static_cast<std::int64_t>(h) * t * t + i;
  }
  // The biases of a step's keys (clamped to the last key past t, where the score is -inf anyway), loaded a step
  // ahead: a bias is the only operand of a score in global memory, and read where it is used its L2 round trip
  // would stall every key.
  const auto load_biases = [&](int j, float (&b)[qpt][step]) {
#pragma unroll
    for (int u = 0; u < step; ++u) {
      const std::int64_t offset = static_cast<std::int64_t>(j + u < t ? j + u : t - 1) * t;
#pragma unroll
      for (int a = 0; a < qpt; ++a) b[a][u] = bias_row[a][offset];
    }
  };
  float bias_now[qpt][step], bias_next[qpt][step];
  load_biases(0, bias_next);
  float m[qpt], l[qpt];
#pragma unroll
  for (int a = 0; a < qpt; ++a) m[a] = -INFINITY, l[a] = 0.0f;

  for (int j0 = 0; j0 < t; j0 += key_tile) {
    const int keys = t - j0 < key_tile ? t - j0 : key_tile;
    __syncthreads();  // the previous tile has been consumed
    for (int e = tid; e < key_tile * HDP; e += threads) {
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
      for (int e = tid; e < key_tile; e += threads) rs[e] = e < keys ? win_regions[j0 + e] : 0;
    }
    __syncthreads();

    for (int s0 = 0; s0 < keys; s0 += step) {
#pragma unroll
      for (int a = 0; a < qpt; ++a)
#pragma unroll
        for (int u = 0; u < step; ++u) bias_now[a][u] = bias_next[a][u];
      load_biases(j0 + s0 + step, bias_next);
      // Every key of the step is scored without a branch (rows past t are zero in shared memory), so the compiler
      // can interleave the step's independent dot products; each sums its head dim in order, as before.
      float sc[qpt][step];
      float step_max[qpt];
#pragma unroll
      for (int a = 0; a < qpt; ++a) step_max[a] = -INFINITY;
#pragma unroll
      for (int u = 0; u < step; ++u) {
        const int jj = s0 + u;  // < key_tile: steps divide tiles
        const std::uint8_t key_region = win_regions ? rs[jj] : 0;
#pragma unroll
        for (int a = 0; a < qpt; ++a) {
          float dot = 0.0f;
#pragma unroll
          for (int k = 0; k < HDP; ++k) dot = fmaf(q[a][k], ks[jj][k], dot);
          float v = dot + bias_now[a][u];
          if (key_region != region[a]) v += -100.0f;  // ops::shift_mask_value (regions all 0 when unmasked)
          sc[a][u] = jj < keys ? v : -INFINITY;       // keys past t take no part (exp(-inf) = 0)
          step_max[a] = fmaxf(step_max[a], sc[a][u]);
        }
      }
#pragma unroll
      for (int a = 0; a < qpt; ++a) {
        // The first step of the first tile has a real key, so m_new is finite from then on.
        const float m_new = fmaxf(m[a], step_max[a]);
        const float correction = expf(m[a] - m_new);  // exp(-inf) = 0 on the first step, when o and l are still 0
        l[a] *= correction;
#pragma unroll
        for (int k = 0; k < HDP; ++k) o[a][k] *= correction;
        m[a] = m_new;
      }
#pragma unroll
      for (int u = 0; u < step; ++u) {
#pragma unroll
        for (int a = 0; a < qpt; ++a) {
          const float p = expf(sc[a][u] - m[a]);  // 0 for keys past t, whose V rows are zero too
          l[a] += p;
#pragma unroll
          for (int k = 0; k < HDP; ++k) o[a][k] = fmaf(p, vs[s0 + u][k], o[a][k]);
        }
      }
    }
  }

#pragma unroll
  for (int a = 0; a < qpt; ++a) {
    if (!active[a]) continue;
    const float inv = 1.0f / l[a];
    float* orow = att + (row0 + query[a]) * C + h * hd;
#pragma unroll
    for (int k = 0; k < HDP; ++k)
      if (k < hd) orow[k] = o[a][k] * inv;
  }
}

/// The FMA kernel for a padded head dim.
template <int HDP>
void launch_attention_fma(const launch_env& env, const core_args& c) {
  const dim3 grid(static_cast<unsigned>(c.windows_total), static_cast<unsigned>(c.heads),
                  static_cast<unsigned>((c.t + attn_queries - 1) / attn_queries));
  gpu::launch("window_attention kernel launch", window_attention_kernel<HDP>, grid,
              attn_queries / attn_queries_per_thread<HDP>, stream_of(env), c.qkv, c.att, c.t, c.C, c.hd, c.scale,
              c.bias_t, c.regions, c.windows_per_sample);
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
