// Configuration: MONAI argument names, bundle network_def, inference from tensors, parameter counts.
#include <catch2/catch.hpp>

#include "error_testing.hpp"

#include <swinfer/model/config_json.hpp>
#include <swinfer/model/synthetic_weights.hpp>
#include <swinfer/model/weights_check.hpp>

using swinfer::swin_unetr_config;

TEST_CASE("parameter counts match MONAI's (spec section 4)", "[config]") {
  swin_unetr_config c;
  c.feature_size = 48;
  c.in_channels = 1;
  c.out_channels = 14;
  CHECK(swinfer::parameter_count(c) == 62'187'296);
  c.out_channels = 2;
  CHECK(swinfer::parameter_count(c) == 62'186'708);
  // 159 state_dict entries for the BTCV configuration: 151 parameters + 8 index buffers.
  CHECK(swinfer::expected_tensors(c).size() == 159);
}

TEST_CASE("config JSON uses MONAI's argument names and rejects what it cannot honour", "[config]") {
  const auto c = swinfer::config_from_json(nlohmann::json::parse(R"({
      "_target_": "SwinUNETR", "img_size": [96, 96, 96], "in_channels": 1, "out_channels": 14,
      "feature_size": 48, "use_checkpoint": true, "drop_rate": 0.0, "window_size": [7, 5, 3],
      "downsample": "merging_legacy", "norm_name": "instance"})"),
                                           "bundle.json");
  CHECK(c.feature_size == 48);
  CHECK(c.out_channels == 14);
  CHECK(c.window_size == std::array<int, 3>{7, 5, 3});
  CHECK(c.downsample == swinfer::ops::merge_order::merging_legacy);

  const auto nested = swinfer::config_from_json(
      nlohmann::json::parse(R"({"network_def": {"_target_": "monai.networks.nets.SwinUNETR", "in_channels": 4,
                                 "out_channels": 3, "feature_size": 12}})"),
      "inference.json");
  CHECK(nested.in_channels == 4);

  auto message = [](const char* text) {
    return swinfer_test::error_of([&] { swinfer::config_from_json(nlohmann::json::parse(text), "cfg.json"); });
  };
  CHECK_THAT(message(R"({"norm_name": "batch"})"), Catch::Contains("norm_name") && Catch::Contains("cfg.json"));
  CHECK_THAT(message(R"({"feature_sise": 48})"), Catch::Contains("unknown SwinUNETR argument 'feature_sise'"));
  CHECK_THAT(message(R"({"downsample": "merge"})"), Catch::Contains("merging_legacy"));
  CHECK_THAT(message(R"({"feature_size": 50})"), Catch::Contains("num_heads"));
  CHECK_THAT(message(R"({"in_channels": "@in"})"), Catch::Contains("bundle expression"));
  CHECK_THAT(message(R"({"depths": [2, 2]})"), Catch::Contains("depths"));
  CHECK_THAT(message(R"({"_target_": "UNet"})"), Catch::Contains("neither SwinUNETR nor SwinFusionUNETR"));
}

TEST_CASE("config: every number is checked against its range as it is read (issue 16)", "[config]") {
  auto message = [](const char* text) {
    return swinfer_test::error_of([&] { swinfer::config_from_json(nlohmann::json::parse(text), "cfg.json"); });
  };
  // The reproducers: a double -> int conversion out of range, and patch_size^5 overflowing int64.
  CHECK_THAT(message(R"({"mlp_ratio": 1e300})"),
             Catch::Equals("cfg.json: 'mlp_ratio' is 1e+300; allowed range [0.125, 64]"));
  CHECK_THAT(message(R"({"patch_size": 1048576})"),
             Catch::Equals("cfg.json: 'patch_size' is 1048576; allowed range [1, 8]"));
  // Past int: reported as written, not wrapped into range (2^32 + 12 would have read as 12).
  CHECK_THAT(message(R"({"feature_size": 4294967308})"), Catch::Contains("'feature_size' is 4294967308"));
  CHECK_THAT(message(R"({"in_channels": -1})"), Catch::Contains("'in_channels' is -1; allowed range [1, 1024]"));
  CHECK_THAT(message(R"({"out_channels": 18446744073709551615})"),
             Catch::Contains("'out_channels' is 18446744073709551615"));
  CHECK_THAT(message(R"({"depths": [2, 2, 2, 65]})"), Catch::Contains("'depths' is 65; allowed range [1, 64]"));
  CHECK_THAT(message(R"({"num_heads": 0})"), Catch::Contains("'num_heads' is 0"));
  CHECK_THAT(message(R"({"window_size": [7, 33, 7]})"), Catch::Contains("'window_size' is 33; allowed range [1, 32]"));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "final_kernel_size": 17})"),
             Catch::Contains("'final_kernel_size' is 17; allowed range [1, 15]"));
  CHECK_THAT(message(R"({"arch": "SwinFusionUNETR", "branch_channels": [1, 2, 3, 4, 5000]})"),
             Catch::Contains("'branch_channels' is 5000; allowed range [0, 4096]"));
  CHECK_THAT(message(R"({"feature_size": 1, "num_heads": 1, "mlp_ratio": 0.5})"), Catch::Contains("no hidden units"));
}

TEST_CASE("config: validate() checks the same ranges for configurations built in code", "[config]") {
  swin_unetr_config c;
  c.mlp_ratio = 1e300;
  CHECK_THAT(swinfer_test::error_of([&] { c.validate(); }),
             Catch::Equals("config: 'mlp_ratio' is 1e+300; allowed range [0.125, 64]"));
  CHECK_THAT(swinfer_test::error_of([&] { (void)c.mlp_hidden(0); }), Catch::Contains("not representable"));
  c = {};
  c.patch_size = 1 << 20;  // never validated: check_input's patch_size^5 must not overflow either
  CHECK_THAT(swinfer_test::error_of([&] { c.check_input({1, 1, 64, 64, 64}); }),
             Catch::Contains("patch_size^5 for patch_size 1048576") && Catch::Contains("overflows"));
}

TEST_CASE("input sizes must be multiples of 32 with more than one bottleneck voxel", "[config]") {
  swin_unetr_config c;
  CHECK_NOTHROW(c.check_input({1, 1, 32, 32, 64}));
  CHECK_NOTHROW(c.check_input({2, 1, 96, 64, 32}));
  CHECK_THROWS_WITH(c.check_input({1, 1, 32, 32, 32}), Catch::Contains("single bottleneck voxel"));
  CHECK_THROWS_WITH(c.check_input({1, 1, 96, 96, 90}), Catch::Contains("96x96x90") && Catch::Contains("32"));
  CHECK_THROWS_WITH(c.check_input({1, 2, 64, 64, 64}), Catch::Contains("in_channels=1"));
}

namespace {
swinfer::state_dict fake_weights(const swin_unetr_config& c) {
  return swinfer::synthetic_weights(c, [](const swinfer::expected_tensor&, std::int64_t) { return 0.0f; });
}
}  // namespace

TEST_CASE("the tensors determine channels, widths, depths, heads, window, bias and v2", "[config]") {
  swin_unetr_config c;
  c.in_channels = 4;
  c.out_channels = 3;
  c.feature_size = 12;
  c.depths = {1, 2, 1, 2};
  c.num_heads = {2, 4, 4, 8};
  c.window_size = {5, 5, 5};
  c.qkv_bias = false;
  c.mlp_ratio = 2.0;
  c.use_v2 = true;
  CHECK(swinfer::config_to_json(swinfer::infer_config(fake_weights(c))) == swinfer::config_to_json(c));
  // A non-cubic window is told apart from its permutations by the stored relative_position_index.
  c.window_size = {5, 7, 3};
  CHECK(swinfer::infer_config(fake_weights(c)).window_size == c.window_size);
}

TEST_CASE("a checkpoint that does not match its configuration names every culprit", "[config]") {
  swin_unetr_config c;
  c.feature_size = 12;
  auto sd = fake_weights(c);
  swinfer::state_dict broken;
  for (const auto& k : sd.keys()) {
    if (k == "encoder2.layer.conv1.conv.weight") continue;  // missing
    swinfer::weight w = sd.at(k);
    if (k == "decoder1.transp_conv.conv.weight") w.shape = {12, 12, 3, 3, 3};  // mis-shaped
    broken.insert(k, std::move(w));
  }
  broken.insert("extra.weight", swinfer::weight{swinfer::dtype::f32, {1}, {0.0f}, {}});
  try {
    swinfer::check_weights(c, broken, "model.pt");
    FAIL("no error");
  } catch (const swinfer::error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("model.pt"));
    CHECK_THAT(m, Catch::Contains("missing tensor 'encoder2.layer.conv1.conv.weight' of shape (12, 12, 3, 3, 3)"));
    CHECK_THAT(m, Catch::Contains("'decoder1.transp_conv.conv.weight' has shape (12, 12, 3, 3, 3) but the configuration "
                                  "expects (12, 12, 2, 2, 2)"));
    CHECK_THAT(m, Catch::Contains("unexpected tensor 'extra.weight'"));
  }
}

#include <swinfer/model/cost.hpp>

TEST_CASE("forward MAC counts reproduce the spec's table (section 5)", "[config][cost]") {
  auto gmac = [](int fs, int out, swinfer::shape5 s, bool v2 = false) {
    swin_unetr_config c;
    c.feature_size = fs;
    c.out_channels = out;
    c.use_v2 = v2;
    return swinfer::forward_macs(c, s) / 1e9;
  };
  CHECK(gmac(48, 14, {1, 1, 96, 96, 96}) == Approx(318.52).epsilon(1e-4));
  CHECK(gmac(48, 14, {1, 1, 128, 128, 128}) == Approx(764.0).epsilon(1e-4));
  CHECK(gmac(48, 14, {1, 1, 256, 256, 128}) == Approx(3030.2).epsilon(1e-4));
  CHECK(gmac(24, 14, {1, 1, 96, 96, 96}) == Approx(82.95).epsilon(1e-3));
  CHECK(gmac(12, 14, {1, 1, 96, 96, 96}) == Approx(22.39).epsilon(1e-3));
  CHECK(gmac(48, 14, {1, 1, 64, 64, 64}) == Approx(96.68).epsilon(1e-4));
  CHECK(gmac(48, 14, {1, 1, 96, 96, 96}, true) == Approx(344.3).epsilon(1e-3));
}
