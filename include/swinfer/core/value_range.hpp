// swinfer: the allowed range of a numeric parameter, and the one check every parameter goes through when it is
// parsed (model config, pipeline JSON, sliding-window options, command-line flags), so each error names the key,
// the value and the range the same way.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "swinfer/core/error.hpp"

namespace swinfer {

/// \brief A closed interval [min, max] of allowed values. NaN lies in no range.
template <class T>
struct value_range {
  T min;
  T max;

  /// Whether `v` lies in the range; integers of any width and signedness compare exactly (a JSON integer past
  /// int64 is still reported as itself).
  template <class V>
  constexpr bool contains(V v) const {
    if constexpr (std::is_integral_v<V> && std::is_integral_v<T>) {
      return std::cmp_greater_equal(v, min) && std::cmp_less_equal(v, max);
    } else {
      return v >= min && v <= max;
    }
  }
  /// "[min, max]" for messages and help texts.
  std::string str() const {
    std::ostringstream s;
    s << "[" << min << ", " << max << "]";
    return s.str();
  }
};

namespace detail {

/// \brief Returns `value` when `allowed` contains it; otherwise a swinfer::error
/// "<where>: '<key>' is <value>; allowed range [min, max]<note>". `note` says what else the key accepts, if anything.
template <class V, class T>
V require_in_range(V value, const value_range<T>& allowed, std::string_view where, std::string_view key,
                   std::string_view note = {}) {
  if (!allowed.contains(value)) {
    fail(where, where.empty() ? "" : ": ", "'", key, "' is ", value, "; allowed range ", allowed.str(), note);
  }
  return value;
}

}  // namespace detail
}  // namespace swinfer
