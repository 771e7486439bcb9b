// swinfer: bounded reading of files, and of the ZIP archives torch.save writes.
// ZIP is parsed by hand because Debian ships libzip only as a shared library and swinfer links statically.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/detail/float_conversion.hpp"

namespace swinfer {
namespace detail {

/// Quotes text taken from a file for an error message: control bytes escaped, long text cut,
/// so a hostile name cannot flood or garble the message.
inline std::string printable(std::string_view s) {
  constexpr std::size_t limit = 200;
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > limit) out += "...";
  return out + "'";
}

/// The same for a path (a template so that strings, which convert to paths, still pick the overload above).
template <class Path>
  requires std::same_as<Path, std::filesystem::path>
std::string printable(const Path& p) {
  return printable(std::string_view(p.string()));
}

/// A regular file read by (offset, length); every range is checked against the file size first,
/// so a length or offset taken from a hostile file can never read or allocate past the file.
class bounded_file {
 public:
  explicit bounded_file(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found) fail(printable(path), ": no such file");
    if (ec) fail(printable(path), ": cannot access: ", ec.message());
    if (!std::filesystem::is_regular_file(status)) fail(printable(path), ": not a regular file");
    in_.open(path, std::ios::binary);
    if (!in_) fail(printable(path), ": cannot open for reading: ", std::strerror(errno));
    size_ = std::filesystem::file_size(path, ec);
    if (ec) fail(printable(path), ": cannot determine the file size: ", ec.message());
  }

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  /// Reads n bytes at offset into dst; `what` names the part being read for the error message.
  void read(std::uint64_t offset, std::uint64_t n, std::byte* dst, std::string_view what) const {
    check_range(offset, n, what);
    if (n == 0) return;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_ || static_cast<std::uint64_t>(in_.gcount()) != n)
      fail(printable(path_), ": read error in ", what, " at offset ", offset);
  }

  std::vector<std::byte> read(std::uint64_t offset, std::uint64_t n, std::string_view what) const {
    check_range(offset, n, what);
    std::vector<std::byte> out(static_cast<std::size_t>(n));
    read(offset, n, out.data(), what);
    return out;
  }

 private:
  void check_range(std::uint64_t offset, std::uint64_t n, std::string_view what) const {
    if (offset > size_ || n > size_ - offset)
      fail(printable(path_), ": ", what, " (", n, " bytes at offset ", offset, ") runs past the end of the file (",
           size_, " bytes)");
  }

  std::filesystem::path path_;
  mutable std::ifstream in_;  // reading moves the stream position, which is not observable state
  std::uint64_t size_ = 0;
};

/// Little-endian unsigned field at `pos`; callers check `pos + sizeof(U) <= b.size()` first.
template <class U>
U le(const std::vector<std::byte>& b, std::size_t pos) {
  return load_unsigned<U>(b.data() + pos, false);
}

}  // namespace detail

/// One file inside a ZIP archive, as its central directory describes it.
struct zip_entry {
  std::string name;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;  ///< 0 stored, 8 deflate
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint64_t local_header_offset = 0;
};

/// \brief Reads entries of a single-disk ZIP archive (ZIP64 included), stored or deflated.
/// The central directory is read once on construction; entries are read on demand and CRC-checked.
class zip_reader {
 public:
  explicit zip_reader(const std::filesystem::path& path) : zip_reader(detail::bounded_file(path)) {}

  explicit zip_reader(detail::bounded_file file) : file_(std::move(file)) { read_central_directory(); }

  const std::filesystem::path& path() const { return file_.path(); }
  const std::vector<zip_entry>& entries() const { return entries_; }

  /// The entry called `name`, or nullptr.
  const zip_entry* find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &entries_[it->second];
  }

  /// The entry's uncompressed contents.
  std::vector<std::byte> read(const zip_entry& e) const {
    if (e.flags & 1u) entry_error(e, "is encrypted, which is not supported");
    if (e.method != 0 && e.method != 8)
      entry_error(e, "uses compression method ", e.method, "; only stored (0) and deflate (8) are supported");
    // Entry data must lie before the central directory; checking against it catches overlapping records.
    const std::uint64_t limit = central_directory_offset_;
    if (e.local_header_offset > limit || limit - e.local_header_offset < 30)
      entry_error(e, "has its local header at offset ", e.local_header_offset, ", outside the archive's data area");
    const auto header = file_.read(e.local_header_offset, 30, "local header");
    if (detail::le<std::uint32_t>(header, 0) != 0x04034b50u)
      entry_error(e, "has no local header signature at offset ", e.local_header_offset);
    const std::uint64_t name_length = detail::le<std::uint16_t>(header, 26);
    const std::uint64_t extra_length = detail::le<std::uint16_t>(header, 28);
    const std::uint64_t name_offset = e.local_header_offset + 30;
    const std::uint64_t data_offset = name_offset + name_length + extra_length;
    if (data_offset > limit || e.compressed_size > limit - data_offset)
      entry_error(e, "has data (", e.compressed_size, " bytes at offset ", data_offset,
                  ") running past the archive's data area");
    const auto local_name = file_.read(name_offset, name_length, "local header name");
    if (local_name.size() != e.name.size() ||
        !std::equal(local_name.begin(), local_name.end(), e.name.begin(),
                    [](std::byte a, char b) { return a == static_cast<std::byte>(b); }))
      entry_error(e, "is called differently in its local header; the archive is corrupt");

    std::vector<std::byte> data;
    if (e.method == 0) {
      if (e.compressed_size != e.size)
        entry_error(e, "is stored uncompressed but lists ", e.compressed_size, " stored and ", e.size, " real bytes");
      data = file_.read(data_offset, e.size, "entry data");
    } else {
      data = inflate_entry(e, file_.read(data_offset, e.compressed_size, "entry data"));
    }
    // A zero CRC on non-empty data means the writer skipped it (torch can be told to); otherwise verify.
    if (e.crc32 != 0 && crc_of(data) != e.crc32) entry_error(e, "fails its CRC-32 check; the file is corrupt");
    return data;
  }

 private:
  template <class... Parts>
  [[noreturn]] void error(Parts&&... parts) const {
    detail::fail(detail::printable(path()), ": ", std::forward<Parts>(parts)...);
  }

  template <class... Parts>
  [[noreturn]] void entry_error(const zip_entry& e, Parts&&... parts) const {
    error("ZIP entry ", detail::printable(e.name), " ", std::forward<Parts>(parts)...);
  }

  static std::uint32_t crc_of(const std::vector<std::byte>& data) {
    return static_cast<std::uint32_t>(
        ::crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<z_size_t>(data.size())));
  }

  std::vector<std::byte> inflate_entry(const zip_entry& e, const std::vector<std::byte>& in) const {
    // Deflate expands at most 1032:1, so a larger declared size is a lie (or a zip bomb); refuse before allocating.
    if (e.size / 1032 > e.compressed_size)
      entry_error(e, "claims ", e.size, " bytes inflated from only ", e.compressed_size, " compressed bytes");
    // Grow the output as data actually arrives, so a false size in a corrupt directory costs no memory up front.
    std::vector<std::byte> out(
        static_cast<std::size_t>(std::min(e.size, std::max<std::uint64_t>(4 * in.size(), 1 << 20))));
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) entry_error(e, "cannot be inflated: zlib initialisation failed");
    struct guard {
      z_stream* s;
      ~guard() { inflateEnd(s); }
    } release{&zs};
    // zlib counts in 32-bit units, so large entries go through in chunks.
    constexpr std::size_t chunk = std::size_t{1} << 30;
    std::byte spare{};  // zlib rejects a null output pointer even when no output space is offered
    std::size_t in_pos = 0, out_pos = 0;
    for (;;) {
      if (out_pos == out.size() && out.size() < e.size)
        out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(e.size, 2 * out.size())));
      const std::size_t in_now = std::min(in.size() - in_pos, chunk);
      const std::size_t out_now = std::min(out.size() - out_pos, chunk);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + in_pos));
      zs.avail_in = static_cast<uInt>(in_now);
      zs.next_out = reinterpret_cast<Bytef*>(out_now ? out.data() + out_pos : &spare);
      zs.avail_out = static_cast<uInt>(out_now);
      const int rc = ::inflate(&zs, Z_NO_FLUSH);
      const std::size_t consumed = in_now - zs.avail_in, produced = out_now - zs.avail_out;
      in_pos += consumed;
      out_pos += produced;
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        entry_error(e, "holds corrupt deflate data (zlib: ", zs.msg ? zs.msg : "unknown error", ")");
      if (consumed == 0 && produced == 0) {
        if (out_pos == e.size) entry_error(e, "inflates to more than the ", e.size, " bytes its directory lists");
        entry_error(e, "has deflate data that ends early");
      }
    }
    if (out_pos != e.size) entry_error(e, "inflates to ", out_pos, " bytes, but its directory lists ", e.size);
    return out;
  }

  void read_central_directory() {
    using detail::le;
    const std::uint64_t size = file_.size();
    constexpr std::uint64_t eocd_size = 22;
    if (size < eocd_size) error("not a ZIP archive (", size, " bytes is too short)");
    // The end-of-central-directory record is the last 22 bytes plus a comment of up to 65535 bytes.
    const std::uint64_t tail_size = std::min<std::uint64_t>(size, eocd_size + 0xffff);
    const std::uint64_t tail_offset = size - tail_size;
    const auto tail = file_.read(tail_offset, tail_size, "end of archive");
    std::size_t pos = tail.size() - eocd_size + 1;
    bool found = false;
    while (pos-- > 0) {
      if (le<std::uint32_t>(tail, pos) == 0x06054b50u &&
          pos + eocd_size + le<std::uint16_t>(tail, pos + 20) <= tail.size()) {
        found = true;
        break;
      }
    }
    if (!found) error("not a ZIP archive (no end-of-central-directory record)");
    const std::uint64_t eocd_offset = tail_offset + pos;
    if (le<std::uint16_t>(tail, pos + 4) != 0 || le<std::uint16_t>(tail, pos + 6) != 0)
      error("is a multi-disk ZIP archive, which is not supported");
    std::uint64_t count = le<std::uint16_t>(tail, pos + 10);
    std::uint64_t cd_size = le<std::uint32_t>(tail, pos + 12);
    std::uint64_t cd_offset = le<std::uint32_t>(tail, pos + 16);
    std::uint64_t cd_limit = eocd_offset;

    // A ZIP64 locator right before the record points at the ZIP64 record, whose 64-bit fields then rule.
    constexpr std::uint64_t locator_size = 20, zip64_eocd_size = 56;
    if (eocd_offset >= locator_size) {
      const auto locator = file_.read(eocd_offset - locator_size, locator_size, "ZIP64 locator");
      if (le<std::uint32_t>(locator, 0) == 0x07064b50u) {
        const std::uint64_t record_offset = le<std::uint64_t>(locator, 8);
        const std::uint64_t record_limit = eocd_offset - locator_size;
        if (record_offset > record_limit || record_limit - record_offset < zip64_eocd_size)
          error("ZIP64 end-of-central-directory offset ", record_offset, " lies outside the archive");
        const auto record = file_.read(record_offset, zip64_eocd_size, "ZIP64 end-of-central-directory record");
        if (le<std::uint32_t>(record, 0) != 0x06064b50u)
          error("no ZIP64 end-of-central-directory record at offset ", record_offset);
        if (le<std::uint32_t>(record, 16) != 0 || le<std::uint32_t>(record, 20) != 0)
          error("is a multi-disk ZIP archive, which is not supported");
        count = le<std::uint64_t>(record, 32);
        cd_size = le<std::uint64_t>(record, 40);
        cd_offset = le<std::uint64_t>(record, 48);
        cd_limit = record_offset;
      }
    }
    if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset)
      error("central directory (", cd_size, " bytes at offset ", cd_offset, ") lies outside the archive");
    central_directory_offset_ = cd_offset;
    const auto cd = file_.read(cd_offset, cd_size, "central directory");

    constexpr std::size_t header_size = 46;
    entries_.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, cd.size() / header_size)));
    std::size_t p = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (cd.size() - p < header_size || le<std::uint32_t>(cd, p) != 0x02014b50u)
        error("central directory entry ", i, " of ", count, " is missing or corrupt");
      zip_entry e;
      e.flags = le<std::uint16_t>(cd, p + 8);
      e.method = le<std::uint16_t>(cd, p + 10);
      e.crc32 = le<std::uint32_t>(cd, p + 16);
      e.compressed_size = le<std::uint32_t>(cd, p + 20);
      e.size = le<std::uint32_t>(cd, p + 24);
      const std::size_t name_length = le<std::uint16_t>(cd, p + 28);
      const std::size_t extra_length = le<std::uint16_t>(cd, p + 30);
      const std::size_t comment_length = le<std::uint16_t>(cd, p + 32);
      e.local_header_offset = le<std::uint32_t>(cd, p + 42);
      if (cd.size() - p - header_size < name_length + extra_length + comment_length)
        error("central directory entry ", i, " runs past the central directory");
      const auto* name = reinterpret_cast<const char*>(cd.data() + p + header_size);
      e.name.assign(name, name_length);
      read_zip64_extra(cd, p + header_size + name_length, extra_length, e);
      if (by_name_.count(e.name)) error("lists ZIP entry ", detail::printable(e.name), " twice");
      by_name_.emplace(e.name, entries_.size());
      entries_.push_back(std::move(e));
      p += header_size + name_length + extra_length + comment_length;
    }
  }

  /// Replaces the saturated 32-bit sizes and offset with the 64-bit values of a ZIP64 extra field, in the order
  /// the format lists them (only saturated fields are present).
  void read_zip64_extra(const std::vector<std::byte>& cd, std::size_t start, std::size_t length, zip_entry& e) const {
    using detail::le;
    std::size_t q = 0;
    while (length - q >= 4) {
      const std::uint16_t id = le<std::uint16_t>(cd, start + q);
      const std::size_t block = le<std::uint16_t>(cd, start + q + 2);
      if (length - q - 4 < block) entry_error(e, "has a malformed extra field in the central directory");
      if (id == 1) {
        std::size_t r = start + q + 4;
        const std::size_t end = r + block;
        auto take = [&](std::uint64_t& field) {
          if (field != 0xffffffffu) return;
          if (end - r < 8) entry_error(e, "has a truncated ZIP64 extra field");
          field = le<std::uint64_t>(cd, r);
          r += 8;
        };
        take(e.size);
        take(e.compressed_size);
        take(e.local_header_offset);
      }
      q += 4 + block;
    }
  }

  detail::bounded_file file_;
  std::uint64_t central_directory_offset_ = 0;
  std::vector<zip_entry> entries_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace swinfer
