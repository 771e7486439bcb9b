// swinfer: reads and writes safetensors checkpoints.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/detail/float_conversion.hpp"
#include "swinfer/io/npy.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/io/torch_checkpoint.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {
namespace detail {

inline std::optional<dtype> safetensors_dtype(std::string_view name) {
  static const std::pair<std::string_view, dtype> table[] = {
      {"F32", dtype::f32}, {"F16", dtype::f16}, {"BF16", dtype::bf16}, {"F64", dtype::f64}, {"I64", dtype::i64},
      {"I32", dtype::i32}, {"I16", dtype::i16}, {"I8", dtype::i8},     {"U8", dtype::u8},   {"BOOL", dtype::boolean},
  };
  for (const auto& [n, t] : table)
    if (n == name) return t;
  return std::nullopt;
}

/// The safetensors library refuses headers over 100 MB; so do we, before allocating.
constexpr std::uint64_t max_safetensors_header = 100'000'000;

/// Bytes per element save_safetensors writes `w` with: 4 (F32), 1 (I8, for int8 tensors) or 8 (I64).
inline int stored_size(const weight& w) {
  if (is_floating(w.source)) return 4;
  return w.source == dtype::i8 ? 1 : 8;
}

}  // namespace detail

/// \brief A safetensors file's tensors and its '__metadata__' (string values; others are skipped).
struct safetensors_contents {
  state_dict tensors;
  std::map<std::string, std::string> metadata;
};

/// \brief Reads every tensor of a .safetensors file, in the order of their data in the file, and its metadata.
/// Keys lose leading 'module.' and '_orig_mod.' prefixes.
/// Throws swinfer::error naming the file (and tensor) on any problem.
inline safetensors_contents read_safetensors(const std::filesystem::path& path) {
  using namespace detail;
  using json = nlohmann::json;  // std::map-backed: parsing stays O(n log n) however many keys a header has
  bounded_file file(path);
  if (file.size() < 8) fail(printable(path), ": not a safetensors file (", file.size(), " bytes is too short)");
  const std::uint64_t header_length = le<std::uint64_t>(file.read(0, 8, "safetensors header length"), 0);
  if (header_length > file.size() - 8)
    fail(printable(path), ": safetensors header length ", header_length, " is larger than the file (", file.size(),
         " bytes)");
  if (header_length > max_safetensors_header)
    fail(printable(path), ": safetensors header of ", header_length, " bytes exceeds the 100 MB limit");
  const auto raw = file.read(8, header_length, "safetensors header");
  const auto* text = reinterpret_cast<const char*>(raw.data());
  json header;
  try {
    header = json::parse(text, text + raw.size());
  } catch (const json::exception& e) {
    fail(printable(path), ": safetensors header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail(printable(path), ": safetensors header is not a JSON object");

  const std::uint64_t data_start = 8 + header_length;
  const std::uint64_t data_size = file.size() - data_start;
  struct entry {
    std::uint64_t begin, end;
    const std::string* key;
    dtype type;
    std::vector<std::int64_t> shape;
  };
  std::vector<entry> entries;
  safetensors_contents out;
  for (const auto& item : header.items()) {
    const std::string& key = item.key();  // named, not a structured binding: lambdas capture it (clang < 16 too)
    const json& info = item.value();
    if (key == "__metadata__") {
      if (info.is_object()) {
        for (const auto& [name, value] : info.items())
          if (value.is_string()) out.metadata.emplace(name, value.get<std::string>());
      }
      continue;
    }
    auto bad = [&](auto... what) { fail(printable(path), ": tensor ", printable(key), ": ", what...); };
    if (!info.is_object()) bad("header entry is not an object");
    const auto dt = info.find("dtype"), sh = info.find("shape"), off = info.find("data_offsets");
    if (dt == info.end() || sh == info.end() || off == info.end())
      bad("header entry lacks 'dtype', 'shape' or 'data_offsets'");
    const auto type = dt->is_string() ? safetensors_dtype(dt->get_ref<const std::string&>()) : std::nullopt;
    if (!type)
      bad("unsupported dtype ", printable(dt->dump(-1, ' ', false, json::error_handler_t::replace)),
          "; swinfer reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL");
    entry e{0, 0, &key, *type, {}};
    if (!sh->is_array() || sh->size() > 64) bad("shape is not an array of at most 64 sizes");
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        bad("shape holds something other than a non-negative integer");
      e.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
    }
    if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      bad("data_offsets is not a pair of non-negative integers");
    e.begin = (*off)[0].get<std::uint64_t>();
    e.end = (*off)[1].get<std::uint64_t>();
    if (e.begin > e.end || e.end > data_size)
      bad("data_offsets [", e.begin, ", ", e.end, "] lie outside the ", data_size, " bytes of tensor data");
    const auto numel = element_count(e.shape, item_size(e.type));
    if (!numel) bad("shape ", shape_string(e.shape), " is too large");
    const std::uint64_t bytes = static_cast<std::uint64_t>(*numel) * item_size(e.type);
    if (e.end - e.begin != bytes)
      bad("data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin, " bytes, but shape ",
          shape_string(e.shape), " of ", dtype_name(e.type), " needs ", bytes);
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const entry& a, const entry& b) { return std::tie(a.begin, *a.key) < std::tie(b.begin, *b.key); });

  std::unordered_map<std::string, std::string> original;
  for (auto& e : entries) {
    const auto bytes = file.read(data_start + e.begin, e.end - e.begin, "tensor data");
    weight w;
    w.source = e.type;
    w.shape = std::move(e.shape);
    const auto n = w.numel();
    if (is_floating(e.type)) {
      w.values.resize(static_cast<std::size_t>(n));
      decode_elements(e.type, false, bytes.data(), 0, 1, n, w.values.data());
    } else {
      w.indices.resize(static_cast<std::size_t>(n));
      decode_elements(e.type, false, bytes.data(), 0, 1, n, w.indices.data());
    }
    insert_stripped(out.tensors, original, path, *e.key, std::move(w));
  }
  return out;
}

/// Every tensor of a .safetensors file (read_safetensors without the metadata).
inline state_dict load_safetensors(const std::filesystem::path& path) { return read_safetensors(path).tensors; }

/// \brief Writes tensors as a .safetensors file, in state_dict order: floating tensors as F32, int8 ones (source
/// dtype::i8) as I8, other integer ones as I64; `metadata` as its '__metadata__'. The file appears complete or not at
/// all.
inline void save_safetensors(const std::filesystem::path& path, const state_dict& tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
  using namespace detail;
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& key : tensors.keys()) {
    const weight& w = tensors.at(key);
    const bool floating = is_floating(w.source);
    const auto numel = element_count(w.shape, 8);
    const std::size_t held = floating ? w.values.size() : w.indices.size();
    if (key == "__metadata__") fail("cannot write ", printable(path), ": '__metadata__' is reserved in safetensors");
    if (!numel || static_cast<std::uint64_t>(*numel) != held)
      fail("cannot write ", printable(path), ": tensor ", printable(key), " holds ", held, " values but its shape is ",
           shape_string(w.shape));
    const int size = stored_size(w);
    const std::uint64_t bytes = held * static_cast<std::uint64_t>(size);
    header[key] = {{"dtype", floating ? "F32" : size == 1 ? "I8" : "I64"},
                   {"shape", w.shape},
                   {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned, as the reference writer does

  write_stream_atomically(path, [&](std::ostream& out) {
    char length[8];
    for (int b = 0; b < 8; ++b) length[b] = static_cast<char>(static_cast<std::uint64_t>(text.size()) >> (8 * b));
    out.write(length, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    // Little-endian regardless of the host.
    for (const auto& key : tensors.keys()) {
      const weight& w = tensors.at(key);
      std::vector<char> buf;
      if (is_floating(w.source)) {
        buf.resize(w.values.size() * 4);
        for (std::size_t i = 0; i < w.values.size(); ++i)
          for (int b = 0; b < 4; ++b)
            buf[4 * i + b] = static_cast<char>(std::bit_cast<std::uint32_t>(w.values[i]) >> (8 * b));
      } else {
        const int size = stored_size(w);
        buf.resize(w.indices.size() * static_cast<std::size_t>(size));
        for (std::size_t i = 0; i < w.indices.size(); ++i)
          for (int b = 0; b < size; ++b)
            buf[size * i + b] = static_cast<char>(static_cast<std::uint64_t>(w.indices[i]) >> (8 * b));
      }
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    }
  });
}

}  // namespace swinfer
