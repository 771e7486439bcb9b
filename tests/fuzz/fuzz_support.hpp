// swinfer fuzzing: what the libFuzzer harnesses share. Each harness feeds its input to one reader or parser; the only
// outcome allowed besides success is a swinfer::error (any other exception escapes and libFuzzer reports it, as it
// does every sanitizer finding, crash, leak and timeout).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <swinfer/core/error.hpp>

namespace swinfer_fuzz {

/// The input as a file, for readers that take a path: one file per process in /dev/shm (memory, where available),
/// rewritten for every input. `suffix` is the extension a reader may look at.
inline std::filesystem::path input_file(const std::uint8_t* data, std::size_t size, std::string_view suffix) {
  static const std::filesystem::path dir =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  const auto path = dir / ("swinfer_fuzz_" + std::to_string(::getpid()) + std::string(suffix));
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

/// Runs `f`; a swinfer::error is a clean refusal of a bad input.
template <class F>
void expect_success_or_error(F&& f) {
  try {
    f();
  } catch (const swinfer::error&) {
  }
}

}  // namespace swinfer_fuzz
