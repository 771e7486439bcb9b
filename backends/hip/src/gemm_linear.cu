// swinfer hip backend: linear (token rows x W^T with bias/GELU/residual epilogues) on the shared tiled GEMM
// (gemm_core.cuh; int8 weights through gemm_int8.cuh).
//
// C[M, N] = A[M, K] B[K, N] with M = rows, K = in_features, N = out_features: A the token rows, LayerNorm-ed on load
// when the op has a pre-norm (never materialised), B the weights packed once at load as (out_features, in_features)
// rows in the model's storage type, float32 accumulation, and the epilogue below storing each finished
// accumulator. The kernels, their shapes and launch geometry are gemm_core.cuh's (run_product picks one).
#include <cstddef>
#include <cstdint>

#include "gemm_int8.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

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

}  // namespace swinfer::hip
