// NIfTI reading against nibabel's view of the fixtures (tools/make_nifti_fixtures.py writes both), write -> read
// round trips that must keep data and geometry, and the error cases. With SWINFER_NIFTI_KEEP_DIR=DIR set, the
// written files and a manifest are kept in DIR for `tools/make_nifti_fixtures.py --verify DIR` (nibabel's check).
#include <catch2/catch.hpp>

#include "error_testing.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "swinfer/io/nifti.hpp"
#include "test_data.hpp"

using swinfer_test::error_of;

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using swinfer::layout_kind;
using swinfer::nifti_datatype;
using swinfer::shape5;

fs::path data_dir() { return swinfer_test::test_data_dir() / "nifti"; }

const nlohmann::json& expected() {
  static const nlohmann::json j = nlohmann::json::parse(std::ifstream(data_dir() / "expected.json"));
  return j;
}

/// A fresh directory under the system temp directory, removed with everything in it at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device random;
    path = fs::temp_directory_path() / ("swinfer-nifti-test-" + std::to_string(random()) + std::to_string(random()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};


/// The values the round trips write; tools/make_nifti_fixtures.py recomputes them in --verify (keep in step).
double label_at(std::int64_t c, std::int64_t i, std::int64_t j, std::int64_t k) {
  return static_cast<double>((i + 2 * j + 3 * k + 5 * c) % 7);
}
double float_at(std::int64_t c, std::int64_t i, std::int64_t j, std::int64_t k) {
  return 0.25 * i - 0.5 * j + 0.125 * k + c + 0.0625;
}

template <class T, class F>
swinfer::tensor<T> make_volume(const shape5& s, layout_kind layout, F&& value) {
  swinfer::tensor<T> t(s, layout);
  for (std::int64_t c = 0; c < s.c; ++c)
    for (std::int64_t i = 0; i < s.d; ++i)
      for (std::int64_t j = 0; j < s.h; ++j)
        for (std::int64_t k = 0; k < s.w; ++k) t(0, c, i, j, k) = static_cast<T>(value(c, i, j, k));
  return t;
}

}  // namespace

TEST_CASE("NIfTI fixtures read as nibabel reads them", "[io][nifti]") {
  const auto& fixtures = expected().at("fixtures");
  REQUIRE(fixtures.size() >= 20);
  for (const auto& fx : fixtures) {
    const std::string name = fx.at("file");
    INFO(name);
    const auto vol = swinfer::read_nifti(data_dir() / name);
    const auto& shape = fx.at("shape");
    const std::int64_t channels = fx.at("channels");
    CHECK(swinfer::read_nifti_shape(data_dir() / name) == vol.data.shape());
    CHECK(vol.version() == fx.at("version").get<int>());
    CHECK(vol.data.shape() == shape5{1, channels, shape[0], shape[1], shape[2]});
    CHECK(vol.data.layout() == layout_kind::ncdhw);
    CHECK(vol.channels() == channels);
    CHECK(vol.dims() == std::array<std::int64_t, 3>{shape[0], shape[1], shape[2]});
    CHECK(vol.header.datatype == fx.at("datatype").get<int>());
    CHECK(vol.header.qform_code == fx.at("qform_code").get<int>());
    CHECK(vol.header.sform_code == fx.at("sform_code").get<int>());
    for (int r = 0; r < 3; ++r) CHECK(vol.spacing()[r] == Approx(fx.at("spacing")[r].get<double>()).epsilon(1e-7));

    const auto affine = vol.affine();
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) {
        INFO("affine[" << r << "][" << c << "]");
        // nibabel builds the qform rotation partly in float32; the sform and fallback agree exactly.
        CHECK(affine[r][c] == Approx(fx.at("affine")[r][c].get<double>()).margin(1e-5));
      }
    }
    for (const auto& sample : fx.at("samples")) {
      const auto& at = sample.at("index");  // (i, j, k, c)
      const double want = sample.at("value");
      INFO("voxel (i, j, k, c) = " << at.dump());
      CHECK(vol.data(0, at[3], at[0], at[1], at[2]) == Approx(want).epsilon(1e-6).margin(1e-6));
    }
    // Every voxel counts: a sum differing beyond float rounding means a voxel was misplaced or misconverted.
    double sum = 0, magnitude = 0;
    for (std::int64_t n = 0; n < vol.data.size(); ++n) {
      sum += vol.data.data()[n];
      magnitude += std::fabs(vol.data.data()[n]);
    }
    CHECK(std::fabs(sum - fx.at("sum").get<double>()) <= 1e-6 * magnitude + 1e-6);
  }
}

TEST_CASE("NIfTI gzip is detected from the content, not the name", "[io][nifti]") {
  temp_dir dir;
  fs::copy_file(data_dir() / "n1_int16.nii.gz", dir.path / "gzipped.nii");
  fs::copy_file(data_dir() / "n1_float32.nii", dir.path / "plain.nii.gz");
  const auto a = swinfer::read_nifti(data_dir() / "n1_int16.nii.gz");
  const auto b = swinfer::read_nifti(dir.path / "gzipped.nii");
  const auto c = swinfer::read_nifti(data_dir() / "n1_float32.nii");
  const auto d = swinfer::read_nifti(dir.path / "plain.nii.gz");
  REQUIRE(a.data.shape() == b.data.shape());
  REQUIRE(c.data.shape() == d.data.shape());
  CHECK(std::equal(a.data.data(), a.data.data() + a.data.size(), b.data.data()));
  CHECK(std::equal(c.data.data(), c.data.data() + c.data.size(), d.data.data()));
}

TEST_CASE("NIfTI write -> read keeps data and geometry", "[io][nifti]") {
  temp_dir scratch;
  const char* keep = std::getenv("SWINFER_NIFTI_KEEP_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : scratch.path;
  fs::create_directories(out_dir);
  nlohmann::json manifest = {{"files", nlohmann::json::array()}};

  struct case_t {
    const char* like;
    const char* out;
    nifti_datatype type;
    std::int64_t channels;
    layout_kind layout;
    bool from_uint8;  // else from a float tensor
  };
  const case_t cases[] = {
      {"n1_float32.nii", "labels_n1.nii.gz", nifti_datatype::uint8, 1, layout_kind::ncdhw, true},
      {"n1_float32.nii", "labels_from_float_n1.nii", nifti_datatype::uint8, 1, layout_kind::ndhwc, false},
      {"n1_float32.nii", "probs_n1.nii.gz", nifti_datatype::float32, 3, layout_kind::ndhwc, false},
      {"n2_float32.nii", "labels_n2.nii", nifti_datatype::uint8, 1, layout_kind::ncdhw, true},
      {"n2_float32.nii", "probs_n2.nii.gz", nifti_datatype::float32, 2, layout_kind::ncdhw, false},
      {"qform_only.nii", "labels_qform.nii.gz", nifti_datatype::uint8, 1, layout_kind::ncdhw, true},
      {"sform_only_oblique.nii", "probs_sform.nii", nifti_datatype::float32, 1, layout_kind::ncdhw, false},
      {"no_xform_aniso.nii", "labels_no_xform.nii.gz", nifti_datatype::uint8, 1, layout_kind::ndhwc, true},
      {"be_int16_scaled.nii", "probs_be.nii", nifti_datatype::float32, 1, layout_kind::ncdhw, false},
      {"four_d_2ch.nii.gz", "labels_4d.nii.gz", nifti_datatype::uint8, 1, layout_kind::ncdhw, true},
      {"five_d_3ch.nii", "probs_5d.nii.gz", nifti_datatype::float32, 2, layout_kind::ncdhw, false},
  };
  for (const auto& tc : cases) {
    INFO(tc.out << " like " << tc.like);
    const auto like = swinfer::read_nifti(data_dir() / tc.like);
    const auto g = like.dims();
    const shape5 s{1, tc.channels, g[0], g[1], g[2]};
    const bool labels = tc.type == nifti_datatype::uint8;
    const auto value = [&](auto c, auto i, auto j, auto k) {
      return labels ? label_at(c, i, j, k) : float_at(c, i, j, k);
    };
    const fs::path out = out_dir / tc.out;
    if (tc.from_uint8) {
      swinfer::write_nifti(out, make_volume<std::uint8_t>(s, tc.layout, value), like, tc.type);
    } else {
      swinfer::write_nifti(out, make_volume<float>(s, tc.layout, value), like, tc.type);
    }
    manifest["files"].push_back({{"file", tc.out}, {"like", tc.like}, {"datatype", labels ? "uint8" : "float32"},
                                 {"channels", tc.channels}, {"pattern", labels ? "label" : "float"}});

    const auto back = swinfer::read_nifti(out);
    REQUIRE(back.data.shape() == s);
    bool same = true;
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t i = 0; i < s.d; ++i)
        for (std::int64_t j = 0; j < s.h; ++j)
          for (std::int64_t k = 0; k < s.w; ++k) same = same && back.data(0, c, i, j, k) == value(c, i, j, k);
    CHECK(same);
    // Geometry identical, not merely close: the mask must overlay the scan voxel for voxel.
    CHECK(back.affine() == like.affine());
    CHECK(back.spacing() == like.spacing());
    CHECK(back.version() == like.version());
    const auto &bh = back.header, &lh = like.header;
    CHECK(bh.qform_code == lh.qform_code);
    CHECK(bh.sform_code == lh.sform_code);
    CHECK(bh.xyz_units == lh.xyz_units);
    CHECK(bh.datatype == static_cast<int>(tc.type));
    CHECK(bh.ndim == (tc.channels > 1 ? 4 : 3));
    CHECK(bh.scl_slope == 1.0);
    CHECK(bh.scl_inter == 0.0);
    CHECK(bh.cal_min == (labels ? 0.0 : value(0, 0, g[1] - 1, 0)));
    CHECK(bh.cal_max == (labels ? 6.0 : value(tc.channels - 1, g[0] - 1, 0, g[2] - 1)));
    if (lh.qform_code > 0) {
      CHECK(bh.quatern_b == lh.quatern_b);
      CHECK(bh.quatern_c == lh.quatern_c);
      CHECK(bh.quatern_d == lh.quatern_d);
      CHECK(bh.qfac == lh.qfac);
      CHECK(bh.qoffset_x == lh.qoffset_x);
    }
  }
  // Writing again replaces the file (rename over it).
  const auto like = swinfer::read_nifti(data_dir() / "n1_float32.nii");
  const auto g = like.dims();
  auto zeros = swinfer::tensor<std::uint8_t>(shape5{1, 1, g[0], g[1], g[2]}, layout_kind::ncdhw);
  zeros.fill(0);
  swinfer::write_nifti(scratch.path / "again.nii", zeros, like, nifti_datatype::uint8);
  swinfer::write_nifti(scratch.path / "again.nii", zeros.view(), like, nifti_datatype::float32);
  CHECK(swinfer::read_nifti(scratch.path / "again.nii").header.datatype == NIFTI_TYPE_FLOAT32);

  if (keep) std::ofstream(out_dir / "manifest.json") << manifest.dump(1) << "\n";
  // Only the outputs: no temporary files left behind.
  CHECK(std::distance(fs::directory_iterator(scratch.path), fs::directory_iterator()) == (keep ? 1 : 12));
}

TEST_CASE("NIfTI read errors name the file and the problem", "[io][nifti]") {
  const auto read = [](const char* name) { return error_of([&] { swinfer::read_nifti(data_dir() / name); }); };
  CHECK_THAT(read("two_d.nii"), Contains("two_d.nii") && Contains("2-D image"));
  CHECK_THAT(read("zero_dim.nii"), Contains("zero_dim.nii") && Contains("empty dimension"));
  CHECK_THAT(read("truncated.nii.gz"), Contains("truncated.nii.gz") && Contains("truncated or corrupt"));
  CHECK_THAT(read("truncated.nii"), Contains("truncated.nii") && Contains("more than the file holds"));
  CHECK_THAT(read("corrupt.nii.gz"), Contains("corrupt.nii.gz") && Contains("corrupt"));
  CHECK_THAT(read("short_header.nii"), Contains("short_header.nii") && Contains("too short"));
  CHECK_THAT(read("not_nifti.nii"), Contains("not_nifti.nii") && Contains("not a NIfTI file"));
  CHECK_THAT(read("missing.nii.gz"), Contains("missing.nii.gz") && Contains("no such file"));
  CHECK_THAT(read("complex64.nii"), Contains("complex64.nii") && Contains("COMPLEX64"));
  CHECK_THAT(read("huge_dims.nii"), Contains("huge_dims.nii") && Contains("8000000000 voxels"));
  CHECK_THAT(read("nan.nii"),
             Contains("nan.nii") && Contains("4 of 210 voxels are not finite (2 NaN, 2 infinite)"));
  CHECK_THAT(error_of([] { swinfer::read_nifti(data_dir()); }), Contains("not a regular file"));
  // The header alone: its errors are read_nifti's; voxels missing from the file are not its concern.
  CHECK_THAT(error_of([] { swinfer::read_nifti_shape(data_dir() / "two_d.nii"); }),
             Contains("two_d.nii") && Contains("2-D image"));
  CHECK_THAT(error_of([] { swinfer::read_nifti_shape(data_dir() / "not_nifti.nii"); }),
             Contains("not_nifti.nii") && Contains("not a NIfTI file"));
  CHECK(swinfer::read_nifti_shape(data_dir() / "truncated.nii").spatial() > 0);

  const auto vol = swinfer::read_nifti(data_dir() / "nan.nii", {.allow_non_finite = true});
  CHECK(std::isnan(vol.data(0, 0, 1, 2, 3)));
  CHECK(std::isinf(vol.data(0, 0, 0, 0, 1)));
  CHECK(vol.data(0, 0, 2, 0, 0) < 0);
}

TEST_CASE("NIfTI write errors leave nothing behind", "[io][nifti]") {
  temp_dir dir;
  const auto like = swinfer::read_nifti(data_dir() / "n1_float32.nii");
  const auto g = like.dims();
  auto labels = swinfer::tensor<float>(shape5{1, 1, g[0], g[1], g[2]}, layout_kind::ncdhw);
  labels.fill(1.0f);

  const fs::path nowhere = dir.path / "no" / "such" / "dir" / "mask.nii.gz";
  CHECK_THAT(error_of([&] { swinfer::write_nifti(nowhere, labels, like, nifti_datatype::uint8); }),
             Contains("mask.nii.gz") && Contains("No such file or directory"));
  CHECK_FALSE(fs::exists(dir.path / "no"));

  CHECK_THAT(error_of([&] { swinfer::write_nifti(dir.path / "mask.npy", labels, like, nifti_datatype::uint8); }),
             Contains("mask.npy") && Contains(".nii or .nii.gz"));
  const auto wrong = swinfer::tensor<float>(shape5{1, 1, g[0], g[1], g[2] + 1}, layout_kind::ncdhw);
  CHECK_THAT(error_of([&] { swinfer::write_nifti(dir.path / "mask.nii", wrong, like, nifti_datatype::uint8); }),
             Contains("mask.nii") && Contains("does not match the grid"));
  CHECK_THAT(error_of([&] { swinfer::write_nifti(dir.path / "mask.nii", labels, swinfer::nifti_volume{},
                                                 nifti_datatype::uint8); }),
             Contains("not read from a file"));

  // A failing write keeps an existing file untouched and leaves no temporary file.
  { std::ofstream(dir.path / "mask.nii") << "old"; }
  labels(0, 0, 1, 2, 3) = 0.5f;
  CHECK_THAT(error_of([&] { swinfer::write_nifti(dir.path / "mask.nii", labels, like, nifti_datatype::uint8); }),
             Contains("mask.nii") && Contains("(c, i, j, k) = (0, 1, 2, 3) is 0.5"));
  labels(0, 0, 1, 2, 3) = 256.0f;
  CHECK_THAT(error_of([&] { swinfer::write_nifti(dir.path / "mask.nii", labels, like, nifti_datatype::uint8); }),
             Contains("is 256"));
  CHECK(fs::file_size(dir.path / "mask.nii") == 3);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("NIfTI file names", "[io][nifti]") {
  CHECK(swinfer::is_nifti_path("a/case_001.nii.gz"));
  CHECK(swinfer::is_nifti_path("case.nii"));
  CHECK(swinfer::is_nifti_path("CASE.NII.GZ"));
  CHECK_FALSE(swinfer::is_nifti_path("case.Nii.gz"));  // nifti_clib rejects mixed case too
  CHECK_FALSE(swinfer::is_nifti_path("case.nii.gz.tmp-1"));
  CHECK_FALSE(swinfer::is_nifti_path("case.npy"));
  CHECK_FALSE(swinfer::is_nifti_path(".nii"));
  CHECK_FALSE(swinfer::is_nifti_path("dir.nii/"));
  CHECK(swinfer::nifti_stem("in/case_001.nii.gz") == "case_001");
  CHECK(swinfer::nifti_stem("CT.NII") == "CT");
  CHECK(swinfer::nifti_stem("scan.v2.nii") == "scan.v2");
}
