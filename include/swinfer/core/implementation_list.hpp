// swinfer: an op's ordered list of implementations (kernel variants), after oneDNN's implementation lists and
// CUTLASS's operation table. Each implementation is a type with a typed id, a name and a can_implement that says why
// not; the op takes the first in the list that can and pays, or the one its options force. The same list names the
// variants for options, reports and the tests, which run every implementation that can run a case.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "swinfer/core/error.hpp"

namespace swinfer {

/// Whether an implementation can run a problem: empty `why_not` when it can, else the reason, for error messages.
struct implementable {
  std::string why_not;
  explicit operator bool() const { return why_not.empty(); }
  static implementable yes() { return {}; }
  template <class... Parts>
  static implementable no(Parts&&... parts) {
    return {detail::concat(std::forward<Parts>(parts)...)};
  }
};

/// The implementations of one op, in the order its automatic choice tries them. Each Impl has `static constexpr Id
/// id` and `static constexpr std::string_view name`; Id is the op's enum, whose `automatic` is no implementation.
template <class Id, class... Impl>
struct implementation_list {
  using id_type = Id;
  /// One optional of each implementation: what an op prepared.
  using optionals = std::tuple<std::optional<Impl>...>;
  static constexpr std::array<Id, sizeof...(Impl)> ids{Impl::id...};
  static constexpr std::array<std::string_view, sizeof...(Impl)> names{Impl::name...};

  /// f(std::type_identity<Impl>{}) for each implementation in order.
  template <class F>
  static void for_each(F&& f) {
    (f(std::type_identity<Impl>{}), ...);
  }
  /// The implementation's name; "auto" for Id::automatic.
  static std::string_view name_of(Id id) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == id) return names[i];
    return "auto";
  }
  /// "auto, int8-amx, ..." for messages and --help.
  static std::string joined() {
    std::string s = "auto";
    for (const auto n : names) s += detail::concat(", ", n);
    return s;
  }
  /// The id named `name` ("auto": automatic); false when no implementation has that name.
  static bool parse(std::string_view name, Id& id) {
    if (name == "auto") {
      id = Id::automatic;
      return true;
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (names[i] == name) {
        id = ids[i];
        return true;
      }
    }
    return false;
  }
};

}  // namespace swinfer
