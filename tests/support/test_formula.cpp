// Checks tests/support/formula_weights.hpp against the values tools/goldens/formula.py wrote to
// tests/data/goldens/formula_samples.json (bit patterns, so the comparison is exact).
//
// Data folder: $SWINFER_GOLDENS_DIR, else the SWINFER_GOLDENS_DIR macro, else test_data_dir() / "goldens"
// (test_data.hpp: $SWINFER_TEST_DATA_DIR or the folder tests/CMakeLists.txt configured), else tests/data/goldens
// searched upwards from the cwd.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "formula_weights.hpp"
#if defined(SWINFER_TEST_DATA_DIR)
#include "test_data.hpp"
#endif

namespace {

// ---- a minimal JSON reader (objects, arrays, strings, numbers kept as text, true/false/null) ----
struct jvalue {
  enum kind_t { null_v, bool_v, number_v, string_v, array_v, object_v } kind = null_v;
  bool b = false;
  std::string text;  // number token or string contents
  std::vector<jvalue> items;      // array elements, or object member values
  std::vector<std::string> keys;  // object member names, parallel to `items`

  const jvalue& operator[](const std::string& k) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == k) return items[i];
    throw std::runtime_error("formula_samples.json: missing member " + k);
  }
  std::uint64_t u64() const {
    if (kind != number_v) throw std::runtime_error("not a number");
    return std::strtoull(text.c_str(), nullptr, 10);
  }
  std::int64_t i64() const { return std::strtoll(text.c_str(), nullptr, 10); }
  std::uint32_t u32() const { return static_cast<std::uint32_t>(u64()); }
};

class jparser {
 public:
  explicit jparser(const std::string& s) : s_(s) {}
  jvalue parse() {
    jvalue v = value();
    ws();
    if (p_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& s_;
  std::size_t p_ = 0;

  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("formula_samples.json: ") + what + " at offset " + std::to_string(p_));
  }
  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t')) ++p_;
  }
  char peek() {
    ws();
    if (p_ >= s_.size()) fail("unexpected end");
    return s_[p_];
  }
  void expect(char c) {
    if (peek() != c) fail("unexpected character");
    ++p_;
  }
  static void utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::uint32_t hex4() {
    if (p_ + 4 > s_.size()) fail("short \\u escape");
    const std::uint32_t v = static_cast<std::uint32_t>(std::stoul(s_.substr(p_, 4), nullptr, 16));
    p_ += 4;
    return v;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (true) {
      if (p_ >= s_.size()) fail("unterminated string");
      const char c = s_[p_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = s_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && p_ + 6 <= s_.size() && s_[p_] == '\\' && s_[p_ + 1] == 'u') {
            p_ += 2;
            const std::uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  jvalue value() {
    jvalue v;
    const char c = peek();
    if (c == '{') {
      ++p_;
      v.kind = jvalue::object_v;
      if (peek() == '}') {
        ++p_;
        return v;
      }
      while (true) {
        v.keys.push_back(str());
        expect(':');
        v.items.push_back(value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      ++p_;
      v.kind = jvalue::array_v;
      if (peek() == ']') {
        ++p_;
        return v;
      }
      while (true) {
        v.items.push_back(value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = jvalue::string_v;
      v.text = str();
      return v;
    }
    if (s_.compare(p_, 4, "true") == 0) {
      p_ += 4;
      v.kind = jvalue::bool_v;
      v.b = true;
      return v;
    }
    if (s_.compare(p_, 5, "false") == 0) {
      p_ += 5;
      v.kind = jvalue::bool_v;
      return v;
    }
    if (s_.compare(p_, 4, "null") == 0) {
      p_ += 4;
      return v;
    }
    const std::size_t start = p_;
    while (p_ < s_.size() && std::strchr("+-0123456789.eE", s_[p_]) != nullptr) ++p_;
    if (p_ == start) fail("unexpected token");
    v.kind = jvalue::number_v;
    v.text = s_.substr(start, p_ - start);
    return v;
  }
};

std::string goldens_dir() {
  if (const char* e = std::getenv("SWINFER_GOLDENS_DIR")) return e;
#if defined(SWINFER_GOLDENS_DIR)
  return SWINFER_GOLDENS_DIR;
#elif defined(SWINFER_TEST_DATA_DIR)
  return (swinfer_test::test_data_dir() / "goldens").string();
#else
  std::string up;
  for (int i = 0; i < 6; ++i, up += "../") {
    const std::string d = up + "tests/data/goldens";
    if (std::ifstream(d + "/formula_samples.json").good()) return d;
  }
  return "tests/data/goldens";
#endif
}

const jvalue& samples_doc() {
  static const std::unique_ptr<jvalue> doc = [] {
    const std::string path = goldens_dir() + "/formula_samples.json";
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path + " (set SWINFER_GOLDENS_DIR)");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    return std::make_unique<jvalue>(jparser(text).parse());
  }();
  return *doc;
}

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

using swinfer_test::fnv1a64;
using swinfer_test::formula_k24;

static_assert(fnv1a64("") == 0xcbf29ce484222325ull, "FNV-1a offset basis");
static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cull, "FNV-1a 64 test vector");
static_assert(swinfer_test::formula_unit(0, 0) >= -1.0f && swinfer_test::formula_unit(0, 0) < 1.0f, "range");

TEST_CASE("formula: FNV-1a 64 key hashes match Python", "[formula]") {
  const auto& hashes = samples_doc()["hashes"].items;
  REQUIRE(hashes.size() >= 5);
  for (const auto& h : hashes) {
    INFO("key '" << h["key"].text << "'");
    CHECK(fnv1a64(h["key"].text) == h["fnv1a64"].u64());
  }
}

TEST_CASE("formula: single values are bit-identical to Python", "[formula]") {
  const auto& samples = samples_doc()["samples"].items;
  REQUIRE(samples.size() >= 50);
  for (const auto& s : samples) {
    const std::string& key = s["key"].text;
    const std::uint64_t i = s["index"].u64();
    const float offset = from_bits(s["offset_bits"].u32());
    const float scale = from_bits(s["scale_bits"].u32());
    INFO("key '" << key << "' index " << i);
    // the hex-float spellings denote the same numbers as the bit patterns
    CHECK(bits_of(static_cast<float>(std::strtod(s["offset"].text.c_str(), nullptr))) == s["offset_bits"].u32());
    CHECK(bits_of(static_cast<float>(std::strtod(s["scale"].text.c_str(), nullptr))) == s["scale_bits"].u32());
    CHECK(bits_of(static_cast<float>(std::strtod(s["value"].text.c_str(), nullptr))) == s["value_bits"].u32());
    CHECK(formula_k24(fnv1a64(key), i) == s["k24"].u32());
    const float v = swinfer_test::formula_value(key, i, offset, scale);
    CHECK(bits_of(v) == s["value_bits"].u32());
  }
}

TEST_CASE("formula: whole runs match (head bits and exact float64 sum)", "[formula]") {
  for (const auto& r : samples_doc()["runs"].items) {
    const std::string& key = r["key"].text;
    const auto n = static_cast<std::size_t>(r["count"].u64());
    const float offset = from_bits(r["offset_bits"].u32());
    const float scale = from_bits(r["scale_bits"].u32());
    INFO("key '" << key << "'");
    const std::vector<float> v = swinfer_test::formula_tensor(key, n, offset, scale);
    const auto& head = r["head_bits"].items;
    for (std::size_t i = 0; i < head.size(); ++i) CHECK(bits_of(v[i]) == head[i].u32());
    // every value is a multiple of a small power of two well inside double's range: the sum is exact in any order
    double sum = 0;
    for (float x : v) sum += x;
    CHECK(sum == std::strtod(r["sum_f64"].text.c_str(), nullptr));
    std::vector<float> filled(n, -7.0f);
    swinfer_test::formula_fill(key, offset, scale, filled.data(), n);
    CHECK(filled == v);
  }
}

TEST_CASE("formula: relative_position_index helper matches spec samples", "[formula]") {
  for (const auto& r : samples_doc()["relative_position_index"].items) {
    const auto& w = r["window"].items;
    const int wd = static_cast<int>(w[0].i64()), wh = static_cast<int>(w[1].i64()), ww = static_cast<int>(w[2].i64());
    INFO("window " << wd << "x" << wh << "x" << ww);
    const auto idx = swinfer_test::relative_position_index(wd, wh, ww);
    const std::int64_t n = r["n"].i64();
    REQUIRE(static_cast<std::int64_t>(idx.size()) == n * n);
    std::int64_t sum = 0;
    for (auto x : idx) sum += x;
    CHECK(sum == r["sum"].i64());
    for (const auto& e : r["entries"].items) {
      const std::int64_t a = e.items[0].i64(), b = e.items[1].i64();
      CHECK(idx[static_cast<std::size_t>(a * n + b)] == e.items[2].i64());
    }
  }
}
