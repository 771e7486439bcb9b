// swinfer: reads and writes NumPy .npy arrays (inference inputs and outputs) as float32.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/detail/float_conversion.hpp"
#include "swinfer/io/atomic_file.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {

/// A .npy array converted to float32, C order.
struct npy_array {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

namespace detail {

/// Product of dims, with each checked non-negative and the product (and its size in bytes) checked for overflow.
inline std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& shape, std::size_t item) {
  std::optional<std::int64_t> n = 1;
  for (auto d : shape)
    if (d < 0 || !(n = multiply_exact(*n, d))) return std::nullopt;
  if (!multiply_exact(*n, static_cast<std::int64_t>(item))) return std::nullopt;
  return n;
}

/// Parses the Python dict literal of a .npy header, e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, const std::filesystem::path& path) : s_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<std::int64_t>& shape) {
    bool seen[3] = {false, false, false};
    expect('{');
    while (!accept('}')) {
      const auto key = string();
      expect(':');
      if (key == "descr") {
        if (peek() == '[') error("has a structured dtype, which is not supported");
        descr = string();
        seen[0] = true;
      } else if (key == "fortran_order") {
        fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        shape = tuple();
        seen[2] = true;
      } else {
        error("has an unexpected header key ", printable(key));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) error("has text after the header dict");
    if (!seen[0] || !seen[1] || !seen[2]) error("header lacks one of 'descr', 'fortran_order', 'shape'");
  }

 private:
  template <class... Parts>
  [[noreturn]] void error(Parts&&... parts) const {
    fail(printable(path_), ": not a valid .npy file: ", std::forward<Parts>(parts)...);
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error("expected '", c, "' at header position ", pos_);
  }

  std::string string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') error("expected a string at header position ", pos_);
    const auto end = s_.find(quote, ++pos_);
    if (end == std::string_view::npos) error("unterminated string in the header");
    std::string out(s_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) error("escaped string in the header");
    pos_ = end + 1;
    return out;
  }

  bool boolean() {
    peek();
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}})
      if (s_.substr(pos_).starts_with(word)) {
        pos_ += word.size();
        return value;
      }
    error("expected True or False at header position ", pos_);
  }

  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (!accept(')')) {
      if (out.size() == 64) error("shape has more than 64 dimensions");
      peek();
      std::optional<std::int64_t> v = 0;
      const std::size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9')
        if (!(v = multiply_exact(*v, 10)) || !(v = add_exact(*v, s_[pos_++] - '0')))
          error("shape dimension too large");
      if (pos_ == start) error("expected a non-negative integer in the shape at header position ", pos_);
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
      out.push_back(*v);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return out;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  const std::filesystem::path& path_;
};

}  // namespace detail

/// \brief Reads a .npy file of float16/32/64 (either byte order, C order) as float32.
/// Throws swinfer::error naming the file for anything else (other dtypes, Fortran order, truncated data).
inline npy_array read_npy(const std::filesystem::path& path) {
  using namespace detail;
  bounded_file file(path);
  if (file.size() < 10) fail(printable(path), ": not a .npy file (", file.size(), " bytes is too short)");
  const auto preamble = file.read(0, 12 <= file.size() ? 12 : 10, "npy preamble");
  static constexpr unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (!std::equal(std::begin(magic), std::end(magic), preamble.begin(),
                  [](unsigned char m, std::byte b) { return std::byte{m} == b; }))
    fail(printable(path), ": not a .npy file (no \\x93NUMPY magic)");
  const auto major = std::to_integer<int>(preamble[6]);
  std::uint64_t header_length = 0, header_offset = 0;
  if (major == 1) {
    header_length = le<std::uint16_t>(preamble, 8);
    header_offset = 10;
  } else if ((major == 2 || major == 3) && preamble.size() == 12) {
    header_length = le<std::uint32_t>(preamble, 8);
    header_offset = 12;
  } else {
    fail(printable(path), ": unsupported .npy format version ", major, ".", std::to_integer<int>(preamble[7]));
  }
  const auto header_bytes = file.read(header_offset, header_length, "npy header");
  std::string descr;
  bool fortran_order = false;
  npy_array a;
  npy_header_parser(std::string_view(reinterpret_cast<const char*>(header_bytes.data()), header_bytes.size()), path)
      .parse(descr, fortran_order, a.shape);

  // Only floating arrays are accepted: '<' little- or '>' big-endian ('=' is this machine's order), 2, 4 or 8 bytes.
  const bool host_big = std::endian::native == std::endian::big;
  std::optional<dtype> type;
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '=') && descr[1] == 'f') {
    if (descr[2] == '2') type = dtype::f16;
    if (descr[2] == '4') type = dtype::f32;
    if (descr[2] == '8') type = dtype::f64;
  }
  if (!type)
    fail(printable(path), ": unsupported dtype ", printable(descr),
         "; swinfer reads float16, float32 and float64 arrays ('<f2', '<f4', '<f8' or big-endian '>f2', '>f4', '>f8')");
  const bool big_endian = descr[0] == '>' || (descr[0] == '=' && host_big);
  if (fortran_order)
    fail(printable(path), ": the array is stored in Fortran order; save it in C order (numpy.ascontiguousarray)");

  const auto numel = element_count(a.shape, item_size(*type));
  if (!numel) fail(printable(path), ": shape ", shape_string(a.shape), " is too large");
  const std::uint64_t data_offset = header_offset + header_length;
  const std::uint64_t data_bytes = static_cast<std::uint64_t>(*numel) * item_size(*type);
  if (file.size() - data_offset != data_bytes)
    fail(printable(path), ": holds ", file.size() - data_offset, " bytes of data, but shape ", shape_string(a.shape),
         " of ", descr, " needs ", data_bytes);
  const auto raw = file.read(data_offset, data_bytes, "npy data");
  a.data.resize(static_cast<std::size_t>(*numel));
  decode_elements(*type, big_endian, raw.data(), 0, 1, *numel, a.data.data());
  return a;
}

/// \brief Writes `data` (C order, shape `shape`) as a '<f4' .npy file, byte-identical to numpy.save's version 1.0.
/// The file appears complete or not at all.
inline void write_npy(const std::filesystem::path& path, const std::vector<std::int64_t>& shape, const float* data) {
  using namespace detail;
  const auto numel = element_count(shape, sizeof(float));
  if (!numel) fail("cannot write ", printable(path), ": invalid shape ", shape_string(shape));
  // numpy's header: the dict repr, spare spaces so the first dimension can grow in place, then space padding and
  // a newline up to a multiple of 64 bytes (counting the 10-byte preamble).
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  if (!shape.empty()) header.append(21 - std::to_string(shape[0]).size(), ' ');
  const std::size_t padding = 64 - (10 + header.size() + 1) % 64;
  header.append(padding, ' ');
  header += '\n';

  write_stream_atomically(path, [&](std::ostream& out) {
    const std::uint16_t length = static_cast<std::uint16_t>(header.size());
    const char preamble[10] = {
        '\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
    out.write(preamble, sizeof preamble);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    // Encode little-endian explicitly, in bounded chunks, so the output is the same on any host.
    std::vector<char> chunk;
    constexpr std::int64_t per_chunk = 1 << 16;
    for (std::int64_t first = 0; first < *numel; first += per_chunk) {
      const std::int64_t n = std::min(per_chunk, *numel - first);
      chunk.resize(static_cast<std::size_t>(n) * 4);
      for (std::int64_t i = 0; i < n; ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(data[first + i]);
        for (int b = 0; b < 4; ++b) chunk[static_cast<std::size_t>(4 * i + b)] = static_cast<char>(bits >> (8 * b));
      }
      out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    }
  });
}

}  // namespace swinfer
