// swinfer hip backend: the GEMM-shaped ops: linear (token rows x W^T with bias/GELU/residual epilogues), conv3d as
// an implicit GEMM, and the k2s2 transposed convolution as one GEMM with a scattering epilogue.
//
// All three share one tiled kernel: C[M, N] = A[M, K] B[K, N], A read through an op-specific loader (converting
// the storage type to float32 and generating the im2col rows of a convolution on the fly, never materialised), B
// the weights packed once at load in the model's storage type as (N, K) rows, float32 accumulation, and an
// op-specific epilogue that gets each finished accumulator, on the matrix cores for fp16/bf16 models
// (gemm_core.cuh).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "conv3d_direct.cuh"
#include "conv3d_wgmma.cuh"
#include "gemm_int8.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

// ---- linear ------------------------------------------------------------------------------------------------

/// A of linear: the token rows x (rows, in_features), LayerNorm-ed on load when the op has a pre-norm.
template <class T>
struct token_rows_loader {
  using element = T;
  using row_type = norm_row;
  using col_type = int;
  const T* x;
  int k_total;
  row_layer_norm<T> norm;
  bool vector_ok;  ///< k_total a multiple of the pack width and x 16-byte aligned
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return norm.row(m, m * k_total); }
  SWINFER_GPU_DEVICE col_type col(int k) const { return k; }
  SWINFER_GPU_DEVICE const T* find(const row_type& r, col_type k) const { return x + r.offset + k; }
  template <int V>
  SWINFER_GPU_DEVICE void normalize(const row_type& r, col_type k, pack<T, V>& p) const {
    norm.apply(r, k, p);
  }
};

/// y[m, n] (=|+=) act(acc + bias[n]), y (rows, out_features) row-major.
template <class T>
struct linear_epilogue {
  using row_type = std::int64_t;  ///< m * n_total
  using col_type = out_col;
  T* y;
  const float* bias;
  int n_total;
  bool gelu_act, accumulate;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const { return m * n_total; }
  SWINFER_GPU_DEVICE col_type col(int n) const { return {n, bias ? bias[n] : 0.0f}; }
  SWINFER_GPU_DEVICE void operator()(row_type r, const col_type& c, float v) const {
    if (bias) v += c.bias;
    if (gelu_act) v = gelu(v);
    T& out = y[r + c.offset];
    out = gpu::from_f32<T>(accumulate ? gpu::to_f32(out) + v : v);
  }
};

// ---- conv3d --------------------------------------------------------------------------------------------------

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

// ---- conv_transpose3d ------------------------------------------------------------------------------------------

/// A of the k2s2 transposed convolution: row m = an input position, column k = input channel.
template <class T>
struct voxel_loader {
  using element = T;
  using row_type = std::int64_t;  ///< offset of in(n, 0, z, y, x)
  using col_type = std::int64_t;  ///< k * sc
  const T* in;
  dims5 s;
  bool vector_ok;  ///< as conv_loader's
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const {
    std::int64_t n, z, y, x;
    split_position(m, s.d, s.h, s.w, n, z, y, x);
    return s.offset(n, 0, z, y, x);
  }
  SWINFER_GPU_DEVICE col_type col(int k) const { return k * s.sc; }
  SWINFER_GPU_DEVICE const T* find(row_type r, col_type c) const { return in + r + c; }
};

/// Column j = (a*4 + b*2 + c)*cout + o of input position (n, z, y, x) lands at out(n, o, 2z+a, 2y+b, 2x+c).
template <class T>
struct scatter2_epilogue {
  using row_type = std::int64_t;  ///< offset of out(n, 0, 2z, 2y, 2x)
  using col_type = out_col;       ///< offset of out(0, o, a, b, c); no bias
  T* out;
  dims5 o;
  std::int64_t id, ih, iw;
  int cout;
  SWINFER_GPU_DEVICE row_type row(std::int64_t m) const {
    std::int64_t n, z, y, x;
    split_position(m, id, ih, iw, n, z, y, x);
    return o.offset(n, 0, 2 * z, 2 * y, 2 * x);
  }
  SWINFER_GPU_DEVICE col_type col(int j) const {
    const int sub = j / cout, co = j % cout;
    return {o.offset(0, co, sub >> 2, (sub >> 1) & 1, sub & 1), 0.0f};
  }
  SWINFER_GPU_DEVICE void operator()(row_type r, const col_type& c, float v) const {
    out[r + c.offset] = gpu::from_f32<T>(v);
  }
};

}  // namespace
}  // namespace kern

std::size_t linear_scratch_bytes(std::int64_t rows, const layer_norm_args* pre_norm) {
  return (pre_norm ? kern::align_up(layer_norm_statistics_bytes(rows)) : 0) +
         static_cast<std::size_t>(rows) * sizeof(float);
}

void launch_linear(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int in_features,
                   int out_features, const void* d_weight, const float* d_bias, bool gelu, bool accumulate,
                   void* d_y, const layer_norm_args* pre_norm, void* d_scratch, const int8_product* int8) {
  float* moments = nullptr;
  auto* bytes = static_cast<unsigned char*>(d_scratch);
  const layer_norm_args norm = pre_norm ? *pre_norm : layer_norm_args{};
  if (pre_norm) {
    moments = reinterpret_cast<float*>(bytes);
    bytes += kern::align_up(layer_norm_statistics_bytes(rows));
    launch_layer_norm_statistics(env, type, d_x, rows, in_features, norm.eps, moments);
  }
  int8_product launch;
  int8 = kern::with_row_scales(int8, reinterpret_cast<float*>(bytes), launch);
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const kern::token_rows_loader<T> a{static_cast<const T*>(d_x), in_features, {moments, norm.gamma, norm.beta},
                                       kern::packs_fit<T>(d_x, {in_features})};
    kern::run_product<T>(env, a, d_weight, int8, rows, out_features, in_features,
                         kern::linear_epilogue<T>{static_cast<T*>(d_y), d_bias, out_features, gelu, accumulate},
                         "linear kernel launch");
  });
}

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

void launch_conv_transpose3d(const launch_env& env, dtype type, const void* d_in, const strided5& in, int cout,
                             const void* d_weight_packed, void* d_out, const strided5& out,
                             const int8_product* int8) {
  const kern::dims5 s = kern::to_dims(in), o = kern::to_dims(out);
  const std::int64_t M = s.n * s.d * s.h * s.w;
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const kern::voxel_loader<T> a{static_cast<const T*>(d_in), s,
                                  s.sc == 1 && kern::packs_fit<T>(d_in, {s.c, s.sn, s.sd, s.sh, s.sw})};
    kern::run_product<T>(env, a, d_weight_packed, int8, M, 8 * cout, static_cast<int>(s.c),
                         kern::scatter2_epilogue<T>{static_cast<T*>(d_out), o, s.d, s.h, s.w, cout},
                         "conv_transpose3d kernel launch");
  });
}


namespace {
/// Device memory freed when it goes out of scope, for the start-up self-tests.
using self_test_buffer = std::unique_ptr<void, void (*)(void*)>;
self_test_buffer self_test_alloc(std::size_t bytes) {
  return self_test_buffer(device_alloc(bytes), [](void* p) { device_free(p); });
}
/// n contiguous elements as a strided5 (the self-tests' format conversions).
strided5 flat_shape(std::int64_t n) { return strided5{{1, 1, 1, 1, n}, {n, n, n, n, 1}}; }
}  // namespace

bool matrix_cores_verified(const launch_env& env, std::string* why) {
  const std::int64_t rows = 70;
  const int in = 40, out = 72;
  std::vector<float> x(static_cast<std::size_t>(rows) * in), w(static_cast<std::size_t>(in) * out);
  // Integers in [-6, 6] and [-3, 3], varying along every row and column: exact in fp16, bf16 and int8 (scale 1),
  // and every sum (at most 720) exact in float32, so the accumulation order cannot matter.
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>((i * 37 + 11) % 13) - 6);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>((i * 23 + 5) % 7) - 3);
  const auto bytes = [](std::size_t n, dtype t) { return n * dtype_size(t); };
  const auto flat = flat_shape;
  using buffer = self_test_buffer;
  const auto alloc = self_test_alloc;
  const std::size_t y_count = static_cast<std::size_t>(rows) * out;
  const buffer d_x32 = alloc(bytes(x.size(), dtype::f32)), d_w = alloc(bytes(w.size(), dtype::f32));
  const buffer d_x16 = alloc(bytes(x.size(), dtype::f16)), d_w16 = alloc(bytes(w.size(), dtype::f16));
  const buffer d_w8 = alloc(w.size()), d_scales = alloc(out * sizeof(float));
  const buffer d_y[2] = {alloc(bytes(y_count, dtype::f32)), alloc(bytes(y_count, dtype::f32))};
  copy_to_device(d_x32.get(), x.data(), bytes(x.size(), dtype::f32), env.stream);
  copy_to_device(d_w.get(), w.data(), bytes(w.size(), dtype::f32), env.stream);
  // fp16 and bf16 on the matrix cores against float32 FMA, bit for bit.
  for (const dtype t : {dtype::f16, dtype::bf16}) {
    const auto n = static_cast<std::int64_t>(x.size()), nw = static_cast<std::int64_t>(w.size());
    launch_copy(env, dtype::f32, d_x32.get(), flat(n), t, d_x16.get(), flat(n), 0);
    launch_copy(env, dtype::f32, d_w.get(), flat(nw), t, d_w16.get(), flat(nw), 0);
    std::vector<std::vector<unsigned char>> y(2, std::vector<unsigned char>(bytes(y_count, t)));
    for (int path = 0; path < 2; ++path) {
      launch_env e = env;
      e.matrix_cores = path == 0;
      launch_linear(e, t, d_x16.get(), rows, in, out, d_w16.get(), nullptr, false, false, d_y[path].get());
      copy_to_host(y[path].data(), d_y[path].get(), y[path].size(), env.stream);
    }
    stream_synchronize(env.stream);
    if (y[0] != y[1]) {
      if (why) *why = std::string("the ") + (t == dtype::f16 ? "fp16" : "bf16") +
                      " self-test GEMM on the matrix cores differs from float32 FMA";
      return false;
    }
  }
  // int8 (scales 1, so the quantized values are the integers themselves) against the exact sums.
  const std::vector<std::int8_t> w8(w.begin(), w.end());
  const std::vector<float> ones(static_cast<std::size_t>(out), 1.0f);
  copy_to_device(d_w8.get(), w8.data(), w8.size(), env.stream);
  copy_to_device(d_scales.get(), ones.data(), ones.size() * sizeof(float), env.stream);
  const int8_product unit{static_cast<const float*>(d_scales.get()), 1.0f};
  launch_linear(env, dtype::f32, d_x32.get(), rows, in, out, d_w8.get(), nullptr, false, false, d_y[0].get(), nullptr,
                nullptr, &unit);
  std::vector<float> y(y_count), want(y_count, 0.0f);
  copy_to_host(y.data(), d_y[0].get(), y_count * sizeof(float), env.stream);
  stream_synchronize(env.stream);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o)
      for (int k = 0; k < in; ++k) want[r * out + o] += x[r * in + k] * w[static_cast<std::size_t>(o) * in + k];
  if (y != want) {
    if (why) *why = "the int8 self-test GEMM on the matrix cores differs from the exact integer sums";
    return false;
  }
  return true;
}

bool warpgroup_mma_verified(const launch_env& env, std::string* why) {
  const std::size_t shared = kern::wgmma_tiles<gpu::half_t>::bytes + kern::wgmma_tiles<gpu::half_t>::table_bytes;
  if (env.max_shared_per_block < shared) {  // launch_conv3d would run the halo tile instead
    if (why) {
      *why = "a block may have " + std::to_string(env.max_shared_per_block >> 10) +
             " KiB of shared memory, the wgmma kernel needs " + std::to_string(shared >> 10);
    }
    return false;
  }
  // Channels-last (1, 96, 3, 9, 10): one box along d and two along h and w, each partly outside the volume, padded
  // on every side; 96 input channels (two halo chunks) and 96 outputs (two column tiles).
  const int cin = 96, cout = 96, d = 3, h = 9, w = 10;
  const std::int64_t voxels = std::int64_t{d} * h * w;
  const conv_geometry g{cin, cout, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}};
  const auto channels_last = [&](int c) {
    return strided5{{1, c, d, h, w}, {voxels * c, 1, std::int64_t{h} * w * c, std::int64_t{w} * c, c}};
  };
  // Integers in [-2, 2] (inputs) and [-1, 1] (weights, different for every output channel): every product and sum
  // (at most 5184 in magnitude) is exact in float32, so the accumulation order cannot matter and both kernels round
  // the same sums.
  const std::size_t K = 27 * cin;
  std::vector<float> x(static_cast<std::size_t>(voxels) * cin), wt(cout * K);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>((i * 37 + 11) % 5) - 2);
  for (std::size_t i = 0; i < wt.size(); ++i) {
    wt[i] = static_cast<float>(static_cast<int>((i % K * 23 + i / K * 5 + i / K % 4) % 3) - 1);
  }
  using buffer = self_test_buffer;
  const auto alloc = self_test_alloc;
  const auto flat = flat_shape;
  const std::size_t y_count = static_cast<std::size_t>(voxels) * cout;
  const buffer d_x32 = alloc(x.size() * 4), d_w32 = alloc(wt.size() * 4), d_x = alloc(x.size() * 2),
               d_w = alloc(wt.size() * 2), d_y = alloc(y_count * 2);
  copy_to_device(d_x32.get(), x.data(), x.size() * 4, env.stream);
  copy_to_device(d_w32.get(), wt.data(), wt.size() * 4, env.stream);
  for (const dtype t : {dtype::f16, dtype::bf16}) {
    const auto nx = static_cast<std::int64_t>(x.size()), nw = static_cast<std::int64_t>(wt.size());
    launch_copy(env, dtype::f32, d_x32.get(), flat(nx), t, d_x.get(), flat(nx), 0);
    launch_copy(env, dtype::f32, d_w32.get(), flat(nw), t, d_w.get(), flat(nw), 0);
    std::vector<std::vector<unsigned char>> y(2, std::vector<unsigned char>(y_count * 2));
    for (int path = 0; path < 2; ++path) {
      launch_env e = env;
      e.warpgroup_mma = path == 0;
      e.kernels.conv = path == 0 ? conv_kernel_choice::wgmma : conv_kernel_choice::halo;
      if (launch_conv3d(e, t, d_x.get(), channels_last(cin), g, d_w.get(), nullptr, d_y.get(),
                        channels_last(cout)) != e.kernels.conv) {
        if (why) *why = std::string("the self-test convolution did not run on the ") + (path == 0 ? "wgmma" : "halo") +
                        " kernel";
        return false;
      }
      copy_to_host(y[path].data(), d_y.get(), y[path].size(), env.stream);
      stream_synchronize(env.stream);
    }
    if (y[0] != y[1]) {
      if (why) *why = std::string("the ") + (t == dtype::f16 ? "fp16" : "bf16") +
                      " self-test convolution on wgmma differs from the halo tile's";
      return false;
    }
  }
  return true;
}

}  // namespace swinfer::hip
