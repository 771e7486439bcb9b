// swinfer CLI: JSON text that holds any file name. A Linux file name is bytes, not necessarily UTF-8 (an archive
// copied from an old system, a Latin-1 name), while JSON text is UTF-8 and nlohmann::json refuses to write anything
// else. The reports and the batch journal therefore write a name that is not valid UTF-8 with each byte that is not
// part of a valid UTF-8 sequence as the four characters \xNN (the "backslashreplace" Python uses): readable, and the
// same text for the same name every time, so the journal still recognises the file on --resume (batch_queue.cpp
// compares the recorded text with the text of the name on disk). Valid UTF-8 is written as it is.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace swinfer_tool {

/// Length of the well-formed UTF-8 sequence starting at `s[i]` (Unicode 15, table 3-7: no overlong forms, no
/// surrogates, nothing past U+10FFFF), or 0 when the byte there does not start one.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const auto in = [&](std::size_t k, unsigned lo, unsigned hi) { return k < s.size() && byte(k) >= lo && byte(k) <= hi; };
  const unsigned b = byte(i);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return in(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    const unsigned lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    return in(i + 1, lo, hi) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    const unsigned lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    return in(i + 1, lo, hi) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

/// `s` when it is valid UTF-8; otherwise `s` with every byte outside a valid sequence written as \xNN.
inline std::string utf8_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = utf8_sequence_length(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += escaped;
      ++i;
    }
  }
  return out;
}

/// `j` with utf8_text applied to every string in it, keys included.
inline nlohmann::json utf8_safe(const nlohmann::json& j) {
  if (j.is_string()) return utf8_text(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(utf8_safe(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, v] : j.items()) out[utf8_text(key)] = utf8_safe(v);
    return out;
  }
  return j;
}

/// JSON text of `j` (nlohmann's dump, `indent` as there) that never throws on a string that is not UTF-8.
inline std::string json_text(const nlohmann::json& j, int indent = -1) { return utf8_safe(j).dump(indent); }

}  // namespace swinfer_tool
