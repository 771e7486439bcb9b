// swinfer: writing a file all at once: to a temporary name in its folder, then renamed over the target.
#pragma once

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

#include "swinfer/core/error.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {

namespace detail {

/// How the temporaries of `path` are named: hidden, so that listings of the folder do not show them as results.
inline std::string temporary_prefix(const std::filesystem::path& path) {
  return concat(".", path.filename().string(), ".tmp-");
}

}  // namespace detail

/// \brief Writes `path` through `write`, which creates and fills the file at the temporary path it is given; that
/// file is then renamed over `path`. The temporary lies in path's folder, so the rename stays on one file system
/// and replaces the target at once: readers see the old file or the whole new one, never a half-written one.
/// On any failure (`write` throws, the rename fails) the temporary is removed and `path` is left as it was.
/// \throws swinfer::error naming `path` when the rename fails, and what `write` throws; when the temporary cannot be
/// removed either, a swinfer::error with the original message that also names the temporary.
inline void write_file_atomically(const std::filesystem::path& path,
                                  const std::function<void(const std::filesystem::path& temporary)>& write) {
  namespace fs = std::filesystem;
  using detail::fail;
  using detail::printable;
  if (!path.has_filename()) fail("cannot write ", printable(path), ": not a file name");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::random_device random;
  // Hidden, and random so two writers of one target do not share a temporary.
  const fs::path temporary = dir / detail::concat(detail::temporary_prefix(path), std::hex, random(), random());
  try {
    write(temporary);
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec) fail("cannot write ", printable(path), ": ", ec.message());
  } catch (...) {
    std::error_code ec;
    fs::remove(temporary, ec);  // false without an error when `write` never created it
    if (!ec) throw;
    // A leftover the user must delete by hand is named along with the failure that caused it.
    std::string why = "unknown error";
    try {
      throw;
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    fail(why, "; the temporary file ", printable(temporary), " could not be removed: ", ec.message());
  }
}

/// \brief write_file_atomically for a writer to a binary stream. A stream that fails (a full disk) is an error
/// naming `path`.
inline void write_stream_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  write_file_atomically(path, [&](const std::filesystem::path& temporary) {
    using detail::fail;
    using detail::printable;
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      fail("cannot write ", printable(path), ": cannot create a file in ", printable(temporary.parent_path()), ": ",
           std::strerror(errno));
    }
    write(out);
    out.close();
    if (!out) fail("cannot write ", printable(path), ": writing failed (disk full?)");
  });
}

/// \brief The file a temporary of write_file_atomically was going to become (in the same folder), or nullopt when
/// `file` is not named like one. A temporary outlives its write only when its process was killed mid-write; this
/// lets a re-run batch find and remove those of its own outputs.
inline std::optional<std::filesystem::path> unfinished_write_target(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  const std::string_view marker = ".tmp-";
  const std::size_t at = name.rfind(marker);
  if (name.size() < 2 || name[0] != '.' || at == std::string::npos || at <= 1) return std::nullopt;
  const std::string_view suffix = std::string_view(name).substr(at + marker.size());
  if (suffix.empty() || suffix.find_first_not_of("0123456789abcdef") != std::string_view::npos) return std::nullopt;
  return file.parent_path() / name.substr(1, at - 1);  // undoes temporary_prefix
}

}  // namespace swinfer
