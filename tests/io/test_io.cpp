// Tests of checkpoint and .npy loading against values computed by torch/numpy (tools/make_io_fixtures.py),
// and of robustness against truncated, corrupted and hand-crafted hostile files.
#include <catch2/catch.hpp>

#include "error_testing.hpp"
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "swinfer/detail/float_conversion.hpp"
#include "swinfer/io/checkpoint.hpp"
#include "swinfer/io/npy.hpp"
#include "swinfer/io/pickle.hpp"
#include "swinfer/io/safetensors.hpp"
#include "swinfer/io/torch_checkpoint.hpp"
#include "swinfer/io/zip_reader.hpp"
#include "test_data.hpp"

using swinfer_test::error_of;

namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using Catch::Matchers::Contains;

fs::path data_dir() { return swinfer_test::test_data_dir() / "io"; }

/// A fresh directory, removed with everything in it at scope exit. It goes in /dev/shm where there is one: the
/// mutation tests write tens of thousands of small files, which a disk-backed directory makes slow.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device random;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = base / ("swinfer-io-test-" + std::to_string(random()) + std::to_string(random()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path, ignored);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  fs::remove(p);  // a new file, not a truncated one: ext4 flushes rewritten truncated files on close, ~100x slower
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

nlohmann::json expected(const std::string& file) {
  static const nlohmann::json all = nlohmann::json::parse(read_bytes(data_dir() / "expected.json"));
  return all.at(file);
}


/// Compares a loaded state_dict with the Python-computed expectation: keys in order, shapes, dtypes, exact values.
void check_matches(const swinfer::state_dict& sd, const nlohmann::json& want) {
  REQUIRE(sd.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& w = want[i];
    const std::string key = w.at("key");
    INFO("tensor " << key);
    REQUIRE(sd.keys()[i] == key);
    const auto& t = sd.at(key);
    CHECK(t.shape == w.at("shape").get<std::vector<std::int64_t>>());
    CHECK(std::string(swinfer::dtype_name(t.source)) == w.at("dtype").get<std::string>());
    if (w.contains("bits")) {
      const auto bits = w.at("bits").get<std::vector<std::uint32_t>>();
      REQUIRE(t.values.size() == bits.size());
      CHECK(t.indices.empty());
      for (std::size_t j = 0; j < bits.size(); ++j) {
        INFO("element " << j);
        CHECK(std::bit_cast<std::uint32_t>(t.values[j]) == bits[j]);
      }
    } else {
      CHECK(t.indices == w.at("ints").get<std::vector<std::int64_t>>());
      CHECK(t.values.empty());
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A minimal ZIP writer, so tests can repackage torch archives with altered entries and valid CRCs.

struct zip_input {
  zip_input(std::string n, std::string d) : name(std::move(n)), data(std::move(d)) {}
  std::string name;
  std::string data;
  std::uint16_t method = 0;                    // 0 stored, 8 deflate, anything else is written as stored
  std::optional<std::uint32_t> crc;            // overrides the true CRC
  std::optional<std::uint64_t> declared_size;  // overrides the true uncompressed size
};

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>(v >> (8 * i));
}

std::string raw_deflate(const std::string& data) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// Writes entries as a ZIP archive; with zip64, every size and offset goes through ZIP64 records and extra fields.
std::string make_zip(const std::vector<zip_input>& entries, bool zip64 = false) {
  std::string out, central;
  for (const auto& e : entries) {
    const std::string stored = e.method == 8 ? raw_deflate(e.data) : e.data;
    const std::uint32_t crc = e.crc.value_or(static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size()))));
    const std::uint64_t size = e.declared_size.value_or(e.data.size());
    const std::uint64_t offset = out.size();
    put(out, 0x04034b50, 4);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, e.method, 2);
    put(out, 0, 4);
    put(out, crc, 4);
    put(out, stored.size(), 4);
    put(out, size, 4);
    put(out, e.name.size(), 2);
    put(out, 0, 2);
    out += e.name + stored;

    put(central, 0x02014b50, 4);
    put(central, 45, 2);
    put(central, 45, 2);
    put(central, 0, 2);
    put(central, e.method, 2);
    put(central, 0, 4);
    put(central, crc, 4);
    put(central, zip64 ? 0xffffffffu : stored.size(), 4);
    put(central, zip64 ? 0xffffffffu : size, 4);
    put(central, e.name.size(), 2);
    put(central, zip64 ? 28 : 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 4);
    put(central, zip64 ? 0xffffffffu : offset, 4);
    central += e.name;
    if (zip64) {
      put(central, 1, 2);
      put(central, 24, 2);
      put(central, size, 8);
      put(central, stored.size(), 8);
      put(central, offset, 8);
    }
  }
  const std::uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    const std::uint64_t record = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, entries.size(), 8);
    put(out, entries.size(), 8);
    put(out, central.size(), 8);
    put(out, cd_offset, 8);
    put(out, 0x07064b50, 4);
    put(out, 0, 4);
    put(out, record, 8);
    put(out, 1, 4);
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffffffffu : central.size(), 4);
  put(out, zip64 ? 0xffffffffu : cd_offset, 4);
  put(out, 0, 2);
  return out;
}

/// Every entry of an archive, read with the reader under test (its plain-case correctness is checked elsewhere).
std::vector<zip_input> entries_of(const fs::path& archive) {
  const swinfer::zip_reader zip(archive);
  std::vector<zip_input> out;
  for (const auto& e : zip.entries()) {
    const auto bytes = zip.read(e);
    out.push_back({e.name, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
  }
  return out;
}

zip_input* entry_named(std::vector<zip_input>& entries, const std::string& name) {
  for (auto& e : entries)
    if (e.name == name) return &e;
  FAIL("no entry " << name);
  return nullptr;
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-built pickles: a dict holding one float32 tensor view of storage "0".

std::string unicode(const std::string& s) {
  std::string out = "X";
  put(out, s.size(), 4);
  return out + s;
}

std::string binint(int x) {
  std::string out = "J";
  put(out, static_cast<std::uint32_t>(x), 4);
  return out;
}

std::string int_tuple(const std::vector<int>& v) {
  std::string out = "(";
  for (int x : v) out += binint(x);
  return out + "t";
}

/// {'w': _rebuild_tensor_v2(FloatStorage '0' of numel elements, offset, size, stride, False, ())}
std::string tensor_pickle(int offset, const std::vector<int>& size, const std::vector<int>& stride, int numel) {
  std::string p = "\x80\x02}(" + unicode("w") + "ctorch._utils\n_rebuild_tensor_v2\n(";
  p += "(" + unicode("storage") + "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") + binint(numel) + "tQ";
  return p + binint(offset) + int_tuple(size) + int_tuple(stride) + "\x89)tRu.";
}

std::string floats(const std::vector<float>& v) {
  std::string out;
  for (float f : v) put(out, std::bit_cast<std::uint32_t>(f), 4);
  return out;
}

/// Loads the archive `bytes` (written to `file`): succeeds, or throws swinfer::error. Anything else is returned as a
/// failure description.
template <class Load>
std::optional<std::string> load_or_error(const fs::path& file, const std::string& bytes, Load load) {
  write_bytes(file, bytes);
  try {
    load(file);
  } catch (const swinfer::error&) {
  } catch (const std::exception& e) {
    return std::string("non-swinfer exception: ") + e.what();
  } catch (...) {
    return std::string("unknown exception");
  }
  return std::nullopt;
}

void load_any(const fs::path& p) { swinfer::load_checkpoint(p); }
void load_npy(const fs::path& p) { swinfer::read_npy(p); }

}  // namespace

// ===============================================================================================================

TEST_CASE("torch checkpoints load with the values torch wrote", "[io]") {
  for (const char* name :
       {"bare.pt", "wrapped.pt", "compiled.pt", "dtypes.pt", "views.pt", "proto4.pt", "deflated.pt", "big_endian.pt"}) {
    SECTION(name) {
      check_matches(swinfer::load_torch_checkpoint(data_dir() / name), expected(name));
      check_matches(swinfer::load_checkpoint(data_dir() / name), expected(name));
    }
  }
}

TEST_CASE("safetensors files load with the values written", "[io]") {
  check_matches(swinfer::load_safetensors(data_dir() / "model.safetensors"), expected("model.safetensors"));
  check_matches(swinfer::load_checkpoint(data_dir() / "model.safetensors"), expected("model.safetensors"));
}

TEST_CASE("save_safetensors round-trips float and integer tensors, int8 as I8, and metadata", "[io]") {
  temp_dir dir;
  const auto original = swinfer::load_torch_checkpoint(data_dir() / "dtypes.pt");
  const std::map<std::string, std::string> metadata{{"format", "test"}, {"note", "a \"quoted\" value"}};
  swinfer::save_safetensors(dir / "out.safetensors", original, metadata);
  const auto bytes = read_bytes(dir / "out.safetensors");
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  CHECK(header % 8 == 0);
  CHECK(swinfer::read_safetensors(dir / "out.safetensors").metadata == metadata);
  const auto back = swinfer::load_checkpoint(dir / "out.safetensors");
  REQUIRE(back.keys() == original.keys());
  for (const auto& key : original.keys()) {
    const auto& a = original.at(key);
    const auto& b = back.at(key);
    CHECK(b.shape == a.shape);
    const auto stored = swinfer::is_floating(a.source) ? swinfer::dtype::f32
                        : a.source == swinfer::dtype::i8 ? swinfer::dtype::i8
                                                          : swinfer::dtype::i64;
    CHECK(b.source == stored);
    CHECK(b.indices == a.indices);
    REQUIRE(b.values.size() == a.values.size());
    for (std::size_t i = 0; i < a.values.size(); ++i)
      CHECK(std::bit_cast<std::uint32_t>(b.values[i]) == std::bit_cast<std::uint32_t>(a.values[i]));
  }
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("zero-element arrays load as empty arrays (no memcpy of null pointers)", "[io]") {
  // Issue 16: the float32 fast path called memcpy(nullptr, nullptr, 0), undefined behaviour that UBSan reports.
  temp_dir dir;
  swinfer::state_dict empty;
  swinfer::weight none;
  none.shape = {0, 3};
  empty.insert("none", std::move(none));
  swinfer::save_safetensors(dir / "empty.safetensors", empty);
  const auto back = swinfer::load_safetensors(dir / "empty.safetensors");
  CHECK(back.at("none").shape == std::vector<std::int64_t>{0, 3});
  CHECK(back.at("none").values.empty());
  swinfer::write_npy(dir / "empty.npy", {1, 0, 0, 0}, nullptr);
  const auto a = swinfer::read_npy(dir / "empty.npy");
  CHECK(a.shape == std::vector<std::int64_t>{1, 0, 0, 0});
  CHECK(a.data.empty());
}

TEST_CASE("npy files load with the values numpy wrote", "[io]") {
  for (const char* name : {"f4.npy", "f8.npy", "f2.npy", "be_f4.npy", "vector.npy", "scalar.npy"}) {
    SECTION(name) {
      const auto a = swinfer::read_npy(data_dir() / name);
      const auto want = expected(name)[0];
      CHECK(a.shape == want.at("shape").get<std::vector<std::int64_t>>());
      const auto bits = want.at("bits").get<std::vector<std::uint32_t>>();
      REQUIRE(a.data.size() == bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) CHECK(std::bit_cast<std::uint32_t>(a.data[i]) == bits[i]);
    }
  }
}

TEST_CASE("write_npy writes the same bytes as numpy.save", "[io]") {
  temp_dir dir;
  for (const char* name : {"f4.npy", "vector.npy", "scalar.npy"}) {
    INFO(name);
    const auto a = swinfer::read_npy(data_dir() / name);
    swinfer::write_npy(dir / name, a.shape, a.data.data());
    CHECK(read_bytes(dir / name) == read_bytes(data_dir() / name));
  }
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 3);
}

TEST_CASE("float16 widening is exact for all 65536 values", "[io]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = swinfer::detail::half_to_float(static_cast<std::uint16_t>(h));
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
    const bool negative = h & 0x8000;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    INFO("half bits " << h);
    CHECK((bits >> 31) == (negative ? 1u : 0u));
    if (exponent == 0x1f) {
      // Infinity, or NaN keeping its payload (as numpy does).
      CHECK((bits & 0x7fffffffu) == (0x7f800000u | (static_cast<std::uint32_t>(mantissa) << 13)));
    } else {
      // value = (implicit bit + mantissa / 1024) * 2^(exponent - 15), subnormals with exponent -14 and no implicit bit
      const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
      CHECK(static_cast<double>(f) == (negative ? -magnitude : magnitude));
    }
  }
}

TEST_CASE("bfloat16 widening keeps the bits", "[io]") {
  for (std::uint32_t b = 0; b < 0x10000; ++b)
    REQUIRE(std::bit_cast<std::uint32_t>(swinfer::detail::bfloat16_to_float(static_cast<std::uint16_t>(b))) == b << 16);
}

// ---------------------------------------------------------------------------------------------------------------
// Errors: every one is a swinfer::error naming the file (and the entry or key where there is one).

TEST_CASE("missing, empty, directory and garbage files are refused by name", "[io][errors]") {
  temp_dir dir;
  const auto missing = dir / "missing.pt";
  for (auto load :
       {+[](const fs::path& p) { swinfer::load_checkpoint(p); },
        +[](const fs::path& p) { swinfer::load_torch_checkpoint(p); },
        +[](const fs::path& p) { swinfer::load_safetensors(p); }, +[](const fs::path& p) { swinfer::read_npy(p); }}) {
    const auto message = error_of([&] { load(missing); });
    CHECK_THAT(message, Contains(missing.string()) && Contains("no such file"));
    CHECK_THAT(error_of([&] { load(dir.path); }), Contains(dir.path.string()) && Contains("not a regular file"));
  }
  write_bytes(dir / "empty.pt", "");
  CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "empty.pt"); }),
             Contains((dir / "empty.pt").string()) && Contains("empty"));
  write_bytes(dir / "garbage.bin", "this is not a checkpoint at all, just some text\n");
  CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "garbage.bin"); }),
             Contains((dir / "garbage.bin").string()) && Contains("torch.save") && Contains("safetensors"));
  CHECK_THAT(error_of([&] { swinfer::load_torch_checkpoint(dir / "garbage.bin"); }),
             Contains((dir / "garbage.bin").string()) && Contains("not a ZIP archive"));
}

TEST_CASE("legacy torch.save files get advice to re-save", "[io][errors]") {
  const auto path = data_dir() / "legacy.pt";
  const auto message = error_of([&] { swinfer::load_checkpoint(path); });
  CHECK_THAT(message, Contains(path.string()) && Contains("legacy") && Contains("torch.save(torch.load(f), g)"));
}

TEST_CASE("truncated archives are refused at every length", "[io][errors][mutation]") {
  temp_dir dir;
  for (const char* name : {"bare.pt", "deflated.pt", "model.safetensors"}) {
    const auto bytes = read_bytes(data_dir() / name);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO(name << " truncated to " << n << " bytes");
      write_bytes(dir / "cut", bytes.substr(0, n));
      CHECK_THROWS_AS(swinfer::load_checkpoint(dir / "cut"), swinfer::error);
    }
  }
}

TEST_CASE("archives with any byte changed load or throw swinfer::error", "[io][errors][mutation]") {
  temp_dir dir;
  std::vector<std::string> failures;
  std::size_t refused = 0, loaded = 0;
  for (const char* name : {"bare.pt", "wrapped.pt", "views.pt", "deflated.pt", "model.safetensors"}) {
    const auto original = read_bytes(data_dir() / name);
    for (std::size_t pos = 0; pos < original.size(); ++pos) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        auto bytes = original;
        bytes[pos] = static_cast<char>(bytes[pos] ^ flip);
        write_bytes(dir / "m", bytes);
        try {
          swinfer::load_checkpoint(dir / "m");
          ++loaded;
        } catch (const swinfer::error&) {
          ++refused;
        } catch (const std::exception& e) {
          failures.push_back(std::string(name) + " byte " + std::to_string(pos) + ": " + e.what());
        }
      }
    }
  }
  INFO(refused << " refused, " << loaded << " loaded");
  CHECK(failures.empty());
  CHECK(refused > 0);
  CHECK(loaded > 0);  // e.g. flips in padding and timestamps
}

TEST_CASE("pickle streams with any byte changed or cut load or throw swinfer::error", "[io][errors][mutation]") {
  // The archive is rebuilt with a valid CRC around each mutated data.pkl, so the unpickler and the tensor
  // materialisation (not the CRC check) meet the damage.
  temp_dir dir;
  std::vector<std::string> failures;
  for (const char* name : {"wrapped.pt", "views.pt", "proto4.pt"}) {
    auto entries = entries_of(data_dir() / name);
    zip_input* pickle = nullptr;
    for (auto& e : entries)
      if (e.name.ends_with("/data.pkl")) pickle = &e;
    REQUIRE(pickle);
    const std::string original = pickle->data;
    auto attempt = [&](const std::string& stream, const std::string& what) {
      pickle->data = stream;
      if (auto failure = load_or_error(dir / "p.pt", make_zip(entries), load_any))
        failures.push_back(std::string(name) + " " + what + ": " + *failure);
    };
    for (std::size_t pos = 0; pos < original.size(); ++pos) {
      attempt(original.substr(0, pos), "cut at " + std::to_string(pos));
      for (unsigned char flip : {0x01, 0x04, 0x10, 0x80, 0xff}) {
        auto stream = original;
        stream[pos] = static_cast<char>(stream[pos] ^ flip);
        attempt(stream, "byte " + std::to_string(pos));
      }
    }
    pickle->data = original;
  }
  CHECK(failures.empty());
  if (!failures.empty()) FAIL(failures.front());
}

TEST_CASE("npy files with any byte changed or cut load or throw swinfer::error", "[io][errors][mutation]") {
  temp_dir dir;
  std::vector<std::string> failures;
  for (const char* name : {"f4.npy", "f2.npy", "scalar.npy"}) {
    const auto original = read_bytes(data_dir() / name);
    for (std::size_t pos = 0; pos < original.size(); ++pos) {
      if (auto f = load_or_error(dir / "m.npy", original.substr(0, pos), load_npy)) failures.push_back(*f);
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        auto bytes = original;
        bytes[pos] = static_cast<char>(bytes[pos] ^ flip);
        if (auto f = load_or_error(dir / "m.npy", bytes, load_npy)) failures.push_back(*f);
      }
    }
  }
  CHECK(failures.empty());
  if (!failures.empty()) FAIL(failures.front());
}

TEST_CASE("ZIP structure: ZIP64 directories, deflate, CRC and bad entries", "[io][errors]") {
  temp_dir dir;
  auto entries = entries_of(data_dir() / "bare.pt");

  SECTION("ZIP64 central directory with extra fields on every entry") {
    write_bytes(dir / "z64.pt", make_zip(entries, true));
    check_matches(swinfer::load_checkpoint(dir / "z64.pt"), expected("bare.pt"));
  }
  SECTION("deflated entries") {
    for (auto& e : entries) e.method = 8;
    write_bytes(dir / "d.pt", make_zip(entries));
    check_matches(swinfer::load_checkpoint(dir / "d.pt"), expected("bare.pt"));
  }
  SECTION("CRC mismatch names the entry") {
    entry_named(entries, "bare/data/0")->crc = 0x12345678;
    write_bytes(dir / "crc.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "crc.pt"); }),
               Contains((dir / "crc.pt").string()) && Contains("'bare/data/0'") && Contains("CRC"));
  }
  SECTION("a declared size deflate cannot produce is refused before allocating") {
    auto* e = entry_named(entries, "bare/data/0");
    e->method = 8;
    e->declared_size = std::uint64_t{1} << 31;
    write_bytes(dir / "bomb.pt", make_zip(entries, true));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "bomb.pt"); }),
               Contains("'bare/data/0'") && Contains("claims"));
  }
  SECTION("inflating to more or less than declared is refused") {
    auto* e = entry_named(entries, "bare/data/0");
    e->method = 8;
    e->declared_size = e->data.size() - 1;
    write_bytes(dir / "more.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "more.pt"); }), Contains("'bare/data/0'"));
    e->declared_size = e->data.size() + 1;
    write_bytes(dir / "less.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "less.pt"); }), Contains("'bare/data/0'"));
  }
  SECTION("unsupported compression methods name the entry and method") {
    entry_named(entries, "bare/data.pkl")->method = 12;
    write_bytes(dir / "bz.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "bz.pt"); }),
               Contains("'bare/data.pkl'") && Contains("method 12"));
  }
  SECTION("archives without data.pkl, TorchScript archives and missing storages") {
    write_bytes(dir / "other.zip", make_zip({{"readme.txt", "hello"}}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "other.zip"); }), Contains("data.pkl"));
    auto script = entries;
    script.push_back({"bare/constants.pkl", "\x80\x02)."});
    write_bytes(dir / "script.pt", make_zip(script));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "script.pt"); }), Contains("TorchScript"));
    std::erase_if(entries, [](const zip_input& e) { return e.name == "bare/data/1"; });
    write_bytes(dir / "nostorage.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "nostorage.pt"); }),
               Contains("'conv.bias'") && Contains("'bare/data/1'") && Contains("does not contain"));
  }
  SECTION("duplicate entry names") {
    entries.push_back(entries.front());
    write_bytes(dir / "dup.pt", make_zip(entries));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(dir / "dup.pt"); }), Contains("twice"));
  }
}

TEST_CASE("tensors must fit inside their storages", "[io][errors]") {
  temp_dir dir;
  const auto path = dir / "t.pt";
  auto archive = [&](const std::string& pickle, const std::string& storage) {
    write_bytes(path, make_zip({{"a/data.pkl", pickle}, {"a/data/0", storage}}));
  };
  SECTION("a view with an offset and a stride is read in place") {
    archive(tensor_pickle(1, {2, 2}, {1, 2}, 5), floats({0, 1, 2, 3, 4}));
    const auto sd = swinfer::load_checkpoint(path);
    CHECK(sd.at("w").shape == std::vector<std::int64_t>{2, 2});
    CHECK(sd.at("w").values == std::vector<float>{1, 3, 2, 4});
  }
  SECTION("a storage shorter than the checkpoint declares") {
    archive(tensor_pickle(0, {4}, {1}, 4), floats({0, 1, 2}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }),
               Contains(path.string()) && Contains("'w'") && Contains("'a/data/0'") && Contains("holds 12 bytes"));
  }
  SECTION("a view reaching past the end of its storage") {
    archive(tensor_pickle(2, {3}, {1}, 4), floats({0, 1, 2, 3}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }), Contains("'w'") && Contains("reaches element 4"));
  }
  SECTION("a broadcast view far larger than its storage") {
    archive(tensor_pickle(0, {1 << 20, 1 << 10}, {0, 0}, 1), floats({7}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }), Contains("'w'") && Contains("elements"));
  }
  SECTION("a size product overflowing 64 bits") {
    archive(tensor_pickle(0, {1 << 30, 1 << 30, 1 << 30}, {0, 0, 0}, 1), floats({7}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }), Contains("'w'") && Contains("overflow"));
  }
}

TEST_CASE("the restricted unpickler", "[io][errors]") {
  temp_dir dir;
  auto run = [](const std::string& s) {
    return swinfer::detail::unpickle(std::as_bytes(std::span(s.data(), s.size())), "test stream");
  };
  SECTION("an unknown opcode in an archive names the file, entry, byte and offset") {
    const auto path = dir / "op.pt";
    write_bytes(path, make_zip({{"a/data.pkl", std::string("\x80\x02\xff.", 4)}}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }),
               Contains(path.string()) && Contains("'a/data.pkl'") && Contains("0xff") && Contains("offset 2"));
  }
  SECTION("malformed streams") {
    for (const std::string& s : {std::string("\x80\x02t."), std::string("\x80\x02h\x05."), std::string("\x80\x02"),
                                 std::string("\x80\x02(u."), std::string("\x80\x02Ns."), std::string("\x80\x09N."),
                                 std::string("\x80\x02X\xff\xff\xff\x7f"
                                             "abc."),
                                 std::string("\x80\x02Q."),
                                 std::string("\x80\x02"
                                             "cos\nsys",
                                             9)}) {
      INFO(s);
      CHECK_THROWS_AS(run(s), swinfer::error);
    }
  }
  SECTION("globals are never imported or called, only named") {
    const auto g =
        run("\x80\x02"
            "cos\nsystem\n" +
            unicode("rm -rf /") + "\x85R.");
    CHECK(g[g.root].kind == swinfer::detail::pickle_kind::object);
    CHECK(g.describe(g.root) == "an instance of 'os.system'");
  }
  SECTION("deep nesting and cycles need no recursion") {
    const std::size_t depth = 200000;
    const auto deep = run("\x80\x02" + std::string(depth, ']') + std::string(depth - 1, 'a') + ".");
    CHECK(deep[deep.root].kind == swinfer::detail::pickle_kind::list);
    const auto cycle =
        run("\x80\x02]q\x00h\x00"
            "a."s);
    CHECK(cycle[cycle.root].items == std::vector<std::size_t>{cycle.root});
  }
  SECTION("the stack is bounded") {
    CHECK_THAT(error_of([&] { run("\x80\x02" + std::string(std::size_t{1} << 21, 'N') + "."); }), Contains("stack"));
  }
  SECTION("a top level that is not a dict of tensors is explained") {
    const auto path = dir / "top.pt";
    write_bytes(path, make_zip({{"a/data.pkl", "\x80\x02K\x05."}}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }), Contains("an int") && Contains("not a dict"));
    write_bytes(path, make_zip({{"a/data.pkl", "\x80\x02}(" + unicode("epoch") + "K\x01" + unicode("lr") + "Nu."}}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }),
               Contains("'epoch', 'lr'") && Contains("'state_dict'"));
  }
}

TEST_CASE("safetensors headers are checked against the file", "[io][errors]") {
  temp_dir dir;
  const auto path = dir / "x.safetensors";
  auto file = [&](const std::string& header, const std::string& data) {
    std::string out;
    put(out, header.size(), 8);
    write_bytes(path, out + header + data);
  };
  SECTION("offsets past the end of the data") {
    file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", floats({1}));
    CHECK_THAT(error_of([&] { swinfer::load_checkpoint(path); }),
               Contains(path.string()) && Contains("'w'") && Contains("data_offsets"));
  }
  SECTION("offsets not matching shape and dtype") {
    file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", floats({1, 2}));
    CHECK_THAT(error_of([&] { swinfer::load_safetensors(path); }), Contains("'w'") && Contains("needs 8"));
  }
  SECTION("a header length larger than the file") {
    std::string out;
    put(out, 1000, 8);
    write_bytes(path, out + "{}");
    CHECK_THAT(error_of([&] { swinfer::load_safetensors(path); }),
               Contains(path.string()) && Contains("larger than the file"));
  }
  SECTION("unsupported dtypes, bad JSON and deep nesting") {
    file(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "x");
    CHECK_THAT(error_of([&] { swinfer::load_safetensors(path); }), Contains("'w'") && Contains("F8_E4M3"));
    file(R"({"w":)", "");
    CHECK_THAT(error_of([&] { swinfer::load_safetensors(path); }), Contains("JSON"));
    file(R"({"w":)" + std::string(100000, '[') + std::string(100000, ']') + "}", "");
    CHECK_THROWS_AS(swinfer::load_safetensors(path), swinfer::error);
  }
  SECTION("keys that collide once prefixes are stripped") {
    file(R"({"module.w":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
         R"("w":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
         floats({1, 2}));
    CHECK_THAT(error_of([&] { swinfer::load_safetensors(path); }), Contains("'module.w'") && Contains("'w'"));
  }
  SECTION("save_safetensors refuses inconsistent tensors and writes nothing") {
    swinfer::state_dict sd;
    swinfer::weight w;
    w.shape = {3};
    w.values = {1, 2};
    sd.insert("bad", w);
    CHECK_THAT(error_of([&] { swinfer::save_safetensors(dir / "bad.safetensors", sd); }), Contains("'bad'"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 0);
  }
}

TEST_CASE("npy errors name the file and the problem", "[io][errors]") {
  temp_dir dir;
  const auto fortran = data_dir() / "fortran.npy";
  CHECK_THAT(error_of([&] { swinfer::read_npy(fortran); }), Contains(fortran.string()) && Contains("Fortran order"));
  auto npy = [&](const std::string& header) {
    std::string out = "\x93NUMPY\x01";
    out += '\0';
    put(out, header.size(), 2);
    write_bytes(dir / "h.npy", out + header + std::string(16, '\0'));
  };
  npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }");
  CHECK_THAT(error_of([&] { swinfer::read_npy(dir / "h.npy"); }), Contains("'<i4'") && Contains("float32"));
  npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }");
  CHECK_THAT(error_of([&] { swinfer::read_npy(dir / "h.npy"); }), Contains("needs 20"));
  npy("{'descr': '<f4', 'shape': (4,), }");
  CHECK_THAT(error_of([&] { swinfer::read_npy(dir / "h.npy"); }), Contains("lacks"));
  npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }");
  CHECK_THAT(error_of([&] { swinfer::read_npy(dir / "h.npy"); }), Contains("structured"));
}

TEST_CASE("a failed npy write leaves nothing behind", "[io][errors]") {
  temp_dir dir;
  const float data[2] = {1, 2};
  SECTION("the directory does not exist (its parent is a file)") {
    write_bytes(dir / "file", "x");
    const auto target = dir / "file" / "out.npy";
    CHECK_THAT(error_of([&] { swinfer::write_npy(target, {2}, data); }), Contains(target.string()));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  }
  SECTION("the target cannot be replaced (it is a non-empty directory)") {
    fs::create_directories(dir / "out.npy" / "keep");
    CHECK_THAT(error_of([&] { swinfer::write_npy(dir / "out.npy", {2}, data); }), Contains("out.npy"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
    CHECK(fs::is_directory(dir / "out.npy" / "keep"));
  }
  SECTION("the directory is read-only") {
    if (::geteuid() == 0) return;  // root writes regardless of permissions
    fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_AS(swinfer::write_npy(dir / "out.npy", {2}, data), swinfer::error);
    fs::permissions(dir.path, fs::perms::owner_all);
    CHECK(fs::is_empty(dir.path));
  }
  SECTION("an invalid shape") {
    CHECK_THROWS_AS(swinfer::write_npy(dir / "neg.npy", {-1}, data), swinfer::error);
    CHECK(fs::is_empty(dir.path));
  }
}
