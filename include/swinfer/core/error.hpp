// swinfer: the one exception type every failure is reported with.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace swinfer {

/// \brief Every error swinfer reports: bad input files, mismatched weights, unsupported options.
/// The message names the file, key or shape at fault and, where possible, what to do.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

/// Concatenates streamable values into one message (g++ 12 has no <format>).
template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// Throws swinfer::error with the concatenated message.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw error(concat(std::forward<Parts>(parts)...));
}

}  // namespace detail
}  // namespace swinfer
