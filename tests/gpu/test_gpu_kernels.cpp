// [gpu] The hip backend beyond the shared op suite (test_gpu_ops.cpp runs every op's case table, the fused overloads
// and the argument errors): a strided residual, the host edges, and the context. Fresh random inputs, every
// precision and both layouts.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/instance_norm.hpp"

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
  // The shared suite (tests/ops) covers the residual in x's layout; here the apply pass reads it strided. The last
  // two shapes give the statistics more chunks than the finalize kernel has threads (128), the last chunk partial:
  // 577 chunks of 128 positions channels-last, 130 of 4096 channels-first. 48 channels channels-last are read in
  // 16-byte packs.
  for (const shape5 s : {shape5{2, 3, 5, 7, 9}, shape5{1, 4, 17, 19, 23}, shape5{2, 48, 5, 6, 7},
                         shape5{2, 5, 4, 6, 8}, shape5{1, 3, 41, 45, 40}, shape5{1, 2, 81, 81, 81}}) {
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

TEST_CASE("gpu context: SWINFER_GPU_CONV and SWINFER_GPU_ATTENTION pick kernels, and a wrong value says what is "
          "accepted",
          "[gpu][context]") {
  const auto choices_with = [](const char* name, const char* value) {
    const scoped_environment set(name, value);
    return hip::context(environment_options()).kernels();
  };
  CHECK(choices_with("SWINFER_GPU_CONV", "gemm").conv == hip::conv_kernel_choice::gemm);
  CHECK(choices_with("SWINFER_GPU_CONV", "halo").conv == hip::conv_kernel_choice::halo);
  CHECK(choices_with("SWINFER_GPU_CONV", "wgmma").conv == hip::conv_kernel_choice::wgmma);
  CHECK(choices_with("SWINFER_GPU_CONV", "direct").conv == hip::conv_kernel_choice::direct);
  CHECK(choices_with("SWINFER_GPU_CONV", "auto").conv == hip::conv_kernel_choice::automatic);
  CHECK(choices_with("SWINFER_GPU_CONV", "").conv == hip::conv_kernel_choice::automatic);
  CHECK(choices_with("SWINFER_GPU_ATTENTION", "mma").attention == hip::attention_kernel_choice::mma);
  CHECK(choices_with("SWINFER_GPU_ATTENTION", "fma").attention == hip::attention_kernel_choice::fma);
  CHECK(choices_with("SWINFER_GPU_ATTENTION", "").attention == hip::attention_kernel_choice::automatic);
  CHECK(choices_with("SWINFER_GPU_ATTENTION", "mma").conv == hip::conv_kernel_choice::automatic);
  const auto rejects = [&](const char* name, const char* value, const std::string& accepted) {
    try {
      choices_with(name, value);
      FAIL(name << "=" << value << " was accepted");
    } catch (const swinfer::error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find(std::string(name) + "=" + value) != std::string::npos);
      CHECK(what.find(accepted) != std::string::npos);
    }
  };
  rejects("SWINFER_GPU_CONV", "fast", "auto, halo, gemm, wgmma, direct");
  rejects("SWINFER_GPU_ATTENTION", "flash", "auto, fma, mma");
  backend_options<backend::hip> in_code;  // set in code, no variable involved
  in_code.kernels = {hip::conv_kernel_choice::gemm, hip::attention_kernel_choice::fma};
  CHECK(hip::context(in_code).kernels().conv == hip::conv_kernel_choice::gemm);
  CHECK(hip::context(in_code).kernels().attention == hip::attention_kernel_choice::fma);
  hip::context ctx(environment_options());
  ctx.choose_kernels({hip::conv_kernel_choice::halo, hip::attention_kernel_choice::mma});
  CHECK(ctx.env().kernels.conv == hip::conv_kernel_choice::halo);
  CHECK(ctx.env().kernels.attention == hip::attention_kernel_choice::mma);
}

// With SWINFER_GPU_CONV=wgmma the warpgroup products are on exactly where they can run (the emulator with 32-lane
// warps, an sm_90 GPU with this build's sm_90a code) and their start-up self-test agreed with the halo tile;
// elsewhere, and with neither that nor kernel tuning, they are off and the note says why.
TEST_CASE("gpu context: wgmma convolutions where asked for and the device has them, and their self-test",
          "[gpu][context]") {
  {
    const scoped_environment automatic("SWINFER_GPU_CONV", "auto"), untuned("SWINFER_GPU_TUNE", "off");
    CHECK_FALSE(hip::context(environment_options()).device().warpgroup_mma);
  }
  const scoped_environment set("SWINFER_GPU_CONV", "wgmma");
  const hip::context ctx(environment_options());
  const hip::device_properties& d = ctx.device();
  INFO(d.arch << ", warp size " << d.warp_size << ": wgmma convolutions " << d.warpgroup_mma_note);
  CHECK_FALSE(d.warpgroup_mma_note.empty());
  const bool emulated = d.arch == "cpu-emulator";
  if ((emulated && d.warp_size == 32) || (d.arch == "sm_90" && d.matrix_cores)) {
    CHECK(d.warpgroup_mma);
  } else if (emulated || d.platform == "amd") {
    CHECK_FALSE(d.warpgroup_mma);
  }
}

TEST_CASE("gpu context: the device memory swinfer holds, now and at its peak", "[gpu][context]") {
  const int device = gpu().device().index;
  gpu().synchronize();
  hip::reset_device_memory_peak(device);
  const hip::device_memory_use before = hip::device_memory(device);
  CHECK(before.peak == before.in_use);
  {
    const hip::device_buffer a(3 << 20), b(5 << 20);
    CHECK(hip::device_memory(device).in_use == before.in_use + (8 << 20));
  }
  const hip::device_memory_use after = hip::device_memory(device);
  CHECK(after.in_use == before.in_use);
  CHECK(after.peak == before.in_use + (8 << 20));
  hip::reset_device_memory_peak(device);
  CHECK(hip::device_memory(device).peak == before.in_use);
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

TEST_CASE("gpu int8 without matrix cores is an error that says what to use instead", "[gpu][int8][matrix_cores]") {
  const scoped_environment off("SWINFER_GPU_MATRIX_CORES", "0");
  hip::context ctx(environment_options());
  REQUIRE_FALSE(ctx.device().matrix_cores);
  const std::vector<float> weight(16 * 8, 0.5f);
  using linear = kernels<backend::hip, precision::int8, layout::ndhwc>::linear;
  const ops::linear_problem p{16, 8, false, false, false, {"blocks.0.mlp.linear1", 0.01f}};
  CHECK_THROWS_WITH(linear(ctx, p, weight.data(), nullptr),
                    Catch::Contains("int8 matrix cores") && Catch::Contains("SWINFER_GPU_MATRIX_CORES=0") &&
                        Catch::Contains("fp16 or bf16"));
  // A product the calibration leaves in float needs none.
  CHECK_NOTHROW(linear(ctx, {16, 8, false}, weight.data(), nullptr));
}
