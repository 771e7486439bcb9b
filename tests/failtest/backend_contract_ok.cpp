// Must compile: a user's backend whose kernels are the cpu backend's satisfies swinfer::backend_kernels. The _ko
// twin hides one op (pool3d) and must fail at the contract's static_assert, naming the concept.
#include <swinfer/swinfer.hpp>

struct borrowed_backend {
  static constexpr std::string_view name = "borrowed";
};

template <>
inline constexpr bool swinfer::is_supported_v<borrowed_backend, swinfer::precision::fp32, swinfer::layout::ndhwc> =
    true;

template <>
struct swinfer::kernels<borrowed_backend, swinfer::precision::fp32, swinfer::layout::ndhwc>
    : swinfer::kernels<swinfer::backend::cpu, swinfer::precision::fp32, swinfer::layout::ndhwc> {
#ifdef SWINFER_FAILTEST_WITHOUT_POOL3D
  template <class... Args>
  static void pool3d(Args&&...) = delete;
#endif
};

int main() { return sizeof(swinfer::swin_unetr<borrowed_backend>) > 0 ? 0 : 1; }
