// swinfer: the backend, precision and layout tags as lists, so every run-time name list is made from the tags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"

namespace swinfer {

/// The name of a tag as the command line spells it: backend and layout tags carry it, precisions in their traits.
template <class Tag>
constexpr std::string_view tag_name() {
  if constexpr (requires { Tag::name; }) {
    return Tag::name;
  } else {
    return precision_traits<Tag>::name;
  }
}

/// \brief Tags chosen among by name at run time. Option checks, help strings and error messages are all built
/// from one list, so a tag added to it appears in each of them.
template <class... Tags>
struct tag_list {
  /// The names in list order: the values an option accepts.
  static std::vector<std::string> names() { return {std::string(tag_name<Tags>())...}; }

  /// The names for a message: "a, b or c" by default, "a,b,c" with joined(",", ",").
  static std::string joined(std::string_view separator = ", ", std::string_view last = " or ") {
    const std::vector<std::string> all = names();
    std::string out;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i > 0) out += i + 1 == all.size() ? last : separator;
      out += all[i];
    }
    return out;
  }

  /// Calls f(Tag{}) for the tag called `name`; false when no tag is.
  template <class F>
  static bool visit(std::string_view name, F&& f) {
    return ((tag_name<Tags>() == name && (f(Tags{}), true)) || ...);
  }
};

/// Every backend tag.
using backend_tags = tag_list<backend::cpu, backend::onednn, backend::hip>;
/// The precisions some backend implements.
using precision_tags = tag_list<precision::fp32, precision::bf16, precision::fp16, precision::int8>;
/// Every layout tag.
using layout_tags = tag_list<layout::ndhwc, layout::ncdhw>;

}  // namespace swinfer
