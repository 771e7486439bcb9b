// cpu conv3d's implementation list (backends/cpu/.../conv3d.hpp): the automatic walk prepares what the op ran before
// the list existed (float32 Winograd F(2x2x2) on large grids, the whole-grid GEMM for large weights on small grids,
// the direct GEMM for the rest; F(4x4x4) under 16-bit storage; the int8 product kernel int8_dot chose), forcing an
// implementation runs it or fails naming why, and the tool's SWINFER_CPU_CONV3D maps onto the option. The results
// of every implementation against the reference are the op suite's (tests/ops/op_suite.hpp, conv3d_suite).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu_test_support.hpp"
#include <swinfer/runtime/option_environment.hpp>
#include "swinfer/backend/cpu/conv3d.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "tensor_testing.hpp"

using namespace swinfer;
using swinfer::cpu::conv3d_kernel;

namespace {

ops::conv3d_problem conv(int cin, int cout, int k) {
  const int pad = k / 2;
  return {cin, cout, {k, k, k}, {1, 1, 1}, {pad, pad, pad}, true};
}

cpu::context context_forcing(conv3d_kernel k, bf16_weight_mode weights = bf16_weight_mode::exact) {
  backend_options<backend::cpu> o = engine_options{2};
  o.kernels.conv3d = k;
  o.bf16_weights = weights;
  return cpu::context(o);
}

template <class S>
cpu::conv3d<S> made(cpu::context& ctx, const ops::conv3d_problem& p) {
  const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
  const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.cout));
  return cpu::conv3d<S>(ctx, p, weight.data(), bias.data());
}

/// Sets an environment variable for one scope.
class scoped_variable {
 public:
  scoped_variable(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~scoped_variable() { ::unsetenv(name_); }
  scoped_variable(const scoped_variable&) = delete;
  scoped_variable& operator=(const scoped_variable&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("cpu conv3d: the automatic choice walks the implementation list as the op chose before it", "[cpu][conv3d]") {
  using winograd4 = cpu::conv3d_winograd_tiles<Eigen::half, cpu::winograd::f4x3>;
  cpu::context ctx(engine_options{2});
  const shape5 small{1, 0, 3, 3, 3}, large{1, 0, 8, 8, 8};
  const auto with_c = [](shape5 s, std::int64_t c) {
    s.c = c;
    return s;
  };

  // float32: F(2x2x2) where it pays (48 channels; 3x3x3 only), on grids from 4^3; the direct GEMM elsewhere.
  const auto p48 = conv(48, 48, 3);
  REQUIRE(cpu::conv3d_winograd<cpu::winograd::f2x3>::pays(p48));
  auto f48 = made<float>(ctx, p48);
  CHECK(f48.kernel() == conv3d_kernel::winograd2);
  CHECK(f48.path() == "winograd2");
  CHECK(f48.kernel_for(with_c(large, 48)) == conv3d_kernel::winograd2);
  CHECK(f48.kernel_for(with_c(small, 48)) == conv3d_kernel::direct);
  CHECK(made<float>(ctx, conv(48, 48, 1)).kernel() == conv3d_kernel::direct);
  CHECK(made<float>(ctx, conv(4, 48, 3)).kernel() == conv3d_kernel::direct);  // too few channels for Winograd

  // Weights past 2 MiB (384 -> 384, 3x3x3: 15 MiB, too large a transformed filter for Winograd): the whole grid as
  // one GEMM up to 512 voxels (3^3, 8^3), the direct GEMM on 16^3.
  const auto p384 = conv(384, 384, 3);
  REQUIRE_FALSE(cpu::conv3d_winograd<cpu::winograd::f2x3>::pays(p384));
  auto f384 = made<float>(ctx, p384);
  CHECK(f384.kernel() == conv3d_kernel::whole_grid);
  CHECK(f384.kernel_for(with_c(small, 384)) == conv3d_kernel::whole_grid);
  CHECK(f384.kernel_for(with_c(large, 384)) == conv3d_kernel::whole_grid);
  CHECK(f384.kernel_for(with_c({1, 0, 16, 16, 16}, 384)) == conv3d_kernel::direct);

  // 16-bit storage: F(4x4x4) on grids from 8^3; below that the direct GEMM (F(2x2x2) is not prepared beside it).
  REQUIRE(cpu::conv3d_winograd<cpu::winograd::f4x3>::pays(p48));
  auto h48 = made<Eigen::half>(ctx, p48);
  CHECK(h48.kernel() == winograd4::id);
  CHECK(h48.kernel_for(with_c(large, 48)) == conv3d_kernel::winograd4);
  CHECK(h48.kernel_for(with_c({1, 0, 4, 4, 4}, 48)) == conv3d_kernel::direct);

  // int8: the product kernel int8_dot picks for the shape.
  auto q = p48;
  q.int8 = {"test.point", 0.01f};
  const auto best = cpu::int8_dot::best_path((3 * 48 + cpu::int8_dot::quad - 1) / cpu::int8_dot::quad);
  const conv3d_kernel expected = best == cpu::int8_dot::int8_path::amx    ? conv3d_kernel::int8_amx
                                 : best == cpu::int8_dot::int8_path::vnni ? conv3d_kernel::int8_vnni
                                 : best == cpu::int8_dot::int8_path::madd ? conv3d_kernel::int8_madd
                                                                          : conv3d_kernel::int8_portable;
  CHECK(made<float>(ctx, q).kernel() == expected);
}

TEST_CASE("cpu conv3d: a forced implementation runs, or fails naming why it cannot", "[cpu][conv3d]") {
  const auto refused = [](conv3d_kernel k, auto storage, const ops::conv3d_problem& p, const std::string& why,
                          bf16_weight_mode weights = bf16_weight_mode::exact) {
    using S = decltype(storage);
    auto ctx = context_forcing(k, weights);
    INFO(cpu::conv3d_implementations<S>::name_of(k));
    CHECK_THROWS_WITH(made<S>(ctx, p), Catch::Contains("cannot run it") && Catch::Contains(why) &&
                                           Catch::Contains(std::string(cpu::conv3d_implementations<S>::name_of(k))));
  };
  refused(conv3d_kernel::winograd2, float{}, conv(8, 8, 1), "3x3x3");
  refused(conv3d_kernel::winograd4, float{}, conv(8, 8, 3), "16-bit storage");
  refused(conv3d_kernel::bf16_pairs, Eigen::bfloat16{}, conv(8, 8, 3), "bf16_weights = rounded");
  refused(conv3d_kernel::amx_bf16, float{}, conv(8, 8, 3), "bf16 storage");
  refused(conv3d_kernel::int8_portable, float{}, conv(8, 8, 3), "quantized");
  auto q = conv(8, 8, 3);
  q.int8 = {"test.point", 0.01f};
  refused(conv3d_kernel::direct, float{}, q, "quantized");

  // Where it can, the forced one is what runs, on every grid (the op suite checks its results).
  for (const conv3d_kernel k : {conv3d_kernel::direct, conv3d_kernel::whole_grid, conv3d_kernel::winograd2}) {
    auto ctx = context_forcing(k);
    auto op = made<float>(ctx, conv(8, 8, 3));
    CHECK(op.kernel() == k);
    CHECK(op.kernel_for({1, 8, 2, 2, 2}) == k);
    CHECK(op.kernel_for({1, 8, 16, 16, 16}) == k);
  }
  auto ctx = context_forcing(conv3d_kernel::int8_portable);
  CHECK(made<float>(ctx, q).kernel() == conv3d_kernel::int8_portable);
}

TEST_CASE("cpu conv3d: SWINFER_CPU_CONV3D sets the forced implementation where the tool maps variables",
          "[cpu][conv3d][environment]") {
  {
    const scoped_variable set("SWINFER_CPU_CONV3D", "winograd2");
    CHECK(swinfer::runtime::cpu_options_from_environment().kernels.conv3d == conv3d_kernel::winograd2);
  }
  {
    const scoped_variable set("SWINFER_CPU_CONV3D", "auto");
    CHECK(swinfer::runtime::cpu_options_from_environment().kernels.conv3d == conv3d_kernel::automatic);
  }
  CHECK(swinfer::runtime::cpu_options_from_environment().kernels.conv3d == conv3d_kernel::automatic);
  const scoped_variable set("SWINFER_CPU_CONV3D", "fastest");
  CHECK_THROWS_WITH(swinfer::runtime::cpu_options_from_environment(),
                    Catch::Contains("SWINFER_CPU_CONV3D=fastest") &&
                        Catch::Contains("auto, int8-amx, int8-vnni, int8-madd, int8-portable, amx-bf16, winograd4, "
                                        "bf16-pairs, winograd2, whole-grid, direct"));
}
