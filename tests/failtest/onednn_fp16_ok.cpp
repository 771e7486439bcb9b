// Must compile: the twin of onednn_fp16_ko.cpp with fp32, which the onednn backend implements.
#include <swinfer/backend/onednn.hpp>

int main() {
  swinfer::kernels<swinfer::backend::onednn, swinfer::precision::fp32, swinfer::layout::ndhwc>::context ctx(
      swinfer::engine_options{});
  (void)ctx;
}
