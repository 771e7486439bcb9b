// swinfer hip backend: InstanceNorm (with its residual and LeakyReLU epilogue) and LayerNorm over token rows.
// InstanceNorm's moments are taken in float32 over small pieces (records {count, mean, M2}: here by a pass over the
// tensor, or by the box convolutions as they store it) and merged in float64, so 96^3 volumes keep the reference's
// accuracy; outputs are rounded once to the storage type. The statistics are also what the GEMMs take when they
// apply a norm to their input on load (api.hpp: instance_norm_args, layer_norm_args).
#include "norm_core.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

constexpr int norm_threads = 256;

/// Whether the statistics pass reads a packed channels-last tensor position by position (all channels of a chunk
/// in one block, in memory order) rather than channel by channel.
bool statistics_by_position(const dims5& s) { return packed(s) && channels_last(s) && s.c <= norm_threads; }
/// Spatial positions one block of the statistics pass covers. Channel by channel 4096; position by position (a
/// block covers every channel) 512, halved down to 32 while the tensor would give fewer than ~1024 blocks, so the
/// small volumes at the bottom of the U (12^3 x 192 is 4 blocks of 512) still spread over the device.
std::int64_t in_chunk(const dims5& s) {
  if (!statistics_by_position(s)) return 4096;
  const std::int64_t positions_per_block = s.n * s.spatial() / 1024;
  std::int64_t chunk = 32;
  while (chunk < 512 && chunk < positions_per_block) chunk *= 2;
  return chunk;
}
std::int64_t in_chunks(const dims5& s) { return (s.spatial() + in_chunk(s) - 1) / in_chunk(s); }
/// Records per (sample, channel) that room is made for: the pass's chunks or a box convolution's cells.
std::int64_t in_record_capacity(const dims5& s) {
  const std::int64_t chunks = in_chunks(s), cells = moment_cell_count(s.d, s.h, s.w);
  return chunks > cells ? chunks : cells;
}
/// Floats of the records of nc channels, rounded up to 16 bytes: where statistics after them start.
std::int64_t in_statistics_offset(std::int64_t nc, std::int64_t chunks) { return (nc * chunks * 3 + 3) / 4 * 4; }

/// InstanceNorm pass 1: per (n, c, chunk) the chunk's moment record (two passes over the chunk, which stays in
/// cache), in float32.
/// Shapes: x (N, C, D, H, W) any strides; records as api.hpp's, chunk k the positions [k, k + 1) x chunk_positions.
/// Geometry: grid (C, chunks, N), norm_threads threads; channel is the fastest grid axis so the blocks that run
/// together read the same cache lines of a channels-last tensor.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(norm_threads)
    in_partial_kernel(const T* __restrict__ x, dims5 s, std::int64_t chunk_positions, float* __restrict__ partial) {
  __shared__ float red[SWINFER_GPU_MAX_WARPS_PER_BLOCK];
  const std::int64_t c = blockIdx.x, chunk = blockIdx.y, n = blockIdx.z;
  const std::int64_t S = s.spatial();
  const std::int64_t begin = chunk * chunk_positions, end = begin + chunk_positions < S ? begin + chunk_positions : S;
  const T* base = x + n * s.sn + c * s.sc;
  auto at = [&](std::int64_t p) {
    std::int64_t q, z, y, w;
    split_position(p, s.d, s.h, s.w, q, z, y, w);
    return gpu::to_f32(base[z * s.sd + y * s.sh + w * s.sw]);
  };
  float sum = 0.0f;
  for (std::int64_t p = begin + threadIdx.x; p < end; p += blockDim.x) sum += at(p);
  const float count = static_cast<float>(end - begin);
  const float mean = gpu::block_sum(sum, red) / count;
  float sq = 0.0f;
  for (std::int64_t p = begin + threadIdx.x; p < end; p += blockDim.x) {
    const float dv = at(p) - mean;
    sq += dv * dv;
  }
  const float m2 = gpu::block_sum(sq, red);
  if (threadIdx.x == 0) store_moment_record(partial + ((n * s.c + c) * gridDim.y + chunk) * 3, count, mean, m2);
}

/// InstanceNorm pass 1 for packed channels-last tensors with C <= norm_threads: per (n, chunk) the mean and sum of
/// squared deviations of every channel over the chunk (two passes over the chunk, which stays in cache), in
/// float32, the chunk read in memory order, V channels at a time (1, or a 16-byte pack where C is a multiple of it).
/// Shapes: x (N, C, D, H, W) packed channels-last (position p of sample n at n*sn + p*C); partial as above.
/// Geometry: grid (chunks, N), norm_threads threads; with G = C / V packs per position and rows = norm_threads / G,
/// thread t < rows*G owns channels (t % G)*V .. +V-1 at positions t / G + j * rows of the chunk, so consecutive
/// threads read consecutive addresses. The rows of a channel are combined through shared memory in a fixed order.
template <class T, int V>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(norm_threads)
    in_partial_by_position_kernel(const T* __restrict__ x, dims5 s, std::int64_t chunk_positions,
                                  float* __restrict__ partial) {
  __shared__ float red[norm_threads * V];
  __shared__ float channel_mean[norm_threads];
  const int C = static_cast<int>(s.c), G = C / V, t = static_cast<int>(threadIdx.x), rows = norm_threads / G;
  const int g = t % G, row = t / G;
  const bool active = row < rows;
  const std::int64_t chunk = blockIdx.x, n = blockIdx.y, S = s.spatial();
  const std::int64_t begin = chunk * chunk_positions, end = begin + chunk_positions < S ? begin + chunk_positions : S;
  const T* base = x + n * s.sn + g * V;
  // The per-channel totals of the rows' values in red, in row order.
  const auto combine = [&](const float (&value)[V], float* total) {
#pragma unroll
    for (int e = 0; e < V; ++e) red[t * V + e] = value[e];
    __syncthreads();
    if (t < C) {
      float sum = 0.0f;
      for (int q = 0; q < rows; ++q) sum += red[(q * G + t / V) * V + t % V];
      total[t] = sum;
    }
    __syncthreads();
  };
  float sum[V] = {};
  if (active) {
    for (std::int64_t p = begin + row; p < end; p += rows) {
      const pack<T, V> v = load_pack<T, V>(base + p * C);
#pragma unroll
      for (int e = 0; e < V; ++e) sum[e] += gpu::to_f32(v.e[e]);
    }
  }
  combine(sum, channel_mean);
  if (t < C) channel_mean[t] /= static_cast<float>(end - begin);
  __syncthreads();
  float mean[V], sq[V] = {};
#pragma unroll
  for (int e = 0; e < V; ++e) mean[e] = channel_mean[g * V + e];
  if (active) {
    for (std::int64_t p = begin + row; p < end; p += rows) {
      const pack<T, V> v = load_pack<T, V>(base + p * C);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const float dv = gpu::to_f32(v.e[e]) - mean[e];
        sq[e] += dv * dv;
      }
    }
  }
  __shared__ float channel_m2[norm_threads];
  combine(sq, channel_m2);
  if (t < C) {
    store_moment_record(partial + ((n * C + t) * gridDim.x + chunk) * 3, static_cast<float>(end - begin),
                        channel_mean[t], channel_m2[t]);
  }
}

/// Threads per (n, c) of the InstanceNorm finalize kernel.
constexpr int in_finalize_threads = 128;

/// The sum of every thread's v over the finalize kernel's block, in a fixed tree (the same on every run); every
/// thread gets it.
SWINFER_GPU_DEVICE inline double finalize_block_sum(double v, double* red) {
  const int t = static_cast<int>(threadIdx.x);
  red[t] = v;
  __syncthreads();
  for (int half = in_finalize_threads / 2; half > 0; half /= 2) {
    if (t < half) red[t] += red[t + half];
    __syncthreads();
  }
  const double total = red[0];
  __syncthreads();
  return total;
}

/// InstanceNorm pass 2: the records of each (n, c) merged into {mean, 1/sqrt(var + eps)}, in float64 and without a
/// division per record: the mean from the sums of count and count * mean, then M2 as the sum of M2_k + count_k
/// (mean_k - mean)^2 (non-negative terms: no cancellation). Thread j takes records j, j + 128, ... in order, then a
/// fixed tree over the threads.
/// Shapes: records (nc, chunks, 3) as api.hpp's; stats[(n*C + c)*2 + {0, 1}].
/// Geometry: grid (nc), in_finalize_threads threads.
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(in_finalize_threads)
    in_finalize_kernel(const float* __restrict__ records, std::int64_t chunks, float eps, float* __restrict__ stats) {
  __shared__ double red[in_finalize_threads];
  const int t = static_cast<int>(threadIdx.x);
  const float* r = records + static_cast<std::int64_t>(blockIdx.x) * chunks * 3;
  double count = 0, sum = 0;
  for (std::int64_t k = t; k < chunks; k += in_finalize_threads) {
    count += r[k * 3];
    sum += static_cast<double>(r[k * 3]) * r[k * 3 + 1];
  }
  count = finalize_block_sum(count, red);
  const double mean = finalize_block_sum(sum, red) / count;
  double m2 = 0;
  for (std::int64_t k = t; k < chunks; k += in_finalize_threads) {
    const double d = r[k * 3 + 1] - mean;
    m2 += r[k * 3 + 2] + r[k * 3] * d * d;
  }
  m2 = finalize_block_sum(m2, red);
  if (t == 0) {
    stats[blockIdx.x * 2] = static_cast<float>(mean);
    stats[blockIdx.x * 2 + 1] = static_cast<float>(1.0 / sqrt(m2 / count + eps));
  }
}

/// The residual as added: r, or r normalised by its own statistics (rstats: a projected residual).
SWINFER_GPU_DEVICE inline float residual_value(float r, const float* rstats, std::int64_t nc) {
  return rstats ? instance_norm_value(r, rstats + nc * 2) : r;
}

/// InstanceNorm pass 3: x = act((x - mean) * inv + residual), in place, for any strides.
/// Shapes: x and residual (N, C, D, H, W), each with its own strides; stats (and rstats, the residual's, or null)
/// as above.
/// Geometry: 1-D grid of 256-thread blocks, grid-stride loop over elements in x's memory order.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    in_apply_kernel(T* __restrict__ x, dims5 s, const T* __restrict__ res, dims5 rs, const float* __restrict__ stats,
                    const float* __restrict__ rstats, bool has_slope, float slope, bool c_fastest) {
  const std::int64_t total = s.numel();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, w;
    unravel(s, c_fastest, i, n, c, z, y, w);
    T& xv = x[s.offset(n, c, z, y, w)];
    float v = instance_norm_value(gpu::to_f32(xv), stats + (n * s.c + c) * 2);
    if (res) v += residual_value(gpu::to_f32(res[rs.offset(n, c, z, y, w)]), rstats, n * s.c + c);
    xv = gpu::from_f32<T>(leaky(v, has_slope, slope));
  }
}

/// InstanceNorm pass 3 for a packed x (and a residual in x's strides), V elements at a time: element i is at
/// offset i in both, and the V elements of a step share their sample and either their channel (channels-first,
/// S a multiple of V) or are V consecutive channels (channels-last, C a multiple of V), so (n, c) is derived once
/// per step. V is 1, or pack_width<T> (one 16-byte load and store; x and residual 16-byte aligned).
/// Shapes: x, residual packed (N, C, D, H, W) in one layout; stats, rstats as above.
/// Geometry: 1-D grid of 256-thread blocks, grid-stride loop over the numel / V steps in memory order.
template <class T, int V>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    in_apply_dense_kernel(T* __restrict__ x, const T* __restrict__ res, std::int64_t C, std::int64_t S,
                          std::int64_t steps, const float* __restrict__ stats, const float* __restrict__ rstats,
                          bool has_slope, float slope, bool c_fastest) {
  for (std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; j < steps;
       j += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t i = j * V;
    std::int64_t nc = 0, p = 0;  // (n * C + c) of the step's first element
    if (c_fastest) {  // i = (n * S + p) * C + c
      std::int64_t voxel = 0, c = 0, n = 0;
      divide(i, C, voxel, c);
      divide(voxel, S, n, p);
      nc = n * C + c;
    } else {  // i = (n * C + c) * S + p
      divide(i, S, nc, p);
    }
    pack<T, V> v = load_pack<T, V>(x + i);
    const pack<T, V> r = res ? load_pack<T, V>(res + i) : zero_pack<T, V>();
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const std::int64_t channel = nc + (c_fastest ? e : 0);
      float u = instance_norm_value(gpu::to_f32(v.e[e]), stats + channel * 2);
      if (res) u += residual_value(gpu::to_f32(r.e[e]), rstats, channel);
      v.e[e] = gpu::from_f32<T>(leaky(u, has_slope, slope));
    }
    store_pack(x + i, v);
  }
}

/// LayerNorm over rows of `channels` contiguous values: one warp per row, whatever the warp size.
/// Shapes: x, y (rows, channels) row-major (y may alias x); gamma, beta (channels) float32 or null.
/// Geometry: 1-D grid of norm_threads-thread blocks, norm_threads / warpSize rows per block per step, grid-stride
/// over rows. The warp takes the row's moments (row_moments), then each lane writes its channels.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(norm_threads)
    layer_norm_kernel(const T* x, std::int64_t rows, int channels, const float* __restrict__ gamma,
                      const float* __restrict__ beta, float eps, T* y) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  const int lane = static_cast<int>(threadIdx.x) % ws;
  const std::int64_t warps_per_block = blockDim.x / ws;
  const std::int64_t first = blockIdx.x * warps_per_block + threadIdx.x / ws;
  for (std::int64_t r = first; r < rows; r += std::int64_t{gridDim.x} * warps_per_block) {
    const T* xr = x + r * channels;
    float mean = 0.0f, inv = 0.0f;
    row_moments(xr, channels, 1, eps, mean, inv);
    T* yr = y + r * channels;
    for (int c = lane; c < channels; c += ws) {
      yr[c] = gpu::from_f32<T>(layer_norm_value(gpu::to_f32(xr[c]), mean, inv, gamma, beta, c));
    }
  }
}

/// LayerNorm's statistics alone, for a GEMM that normalises its input rows on load.
/// Shapes: x (rows, channels) row-major; stats (rows, 2) float32: mean, 1/sqrt(var + eps).
/// Geometry: as layer_norm_kernel; lane 0 of the row's warp writes the pair.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(norm_threads)
    row_moments_kernel(const T* __restrict__ x, std::int64_t rows, int channels, float eps,
                       float* __restrict__ stats) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  const std::int64_t warps_per_block = blockDim.x / ws;
  const std::int64_t first = blockIdx.x * warps_per_block + threadIdx.x / ws;
  for (std::int64_t r = first; r < rows; r += std::int64_t{gridDim.x} * warps_per_block) {
    float mean = 0.0f, inv = 0.0f;
    row_moments(x + r * channels, channels, 1, eps, mean, inv);
    if (threadIdx.x % ws == 0) {
      stats[r * 2] = mean;
      stats[r * 2 + 1] = inv;
    }
  }
}

}  // namespace
}  // namespace kern

std::size_t instance_norm_records_bytes(const strided5& x) {
  const kern::dims5 s = kern::to_dims(x);
  return static_cast<std::size_t>(s.n * s.c * kern::in_record_capacity(s) * 3) * sizeof(float);
}

std::int64_t launch_instance_norm_moments(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                                          float* d_records) {
  const kern::dims5 s = kern::to_dims(x);
  const std::int64_t chunks = kern::in_chunks(s), chunk_positions = kern::in_chunk(s);
  if (s.numel() == 0) return chunks;
  const auto stream = kern::stream_of(env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const auto xt = static_cast<const T*>(d_x);
    if (kern::statistics_by_position(s)) {
      constexpr int V = kern::pack_width<T>;
      const bool packs = s.c % V == 0 && kern::aligned16(d_x);
      const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(s.n));
      gpu::launch("instance_norm statistics kernel launch",
                  packs ? kern::in_partial_by_position_kernel<T, V> : kern::in_partial_by_position_kernel<T, 1>, grid,
                  kern::norm_threads, stream, xt, s, chunk_positions, d_records);
    } else {
      const dim3 grid(static_cast<unsigned>(s.c), static_cast<unsigned>(chunks), static_cast<unsigned>(s.n));
      gpu::launch("instance_norm statistics kernel launch", kern::in_partial_kernel<T>, grid, kern::norm_threads,
                  stream, xt, s, chunk_positions, d_records);
    }
  });
  return chunks;
}

void launch_instance_norm_finalize(const launch_env& env, const float* d_records, std::int64_t nc, std::int64_t chunks,
                                   float eps, float* d_stats) {
  if (nc == 0 || chunks == 0) return;
  gpu::launch("instance_norm finalize kernel launch", kern::in_finalize_kernel, static_cast<unsigned>(nc),
              kern::in_finalize_threads, kern::stream_of(env), d_records, chunks, eps, d_stats);
}

std::size_t instance_norm_scratch_bytes(const strided5& x) {
  const kern::dims5 s = kern::to_dims(x);
  const std::int64_t nc = s.n * s.c;
  return static_cast<std::size_t>(kern::in_statistics_offset(nc, kern::in_chunks(s)) + nc * 2) * sizeof(float);
}

const float* launch_instance_norm_statistics(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                                             float eps, void* d_scratch) {
  const kern::dims5 s = kern::to_dims(x);
  const std::int64_t nc = s.n * s.c;
  float* records = static_cast<float*>(d_scratch);
  float* stats = records + kern::in_statistics_offset(nc, kern::in_chunks(s));
  if (s.numel() == 0) return stats;
  const std::int64_t chunks = launch_instance_norm_moments(env, type, d_x, x, records);
  launch_instance_norm_finalize(env, records, nc, chunks, eps, stats);
  return stats;
}

void launch_instance_norm_apply(const launch_env& env, dtype type, void* d_x, const strided5& x, const float* d_stats,
                                const void* d_residual, const strided5& residual, const float* d_residual_stats,
                                bool has_slope, float negative_slope) {
  const kern::dims5 s = kern::to_dims(x), rs = kern::to_dims(residual);
  if (s.numel() == 0) return;
  const bool dense = kern::packed(s) && (d_residual == nullptr || (rs.sn == s.sn && rs.sc == s.sc && rs.sd == s.sd &&
                                                                   rs.sh == s.sh && rs.sw == s.sw));
  const float* rstats = d_residual ? d_residual_stats : nullptr;
  const bool c_fastest = kern::channels_last(s);
  const auto stream = kern::stream_of(env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    if (dense) {
      constexpr int V = kern::pack_width<T>;
      const bool packs =
          (c_fastest ? s.c : s.spatial()) % V == 0 && kern::aligned16(d_x) && kern::aligned16(d_residual);
      const std::int64_t steps = s.numel() / (packs ? V : 1);
      gpu::launch("instance_norm apply kernel launch",
                  packs ? kern::in_apply_dense_kernel<T, V> : kern::in_apply_dense_kernel<T, 1>,
                  kern::grid_for(steps, 256, env), 256, stream, static_cast<T*>(d_x),
                  static_cast<const T*>(d_residual), s.c, s.spatial(), steps, d_stats, rstats, has_slope,
                  negative_slope, c_fastest);
    } else {
      gpu::launch("instance_norm apply kernel launch", kern::in_apply_kernel<T>, kern::grid_for(s.numel(), 256, env),
                  256, stream, static_cast<T*>(d_x), s, static_cast<const T*>(d_residual), rs, d_stats, rstats,
                  has_slope, negative_slope, c_fastest);
    }
  });
}

void launch_instance_norm(const launch_env& env, dtype type, void* d_x, const strided5& x, const void* d_residual,
                          const strided5& residual, float eps, bool has_slope, float negative_slope, void* d_scratch) {
  if (kern::to_dims(x).numel() == 0) return;
  const float* stats = launch_instance_norm_statistics(env, type, d_x, x, eps, d_scratch);
  launch_instance_norm_apply(env, type, d_x, x, stats, d_residual, residual, nullptr, has_slope, negative_slope);
}

void launch_layer_norm(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int channels,
                       const float* d_gamma, const float* d_beta, float eps, void* d_y) {
  if (rows == 0 || channels == 0) return;
  const unsigned grid = kern::grid_for_warp_rows(rows, kern::norm_threads, env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    gpu::launch("layer_norm kernel launch", kern::layer_norm_kernel<T>, grid, kern::norm_threads, kern::stream_of(env),
                static_cast<const T*>(d_x), rows, channels, d_gamma, d_beta, eps, static_cast<T*>(d_y));
  });
}

std::size_t layer_norm_statistics_bytes(std::int64_t rows) {
  return static_cast<std::size_t>(rows) * 2 * sizeof(float);
}

void launch_layer_norm_statistics(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int channels,
                                  float eps, float* d_stats) {
  if (rows == 0 || channels == 0) return;
  const unsigned grid = kern::grid_for_warp_rows(rows, kern::norm_threads, env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    gpu::launch("layer_norm statistics kernel launch", kern::row_moments_kernel<T>, grid, kern::norm_threads,
                kern::stream_of(env), static_cast<const T*>(d_x), rows, channels, eps, d_stats);
  });
}

}  // namespace swinfer::hip
