// The int8 model file (`swinfer quantize`, swinfer/model/int8_model_file.hpp): written from the golden checkpoint
// and a calibration, it loads with its own calibration and configuration and gives bit-identical logits to the float
// checkpoint with that calibration; quantized weights are stored as int8, float layers as float; the stored values
// and scales quantize back to themselves for any float weights; a damaged or inconsistent file is an error.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

#include <swinfer/model/int8_model_file.hpp>
#include <swinfer/model/load.hpp>
#include <swinfer/runtime/backends.hpp>

#include "golden_case.hpp"
#include "tensor_testing.hpp"

namespace {

namespace fs = std::filesystem;

struct temp_folder {
  fs::path path = fs::temp_directory_path() / ("swinfer_int8_model_" + std::to_string(::getpid()));
  temp_folder() { fs::create_directories(path); }
  ~temp_folder() { fs::remove_all(path); }
};

swinfer::int8_calibration golden_calibration(const char* file) {
  return swinfer::read_calibration((swinfer_test::goldens_dir() / "int8" / file).string());
}

/// The golden checkpoint's int8 model file with `calibration`, written to `path`.
void write_model(const swinfer_test::golden_case& g, const swinfer::int8_calibration& calibration,
                 const fs::path& path) {
  swinfer::save_int8_model(path, g.config, g.weights, calibration, "model.pt", "calibration.json");
}

/// Rewrites an int8 model file with `change` applied to its tensors and metadata.
template <class Change>
fs::path altered(const fs::path& from, const fs::path& to, Change change) {
  swinfer::safetensors_contents c = swinfer::read_safetensors(from);
  change(c);
  swinfer::save_safetensors(to, c.tensors, c.metadata);
  return to;
}

/// A state_dict with one tensor replaced.
swinfer::state_dict replaced(const swinfer::state_dict& sd, const std::string& key, swinfer::weight w) {
  swinfer::state_dict out;
  for (const auto& k : sd.keys()) out.insert(k, k == key ? w : sd.at(k));
  return out;
}

}  // namespace

TEST_CASE("an int8 model file runs bit for bit like the float checkpoint with its calibration", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  temp_folder tmp;
  for (const char* file : {"calibration.json", "calibration_all.json"}) {
    SECTION(file) {
      const auto calibration = golden_calibration(file);
      const fs::path path = tmp.path / "model.int8.safetensors";
      write_model(g, calibration, path);

      // Stored: the weights the calibration quantizes as int8 with their scales, (cout,) for Conv3d and Linear,
      // (1, cout) for ConvTranspose3d (cin, cout, 2, 2, 2); everything else as float.
      const auto stored = swinfer::read_safetensors(path).tensors;
      std::size_t int8_tensors = 0, transposed = 0;
      for (const auto& [point, p] : calibration.points) {
        INFO(point);
        const auto& w = stored.at(point + ".weight");
        CHECK(w.source == (p.quantized ? swinfer::dtype::i8 : swinfer::dtype::f32));
        if (p.quantized) {
          ++int8_tensors;
          const bool is_transposed = point.find(".transp_conv.") != std::string::npos;
          transposed += is_transposed;
          const auto scale_shape = is_transposed ? std::vector<std::int64_t>{1, w.shape.at(1)}
                                                 : std::vector<std::int64_t>{w.shape.at(0)};
          CHECK(stored.at(point + ".weight_scale").shape == scale_shape);
        }
      }
      CHECK(transposed == (std::string_view(file) == "calibration_all.json" ? 5 : 0));
      CHECK(int8_tensors > 0);
      // Not stored: the relative_position_index buffers, MONAI's own for the window (the loader recomputes them).
      std::size_t index_buffers = 0;
      for (const auto& key : g.weights.keys()) {
        if (!key.ends_with("relative_position_index")) continue;
        ++index_buffers;
        CHECK(stored.find(key) == nullptr);
      }
      CHECK(index_buffers == 8);
      CHECK(stored.size() == g.weights.size() + int8_tensors - index_buffers);

      const auto loaded = swinfer::load_model(path.string());
      REQUIRE(loaded.calibration);
      CHECK(swinfer::config_to_json(loaded.config) == swinfer::config_to_json(g.config));
      CHECK(loaded.calibration->points.size() == calibration.points.size());
      const auto from_file = [&](const std::string& backend) {
        swinfer::engine_options o;
        o.calibration = loaded.calibration;
        return swinfer::runtime::make_network({backend, "int8", "ndhwc"}, loaded.config, loaded.weights, o, path.string())
            ->forward(g.input);
      };
      const auto from_checkpoint = [&](const std::string& backend) {
        swinfer::engine_options o;
        o.calibration = std::make_shared<const swinfer::int8_calibration>(calibration);
        return swinfer::runtime::make_network({backend, "int8", "ndhwc"}, g.config, g.weights, o, g.name)
            ->forward(g.input);
      };
      for (const auto& backend : swinfer_test::cpu_backends()) {
        INFO(backend);
        const auto e = swinfer_test::compare(from_file(backend), from_checkpoint(backend));
        REQUIRE(e.count == g.logits.size());
        CHECK(e.max_abs == 0.0);
      }
    }
  }
}

TEST_CASE("int8 model file weights quantize back to exactly what the file stores", "[model][int8]") {
  // Channels of every magnitude (scales from 1e-30 to 1e30), signs and sizes, and an all-zero channel.
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), exponent(-30.0f, 30.0f);
  std::uniform_int_distribution<int> length(1, 40);
  swinfer::state_dict quantized;
  const int channels = 4000;
  for (int c = 0; c < channels; ++c) {
    const int n = length(swinfer_test::rng());
    const float magnitude = c == 0 ? 0.0f : std::pow(10.0f, exponent(swinfer_test::rng()));
    std::vector<float> w(static_cast<std::size_t>(n));
    for (auto& v : w) v = magnitude * unit(swinfer_test::rng());
    const auto q = swinfer::ops::channel_quantized_weights::quantize(w.data(), 1, n);
    swinfer::weight stored{swinfer::dtype::i8, {1, n}, {}, std::vector<std::int64_t>(q.values.begin(), q.values.end())};
    swinfer::weight scale{swinfer::dtype::f32, {1}, q.scales, {}};
    const std::string key = std::to_string(c) + ".weight";  // (GCC 12 warns falsely on "c" + std::to_string(c))
    quantized.insert(key, std::move(stored));
    quantized.insert(key + "_scale", std::move(scale));
  }
  // dequantized_weights checks that they quantize back exactly, and throws where they do not.
  const auto floats = swinfer::dequantized_weights(quantized, "random");
  CHECK(floats.size() == static_cast<std::size_t>(channels));
}

TEST_CASE("a ConvTranspose3d's int8 weights are scaled per output channel, their second axis", "[model][int8]") {
  // (cin 3, cout 5, 2, 2, 2), output channel o of magnitude 10^(3o - 6), its largest value in input channel o % 3:
  // quantized here with naive loops, stored with (1, cout) scales; each float the file stands for is its int8 value
  // times its output channel's scale.
  const std::int64_t cin = 3, cout = 5, taps = 8;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> w(static_cast<std::size_t>(cin * cout * taps));
  for (std::int64_t i = 0; i < cin; ++i)
    for (std::int64_t o = 0; o < cout; ++o)
      for (std::int64_t t = 0; t < taps; ++t)
        w[static_cast<std::size_t>((i * cout + o) * taps + t)] =
            std::pow(10.0f, float(3 * o - 6)) * unit(swinfer_test::rng());
  for (std::int64_t o = 0; o < cout; ++o) w[static_cast<std::size_t>(((o % cin) * cout + o) * taps)] =
      std::pow(10.0f, float(3 * o - 6));
  std::vector<float> scales(static_cast<std::size_t>(cout), 0.0f);
  for (std::size_t e = 0; e < w.size(); ++e) {
    auto& s = scales[e / taps % cout];
    s = std::max(s, std::fabs(w[e]) / 127.0f);
  }
  std::vector<std::int64_t> q(w.size());
  for (std::size_t e = 0; e < w.size(); ++e) q[e] = std::lround(w[e] * (1.0f / scales[e / taps % cout]));
  swinfer::state_dict stored;
  stored.insert("up.weight", swinfer::weight{swinfer::dtype::i8, {cin, cout, 2, 2, 2}, {}, q});
  stored.insert("up.weight_scale", swinfer::weight{swinfer::dtype::f32, {1, cout}, scales, {}});
  const auto floats = swinfer::dequantized_weights(stored, "transposed");
  const auto& f = floats.at("up.weight").values;
  REQUIRE(f.size() == w.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    INFO("element " << e << ": int8 " << q[e] << ", scale " << scales[e / taps % cout]);
    const double expected = double(q[e]) * scales[e / taps % cout];
    CHECK(std::fabs(f[e] - expected) <= 1e-6 * std::fabs(expected));
  }
  // The scales' shape is what names the axis: the same bytes with (cin,) scales stand for other weights (a model
  // file's checksum of its weights catches that). Every input channel holds a +-127 (above), so they read as
  // consistent whatever the random values.
  swinfer::state_dict first_axis;
  first_axis.insert("up.weight", stored.at("up.weight"));
  first_axis.insert("up.weight_scale",
                    swinfer::weight{swinfer::dtype::f32, {cin}, {scales.begin(), scales.begin() + cin}, {}});
  CHECK(swinfer::dequantized_weights(first_axis, "transposed").at("up.weight").values != f);
}

TEST_CASE("an int8 model file of version 1 (transposed convolutions in float) still loads", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  temp_folder tmp;
  const fs::path v2 = tmp.path / "v2.int8.safetensors";
  write_model(g, golden_calibration("calibration_all.json"), v2);
  const auto from_v2 = swinfer::load_model(v2.string());
  // Version 1 kept each ConvTranspose3d's weights as the floats its int8 values stand for, without scales.
  const auto v1 = altered(v2, tmp.path / "v1.int8.safetensors", [&](swinfer::safetensors_contents& c) {
    swinfer::state_dict old;
    std::size_t transposed = 0;
    for (const auto& k : c.tensors.keys()) {
      const bool of_transposed = k.find(".transp_conv.") != std::string::npos;
      if (of_transposed && k.ends_with("_scale")) continue;
      const bool float_now = of_transposed && c.tensors.at(k).source == swinfer::dtype::i8;
      transposed += float_now;
      old.insert(k, float_now ? from_v2.weights.at(k) : c.tensors.at(k));
    }
    REQUIRE(transposed == 5);
    c.tensors = std::move(old);
    c.metadata["version"] = "1";
  });
  const auto from_v1 = swinfer::load_model(v1.string());
  CHECK(swinfer::weights_checksum(from_v1.weights) == swinfer::weights_checksum(from_v2.weights));
}

TEST_CASE("a damaged or inconsistent int8 model file is a clear error", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  temp_folder tmp;
  const fs::path good = tmp.path / "good.int8.safetensors";
  write_model(g, golden_calibration("calibration_all.json"), good);
  const std::string key = "encoder1.layer.conv1.conv.weight";
  using Catch::Contains;

  SECTION("an int8 value changed: not the weights its calibration was stored with") {
    const auto p = altered(good, tmp.path / "flipped.safetensors", [&](swinfer::safetensors_contents& c) {
      swinfer::weight w = c.tensors.at(key);
      auto q = std::find_if(w.indices.begin(), w.indices.end(), [](std::int64_t v) { return v > 0 && v < 100; });
      REQUIRE(q != w.indices.end());
      ++*q;  // still a value its channel's scale fits
      c.tensors = replaced(c.tensors, key, std::move(w));
    });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains("flipped.safetensors") && Contains("damaged") &&
                                                           Contains("swinfer quantize"));
  }
  SECTION("a channel without +-127: values and scales that do not fit together") {
    const auto p = altered(good, tmp.path / "unfit.safetensors", [&](swinfer::safetensors_contents& c) {
      swinfer::weight w = c.tensors.at(key);
      for (auto& q : w.indices) q /= 2;
      c.tensors = replaced(c.tensors, key, std::move(w));
    });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains(key) && Contains("do not fit together"));
  }
  SECTION("scales missing or mis-shaped") {
    auto p = altered(good, tmp.path / "no_scales.safetensors", [&](swinfer::safetensors_contents& c) {
      swinfer::state_dict without;
      for (const auto& k : c.tensors.keys())
        if (k != key + "_scale") without.insert(k, c.tensors.at(k));
      c.tensors = std::move(without);
    });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains(key + "_scale") && Contains("missing"));
    p = altered(good, tmp.path / "short_scales.safetensors", [&](swinfer::safetensors_contents& c) {
      swinfer::weight s = c.tensors.at(key + "_scale");
      s.values.pop_back();
      s.shape = {static_cast<std::int64_t>(s.values.size())};
      c.tensors = replaced(c.tensors, key + "_scale", std::move(s));
    });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains(key + "_scale") && Contains("have shape"));
  }
  SECTION("a transposed convolution's scales on the wrong axis") {
    const std::string transposed = "decoder2.transp_conv.conv.weight";
    const auto p = altered(good, tmp.path / "axis0.safetensors", [&](swinfer::safetensors_contents& c) {
      swinfer::weight s = c.tensors.at(transposed + "_scale");
      REQUIRE(s.shape.size() == 2);
      s.shape = {s.shape[1]};  // (cout,): read as channels on the first axis (cin), which differs here
      c.tensors = replaced(c.tensors, transposed + "_scale", std::move(s));
    });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains(transposed + "_scale") && Contains("have shape"));
  }
  SECTION("metadata missing or from another version") {
    auto p = altered(good, tmp.path / "no_calibration.safetensors",
                     [&](swinfer::safetensors_contents& c) { c.metadata.erase("calibration"); });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains("without its metadata 'calibration'"));
    p = altered(good, tmp.path / "version2.safetensors",
                [&](swinfer::safetensors_contents& c) { c.metadata["version"] = "3"; });
    CHECK_THROWS_WITH(swinfer::load_model(p.string()), Contains("version 3 is not supported"));
  }
  SECTION("truncated") {
    const auto size = fs::file_size(good);
    fs::copy_file(good, tmp.path / "truncated.safetensors");
    fs::resize_file(tmp.path / "truncated.safetensors", size - 100);
    CHECK_THROWS_WITH(swinfer::load_model((tmp.path / "truncated.safetensors").string()),
                      Contains("truncated.safetensors"));
  }
  SECTION("a calibration for other weights is refused and nothing is written") {
    swinfer::state_dict other;
    for (const auto& k : g.weights.keys()) {
      swinfer::weight w = g.weights.at(k);
      if (k == "out.conv.conv.bias") w.values[0] += 1.0f;
      other.insert(k, std::move(w));
    }
    const fs::path out = tmp.path / "other.int8.safetensors";
    CHECK_THROWS_WITH(swinfer::save_int8_model(out, g.config, other, golden_calibration("calibration.json"), "other.pt",
                                               "calibration.json"),
                      Contains("made for other weights"));
    CHECK_FALSE(fs::exists(out));
  }
}
