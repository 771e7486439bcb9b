// Swin Fusion UNETR configuration: parameter counts against the spec's formulas, JSON options, inference of the
// variant from a checkpoint's tensors.
#include <catch2/catch.hpp>

#include <string>

#include "error_testing.hpp"

#include <swinfer/model/config_json.hpp>
#include <swinfer/model/synthetic_weights.hpp>
#include <swinfer/model/weights_check.hpp>

using swinfer::fusion_variant;
using swinfer::skip_pool;
using swinfer::swin_unetr_config;

namespace {

swin_unetr_config fusion(fusion_variant v, int final_kernel = 1, skip_pool pool = skip_pool::max) {
  swin_unetr_config c;
  c.arch = swinfer::model_arch::swin_fusion_unetr;
  c.feature_size = 48;
  c.in_channels = 1;
  c.out_channels = 2;
  c.fusion.variant = v;
  c.fusion.final_kernel_size = final_kernel;
  c.fusion.pool = pool;
  c.downsample = swinfer::ops::merge_order::merging_legacy;
  return c;
}

std::int64_t parameters_under(const swin_unetr_config& c, const std::string& prefix) {
  std::int64_t total = 0;
  for (const auto& e : swinfer::expected_tensors(c)) {
    if (e.is_index || e.key.rfind(prefix, 0) != 0) continue;
    std::int64_t n = 1;
    for (auto d : e.shape) n *= d;
    total += n;
  }
  return total;
}

swinfer::state_dict fake_weights(const swin_unetr_config& c) {
  return swinfer::synthetic_weights(c, [](const swinfer::expected_tensor&, std::int64_t) { return 0.0f; });
}

}  // namespace

TEST_CASE("Swin Fusion parameter counts are the spec's (section 7)", "[config][fusion]") {
  CHECK(swinfer::parameter_count(fusion(fusion_variant::od)) == 45'446'786);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::od, 3)) == 104'910'242);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::od_large)) == 47'381'012);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::v2_2, 1)) == 66'295'136);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::v2_2, 3)) == 80'196'608);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::v2_2, 1, skip_pool::maxavg)) == 66'581'120);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::v1_1)) == 62'967'860);
  CHECK(swinfer::parameter_count(fusion(fusion_variant::v1_2)) == 63'060'212);
  // max and avg pooling have no parameters.
  CHECK(swinfer::parameter_count(fusion(fusion_variant::od, 1, skip_pool::avg)) == 45'446'786);

  // od: 196 state_dict entries (188 parameters + 8 index buffers) and the per-level PoolSkip costs of section 2.5.
  const auto od = fusion(fusion_variant::od);
  CHECK(swinfer::expected_tensors(od).size() == 196);
  CHECK(parameters_under(od, "poolskip1.") == 7'062);
  CHECK(parameters_under(od, "poolskip2.") == 161'526);
  CHECK(parameters_under(od, "poolskip3.") == 788'406);
  CHECK(parameters_under(od, "poolskip4.") == 3'313'974);
  CHECK(parameters_under(od, "poolskip5.") == 13'452'342);
  CHECK(parameters_under(od, "encoder10.") == 0);

  // 2_v2's fusion cost per level with k1, branch blocks included (section 3): 49 -> 48, 145 -> 96, 336 -> 192,
  // 672 -> 384.
  const auto v2 = fusion(fusion_variant::v2_2);
  CHECK(parameters_under(v2, "poolskip1.") == 7'062);
  CHECK(parameters_under(v2, "poolskip2.") == 161'526);
  CHECK(parameters_under(v2, "poolskip3.") == 787'968);
  CHECK(parameters_under(v2, "poolskip4.") == 3'151'872);
  CHECK(parameters_under(v2, "encoder10.") == 31'850'496);

  // od(large) single-branch boosts of section 5's table (given to 0.001 M there).
  auto boosted = [](int stage, int width) {
    auto c = fusion(fusion_variant::od);
    c.fusion.branch_channels[stage - 1] = width;
    return static_cast<double>(swinfer::parameter_count(c));
  };
  CHECK(boosted(1, 48) == Approx(45.904e6).margin(500));
  CHECK(boosted(2, 96) == Approx(46.599e6).margin(500));
  CHECK(boosted(3, 192) == Approx(48.746e6).margin(500));
  CHECK(boosted(4, 256) == Approx(47.904e6).margin(500));
}

TEST_CASE("Swin Fusion options are read from the config file", "[config][fusion]") {
  const auto c = swinfer::config_from_json(nlohmann::json::parse(R"({
      "arch": "SwinFusionUNETR", "variant": "2_v2", "skip_pool": "maxavg", "final_kernel_size": 3,
      "feature_size": 24, "in_channels": 1, "out_channels": 2})"),
                                           "fusion.json");
  CHECK(c.is_fusion());
  CHECK(c.fusion.variant == fusion_variant::v2_2);
  CHECK(c.fusion.pool == skip_pool::maxavg);
  CHECK(c.fusion.final_kernel_size == 3);
  CHECK(c.downsample == swinfer::ops::merge_order::merging_legacy);  // the author's MONAI predates 1.5's order

  // The notebook's import path as a bundle _target_; an explicit downsample wins over the fusion default.
  const auto od = swinfer::config_from_json(nlohmann::json::parse(R"({
      "_target_": "monai.networks.nets.swin_fusion_od2.SwinUNETR", "downsample": "merging",
      "variant": "od_large", "branch_channels": [12, 12, 36, 48, 96], "feature_size": 12})"),
                                            "bundle.json");
  CHECK(od.is_fusion());
  CHECK(od.downsample == swinfer::ops::merge_order::merging);
  CHECK(od.branch_channels() == std::array<int, 5>{12, 12, 36, 48, 96});
  CHECK(swinfer::config_to_json(swinfer::config_from_json(swinfer::config_to_json(od), "round trip")) == swinfer::config_to_json(od));

  auto message = [](const char* text) {
    return swinfer_test::error_of([&] { swinfer::config_from_json(nlohmann::json::parse(text), "cfg.json"); });
  };
  CHECK_THAT(message(R"({"variant": "od"})"), Catch::Contains("add \"arch\": \"SwinFusionUNETR\""));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "variant": "v3"})"),
             Catch::Contains("'v3' is not one of od, od_large, 2_v2, 1_v1, 2_v1"));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "skip_pool": "min"})"), Catch::Contains("max, avg, maxavg"));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "final_kernel_size": 2})"), Catch::Contains("positive odd"));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "branch_channels": [1, 2]})"),
             Catch::Contains("'branch_channels' must be an integer or a list of 5 integers"));
}

TEST_CASE("a Swin Fusion checkpoint's tensors determine its variant", "[config][fusion]") {
  for (const auto variant : {fusion_variant::od, fusion_variant::od_large, fusion_variant::v2_2, fusion_variant::v1_1,
                             fusion_variant::v1_2}) {
    for (const int kernel : {1, 3}) {
      for (const auto pool : {skip_pool::max, skip_pool::maxavg}) {
        auto c = fusion(variant, kernel, pool);
        c.feature_size = 12;
        c.in_channels = 2;
        c.num_heads = {3, 3, 3, 3};
        if (variant == fusion_variant::od_large) c.fusion.branch_channels = {5, 12, 36, 0, 0};
        auto want = c;
        want.fusion.branch_channels = c.branch_channels();  // inferred widths are explicit
        INFO(swinfer::config_to_json(want).dump());
        const auto got = swinfer::infer_config(fake_weights(c));
        CHECK(swinfer::config_to_json(got) == swinfer::config_to_json(want));
      }
    }
  }
  // Plain SwinUNETR weights stay SwinUNETR with MONAI 1.5's merging order.
  swin_unetr_config plain;
  plain.feature_size = 12;
  CHECK(swinfer::config_to_json(swinfer::infer_config(fake_weights(plain))) == swinfer::config_to_json(plain));
}

TEST_CASE("a fusion checkpoint that misses a branch names the tensor", "[config][fusion]") {
  auto c = fusion(fusion_variant::od);
  c.feature_size = 12;
  c.num_heads = {3, 3, 3, 3};
  const auto sd = fake_weights(c);
  swinfer::state_dict broken;
  for (const auto& k : sd.keys())
    if (k != "poolskip3.conv2.conv1.conv.weight") broken.insert(k, swinfer::weight(sd.at(k)));
  CHECK_THROWS_WITH(swinfer::check_weights(c, broken, "od.pt"),
                    Catch::Contains("od.pt does not match the SwinFusionUNETR configuration") &&
                        Catch::Contains("missing tensor 'poolskip3.conv2.conv1.conv.weight' of shape (12, 12, 3, 3, 3)"));
}
