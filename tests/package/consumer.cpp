// Built against the installed package: loads a checkpoint and reports what it holds.
#include <cstdio>

#include <swinfer/swinfer.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) return 2;
  const auto model = swinfer::load_model(argv[1]);
  std::printf("feature_size %d, %lld parameters\n", model.config.feature_size,
              static_cast<long long>(swinfer::parameter_count(model.config)));
  swinfer::swin_unetr<swinfer::backend::cpu> net(model.config, model.weights);
  return net.config().feature_size > 0 ? 0 : 1;
} catch (const swinfer::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
