// swinfer hip backend: the start-up self-tests of the matrix-core paths, run once per context before it trusts them:
// matrix_cores_verified (fp16/bf16 linear on the matrix cores against float32 FMA, bit for bit; int8 against the
// exact integer sums) and warpgroup_mma_verified (the wgmma convolution against the halo tile's, bit for bit). Both
// use integer data whose every sum is exact in float32, so any difference is a wrong product, not rounding. They
// launch the ops' own entry points (gemm_linear.cu, conv3d.cu) and define no kernels.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common.cuh"
#include "conv3d_wgmma.cuh"

namespace swinfer::hip {

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
