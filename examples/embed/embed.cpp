// The README's embedding example: segment-ready logits from a MONAI checkpoint in ten lines of C++.
#include <algorithm>
#include <cstdio>

#include <swinfer/swinfer.hpp>

int main(int argc, char** argv) try {
  if (argc != 4) return std::fprintf(stderr, "usage: %s model.pt input.npy logits.npy\n", argv[0]), 2;
  auto model = swinfer::load_model(argv[1]);                 // torch.save .pt or .safetensors; config inferred
  swinfer::swin_unetr<swinfer::backend::cpu> net(model.config, model.weights);
  auto x = swinfer::read_npy(argv[2]);                        // (N, C, D, H, W) float32
  swinfer::tensor<float> input({x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4]}, swinfer::layout_kind::ncdhw);
  std::copy(x.data.begin(), x.data.end(), input.data());
  swinfer::tensor<float> logits = net.forward(input);        // (N, out_channels, D, H, W), same layout as input
  const auto& s = logits.shape();
  swinfer::write_npy(argv[3], {s.n, s.c, s.d, s.h, s.w}, logits.data());
} catch (const swinfer::error& e) {
  return std::fprintf(stderr, "error: %s\n", e.what()), 1;
}
