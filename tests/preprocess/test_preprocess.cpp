// Preprocessing transforms, pipelines and their inverse against MONAI 1.5.0 (tests/data/preprocess/, written by
// tools/goldens/make_preprocess_goldens.py), plus the JSON reader's errors and the no-step identity.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <swinfer/io/npy.hpp>
#include <swinfer/preprocess/pipeline.hpp>

#include "error_testing.hpp"
#include "tensor_testing.hpp"
#include "test_data.hpp"

namespace {

using swinfer::layout_kind;
namespace fs = std::filesystem;

fs::path data_dir() { return swinfer_test::test_data_dir() / "preprocess"; }

const nlohmann::ordered_json& manifest() {
  static const nlohmann::ordered_json m = [] {
    std::ifstream in(data_dir() / "manifest.json");
    REQUIRE(in);
    return nlohmann::ordered_json::parse(in);
  }();
  return m;
}

swinfer::affine4 affine_from(const nlohmann::ordered_json& rows) {
  swinfer::affine4 a;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) a(r, c) = rows.at(static_cast<std::size_t>(r)).at(static_cast<std::size_t>(c)).get<double>();
  return a;
}

/// A stored (C, I, J, K) array and its affine as a spatial_image in `layout`.
swinfer::spatial_image load_image(const nlohmann::ordered_json& record, layout_kind layout) {
  const auto a = swinfer::read_npy(data_dir() / record.at("array").get<std::string>());
  REQUIRE(a.shape.size() == 4);
  swinfer::tensor<float> packed({1, a.shape[0], a.shape[1], a.shape[2], a.shape[3]}, layout_kind::ncdhw);
  std::copy(a.data.begin(), a.data.end(), packed.data());
  swinfer::spatial_image image{swinfer_test::to_float_tensor(packed, layout), affine_from(record.at("affine"))};
  return image;
}

/// Largest entry-wise difference (a loop: Eigen's vectorised maxCoeff on 4x4 trips a GCC 12 false warning).
double max_difference(const swinfer::affine4& a, const swinfer::affine4& b) {
  double m = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) m = std::max(m, std::abs(a(r, c) - b(r, c)));
  return m;
}

std::string name_of(layout_kind k) { return std::string(swinfer::layout_name(k)); }

/// Checks shape and affine exactly/closely and the values within `tolerance` (absolute); prints the error.
void check_against(const std::string& label, const swinfer::spatial_image& got, const nlohmann::ordered_json& expected,
                   double tolerance) {
  const auto want = load_image(expected, got.data.layout());
  INFO(label);
  REQUIRE(got.data.shape() == want.data.shape());
  const double affine_error = max_difference(got.affine, want.affine);
  CHECK(affine_error <= 1e-9);
  const auto e = swinfer_test::compare(got.data, want.data);
  std::printf("preprocess %-40s max|d| %.3g  max|ref| %.3g  affine max|d| %.2g\n", label.c_str(), e.max_abs,
              e.max_ref, affine_error);
  INFO("max |difference| " << e.max_abs << ", max |MONAI| " << e.max_ref);
  CHECK(e.max_abs <= tolerance);
}

/// Copies and float32 element-wise arithmetic must match MONAI bit for bit. Trilinear resampling (float64 sums rounded
/// once; an ulp apart where the sum lands near a float32 rounding boundary) and anything after NormalizeIntensity
/// (torch sums the mean in float32, swinfer in float64) may differ by 1e-6 of the values' largest magnitude.
double tolerance_for(const nlohmann::ordered_json& steps, const nlohmann::ordered_json& expected) {
  bool inexact = false;
  auto visit = [&](const std::string& name, const nlohmann::ordered_json& args) {
    const bool nearest = args.is_object() && args.value("mode", "bilinear") == "nearest";
    inexact = inexact || name == "normalize_intensity" || (name == "spacing" && !nearest);
  };
  if (steps.is_object()) {
    for (const auto& s : steps.items()) visit(s.key(), s.value());
  } else {
    for (const auto& s : steps) visit(s.begin().key(), s.begin().value());
  }
  if (!inexact) return 0.0;
  const auto a = swinfer::read_npy(data_dir() / expected.at("array").get<std::string>());
  double largest = 1.0;
  for (float v : a.data) largest = std::max(largest, double{std::abs(v)});
  return 1e-6 * largest;
}

constexpr layout_kind both_layouts[] = {layout_kind::ncdhw, layout_kind::ndhwc};

}  // namespace

TEST_CASE("preprocess: each transform matches MONAI 1.5.0", "[preprocess]") {
  const auto& m = manifest();
  REQUIRE(m.at("monai") == "1.5.0");
  for (const auto& [name, c] : m.at("transforms").items()) {
    const auto spec = swinfer::pipeline_from_json(c.at("steps"), name);
    const double tolerance = tolerance_for(c.at("steps"), c.at("output"));
    for (auto layout : both_layouts) {
      auto input = load_image(m.at("volumes").at(c.at("volume").get<std::string>()), layout);
      const auto out = swinfer::preprocess(std::move(input), spec);
      check_against(name + " " + name_of(layout), out.image, c.at("output"), tolerance);
    }
  }
}

TEST_CASE("preprocess: pipelines and Invertd match MONAI 1.5.0", "[preprocess]") {
  const auto& m = manifest();
  for (const auto& [name, p] : m.at("pipelines").items()) {
    const auto file = data_dir() / p.at("pipeline_file").get<std::string>();
    const auto spec = swinfer::load_pipeline(file);
    nlohmann::ordered_json steps;
    std::ifstream(file) >> steps;
    REQUIRE(spec.steps.size() == p.at("outputs").size());
    for (auto layout : both_layouts) {
      const auto& volume = m.at("volumes").at(p.at("volume").get<std::string>());
      const auto input = load_image(volume, layout);
      swinfer::preprocessed_image state{input.clone(), {}};
      std::size_t n = 0;
      for (const auto& step : spec.steps) {
        state.apply(step);
        nlohmann::ordered_json prefix = nlohmann::ordered_json::object();
        auto it = steps.items().begin();
        for (std::size_t i = 0; i <= n; ++i, ++it) prefix[it.key()] = it.value();
        check_against(name + " step " + std::to_string(n) + " " + name_of(layout), state.image,
                      p.at("outputs").at(n), tolerance_for(prefix, p.at("outputs").at(n)));
        ++n;
      }
      // The whole pipeline at once gives the same image.
      const auto whole = swinfer::preprocess(input.clone(), spec);
      CHECK(swinfer_test::compare(whole.image.data, state.image.data).max_abs == 0.0);

      // The prediction: [image, image * image] on the preprocessed grid.
      const auto& img = state.image.data;
      const auto& s = img.shape();
      swinfer::tensor<float> prediction({1, 2 * s.c, s.d, s.h, s.w}, layout);
      for (std::int64_t c = 0; c < s.c; ++c)
        for (std::int64_t d = 0; d < s.d; ++d)
          for (std::int64_t h = 0; h < s.h; ++h)
            for (std::int64_t w = 0; w < s.w; ++w) {
              const float v = img(0, c, d, h, w);
              prediction(0, c, d, h, w) = v;
              prediction(0, s.c + c, d, h, w) = v * v;
            }
      for (const auto& [mode_name, mode] : {std::pair{"bilinear", swinfer::interpolation::bilinear},
                                            std::pair{"nearest", swinfer::interpolation::nearest}}) {
        const auto& expected = p.at("inverse").at(mode_name);
        const auto inverted = state.invert(prediction, mode);
        check_against(name + " inverse " + mode_name + " " + name_of(layout), inverted, expected,
                      tolerance_for(steps, expected));
        CHECK(max_difference(inverted.affine, input.affine) <= 1e-9);
      }
    }
  }
}

TEST_CASE("preprocess: no steps is the identity, both ways", "[preprocess]") {
  const auto input = load_image(manifest().at("volumes").at("tiny_oblique"), layout_kind::ndhwc);
  const auto out = swinfer::preprocess(input.clone(), swinfer::pipeline_from_json(nlohmann::ordered_json::object(), "{}"));
  CHECK(out.applied.empty());
  CHECK(swinfer_test::compare(out.image.data, input.data).max_abs == 0.0);
  CHECK(out.image.affine == input.affine);
  const auto back = out.invert(out.image.data, swinfer::interpolation::nearest);
  CHECK(swinfer_test::compare(back.data, input.data).max_abs == 0.0);
  CHECK(back.affine == input.affine);
}

TEST_CASE("preprocess: nearest rounds exact halves to even, as torch >= 2.1's grid_sample", "[preprocess]") {
  // Output voxel k samples input coordinate k / 2 along axis 0; border padding clips 3.5 to 3.
  swinfer::spatial_image in{swinfer::tensor<float>({1, 1, 4, 1, 1}, layout_kind::ncdhw), swinfer::affine4::Identity()};
  for (int i = 0; i < 4; ++i) in.data(0, 0, i, 0, 0) = static_cast<float>(i);
  swinfer::resample_target target{swinfer::affine4::Identity(), {8, 1, 1}};
  target.affine(0, 0) = 0.5;
  const auto out = swinfer::resample(in, target, swinfer::interpolation::nearest, swinfer::grid_padding::border);
  const float expected[] = {0, 0, 1, 2, 2, 2, 3, 3};
  for (int k = 0; k < 8; ++k) CHECK(out.data(0, 0, k, 0, 0) == expected[k]);
}

TEST_CASE("preprocess: invert rejects a prediction on another grid", "[preprocess]") {
  const auto input = load_image(manifest().at("volumes").at("tiny"), layout_kind::ncdhw);
  const auto out = swinfer::preprocess(
      input.clone(), swinfer::pipeline_from_json(nlohmann::ordered_json::parse(R"({"spacing": [1, 1, 1]})"), "x"));
  swinfer::tensor<float> wrong({1, 2, 3, 4, 5}, layout_kind::ncdhw);
  CHECK_THROWS_WITH(out.invert(wrong, swinfer::interpolation::bilinear),
                    Catch::Contains("is not the preprocessed image's"));
}

TEST_CASE("preprocess: pipeline JSON forms and errors", "[preprocess]") {
  using json = nlohmann::ordered_json;
  auto parse = [](const char* text) { return swinfer::pipeline_from_json(json::parse(text), "p.json"); };

  SECTION("object order is kept; list form may repeat steps") {
    const auto a = parse(R"({"crop_foreground": {}, "orientation": "LPS", "spacing": 2})");
    REQUIRE(a.steps.size() == 3);
    CHECK(std::holds_alternative<swinfer::crop_foreground_options>(a.steps[0]));
    CHECK(std::get<swinfer::orientation_options>(a.steps[1]).axcodes == "LPS");
    CHECK(std::get<swinfer::spacing_options>(a.steps[2]).pixdim == std::array<double, 3>{2, 2, 2});
    const auto b = parse(R"([{"normalize_intensity": {}}, {"spacing": {"pixdim": [1, 2], "mode": "nearest"}},
                             {"normalize_intensity": {"nonzero": true}}])");
    REQUIRE(b.steps.size() == 3);
    const auto& sp = std::get<swinfer::spacing_options>(b.steps[1]);
    CHECK(sp.pixdim == std::array<double, 3>{1, 2, 2});
    CHECK(sp.mode == swinfer::interpolation::nearest);
    CHECK(std::get<swinfer::normalize_intensity_options>(b.steps[2]).nonzero);
    const auto c = parse(R"({"scale_intensity_range": {"a_min": -175, "a_max": 250, "b_min": null, "b_max": null}})");
    CHECK(!std::get<swinfer::scale_intensity_range_options>(c.steps[0]).b_min);
  }
  SECTION("named steps, as a command line builds them") {
    const auto step = swinfer::parse_preprocess_step("crop_foreground", json::parse(R"({"margin": [1, 2, 3]})"), "--crop");
    CHECK(std::get<swinfer::crop_foreground_options>(step).margin == swinfer::extent3{1, 2, 3});
  }
  SECTION("errors name the step or key") {
    CHECK_THROWS_WITH(parse(R"({"spacingg": [1, 1, 1]})"), Catch::Contains("p.json") && Catch::Contains("'spacingg'"));
    CHECK_THROWS_WITH(parse(R"({"spacing": {"pixdims": [1, 1, 1]}})"),
                      Catch::Contains("spacing") && Catch::Contains("unknown key 'pixdims'"));
    CHECK_THROWS_WITH(parse(R"({"crop_foreground": {"margin": 1, "select_fn": "x"}})"),
                      Catch::Contains("unknown key 'select_fn'"));
    CHECK_THROWS_WITH(parse(R"({"scale_intensity_range": {"a_max": 1}})"), Catch::Contains("'a_min' is required"));
    CHECK_THROWS_WITH(parse(R"({"scale_intensity_range": {"a_min": 0, "a_max": 1, "b_min": 0}})"),
                      Catch::Contains("both b_min and b_max"));
    CHECK_THROWS_WITH(parse(R"({"scale_intensity_range": {"a_min": 0, "a_max": 1, "clip": true}})"),
                      Catch::Contains("clip needs"));
    CHECK_THROWS_WITH(parse(R"({"scale_intensity_range": {"a_min": "0", "a_max": 1}})"),
                      Catch::Contains("'a_min' must be a number"));
    CHECK_THROWS_WITH(parse(R"({"orientation": "RAX"})"), Catch::Contains("RAX"));
    CHECK_THROWS_WITH(parse(R"({"orientation": "RRS"})"), Catch::Contains("same axis twice"));
    CHECK_THROWS_WITH(parse(R"({"orientation": "ras"})"), Catch::Contains("outside L, R"));
    CHECK_THROWS_WITH(parse(R"({"spacing": {"pixdim": [1, 1, 1], "mode": "bicubic"}})"), Catch::Contains("bicubic"));
    CHECK_THROWS_WITH(parse(R"({"spacing": [1, 1, 1, 1]})"), Catch::Contains("one to three"));
    CHECK_THROWS_WITH(parse(R"({"crop_foreground": {"margin": -1}})"),
                      Catch::Contains("p.json: crop_foreground: 'margin' is -1; allowed range [0, 4096]"));
    CHECK_THROWS_WITH(parse(R"({"crop_foreground": {"k_divisible": [1, 2]}})"), Catch::Contains("'k_divisible'"));
    CHECK_THROWS_WITH(parse(R"({"normalize_intensity": {"nonzero": 1}})"), Catch::Contains("true or false"));
    CHECK_THROWS_WITH(parse(R"([{"orientation": "RAS", "spacing": 1}])"), Catch::Contains("one step"));
    CHECK_THROWS_WITH(parse(R"("RAS")"), Catch::Contains("JSON object of steps"));
  }
  SECTION("files") {
    CHECK_THROWS_WITH(swinfer::load_pipeline(data_dir() / "missing.json"), Catch::Contains("cannot open"));
    const auto bad = fs::temp_directory_path() / "swinfer_bad_pipeline.json";
    std::ofstream(bad) << "{\"orientation\": ";
    CHECK_THROWS_WITH(swinfer::load_pipeline(bad), Catch::Contains("not valid JSON"));
    fs::remove(bad);
  }
}

TEST_CASE("preprocess: every numeric argument is checked against its range when parsed (issue 16)", "[preprocess]") {
  using json = nlohmann::ordered_json;
  auto message = [](const char* text) {
    return swinfer_test::error_of([&] { swinfer::pipeline_from_json(json::parse(text), "p.json"); });
  };
  // The reproducers: each reached overflowing arithmetic (the first crashed the tool).
  CHECK_THAT(message(R"({"crop_foreground": {"k_divisible": [2097152, 2097152, 4194304]}})"),
             Catch::StartsWith("p.json: crop_foreground: 'k_divisible' is 2097152; allowed range [0, 4096]"));
  CHECK_THAT(message(R"({"crop_foreground": {"k_divisible": 3000000}})"), Catch::Contains("'k_divisible' is 3000000"));
  CHECK_THAT(message(R"({"spacing": 1e-7})"),
             Catch::Equals("p.json: spacing: 'pixdim' is 1e-07; allowed range [0.001, 1000] (0 or less keeps the "
                           "input's spacing)"));
  CHECK_THAT(message(R"({"spacing": {"pixdim": [1, 1e-300]}})"), Catch::Contains("'pixdim' is 1e-300"));
  CHECK_THAT(message(R"({"crop_foreground": {"margin": 4611686018427387904}})"),
             Catch::Contains("'margin' is 4611686018427387904; allowed range [0, 4096]"));
  CHECK_THAT(message(R"({"crop_foreground": {"margin": [1, 2, 18446744073709551615]}})"),
             Catch::Contains("'margin' is 18446744073709551615"));
  CHECK_THAT(message(R"({"scale_intensity_range": {"a_min": 0, "a_max": 1e31}})"),
             Catch::Contains("scale_intensity_range: 'a_max' is 1e+31; allowed range [-1e+30, 1e+30]"));
  CHECK_THAT(message(R"({"scale_intensity_range": {"a_min": 0, "a_max": 1, "b_min": -1e300, "b_max": 1}})"),
             Catch::Contains("'b_min' is -1e+300"));
  CHECK_THAT(message(R"({"normalize_intensity": {"divisor": 1e40}})"), Catch::Contains("'divisor' is 1e+40"));
  CHECK_THAT(message(R"({"normalize_intensity": {"subtrahend": [0, -1e35], "channel_wise": true}})"),
             Catch::Contains("'subtrahend' is -1e+35"));
  // At the edges of the ranges, and MONAI's "keep the input's spacing".
  CHECK_NOTHROW(swinfer::pipeline_from_json(json::parse(R"({"spacing": [0.001, 1000, 0], "crop_foreground":
      {"margin": [0, 4096, 1], "k_divisible": [0, 4096, 1]}})"), "p.json"));
}

TEST_CASE("preprocess: the transforms check their options when called directly, too", "[preprocess]") {
  auto input = load_image(manifest().at("volumes").at("two_channel"), layout_kind::ncdhw);
  swinfer::crop_foreground_options crop;
  crop.k_divisible = {std::int64_t{1} << 21, std::int64_t{1} << 21, std::int64_t{1} << 22};
  CHECK_THAT(swinfer_test::error_of([&] { swinfer::crop_foreground(input, crop); }),
             Catch::StartsWith("CropForeground: 'k_divisible' is 2097152"));
  crop = {};
  crop.margin = {0, std::int64_t{1} << 62, 0};
  CHECK_THAT(swinfer_test::error_of([&] { swinfer::crop_foreground(input, crop); }),
             Catch::StartsWith("CropForeground: 'margin' is 4611686018427387904"));
  swinfer::spacing_options spacing;
  spacing.pixdim = {1e-300, 1, 1};
  CHECK_THAT(swinfer_test::error_of([&] { swinfer::respace(input, spacing); }),
             Catch::StartsWith("Spacing: 'pixdim' is 1e-300"));
  swinfer::scale_intensity_range_options scale;
  scale.a_min = -1e300;
  CHECK_THAT(swinfer_test::error_of([&] { swinfer::scale_intensity_range(input.data, scale); }),
             Catch::StartsWith("ScaleIntensityRange: 'a_min' is -1e+300"));
}

TEST_CASE("preprocess: an absurd grid from a file's affine is an error, not an undefined conversion", "[preprocess]") {
  auto input = load_image(manifest().at("volumes").at("two_channel"), layout_kind::ncdhw);
  input.affine(0, 0) = 1e100;  // a voxel 1e97 metres long (a corrupt or hostile header)
  swinfer::spacing_options spacing;
  spacing.pixdim = {1, 1, 1};
  CHECK_THAT(swinfer_test::error_of([&] { swinfer::respace(input, spacing); }),
             Catch::Contains("Spacing: the output extent on axis 0 for pixdim 1 mm") &&
                 Catch::Contains("not representable as a 64-bit integer"));
}

TEST_CASE("preprocess: a pipeline that multiplies the image's voxels over a thousandfold is refused before it runs",
          "[preprocess]") {
  // 6x5x4 voxels of 1 mm, resampled to 0.5 mm and grown to a multiple of 66: 66^3 voxels, 2396 times the input.
  swinfer::spatial_image small{swinfer::tensor<float>({1, 1, 6, 5, 4}, layout_kind::ncdhw),
                               swinfer::affine4::Identity()};
  small.data.fill(1.0f);
  using json = nlohmann::ordered_json;
  const auto spec =
      swinfer::pipeline_from_json(json::parse(R"({"spacing": 0.5, "crop_foreground": {"k_divisible": 66}})"), "p.json");
  const auto plan = swinfer::plan_preprocessing(spec, small.spatial_shape(), small.affine);
  CHECK(plan.grid.shape == swinfer::extent3{66, 66, 66});
  const std::string message = swinfer_test::error_of([&] { swinfer::preprocess(small.clone(), spec); });
  CHECK_THAT(message, Catch::StartsWith("preprocess: 'preprocessed voxels / input voxels' is 2395.8") &&
                          Catch::Contains("allowed range [0, 1000]") &&
                          Catch::Contains("pixdim (0.5, 0.5, 0.5) mm on voxels of (1, 1, 1) mm") &&
                          Catch::Contains("k_divisible (66, 66, 66)"));
  // The same crop of the image as it is: 66^3 / 120 voxels is still refused; k_divisible 16 is not.
  const auto modest =
      swinfer::pipeline_from_json(json::parse(R"({"spacing": 0.5, "crop_foreground": {"k_divisible": 16}})"), "p.json");
  CHECK(swinfer::preprocess(small.clone(), modest).image.spatial_shape() == swinfer::extent3{16, 16, 16});
}

TEST_CASE("preprocess: per-step argument errors at run time", "[preprocess]") {
  auto input = load_image(manifest().at("volumes").at("two_channel"), layout_kind::ncdhw);
  swinfer::normalize_intensity_options o;
  o.subtrahend = {1, 2, 3};
  o.channel_wise = true;
  CHECK_THROWS_WITH(swinfer::normalize_intensity(input.data, o), Catch::Contains("3 subtrahend values for 2"));
  swinfer::tensor<float> batch({2, 1, 2, 2, 2}, layout_kind::ncdhw);
  CHECK_THROWS_WITH(swinfer::reorient({std::move(batch), swinfer::affine4::Identity()}, "RAS"),
                    Catch::Contains("one image"));
}
