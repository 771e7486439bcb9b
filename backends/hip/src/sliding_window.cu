// swinfer hip backend: the sliding window's blending on the device: weighted accumulation of window
// predictions, normalisation by MONAI's count map (recomputed per voxel, never stored) with the crop of the
// padding, and the softmax argmax that turns blended logits into labels. All are memory bound: one thread per
// element or voxel in grid-stride loops whose order follows the memory written.
#include "common.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

constexpr int blend_threads = 256;

/// sum(0, k, z, y, x) += mul_rn(prediction(0, k, z, y, x), importance[(z*rh + y)*rw + x]).
/// Shapes: prediction (1, K, rd, rh, rw) of T, any strides; sum (1, K, rd, rh, rw) float32 view, any strides;
/// importance (rd, rh, rw) packed. Geometry: 1-D grid of blend_threads-thread blocks, grid-stride loop over the
/// K*rd*rh*rw elements in sum's memory order. Each element is touched by one thread, so no atomics; windows are
/// blended one launch after another on the stream, keeping every voxel's sum in MONAI's window order.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(blend_threads)
    blend_window_kernel(const T* __restrict__ prediction, dims5 p, const float* __restrict__ importance,
                        float* __restrict__ sum, dims5 s, bool c_fastest) {
  const std::int64_t total = p.numel();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, x;
    unravel(p, c_fastest, i, n, c, z, y, x);
    const float w = importance[(z * p.h + y) * p.w + x];
    float& o = sum[s.offset(n, c, z, y, x)];
    o = o + gpu::mul_rn(gpu::to_f32(prediction[p.offset(n, c, z, y, x)]), w);
  }
}

/// Windows as the kernels take them by value.
struct windows_arg {
  const std::int64_t* starts;  // axis 0, then 1, then 2
  int count0, count1, count2;
  std::int64_t rd, rh, rw;
  const float* importance;
};

/// MONAI's count map at padded voxel (z, y, x): the importance of every covering window, added in window order
/// (axis 0 slowest), as the host's importance_count_row.
SWINFER_GPU_DEVICE inline float window_count(const windows_arg& w, std::int64_t z, std::int64_t y, std::int64_t x) {
  const std::int64_t* s0 = w.starts;
  const std::int64_t* s1 = s0 + w.count0;
  const std::int64_t* s2 = s1 + w.count1;
  float count = 0.0f;
  for (int i = 0; i < w.count0; ++i) {
    const std::int64_t sz = s0[i];
    if (z < sz || z >= sz + w.rd) continue;
    for (int j = 0; j < w.count1; ++j) {
      const std::int64_t sy = s1[j];
      if (y < sy || y >= sy + w.rh) continue;
      const float* row = w.importance + ((z - sz) * w.rh + (y - sy)) * w.rw;
      for (int l = 0; l < w.count2; ++l) {
        const std::int64_t sx = s2[l];
        if (x >= sx && x < sx + w.rw) count += row[x - sx];
      }
    }
  }
  return count;
}

/// out(n, k, z, y, x) = sum(n, k, z + lz, y + ly, x + lx) / count(z + lz, y + ly, x + lx).
/// Shapes: sum (N, K, D + pads, ...) float32, out (N, K, D, H, W) float32, any strides. Geometry: 1-D grid of
/// 256-thread blocks, grid-stride loop over the N*D*H*W voxels of out (x fastest); each thread computes its count
/// once and divides all K channels by it.
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    normalise_kernel(const float* sum, dims5 s, std::int64_t lz, std::int64_t ly, std::int64_t lx, windows_arg w,
                     float* out, dims5 o) {  // sum and out alias when nothing was padded
  const std::int64_t total = o.n * o.spatial();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, z, y, x;
    split_position(i, o.d, o.h, o.w, n, z, y, x);
    const float count = window_count(w, z + lz, y + ly, x + lx);
    for (std::int64_t k = 0; k < o.c; ++k)
      out[o.offset(n, k, z, y, x)] = sum[s.offset(n, k, z + lz, y + ly, x + lx)] / count;
  }
}

/// labels(n, 0, z, y, x) = argmax over k of exp(l_k - max) / sum_j exp(l_j - max), as softmax_channels then
/// argmax_channels on the host (float32, the same operation order).
/// Shapes: logits (N, K, D, H, W) float32, labels (N, 1, D, H, W) uint8, any strides. Geometry: 1-D grid of
/// 256-thread blocks, grid-stride loop over voxels (x fastest); three passes over a voxel's K logits.
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    softmax_argmax_kernel(const float* __restrict__ logits, dims5 l, std::uint8_t* __restrict__ labels, dims5 o) {
  const std::int64_t total = l.n * l.spatial();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, z, y, x;
    split_position(i, l.d, l.h, l.w, n, z, y, x);
    const float* v = logits + l.offset(n, 0, z, y, x);
    float max = v[0];
    for (std::int64_t k = 1; k < l.c; ++k) max = max < v[k * l.sc] ? v[k * l.sc] : max;  // std::max's NaN rule
    float total_exp = 0.0f;
    for (std::int64_t k = 0; k < l.c; ++k) total_exp += expf(v[k * l.sc] - max);
    float best = expf(v[0] - max) / total_exp;
    int arg = 0;
    for (std::int64_t k = 1; k < l.c; ++k) {
      const float p = expf(v[k * l.sc] - max) / total_exp;
      if (p > best || (p != p && best == best)) {  // NaN wins over a number
        best = p;
        arg = static_cast<int>(k);
      }
    }
    labels[o.offset(n, 0, z, y, x)] = static_cast<std::uint8_t>(arg);
  }
}

}  // namespace
}  // namespace kern

void launch_blend_window(const launch_env& env, dtype type, const void* d_prediction, const strided5& prediction,
                         const float* d_importance, float* d_sum, const strided5& sum) {
  const kern::dims5 p = kern::to_dims(prediction), s = kern::to_dims(sum);
  if (p.numel() == 0) return;
  const unsigned grid = kern::grid_for(p.numel(), kern::blend_threads, env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    gpu::launch("blend_window kernel launch", kern::blend_window_kernel<T>, grid, kern::blend_threads,
                kern::stream_of(env), static_cast<const T*>(d_prediction), p, d_importance, d_sum, s,
                kern::channels_last(s));
  });
}

void launch_normalise_window_sum(const launch_env& env, const float* d_sum, const strided5& sum,
                                 const std::array<std::int64_t, 3>& pad_low, const window_set& windows, float* d_out,
                                 const strided5& out) {
  const kern::dims5 s = kern::to_dims(sum), o = kern::to_dims(out);
  if (o.numel() == 0) return;
  const kern::windows_arg w{windows.d_starts, windows.count[0], windows.count[1], windows.count[2],
                            windows.roi[0],   windows.roi[1],   windows.roi[2],   windows.d_importance};
  const unsigned grid = kern::grid_for(o.n * o.spatial(), 256, env);
  gpu::launch("normalise_window_sum kernel launch", kern::normalise_kernel, grid, 256, kern::stream_of(env), d_sum, s,
              pad_low[0], pad_low[1], pad_low[2], w, d_out, o);
}

void launch_softmax_argmax(const launch_env& env, const float* d_logits, const strided5& logits,
                           std::uint8_t* d_labels, const strided5& labels) {
  const kern::dims5 l = kern::to_dims(logits), o = kern::to_dims(labels);
  if (l.n * l.spatial() == 0) return;
  const unsigned grid = kern::grid_for(l.n * l.spatial(), 256, env);
  gpu::launch("softmax_argmax kernel launch", kern::softmax_argmax_kernel, grid, 256, kern::stream_of(env), d_logits,
              l, d_labels, o);
}

}  // namespace swinfer::hip
