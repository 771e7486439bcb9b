// One checkpoint on two backends named at run time (swinfer::runtime), the same random input: the largest logit
// difference relative to the largest reference logit, and how many voxels get the same label. The GPU against the
// CPU when built with the hip backend, else onednn against cpu. Exits 1 above the tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <swinfer/runtime.hpp>
#include <swinfer/swinfer.hpp>

namespace {

/// The channel of the largest logit at voxel v of (1, C, D, H, W) ncdhw logits.
int label_at(const swinfer::tensor<float>& logits, std::int64_t v) {
  const auto& s = logits.shape();
  const std::int64_t voxels = s.d * s.h * s.w;
  int best = 0;
  for (int c = 1; c < s.c; ++c) best = logits.data()[c * voxels + v] > logits.data()[best * voxels + v] ? c : best;
  return best;
}

}  // namespace

int main(int argc, char** argv) try {
#if defined(SWINFER_HAS_HIP)
  const char* fallback = "hip";
#elif defined(SWINFER_HAS_ONEDNN)
  const char* fallback = "onednn";
#else
  const char* fallback = nullptr;
#endif
  if (argc < 2 || argc > 4) return std::fprintf(stderr, "usage: %s model.pt [backend [tolerance]]\n", argv[0]), 2;
  const std::string backend = argc > 2 ? argv[2] : fallback ? fallback : "";
  const double tolerance = argc > 3 ? std::atof(argv[3]) : 1e-4;
  if (backend.empty()) return std::printf("this build has only the cpu backend: nothing to check it against\n"), 77;

  const auto model = swinfer::load_model(argv[1]);
  auto reference = swinfer::runtime::make_network({"cpu", "fp32", "ndhwc"}, model.config, model.weights, {}, argv[1]);
  auto tested = swinfer::runtime::make_network({backend, "fp32", "ndhwc"}, model.config, model.weights, {}, argv[1]);

  swinfer::tensor<float> input({1, model.config.in_channels, 32, 32, 64}, swinfer::layout_kind::ncdhw);
  std::mt19937 random(2026);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::generate(input.data(), input.data() + input.size(), [&] { return uniform(random); });
  const swinfer::tensor<float> want = reference->forward(input), got = tested->forward(input);  // layout of input

  double largest = 0, difference = 0;
  for (std::int64_t i = 0; i < want.size(); ++i) {
    largest = std::max(largest, std::abs(double{want.data()[i]}));
    difference = std::max(difference, std::abs(double{got.data()[i]} - double{want.data()[i]}));
  }
  const std::int64_t voxels = want.size() / want.shape().c;
  std::int64_t same = 0;
  for (std::int64_t v = 0; v < voxels; ++v) same += label_at(want, v) == label_at(got, v);
  const double relative = difference / std::max(largest, 1e-30);
  const double agreement = static_cast<double>(same) / static_cast<double>(voxels);
  std::printf("%s against %s on %s\n", tested->description().c_str(), reference->description().c_str(),
              tested->device().c_str());
  std::printf("max|diff| / max|ref| = %.3g (tolerance %.3g); labels agree on %.3f %% of %lld voxels\n", relative,
              tolerance, 100.0 * agreement, static_cast<long long>(voxels));
  // A label may flip where two logits all but tie, hence 99.9 % and not all.
  if (relative > tolerance || agreement < 0.999) return std::printf("FAILED\n"), 1;
  std::printf("PASS\n");
} catch (const swinfer::error& e) {
  return std::fprintf(stderr, "error: %s\n", e.what()), 1;
}
