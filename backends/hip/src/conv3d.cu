// swinfer hip backend: conv3d: the implicit GEMM's operand loader and epilogue, shared by every convolution
// kernel, and launch_conv3d, which picks the kernel.
//
// C[M, N] = A[M, K] B[K, N] with M = n * od * oh * ow output positions, K = kd * kh * kw * cin, N = cout: A the
// im2col rows of the input, generated on load (conv_loader; never materialised), B the weights packed once at
// load as (cout, K) rows in the model's storage type, float32 accumulation, the epilogue storing out(n, co, z, y, x).
// The kernels, in the order launch_conv3d tries them (each states its shapes and launch geometry where it is
// defined): the direct kernel for 1- to 4-channel inputs (conv3d_direct.cuh), the warpgroup-product box kernel
// (conv3d_wgmma.cuh), the halo-tile box kernel (conv3d_halo.cuh), else the tiled GEMM (gemm_core.cuh, int8 in
// gemm_int8.cuh).
#include <cstdint>

#include "conv3d_direct.cuh"
#include "conv3d_wgmma.cuh"
#include "gemm_int8.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

/// 0 <= v < extent in one comparison: a negative v wraps to a huge unsigned value.
SWINFER_GPU_DEVICE inline bool inside(std::int64_t v, std::int64_t extent) {
  return static_cast<std::uint64_t>(v) < static_cast<std::uint64_t>(extent);
}

/// A of conv3d: im2col row m (an output position), column k = ((a*kh + b)*kw + c)*cin + ci: the input element under
/// kernel tap (a, b, c) of channel ci, zero outside the volume (zero padding). With channels-last input,
/// consecutive k are consecutive channels, so the tile loads coalesce. A row is the window's corner (z, y, x) in
/// input coordinates (negative in the padding) and its offset; a column is the tap and channel's offset from it.
/// The input may be the channel concatenation of two tensors, read where they are (a decoder's upsampled map and
/// its skip, never copied into one): channels [0, split) from `first`, [split, cin) from `second`, each with its
/// own strides; a row keeps its corner's offset in both. With `in_norm.stats`, the input is read as
/// act(InstanceNorm(in)) (the padding stays 0, as it pads the normalised tensor): the norm and LeakyReLU of the op
/// before the convolution, applied on load.
template <class T>
struct conv_loader {
  using element = T;
  struct row_type {
    std::int64_t corner0, corner1;  ///< offsets of in(n, 0, z, y, x) in each part (outside them in the padding)
    int n, z, y, x;
  };
  struct col_type {
    std::int64_t offset;  ///< the channel's offset in its part + a * sd + b * sh + c * sw
    bool second;          ///< in the second part
    int ci, a, b, c;      ///< ci: the channel in the concatenation
  };
  const T* first;
  const T* second;  ///< null: one input
  dims5 s0, s1;
  int split;
  std::int64_t od, oh, ow;
  int cin, kh, kw, sz, sy, sx, pz, py, px;
  instance_norm_args in_norm;  ///< in_norm.stats null: the input as it is
  bool vector_ok;  ///< channels-last, both parts' channel counts and offsets multiples of the pack width, aligned
  fast_divisor by_cin, by_kw, by_kh;  ///< col() splits k once per K step and thread: without integer division
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const {
    std::int64_t n, z, y, x;
    split_position(m, od, oh, ow, n, z, y, x);
    const int iz = static_cast<int>(z) * sz - pz, iy = static_cast<int>(y) * sy - py;
    const int ix = static_cast<int>(x) * sx - px;
    return {n * s0.sn + iz * s0.sd + iy * s0.sh + ix * s0.sw, n * s1.sn + iz * s1.sd + iy * s1.sh + ix * s1.sw,
            static_cast<int>(n), iz, iy, ix};
  }
  SWINFER_GPU_DEVICE col_type col(int k) const {
    int tap = 0, ci = 0, rest = 0, c = 0, a = 0, b = 0;
    by_cin.divmod(static_cast<std::uint32_t>(k), tap, ci);
    by_kw.divmod(static_cast<std::uint32_t>(tap), rest, c);
    by_kh.divmod(static_cast<std::uint32_t>(rest), a, b);
    const bool in_second = ci >= split;
    const dims5& s = in_second ? s1 : s0;
    return {(in_second ? ci - split : ci) * s.sc + a * s.sd + b * s.sh + c * s.sw, in_second, ci, a, b, c};
  }
  SWINFER_GPU_DEVICE const T* find(const row_type& r, const col_type& t) const {
    if (!inside(r.z + t.a, s0.d) || !inside(r.y + t.b, s0.h) || !inside(r.x + t.c, s0.w)) return nullptr;
    return t.second ? second + r.corner1 + t.offset : first + r.corner0 + t.offset;
  }
  template <int V>
  SWINFER_GPU_DEVICE void normalize(const row_type& r, const col_type& t, pack<T, V>& p) const {
    normalize_channels(r.n, t.ci, p);
  }
  /// Channels ci .. ci+V-1 of sample n at input position (z, y, x), or null in the padding (the halo tile's reads,
  /// conv3d_halo.cuh).
  SWINFER_GPU_DEVICE const T* at(int n, int z, int y, int x, int ci) const {
    if (!inside(z, s0.d) || !inside(y, s0.h) || !inside(x, s0.w)) return nullptr;
    return ci < split ? first + s0.offset(n, ci, z, y, x) : second + s1.offset(n, ci - split, z, y, x);
  }
  SWINFER_GPU_DEVICE bool normalizes() const { return in_norm.stats != nullptr; }
  /// Channels ci .. ci+V-1 (one tap and one part: V divides both parts' channel counts when packed) of sample n.
  template <int V>
  SWINFER_GPU_DEVICE void normalize_channels(int n, int ci, pack<T, V>& p) const {
    if (!in_norm.stats) return;
    float mean_inv[2 * V];  // {mean, inv} of channels ci .. ci+V-1: 16-byte aligned for V > 1 (stats and ci are)
    load_floats(in_norm.stats + (static_cast<std::int64_t>(n) * cin + ci) * 2, mean_inv);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float v = instance_norm_value(gpu::to_f32(p.e[i]), mean_inv + 2 * i);
      p.e[i] = gpu::from_f32<T>(leaky(v, in_norm.has_slope, in_norm.negative_slope));
    }
  }
};

/// out(n, co, z, y, x) = acc + bias[co].
template <class T>
struct conv_epilogue {
  using row_type = std::int64_t;  ///< offset of out(n, 0, z, y, x)
  using col_type = out_col;       ///< co * sc
  T* out;
  dims5 o;
  const float* bias;
  /// Where the box kernels leave the output's InstanceNorm moments as they store it (records as api.hpp's, one per
  /// moment_cell and channel, moment_chunks = moment_cell_count(o) per (sample, channel)); null: not asked for.
  float* moments = nullptr;
  std::int64_t moment_chunks = 0;
  /// Output value v of column c as stored.
  SWINFER_GPU_DEVICE T value(const col_type& c, float v) const { return gpu::from_f32<T>(bias ? v + c.bias : v); }
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const {
    std::int64_t n, z, y, x;
    split_position(m, o.d, o.h, o.w, n, z, y, x);
    return o.offset(n, 0, z, y, x);
  }
  SWINFER_GPU_DEVICE col_type col(int co) const { return {co * o.sc, bias ? bias[co] : 0.0f}; }
  SWINFER_GPU_DEVICE void operator()(row_type r, const col_type& c, float v) const { out[r + c.offset] = value(c, v); }
  /// Outputs c[0 .. 7] of row r: one 16-byte store where those channels are contiguous and aligned.
  SWINFER_GPU_DEVICE void store8(row_type r, const col_type* c, const float (&v)[8]) const {
    constexpr int V = pack_width<T>;
    T* const first = out + r + c[0].offset;
    if constexpr (V == 8) {
      if (o.sc == 1 && reinterpret_cast<std::uintptr_t>(first) % sizeof(gpu::bytes16) == 0) {
        pack<T, V> p;
#pragma unroll
        for (int e = 0; e < V; ++e) p.e[e] = value(c[e], v[e]);
        store_pack(first, p);
        return;
      }
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) (*this)(r, c[e], v[e]);
  }
};

}  // namespace
}  // namespace kern

conv_kernel_choice launch_conv3d(const launch_env& env, dtype type, const void* d_in, const strided5& in,
                                 const conv_geometry& g, const void* d_weight_packed, const float* d_bias,
                                 void* d_out, const strided5& out, const instance_norm_args* in_norm,
                                 const void* d_in2, const strided5* in2, const int8_product* int8,
                                 moment_sink* moments) {
  const kern::dims5 s0 = kern::to_dims(in), s1 = in2 ? kern::to_dims(*in2) : s0, o = kern::to_dims(out);
  const std::int64_t M = o.n * o.d * o.h * o.w;
  const int K = g.kernel[0] * g.kernel[1] * g.kernel[2] * g.cin;
  const int split = static_cast<int>(s0.c);
  conv_kernel_choice ran = conv_kernel_choice::gemm;
  bool gathered = false;  // the output's moments, by a box kernel
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const bool packs = s0.sc == 1 && kern::packs_fit<T>(d_in, {s0.c, s0.sn, s0.sd, s0.sh, s0.sw}) &&
                       (!d_in2 || (s1.sc == 1 && kern::packs_fit<T>(d_in2, {s1.c, s1.sn, s1.sd, s1.sh, s1.sw})));
    const kern::conv_loader<T> a{static_cast<const T*>(d_in), static_cast<const T*>(d_in2), s0, s1, split,
                                 o.d, o.h, o.w, g.cin, g.kernel[1], g.kernel[2], g.stride[0], g.stride[1],
                                 g.stride[2], g.pad[0], g.pad[1], g.pad[2], in_norm ? *in_norm : instance_norm_args{},
                                 packs, kern::fast_divisor(static_cast<std::uint32_t>(g.cin)),
                                 kern::fast_divisor(static_cast<std::uint32_t>(g.kernel[2])),
                                 kern::fast_divisor(static_cast<std::uint32_t>(g.kernel[1]))};
    const kern::conv_epilogue<T> epi{static_cast<T*>(d_out), o, d_bias, moments ? moments->records : nullptr,
                                      kern::moment_cell_count(o.d, o.h, o.w)};
    const auto weights = static_cast<const T*>(d_weight_packed);
    if (!int8 && !in_norm && !d_in2 &&
        kern::run_conv3d_direct(env, static_cast<const T*>(d_in), s0, g, o, weights, epi)) {
      ran = conv_kernel_choice::direct;
    } else if (!int8 && kern::run_conv3d_wgmma(env, a, weights, g, split, o.n, epi, gathered)) {
      ran = conv_kernel_choice::wgmma;
    } else if (!int8 && kern::run_conv3d_halo(env, a, weights, g, split, o.n, epi, gathered)) {
      ran = conv_kernel_choice::halo;
    } else {
      kern::run_product<T>(env, a, d_weight_packed, int8, M, g.cout, K, epi, "conv3d kernel launch");
    }
  });
  if (moments) {
    moments->chunks = gathered ? kern::moment_cell_count(o.d, o.h, o.w)
                               : launch_instance_norm_moments(env, type, d_out, out, moments->records);
  }
  return ran;
}

}  // namespace swinfer::hip
