// Must NOT compile: the oneDNN backend has no fp16 kernels. Expected diagnostic (static_assert):
// "swinfer: the onednn backend implements fp32, bf16 and int8 only"
#include <swinfer/backend/onednn.hpp>

int main() {
  swinfer::kernels<swinfer::backend::onednn, swinfer::precision::fp16, swinfer::layout::ndhwc>::context ctx(
      swinfer::engine_options{});
  (void)ctx;
}
