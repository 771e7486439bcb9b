// Built against the installed swinfer::runtime (find_package(swinfer COMPONENTS runtime)): a cpu network made by
// backend name (swinfer::runtime::make_network) against the header-only template model on the same random
// 32 x 32 x 64 input. Exits 0 within 1e-4 relative (the library and this program are compiled with different
// flags), 1 above it or on an error.
#include <algorithm>
#include <cstdio>
#include <random>

#include <swinfer/core/compare.hpp>
#include <swinfer/runtime.hpp>
#include <swinfer/swinfer.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) return std::fprintf(stderr, "usage: %s model.pt\n", argv[0]), 2;
  const auto model = swinfer::load_model(argv[1]);
  swinfer::tensor<float> input({1, model.config.in_channels, 32, 32, 64}, swinfer::layout_kind::ncdhw);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::generate(input.data(), input.data() + input.size(), [&] { return uniform(rng); });

  swinfer::swin_unetr<swinfer::backend::cpu> direct(model.config, model.weights);
  const swinfer::tensor<float> expected = direct.forward(input);
  auto net = swinfer::runtime::make_network({"cpu", "fp32", "ndhwc"}, model.config, model.weights, {}, argv[1]);
  const swinfer::tensor<float> logits = net->forward(input);
  const swinfer::tensor_difference d = swinfer::compare_tensors(logits, expected);  // a NaN counts as infinite
  std::printf("%s vs swin_unetr<cpu> logits: max abs %.3g, relative %.3g (tolerance 1e-4)\n",
              net->description().c_str(), d.max_abs, d.relative());
  return d.finite() && d.relative() <= 1e-4 ? 0 : 1;
} catch (const swinfer::error& e) {
  return std::fprintf(stderr, "error: %s\n", e.what()), 1;
}
