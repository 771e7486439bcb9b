// swinfer hip backend: the k2s2 transposed convolution as one GEMM with a scattering epilogue, on the shared tiled
// GEMM (gemm_core.cuh; int8 weights through gemm_int8.cuh).
//
// C[M, N] = A[M, K] B[K, N] with M = n * d * h * w input positions, K = cin, N = 8 * cout (the 2 x 2 x 2 taps of
// every output channel): A the input voxels' channels, B the weights packed once at load as (8 * cout, cin) rows,
// float32 accumulation, and an epilogue that stores column (a*4 + b*2 + c)*cout + o of input position (z, y, x)
// at out(n, o, 2z+a, 2y+b, 2x+c). The kernels, their shapes and launch geometry are gemm_core.cuh's.
#include <cstdint>

#include "gemm_int8.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

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


}  // namespace swinfer::hip
