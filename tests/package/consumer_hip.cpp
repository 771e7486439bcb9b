// Built against an installed swinfer with its hip backend (find_package(swinfer COMPONENTS hip)): the checkpoint's
// logits on the GPU against the cpu backend's on the same random 32 x 32 x 64 input. Exits 0 within 1e-4 relative,
// 1 above it or on an error, 77 without a usable GPU (a compile-and-link check then).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <swinfer/backend/hip.hpp>
#include <swinfer/swinfer.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) return std::fprintf(stderr, "usage: %s model.pt\n", argv[0]), 2;
  const auto model = swinfer::load_model(argv[1]);
  swinfer::tensor<float> input({1, model.config.in_channels, 32, 32, 64}, swinfer::layout_kind::ncdhw);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::generate(input.data(), input.data() + input.size(), [&] { return uniform(rng); });

  swinfer::swin_unetr<swinfer::backend::cpu> cpu(model.config, model.weights);
  const swinfer::tensor<float> expected = cpu.forward(input);
  try {
    swinfer::swin_unetr<swinfer::backend::hip> gpu(model.config, model.weights);
    const swinfer::tensor<float> logits = gpu.forward(input);
    double max_abs = 0.0, max_ref = 0.0;
    for (std::int64_t i = 0; i < expected.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(double{logits.data()[i]} - expected.data()[i]));
      max_ref = std::max(max_ref, std::fabs(double{expected.data()[i]}));
    }
    const double relative = max_abs / std::max(max_ref, 1e-30);
    std::printf("hip vs cpu logits: max abs %.3g, relative %.3g (tolerance 1e-4)\n", max_abs, relative);
    return relative <= 1e-4 ? 0 : 1;
  } catch (const swinfer::error& e) {
    if (std::strstr(e.what(), "no usable GPU") == nullptr) throw;
    std::printf("SKIPPED the hip run: %s\n", e.what());
    return 77;
  }
} catch (const swinfer::error& e) {
  return std::fprintf(stderr, "error: %s\n", e.what()), 1;
}
