// [gpu] The hip backend beyond the shared op suite (test_gpu_ops.cpp runs every op's case table): the fused
// overloads (LayerNorm into linear, InstanceNorm and a two-part concatenation into conv3d), a strided residual, the
// host edges, and the context. Fresh random inputs, poisoned (NaN) outputs, every precision and both layouts.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"

using namespace swinfer;
using namespace swinfer_gpu_test;

namespace {

template <class S>
tensor<float> as_float(const tensor<S>& t, layout_kind k) {
  return swinfer_test::to_float_tensor(t, k);
}

layout_kind other(layout_kind k) { return k == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw; }

}  // namespace

TEMPLATE_LIST_TEST_CASE("gpu convert: upload and download at the host edges", "[gpu][convert]", all_configs) {
  using S = typename TestType::storage;
  const shape5 s{2, 5, 3, 7, 9};
  const auto hf = random_tensor<float>(s, other(TestType::kind));
  auto v = TestType::kernels::upload(gpu(), hf);
  CHECK(v.layout() == TestType::kind);
  const tensor<float> back = TestType::kernels::template download<float>(gpu(), v, layout_kind::ncdhw);
  tensor<S> rounded(s, layout_kind::ncdhw);
  ops::ref::convert(hf, rounded);
  check_equal(back, as_float(rounded, layout_kind::ncdhw));
}

TEMPLATE_LIST_TEST_CASE("gpu instance_norm: a residual in the other layout (strided)", "[gpu][instance_norm]",
                        all_configs) {
  using S = typename TestType::storage;
  // The shared suite (tests/ops) covers the residual in x's layout; here the apply pass reads it strided.
  for (const shape5 s : {shape5{2, 3, 5, 7, 9}, shape5{1, 4, 17, 19, 23}, shape5{2, 48, 5, 6, 7},
                         shape5{2, 5, 4, 6, 8}}) {
    for (const bool with_slope : {false, true}) {
      const auto host = random_tensor<S>(s, TestType::kind, -2.0f, 5.0f);  // non-zero mean
      const auto res = random_tensor<S>(s, other(TestType::kind));
      auto x = upload(host);
      const auto r = upload(res);
      ops::instance_norm_epilogue e;
      if (with_slope) e.negative_slope = 0.01f;
      TestType::kernels::instance_norm(gpu(), x, &r, e);
      auto want = as_float(host, TestType::kind);
      const auto res_f = as_float(res, TestType::kind);
      ops::ref::instance_norm(want, &res_f, e);
      INFO("shape " << s.str() << " slope " << with_slope);
      check_close(download(x), want);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu linear applies the LayerNorm of its input on load", "[gpu][linear][fused_norm]",
                        all_configs) {
  using S = typename TestType::storage;
  const std::int64_t rows = 53;
  for (const int in_features : {37, 48})  // element by element, and in packs
    for (const bool affine : {true, false})
      for (const bool accumulate : {false, true}) {
        const ops::linear_problem p{in_features, 96, true, true, accumulate};  // 96: the 128 x 48 tiles
        const auto w = random_weights<S>(static_cast<std::size_t>(p.in_features) * p.out_features, -0.3f, 0.3f);
        const auto b = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
        const auto gamma = swinfer_test::random_vector(static_cast<std::size_t>(in_features), 0.5f, 1.5f);
        const auto beta = swinfer_test::random_vector(static_cast<std::size_t>(in_features));
        typename TestType::kernels::layer_norm norm(gpu(), in_features, affine ? gamma.data() : nullptr,
                                                    affine ? beta.data() : nullptr, 1e-5f);
        typename TestType::kernels::linear op(gpu(), p, w.data(), b.data());
        const auto x = random_tensor<S>(rows_shape(rows, p.in_features), layout_kind::ndhwc, -1.0f, 3.0f);
        const auto y0 = random_tensor<S>(rows_shape(rows, p.out_features), layout_kind::ndhwc);
        auto y = accumulate ? upload(y0) : poisoned_device<S>(y0.shape(), layout_kind::ndhwc);
        const auto dx = upload(x);
        op.run(norm, dx.data(), rows, y.data());
        auto normalised = as_float(x, layout_kind::ndhwc);
        ops::ref::layer_norm(normalised.data(), rows, in_features, affine ? gamma.data() : nullptr,
                             affine ? beta.data() : nullptr, 1e-5f, normalised.data());
        const auto xf = rounded_like_storage<S>(normalised, layout_kind::ndhwc);
        auto want = as_float(y0, layout_kind::ndhwc);
        ops::ref::linear(p, xf.data(), rows, w.data(), b.data(), want.data());
        INFO("in " << in_features << " affine " << affine << " accumulate " << accumulate);
        check_close(download(y), want);
        check_equal(download(dx), x);
      }
  typename TestType::kernels::layer_norm narrow(gpu(), 8, nullptr, nullptr, 1e-5f);
  typename TestType::kernels::linear wide(gpu(), {9, 4, false, false, false},
                                          swinfer_test::random_vector(36).data(), nullptr);
  auto y = poisoned_device<S>(rows_shape(2, 4), layout_kind::ndhwc);
  const auto x = upload(random_tensor<S>(rows_shape(2, 9), layout_kind::ndhwc));
  CHECK_THROWS_AS(wide.run(narrow, x.data(), 2, y.data()), swinfer::error);
}

TEMPLATE_LIST_TEST_CASE("gpu conv3d applies the InstanceNorm and LeakyReLU of its input on load",
                        "[gpu][conv3d][fused_norm]", all_configs) {
  using S = typename TestType::storage;
  // Two samples (their own statistics; 128-row tiles straddle them); cin 5 element by element, cin 16 in packs.
  const std::vector<std::pair<ops::conv3d_problem, shape5>> cases{
      {{5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 5, 6, 7, 9}},
      {{16, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 16, 5, 6, 7}},
  };
  for (const auto& [p, in] : cases) {
    for (const bool with_slope : {false, true}) {
      const auto w = random_weights<S>(static_cast<std::size_t>(p.weight_count()), -0.3f, 0.3f);
      const auto b = swinfer_test::random_vector(static_cast<std::size_t>(p.cout));
      typename TestType::kernels::conv3d op(gpu(), p, w.data(), p.bias ? b.data() : nullptr);
      const auto host = random_tensor<S>(in, TestType::kind, -2.0f, 5.0f);  // non-zero mean
      ops::instance_norm_epilogue e;
      if (with_slope) e.negative_slope = 0.01f;
      const auto x = upload(host);
      const shape5 os = p.output_shape(in);
      auto out = poisoned_device<S>(os, TestType::kind);
      op.run(x, e, out);
      auto normalised = as_float(host, TestType::kind);
      ops::ref::instance_norm(normalised, nullptr, e);
      tensor<float> want(os, TestType::kind);
      ops::ref::conv3d(p, rounded_like_storage<S>(normalised, TestType::kind), w.data(), p.bias ? b.data() : nullptr,
                       want);
      INFO("cin " << p.cin << " cout " << p.cout << " slope " << with_slope);
      check_close(download(out), want);
      check_equal(download(x), host);  // the input is read, never normalised in place
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu conv3d reads the concatenation of two inputs where they are",
                        "[gpu][conv3d][fused_concat]", all_configs) {
  using S = typename TestType::storage;
  // Parts of 5 + 3 channels (element by element), 16 + 16 (packs from both), 16 + 5 (the second rules packs out);
  // 3x3x3 (a decoder's conv1) and 1x1x1 (its residual projection); two samples.
  struct concat_case {
    int first, second, cout, kernel;
  };
  for (const auto& c : {concat_case{5, 3, 7, 3}, concat_case{16, 16, 48, 3}, concat_case{16, 16, 48, 1},
                        concat_case{16, 5, 20, 3}}) {
    ops::conv3d_problem p;
    p.cin = c.first + c.second;
    p.cout = c.cout;
    p.kernel = {c.kernel, c.kernel, c.kernel};
    p.pad = {c.kernel / 2, c.kernel / 2, c.kernel / 2};
    const auto w = random_weights<S>(static_cast<std::size_t>(p.weight_count()), -0.3f, 0.3f);
    typename TestType::kernels::conv3d op(gpu(), p, w.data(), nullptr);
    const auto a = random_tensor<S>({2, c.first, 5, 6, 7}, TestType::kind);
    const auto b = random_tensor<S>({2, c.second, 5, 6, 7}, TestType::kind);
    const shape5 joined{2, p.cin, 5, 6, 7};
    auto out = poisoned_device<S>(p.output_shape(joined), TestType::kind);
    op.run(upload(a), upload(b), out);
    tensor<S> cat(joined, TestType::kind);
    ops::ref::concat_channels({&a, &b}, cat);
    tensor<float> want(out.shape(), TestType::kind);
    ops::ref::conv3d(p, as_float(cat, TestType::kind), w.data(), nullptr, want);
    INFO("parts " << c.first << " + " << c.second << ", kernel " << c.kernel);
    check_close(download(out), want);
  }
  typename TestType::kernels::conv3d op(gpu(), {4, 3}, swinfer_test::random_vector(4 * 3 * 27).data(), nullptr);
  auto out = poisoned_device<S>({1, 3, 4, 4, 4}, TestType::kind);
  const auto two = upload(random_tensor<S>({1, 2, 4, 4, 4}, TestType::kind));
  const auto other_grid = upload(random_tensor<S>({1, 2, 4, 4, 5}, TestType::kind));
  CHECK_THROWS_AS(op.run(two, other_grid, out), swinfer::error);
}

TEST_CASE("gpu context: device facts", "[gpu][context]") {
  const auto& d = gpu().device();
  CHECK(d.warp_size > 0);
  CHECK((d.warp_size & (d.warp_size - 1)) == 0);
  CHECK(d.multiprocessors > 0);
  CHECK(d.platform == hip::platform());
}

TEST_CASE("gpu context: running out of device memory is an error that says what to do", "[gpu][context]") {
  // Twice the device's memory: refused on every device, and the memory already held stays usable.
  const auto& d = gpu().device();
  const std::int64_t elements = static_cast<std::int64_t>(d.global_memory / sizeof(float)) * 2;
  try {
    hip::device_tensor<float> too_big({1, 1, 1, 1, elements}, layout_kind::ndhwc);
    FAIL("allocating " << (elements * 4 >> 20) << " MiB succeeded");
  } catch (const swinfer::error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("out of device memory allocating") != std::string::npos);
    CHECK(what.find("sw_batch") != std::string::npos);
  }
  const auto host = random_tensor<float>({1, 2, 3, 4, 5}, layout_kind::ndhwc);
  check_equal(download(upload(host)), host);
}

TEST_CASE("gpu matrix cores are on wherever the device has them", "[gpu][matrix_cores]") {
  // The context falls back to float32 FMA when its start-up self-test disagrees; on a device that has matrix cores
  // (and the emulator) that fallback is a failure to report, not a state to test the kernels in.
  const auto& d = gpu().device();
  std::string why;
  if (!hip::matrix_cores_supported(d, &why)) {
    WARN("no matrix-core path on this device: " << why);
    return;
  }
  const char* env = std::getenv("SWINFER_GPU_MATRIX_CORES");
  if (env && std::string(env) == "0") return;
  INFO("matrix cores " << d.matrix_cores_note);
  CHECK(d.matrix_cores);
  std::string disagreement;
  CHECK(hip::matrix_cores_verified(gpu().env(), &disagreement));
}
