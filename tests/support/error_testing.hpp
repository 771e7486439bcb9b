// Test helper: the message of the swinfer::error a call throws, so tests can check it names the culprit.
#pragma once

#include <string>

#include <swinfer/core/error.hpp>

namespace swinfer_test {

/// What `f` throws as swinfer::error; "no error" when it returns (so a Contains() check fails visibly).
/// Any other exception propagates and fails the test.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const swinfer::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace swinfer_test
