// swinfer: backend tags, the support matrix, and the primary kernels template every backend specialises.
#pragma once

#include <string_view>
#include <type_traits>

#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"

namespace swinfer {

/// Backend tags. A backend is chosen statically; its header must be included to use it:
/// cpu (<swinfer/backend/cpu.hpp>, header-only, the default), onednn (<swinfer/backend/onednn.hpp>), hip (GPU).
namespace backend {
struct cpu {
  static constexpr std::string_view name = "cpu";
};
struct onednn {
  static constexpr std::string_view name = "onednn";
};
struct hip {
  static constexpr std::string_view name = "hip";
};
}  // namespace backend

/// True when backend B implements precision P with layout L *and* its header is included.
/// Backend headers specialise this for what they implement.
template <class B, class P, class L>
inline constexpr bool is_supported_v = false;

namespace detail {
template <class...>
inline constexpr bool dependent_false_v = false;

/// fp32, fp16 or bf16 storage in the ncdhw or ndhwc layout: what the cpu and hip backends implement.
template <class P, class L>
constexpr bool float_storage_any_layout() {
  constexpr bool precision_implemented =
      std::is_same_v<P, precision::fp32> || std::is_same_v<P, precision::fp16> || std::is_same_v<P, precision::bf16>;
  constexpr bool layout_implemented = std::is_same_v<L, layout::ncdhw> || std::is_same_v<L, layout::ndhwc>;
  return precision_implemented && layout_implemented;
}
/// float_storage_any_layout, or int8 (float32 activations, int8 products) in either layout: what the cpu and hip
/// backends implement.
template <class P, class L>
constexpr bool float_storage_or_int8_any_layout() {
  return float_storage_any_layout<P, L>() ||
         (std::is_same_v<P, precision::int8> && float_storage_any_layout<precision::fp32, L>());
}
}  // namespace detail

/// \brief The kernels one backend provides for one precision and layout: each backend specialises this, and
/// swinfer/backend/contract.hpp states what a specialisation provides (the concept backend_kernels).
template <class B, class P, class L>
struct kernels {
  static_assert(detail::dependent_false_v<B, P, L>,
                "swinfer: this backend does not implement this precision/layout combination, or the backend's "
                "header is not included. Check swinfer::is_supported_v<Backend, Precision, Layout>.");
};

}  // namespace swinfer
