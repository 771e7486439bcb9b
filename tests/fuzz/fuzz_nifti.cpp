// libFuzzer harness: the NIfTI reader (NIfTI-1 and -2, plain or gzipped) on arbitrary bytes.
#include <swinfer/io/nifti.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = swinfer_fuzz::input_file(data, size, ".nii");
  swinfer_fuzz::expect_success_or_error([&] {
    const auto volume = swinfer::read_nifti(path, {.allow_non_finite = (size & 1) != 0});
    (void)volume.affine();  // the header's transforms, as segment uses them
  });
  return 0;
}
