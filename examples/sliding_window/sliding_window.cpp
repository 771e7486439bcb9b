// A whole NIfTI volume segmented by MONAI's sliding window: checkpoint in, mask on the input's grid out. No
// preprocessing: the volume goes to the network as it is (`swinfer segment` adds MONAI's transforms).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <swinfer/inference/model_sliding_window.hpp>
#include <swinfer/io/nifti.hpp>
#include <swinfer/swinfer.hpp>

int main(int argc, char** argv) try {
  if (argc < 4 || argc > 5) {
    return std::fprintf(stderr, "usage: %s model.pt image.nii[.gz] mask.nii.gz [roi]\n", argv[0]), 2;
  }
  auto model = swinfer::load_model(argv[1]);                  // torch.save .pt or .safetensors; config inferred
  swinfer::swin_unetr<swinfer::backend::cpu> net(model.config, model.weights);
  const swinfer::nifti_volume image = swinfer::read_nifti(argv[2]);  // (1, C, I, J, K) float32

  swinfer::sliding_window_options window;                      // MONAI's defaults: overlap 0.25, constant blend
  window.roi = static_cast<std::int64_t>(argc == 5 ? std::atoll(argv[4]) : 96);  // the same on every axis
  swinfer::tensor<std::uint8_t> mask = swinfer::sliding_window_segment(net, image.data, window);  // (1, 1, I, J, K)

  swinfer::write_nifti(argv[3], mask, image, swinfer::nifti_datatype::uint8);
  std::int64_t foreground = 0;
  for (std::int64_t i = 0; i < mask.size(); ++i) foreground += mask.data()[i] != 0;
  std::printf("%s: %lld of %lld voxels in a foreground label\n", argv[3], static_cast<long long>(foreground),
              static_cast<long long>(mask.size()));
} catch (const swinfer::error& e) {
  return std::fprintf(stderr, "error: %s\n", e.what()), 1;
}
