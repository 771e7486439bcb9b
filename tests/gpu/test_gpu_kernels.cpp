// [gpu] Each hip-backend kernel against its naive ops::ref reference: fresh random inputs, poisoned (NaN)
// outputs, odd sizes, every precision and both layouts.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

using namespace swinfer;
using namespace swinfer_gpu_test;

namespace {

template <class S>
tensor<float> as_float(const tensor<S>& t, layout_kind k) {
  return swinfer_test::to_float_tensor(t, k);
}

layout_kind other(layout_kind k) { return k == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw; }

}  // namespace

TEMPLATE_LIST_TEST_CASE("gpu convert: element type and layout", "[gpu][convert]", all_configs) {
  using S = typename TestType::storage;
  const shape5 s{2, 5, 3, 7, 9};
  const auto host = random_tensor<S>(s, TestType::kind, -3.0f, 3.0f);
  const auto src = upload(host);
  SECTION("same type, other layout") {
    auto dst = poisoned_device<S>(s, other(TestType::kind));
    TestType::kernels::convert(gpu(), src, dst);
    tensor<S> want(s, other(TestType::kind));
    ops::ref::convert(host, want);
    check_equal(download(dst), want);
  }
  SECTION("to float32 and back, both layouts") {
    for (const layout_kind k : {layout_kind::ncdhw, layout_kind::ndhwc}) {
      auto f = poisoned_device<float>(s, k);
      TestType::kernels::convert(gpu(), src, f);
      check_equal(download(f), as_float(host, k));  // widening is exact
      auto back = poisoned_device<S>(s, TestType::kind);
      TestType::kernels::convert(gpu(), f, back);
      check_equal(download(back), host);
    }
  }
  SECTION("float32 to storage rounds to nearest even like the host") {
    const auto hf = random_tensor<float>(s, layout_kind::ncdhw, -100.0f, 100.0f);
    auto d = poisoned_device<S>(s, TestType::kind);
    TestType::kernels::convert(gpu(), upload(hf), d);
    tensor<S> want(s, TestType::kind);
    ops::ref::convert(hf, want);
    check_equal(download(d), want);
  }
  SECTION("host edges: upload and download") {
    const auto hf = random_tensor<float>(s, other(TestType::kind));
    auto v = TestType::kernels::upload(gpu(), hf);
    CHECK(v.layout() == TestType::kind);
    const tensor<float> back = TestType::kernels::template download<float>(gpu(), v, layout_kind::ncdhw);
    tensor<S> rounded(s, layout_kind::ncdhw);
    ops::ref::convert(hf, rounded);
    check_equal(back, as_float(rounded, layout_kind::ncdhw));
  }
}

TEMPLATE_LIST_TEST_CASE("gpu concat_channels: N parts", "[gpu][concat]", all_configs) {
  using S = typename TestType::storage;
  const std::vector<int> channels{3, 1, 6};
  std::vector<tensor<S>> host;
  std::vector<typename TestType::volume> dev;
  std::vector<const typename TestType::volume*> parts;
  std::int64_t total = 0;
  for (const int c : channels) {
    host.push_back(random_tensor<S>({2, c, 3, 5, 7}, TestType::kind));
    dev.push_back(upload(host.back()));
    total += c;
  }
  for (const auto& d : dev) parts.push_back(&d);
  const shape5 os{2, total, 3, 5, 7};
  auto out = poisoned_device<S>(os, TestType::kind);
  TestType::kernels::concat_channels(gpu(), parts, out);
  std::vector<const tensor<S>*> host_parts;
  for (const auto& h : host) host_parts.push_back(&h);
  tensor<S> want(os, TestType::kind);
  ops::ref::concat_channels(host_parts, want);
  check_equal(download(out), want);
}

TEMPLATE_LIST_TEST_CASE("gpu pool3d: max and average, floor mode", "[gpu][pool3d]", all_configs) {
  using S = typename TestType::storage;
  for (const int k : {2, 3}) {
    for (const auto mode : {ops::pool_mode::max, ops::pool_mode::avg}) {
      const ops::pool3d_problem p{mode, k};
      const shape5 s{2, 3, 7, 8, 11};  // not multiples of k: floor mode drops the remainder
      const shape5 os = p.output_shape(s);
      const auto host = random_tensor<S>(s, TestType::kind);
      auto out = poisoned_device<S>(os, TestType::kind);
      TestType::kernels::pool3d(gpu(), upload(host), p, out);
      tensor<float> want(os, TestType::kind);
      ops::ref::pool3d(as_float(host, TestType::kind), p, want);
      INFO("kernel " << k << " " << ops::pool_mode_name(mode));
      check_close(download(out), want);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu patch_merge_gather: every order", "[gpu][patch_merge]", all_configs) {
  using S = typename TestType::storage;
  for (const auto order : {ops::merge_order::merging, ops::merge_order::merging_legacy, ops::merge_order::mergingv2}) {
    const shape5 s{2, 5, 4, 6, 10};
    const auto host = random_tensor<S>(s, TestType::kind);
    const shape5 os = ops::patch_merge_shape(s);
    auto out = poisoned_device<S>(os, TestType::kind);
    TestType::kernels::patch_merge_gather(gpu(), upload(host), order, out);
    tensor<S> want(os, TestType::kind);
    ops::ref::patch_merge_gather(host, order, want);
    INFO("order " << ops::merge_order_name(order));
    check_equal(download(out), want);
  }
}

TEMPLATE_LIST_TEST_CASE("gpu instance_norm: residual and LeakyReLU epilogues", "[gpu][instance_norm]", all_configs) {
  using S = typename TestType::storage;
  // The second shape has more spatial positions than one statistics chunk (4096), so chunks are merged.
  // Channels-last statistics are taken by position: C = 3 and 48 leave idle threads, 17x19x23 spans 15 chunks.
  // The apply pass goes in 16-byte packs where a pack shares its channel (channels-first, S = 192 a multiple of
  // 8) or spans channels (channels-last, C = 48); element by element otherwise.
  for (const shape5 s : {shape5{2, 3, 5, 7, 9}, shape5{1, 4, 17, 19, 23}, shape5{2, 48, 5, 6, 7},
                         shape5{2, 5, 4, 6, 8}}) {
    // Residual none, in x's layout (packed: the apply pass indexes by position), or in the other one (strided).
    for (const int residual : {0, 1, 2}) {
      for (const bool with_slope : {false, true}) {
        const bool with_residual = residual > 0;
        const auto host = random_tensor<S>(s, TestType::kind, -2.0f, 5.0f);  // non-zero mean
        const auto res = random_tensor<S>(s, residual == 2 ? other(TestType::kind) : TestType::kind);
        auto x = upload(host);
        const auto r = upload(res);
        ops::instance_norm_epilogue e;
        if (with_slope) e.negative_slope = 0.01f;
        TestType::kernels::instance_norm(gpu(), x, with_residual ? &r : nullptr, e);
        auto want = as_float(host, TestType::kind);
        const auto res_f = as_float(res, TestType::kind);
        ops::ref::instance_norm(want, with_residual ? &res_f : nullptr, e);
        INFO("shape " << s.str() << " residual " << residual << " slope " << with_slope);
        check_close(download(x), want);
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu layer_norm: affine and plain, in place", "[gpu][layer_norm]", all_configs) {
  using S = typename TestType::storage;
  for (const int channels : {45, 97, 384}) {
    for (const bool affine : {true, false}) {
      const std::int64_t rows = 37;
      const auto host = random_tensor<S>(rows_shape(rows, channels), layout_kind::ndhwc, -1.0f, 3.0f);
      const auto gamma = swinfer_test::random_vector(channels, 0.5f, 1.5f);
      const auto beta = swinfer_test::random_vector(channels);
      typename TestType::kernels::layer_norm ln(gpu(), channels, affine ? gamma.data() : nullptr,
                                                affine ? beta.data() : nullptr, 1e-5f);
      const auto x = upload(host);
      auto y = poisoned_device<S>(host.shape(), layout_kind::ndhwc);
      ln.run(x.data(), rows, y.data());
      auto in_place = upload(host);
      ln.run(in_place.data(), rows, in_place.data());
      auto want = as_float(host, layout_kind::ndhwc);
      ops::ref::layer_norm(want.data(), rows, channels, affine ? gamma.data() : nullptr, affine ? beta.data() : nullptr,
                           1e-5f, want.data());
      INFO("channels " << channels << " affine " << affine);
      check_close(download(y), want);
      check_close(download(in_place), want);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu linear: bias, GELU and accumulate epilogues", "[gpu][linear]", all_configs) {
  using S = typename TestType::storage;
  const std::int64_t rows = 53;
  // 37 inputs: rows read element by element; 48: in 16-byte packs (a multiple of 4 floats and of 8 halves).
  for (const int in_features : {37, 48})
    for (const bool bias : {true, false})
      for (const bool gelu : {false, true})
        for (const bool accumulate : {false, true}) {
          const ops::linear_problem p{in_features, 71, bias, gelu, accumulate};
          const auto w = random_weights<S>(static_cast<std::size_t>(p.in_features) * p.out_features, -0.3f, 0.3f);
          const auto b = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
          typename TestType::kernels::linear op(gpu(), p, w.data(), bias ? b.data() : nullptr);
          const auto x = random_tensor<S>(rows_shape(rows, p.in_features), layout_kind::ndhwc);
          const auto y0 = random_tensor<S>(rows_shape(rows, p.out_features), layout_kind::ndhwc);
          auto y = accumulate ? upload(y0) : poisoned_device<S>(y0.shape(), layout_kind::ndhwc);
          op.run(upload(x).data(), rows, y.data());
          const auto xf = as_float(x, layout_kind::ndhwc);
          auto want = as_float(y0, layout_kind::ndhwc);
          ops::ref::linear(p, xf.data(), rows, w.data(), bias ? b.data() : nullptr, want.data());
          INFO("in " << in_features << " bias " << bias << " gelu " << gelu << " accumulate " << accumulate);
          check_close(download(y), want);
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

TEMPLATE_LIST_TEST_CASE("gpu conv3d: implicit GEMM", "[gpu][conv3d]", all_configs) {
  using S = typename TestType::storage;
  struct conv_case {
    ops::conv3d_problem p;
    shape5 in;
  };
  const std::vector<conv_case> cases{
      {{5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 5, 6, 7, 9}},    // UNet 3x3x3
      {{3, 70, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 3, 5, 4, 11}},   // N beyond one 64-wide tile
      {{2, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true}, {1, 2, 8, 6, 10}},   // patch embedding
      {{9, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true}, {2, 9, 3, 5, 7}},     // output head
      {{4, 6, {3, 1, 3}, {2, 1, 2}, {1, 0, 1}, true}, {1, 4, 7, 5, 9}},     // anisotropic
      {{16, 20, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 16, 5, 6, 3}},  // ndhwc: 16-byte packs of channels
      {{16, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {1, 16, 6, 5, 9}}, // and the 128 x 48 tile (cout 48)
  };
  for (const auto& cc : cases) {
    const auto w = random_weights<S>(static_cast<std::size_t>(cc.p.weight_count()), -0.3f, 0.3f);
    const auto b = swinfer_test::random_vector(static_cast<std::size_t>(cc.p.cout));
    typename TestType::kernels::conv3d op(gpu(), cc.p, w.data(), cc.p.bias ? b.data() : nullptr);
    const auto host = random_tensor<S>(cc.in, TestType::kind);
    const shape5 os = cc.p.output_shape(cc.in);
    auto out = poisoned_device<S>(os, TestType::kind);
    op.run(upload(host), out);
    tensor<float> want(os, TestType::kind);
    ops::ref::conv3d(cc.p, as_float(host, TestType::kind), w.data(), cc.p.bias ? b.data() : nullptr, want);
    INFO("cin " << cc.p.cin << " cout " << cc.p.cout << " input " << cc.in.str());
    check_close(download(out), want);
  }
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

TEMPLATE_LIST_TEST_CASE("gpu conv_transpose3d: k2s2", "[gpu][conv_transpose3d]", all_configs) {
  using S = typename TestType::storage;
  for (const auto& [cin, cout] : {std::pair{6, 5}, std::pair{3, 17}, std::pair{16, 5}}) {
    const shape5 s{2, cin, 3, 4, 5};
    const auto w = random_weights<S>(static_cast<std::size_t>(cin) * cout * 8, -0.3f, 0.3f);
    typename TestType::kernels::conv_transpose3d op(gpu(), cin, cout, w.data());
    const auto host = random_tensor<S>(s, TestType::kind);
    const shape5 os = ops::conv_transpose3d_output_shape(s, cin, cout);
    auto out = poisoned_device<S>(os, TestType::kind);
    op.run(upload(host), out);
    tensor<float> want(os, TestType::kind);
    ops::ref::conv_transpose3d(as_float(host, TestType::kind), cout, w.data(), want);
    INFO("cin " << cin << " cout " << cout);
    check_close(download(out), want);
  }
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
