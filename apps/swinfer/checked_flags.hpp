// swinfer CLI: checking a flag's values while CLI11 parses them, by the library's own checks and ranges (light:
// CLI11 and swinfer's error and value_range headers only, for the command files that need nothing else).
#pragma once

#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <swinfer/core/error.hpp>
#include <swinfer/core/value_range.hpp>

namespace swinfer_tool {

/// \brief A CLI11 check of each value a flag is given, by swinfer's own check (`check(value)` throws swinfer::error):
/// the ranges live once, in the library, and the message reads like every other parameter error, e.g.
/// "--overlap: 'overlap' is 1.5; allowed range [0, 0.99]". CLI11 runs it while parsing, before any work.
template <class T, class Check>
CLI::Validator checked_by(Check check, std::string description) {
  return CLI::Validator(
      [check](std::string& text) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(text, value)) return {};  // the option's own conversion reports it
        try {
          check(value);
        } catch (const swinfer::error& e) {
          return e.what();
        }
        return {};
      },
      std::move(description));
}

/// checked_by a value_range: the value must lie in `allowed`; `key` is the library's name for it.
template <class T, class R>
CLI::Validator within(const swinfer::value_range<R>& allowed, std::string key) {
  return checked_by<T>([allowed, key](T v) { swinfer::detail::require_in_range(v, allowed, "", key); }, allowed.str());
}

}  // namespace swinfer_tool
