// Model-level misuse: bad input shapes and mismatched checkpoints give errors that say what to do.
#include <catch2/catch.hpp>

#include <swinfer/runtime/backends.hpp>

#include "golden_case.hpp"

TEST_CASE("forward rejects inputs the network cannot take, naming the shape", "[model][errors]") {
  const swinfer_test::golden_case g("stressed");
  auto net = swinfer::runtime::make_network({"cpu", "fp32", "ndhwc"}, g.config, g.weights, {}, "stressed");
  swinfer::tensor<float> wrong_size({1, 1, 32, 32, 40}, swinfer::layout_kind::ncdhw);
  wrong_size.fill(0.0f);
  CHECK_THROWS_WITH(net->forward(wrong_size), Catch::Contains("32x32x40") && Catch::Contains("divisible"));
  swinfer::tensor<float> wrong_channels({1, 3, 32, 32, 64}, swinfer::layout_kind::ncdhw);
  wrong_channels.fill(0.0f);
  CHECK_THROWS_WITH(net->forward(wrong_channels), Catch::Contains("3 channels") && Catch::Contains("in_channels=1"));
  // The benchmarks' resident forward checks the same, before copying anything.
  CHECK_THROWS_WITH(net->resident_forward(wrong_size), Catch::Contains("32x32x40") && Catch::Contains("divisible"));
}

TEST_CASE("a checkpoint used with the wrong configuration is rejected before any work", "[model][errors]") {
  const swinfer_test::golden_case g("stressed");
  auto config = g.config;
  config.feature_size = 24;
  CHECK_THROWS_WITH(swinfer::runtime::make_network({"cpu", "fp32", "ndhwc"}, config, g.weights, {}, "stressed.pt"),
                    Catch::Contains("stressed.pt") && Catch::Contains("swinViT.patch_embed.proj.weight"));
}

TEST_CASE("unsupported run-time combinations are errors, not crashes", "[model][errors]") {
  const swinfer_test::golden_case g("stressed");
  CHECK_THROWS_WITH(swinfer::runtime::make_network({"cpu", "int8", "ndhwc"}, g.config, g.weights, {}, "m"),
                    Catch::Contains("int8"));
  CHECK_THROWS_WITH(swinfer::runtime::make_network({"cpu", "fp32", "nchw"}, g.config, g.weights, {}, "m"),
                    Catch::Contains("unknown layout"));
#ifdef SWINFER_HAS_ONEDNN
  CHECK_THROWS_WITH(swinfer::runtime::make_network({"onednn", "fp16", "ndhwc"}, g.config, g.weights, {}, "m"),
                    Catch::Contains("does not implement precision fp16"));
#endif
}
