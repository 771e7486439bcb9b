// Window placement and importance weights: the spec's literal examples, MONAI's own dense_patch_slices results
// and compute_importance_map goldens, and the importance count against a brute-force sum over windows.
#include <catch2/catch.hpp>

#include <cmath>

#include "inference_testing.hpp"
#include "swinfer/inference/importance_map.hpp"
#include "swinfer/inference/window_grid.hpp"
#include "tensor_testing.hpp"

using swinfer::scan_interval;
using swinfer::window_starts;
using Starts = std::vector<std::int64_t>;

namespace {

Starts starts_for(std::int64_t size, std::int64_t roi, double overlap) {
  return window_starts(size, roi, scan_interval(size, roi, overlap));
}

}  // namespace

TEST_CASE("window starts: the spec's examples", "[inference][window_grid]") {
  CHECK(starts_for(96, 96, 0.25) == Starts{0});
  CHECK(starts_for(96, 96, 0.7) == Starts{0});  // roi == size: one window whatever the overlap
  CHECK(scan_interval(250, 96, 0.5) == 48);
  CHECK(starts_for(250, 96, 0.5) == Starts{0, 48, 96, 144, 154});
  CHECK(starts_for(120, 96, 0.5) == Starts{0, 24});
  CHECK(scan_interval(70, 32, 0.25) == 24);
  CHECK(starts_for(70, 32, 0.25) == Starts{0, 24, 38});
  CHECK(scan_interval(130, 96, 0.7) == 28);    // 96 * 0.3 = 28.8
  CHECK(scan_interval(120, 100, 0.9) == 9);    // 100 * (1 - 0.9) = 9.999...
  CHECK(scan_interval(6, 4, 0.9) == 1);        // int(0.4) = 0 -> 1
  CHECK(starts_for(110, 100, 0.9) == Starts{0, 9, 10});
}

TEST_CASE("window starts: MONAI's dense_patch_slices", "[inference][window_grid]") {
  for (const auto& e : swinfer_test::sliding_window_manifest().at("start_examples")) {
    const auto size = e.at("size").get<std::int64_t>(), roi = e.at("roi").get<std::int64_t>();
    const auto overlap = e.at("overlap").get<double>();
    CAPTURE(size, roi, overlap);
    CHECK(scan_interval(size, roi, overlap) == e.at("interval").get<std::int64_t>());
    CHECK(starts_for(size, roi, overlap) == e.at("starts").get<Starts>());
  }
  for (const auto& [name, c] : swinfer_test::sliding_window_manifest().at("cases").items()) {
    CAPTURE(name);
    const auto plan = swinfer::detail::plan_sliding_window(swinfer_test::shape_of(c.at("shape")),
                                                           swinfer_test::case_options(c));
    for (std::size_t a = 0; a < 3; ++a) CHECK(plan.grid.starts[a] == c.at("starts").at(a).get<Starts>());
    CHECK(plan.grid.count() == c.at("windows_per_item").get<std::int64_t>());
  }
}

TEST_CASE("window grid: first axis slowest, last windows flush with the end", "[inference][window_grid]") {
  const auto g = swinfer::make_window_grid({70, 20, 18}, {32, 16, 12}, {0.25, 0.25, 0.25});
  REQUIRE(g.count() == 3 * 2 * 2);
  CHECK(g.start(0) == std::array<std::int64_t, 3>{0, 0, 0});
  CHECK(g.start(1) == std::array<std::int64_t, 3>{0, 0, 6});
  CHECK(g.start(2) == std::array<std::int64_t, 3>{0, 4, 0});
  CHECK(g.start(4) == std::array<std::int64_t, 3>{24, 0, 0});
  CHECK(g.start(11) == std::array<std::int64_t, 3>{38, 4, 6});
  CHECK_THROWS_AS(window_starts(10, 12, 3), swinfer::error);
  CHECK_THROWS_AS(window_starts(10, 4, 0), swinfer::error);
}

TEST_CASE("importance map: MONAI's compute_importance_map", "[inference][importance_map]") {
  SECTION("constant is all ones") {
    const auto m = swinfer::importance_map({3, 4, 5}, swinfer::blend_mode::constant);
    for (std::int64_t i = 0; i < m.size(); ++i) CHECK(m.data()[i] == 1.0f);
  }
  for (const auto& [name, e] : swinfer_test::sliding_window_manifest().at("importance_maps").items()) {
    SECTION(name) {
      const auto roi = e.at("roi").get<std::vector<std::int64_t>>();
      const auto sigma = swinfer_test::per_axis_of<double>(e.at("sigma_scale")).resolve("sigma_scale");
      const auto ours = swinfer::importance_map({roi[0], roi[1], roi[2]}, swinfer::blend_mode::gaussian, sigma);
      const auto monai = swinfer_test::load_golden(name);
      const auto err = swinfer_test::compare(ours, monai);
      // float32 exp may differ from Sleef's by an ulp; three factors multiply it.
      CHECK(err.max_abs <= 2e-7);
    }
  }
  SECTION("the 1e-3 floor") {
    // roi 96, sigma 0.125: the raw corner is about 6e-11, so the corners are lifted to 1e-3.
    const auto m = swinfer::importance_map({96, 4, 4}, swinfer::blend_mode::gaussian, {0.125, 10.0, 10.0});
    CHECK(m(0, 0, 0, 0, 0) == 1e-3f);
    CHECK(m(0, 0, 47, 1, 1) < 1.0f);  // not normalised: even sizes never reach 1
    CHECK(m(0, 0, 47, 1, 1) > 0.99f);
  }
  CHECK_THROWS_WITH(swinfer::importance_map({8, 8, 8}, swinfer::blend_mode::gaussian, {0.125, 0.0, 0.125}),
                    Catch::Contains("sigma_scale 0"));
  CHECK_THROWS_WITH(swinfer::importance_map({8, 0, 8}, swinfer::blend_mode::constant), Catch::Contains("is 0"));
}

TEST_CASE("importance count equals the sum of the importance map over all windows", "[inference][importance_map]") {
  const auto mode = GENERATE(swinfer::blend_mode::constant, swinfer::blend_mode::gaussian);
  const std::array<std::int64_t, 3> size{70, 23, 18}, roi{32, 16, 12};
  const auto g = swinfer::make_window_grid(size, roi, {0.25, 0.6, 0.5});
  const auto imp = swinfer::importance_map(roi, mode, {0.125, 0.2, 0.3});
  const auto count = swinfer::importance_count(g, imp);

  // Brute force, MONAI's way: add the whole map at every window position, in window order.
  swinfer::tensor<float> brute({1, 1, size[0], size[1], size[2]}, swinfer::layout_kind::ncdhw);
  brute.fill(0.0f);
  std::vector<double> exact(static_cast<std::size_t>(brute.size()));
  for (std::int64_t w = 0; w < g.count(); ++w) {
    const auto s = g.start(w);
    for (std::int64_t z = 0; z < roi[0]; ++z)
      for (std::int64_t y = 0; y < roi[1]; ++y)
        for (std::int64_t x = 0; x < roi[2]; ++x) {
          brute(0, 0, s[0] + z, s[1] + y, s[2] + x) += imp(0, 0, z, y, x);
          const auto flat = ((s[0] + z) * size[1] + s[1] + y) * size[2] + s[2] + x;
          exact[static_cast<std::size_t>(flat)] += imp(0, 0, z, y, x);
        }
  }
  CHECK(swinfer_test::compare(count, brute).max_abs == 0.0);  // same order of float32 additions: bit-identical
  double worst = 0;
  for (std::int64_t i = 0; i < count.size(); ++i) {
    const double e = exact[static_cast<std::size_t>(i)];
    worst = std::max(worst, std::abs(count.data()[i] - e) / e);
  }
  CHECK(worst < 1e-6);
}
