// swinfer hip backend: element-wise data movement: type/layout conversion, channel concatenation, 3-D pooling and
// the patch-merging gather. All are memory bound; each thread handles whole elements in a grid-stride loop whose
// linear index follows the memory order of the tensor written, so stores coalesce in both layouts.
#include "common.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

constexpr int copy_threads = 256;

/// dst(n, c + coff, z, y, x) = convert(src(n, c, z, y, x)).
/// Shapes: src (N, C, D, H, W) any strides; dst (N, C', D, H, W) any strides, C' >= coff + C.
/// Geometry: 1-D grid of copy_threads-thread blocks (grid_for), grid-stride loop over the N*C*D*H*W source
/// elements, enumerated in dst's memory order (c fastest when dst is channels-last).
template <class A, class B>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(copy_threads)
    copy_kernel(const A* __restrict__ src, dims5 s, B* __restrict__ dst, dims5 d, std::int64_t coff, bool c_fastest) {
  const std::int64_t total = s.numel();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, x;
    unravel(s, c_fastest, i, n, c, z, y, x);
    dst[d.offset(n, c + coff, z, y, x)] = gpu::from_f32<B>(gpu::to_f32(src[s.offset(n, c, z, y, x)]));
  }
}

/// Pooling with a cubic window k, stride k, no padding, floor mode.
/// Shapes: in (N, C, D, H, W), out (N, C, D/k, H/k, W/k), any strides each.
/// Geometry: 1-D grid of 256-thread blocks, grid-stride loop over output elements in out's memory order; each
/// thread reduces its k^3 window in float32 (average divides by k^3).
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    pool3d_kernel(const T* __restrict__ in, dims5 s, T* __restrict__ out, dims5 o, int k, bool max_mode,
                  bool c_fastest) {
  const std::int64_t total = o.numel();
  const float inv = 1.0f / static_cast<float>(k * k * k);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, x;
    unravel(o, c_fastest, i, n, c, z, y, x);
    float acc = max_mode ? -INFINITY : 0.0f;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        for (int e = 0; e < k; ++e) {
          const float v = gpu::to_f32(in[s.offset(n, c, z * k + a, y * k + b, x * k + e)]);
          acc = max_mode ? fmaxf(acc, v) : acc + v;
        }
    out[o.offset(n, c, z, y, x)] = gpu::from_f32<T>(max_mode ? acc : acc * inv);
  }
}

struct merge_offsets {
  int z[8], y[8], x[8];
};

/// Patch-merging gather: out(n, k*C + c, z, y, x) = in(n, c, 2z + dz[k], 2y + dy[k], 2x + dx[k]).
/// Shapes: in (N, C, D, H, W), out (N, 8C, D/2, H/2, W/2), any strides (tokens are channels-last).
/// Geometry: 1-D grid of 256-thread blocks, grid-stride loop over output elements in out's memory order.
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    patch_merge_kernel(const T* __restrict__ in, dims5 s, T* __restrict__ out, dims5 o, merge_offsets off,
                       bool c_fastest) {
  const std::int64_t total = o.numel();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < total;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, x;
    unravel(o, c_fastest, i, n, c, z, y, x);
    const int k = static_cast<int>(c / s.c);
    const std::int64_t ci = c % s.c;
    out[o.offset(n, c, z, y, x)] = in[s.offset(n, ci, 2 * z + off.z[k], 2 * y + off.y[k], 2 * x + off.x[k])];
  }
}

}  // namespace
}  // namespace kern

void launch_copy(const launch_env& env, dtype src_type, const void* d_src, const strided5& src, dtype dst_type,
                 void* d_dst, const strided5& dst, std::int64_t dst_channel_offset) {
  const kern::dims5 s = kern::to_dims(src), d = kern::to_dims(dst);
  if (s.numel() == 0) return;
  // Same type, same strides, no channel offset: one device memcpy.
  if (src_type == dst_type && dst_channel_offset == 0 && src.shape == dst.shape && src.stride == dst.stride) {
    copy_on_device(d_dst, d_src, static_cast<std::size_t>(s.numel()) * dtype_size(src_type), env.stream);
    return;
  }
  // Same type, both packed in one layout (a concat part into its channel range): rows of contiguous bytes, the
  // runtime's 2-D copy. Channels-last: N*S rows of C elements, C' apart; channels-first: N rows of C*S, C'*S apart.
  if (src_type == dst_type && kern::packed(s) && kern::packed(d) && kern::channels_last(s) == kern::channels_last(d)) {
    const auto es = static_cast<std::size_t>(dtype_size(src_type));
    const bool last = kern::channels_last(d);
    const auto rows = static_cast<std::size_t>(last ? s.n * s.spatial() : s.n);
    const auto run = static_cast<std::size_t>(last ? 1 : s.spatial()) * es;  // bytes per channel in a row
    auto* dst_bytes = static_cast<unsigned char*>(d_dst) + static_cast<std::size_t>(dst_channel_offset) * run;
    copy_rows_on_device(dst_bytes, static_cast<std::size_t>(d.c) * run, d_src, static_cast<std::size_t>(s.c) * run,
                        static_cast<std::size_t>(s.c) * run, rows, env.stream);
    return;
  }
  const bool c_fastest = kern::channels_last(d);
  const unsigned grid = kern::grid_for(s.numel(), kern::copy_threads, env);
  kern::dispatch(src_type, [&](auto a) {
    using A = decltype(a);
    kern::dispatch(dst_type, [&](auto b) {
      using B = decltype(b);
      gpu::launch("copy/convert kernel launch", kern::copy_kernel<A, B>, grid, kern::copy_threads, kern::stream_of(env),
                  static_cast<const A*>(d_src), s, static_cast<B*>(d_dst), d, dst_channel_offset, c_fastest);
    });
  });
}

void launch_pool3d(const launch_env& env, dtype type, const void* d_in, const strided5& in, bool max_mode, int kernel,
                   void* d_out, const strided5& out) {
  const kern::dims5 s = kern::to_dims(in), o = kern::to_dims(out);
  if (o.numel() == 0) return;
  const unsigned grid = kern::grid_for(o.numel(), 256, env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    gpu::launch("pool3d kernel launch", kern::pool3d_kernel<T>, grid, 256, kern::stream_of(env),
                static_cast<const T*>(d_in), s, static_cast<T*>(d_out), o, kernel, max_mode, kern::channels_last(o));
  });
}

void launch_patch_merge_gather(const launch_env& env, dtype type, const void* d_in, const strided5& in,
                               const std::array<std::array<int, 3>, 8>& offsets, void* d_out, const strided5& out) {
  const kern::dims5 s = kern::to_dims(in), o = kern::to_dims(out);
  if (o.numel() == 0) return;
  kern::merge_offsets off{};
  for (int k = 0; k < 8; ++k) {
    off.z[k] = offsets[k][0];
    off.y[k] = offsets[k][1];
    off.x[k] = offsets[k][2];
  }
  const unsigned grid = kern::grid_for(o.numel(), 256, env);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    gpu::launch("patch_merge_gather kernel launch", kern::patch_merge_kernel<T>, grid, 256, kern::stream_of(env),
                static_cast<const T*>(d_in), s, static_cast<T*>(d_out), o, off, kern::channels_last(o));
  });
}

}  // namespace swinfer::hip
