// [gpu][tuning] Kernel tuning (kernel_tuning.hpp): a 3x3x3 convolution shape measured once on every kernel that can
// run it, the choice kept in a file and used by the next context without measuring, refresh measuring again, and a
// corrupt, stale or unwritable file ignored with a warning. On the emulator the times are host times: the test checks
// the bookkeeping and that the output is the chosen kernel's, not which kernel is fastest.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "swinfer/ops/conv3d.hpp"

using namespace swinfer;
using namespace swinfer_gpu_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using S = Eigen::half;

/// A fresh folder under the temporary directory, removed with its contents at the end of the scope.
struct scratch_folder {
  fs::path path = fs::temp_directory_path() / ("swinfer-tuning-" + std::to_string(std::random_device{}()));
  scratch_folder() { fs::remove_all(path); }
  ~scratch_folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

/// fp16, 48 -> 48 channels-last at 3x5x4 with a bias: the halo tile, the tiled GEMM and (32-lane warps) wgmma can
/// all run it. Weights and inputs are drawn afresh and are exact in fp16.
struct convolution {
  ops::conv3d_problem p{48, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, {}};
  shape5 in_shape{1, 48, 3, 5, 4};
  std::vector<float> weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()), -0.3f, 0.3f);
  std::vector<float> bias = swinfer_test::random_vector(48);
  tensor<S> x = random_tensor<S>(in_shape, layout_kind::ndhwc);
  convolution() { swinfer_test::round_weights_like_storage<S>(weight); }

  /// What a fresh context (reading the environment as it is now) computes, and the kernel it used.
  struct result {
    tensor<S> y;
    hip::conv_kernel_choice kernel;
    std::string note;
    bool wgmma;  ///< whether the context could run the warpgroup-product kernel
  };
  result run() const {
    hip::context ctx(environment_options());
    hip::conv3d<S> conv(ctx, p, weight.data(), bias.data());
    const auto in = hip::device_tensor<S>::upload(ctx, x);
    auto out = hip::device_tensor<S>::upload(ctx, swinfer_test::poisoned_tensor<S>(p.output_shape(in_shape),
                                                                                 layout_kind::ndhwc));
    conv.run(in, out);
    return {out.download(ctx), conv.last_kernel(), ctx.tuning().note(), ctx.device().warpgroup_mma};
  }
  tensor<float> reference() const {
    tensor<float> want(p.output_shape(in_shape), layout_kind::ndhwc);
    ops::ref::conv3d(p, swinfer_test::to_float_tensor(x, layout_kind::ndhwc), weight.data(), bias.data(), want);
    return want;
  }
};

/// This device's entries in the file.
json device_entries(const json& file_json) {
  return file_json.at("devices").at(hip::kernel_tuning::device_identity(gpu().device()));
}
json device_entries(const fs::path& file) { return device_entries(read_json(file)); }

}  // namespace

TEST_CASE("gpu kernel tuning: a convolution shape measured once, kept in a file, used without measuring again",
          "[gpu][context][tuning]") {
  const scratch_folder folder;
  const fs::path file = folder.path / "cache" / "gpu-kernels.json";  // its folder does not exist yet
  const scoped_environment automatic("SWINFER_GPU_CONV", "auto"), where("SWINFER_GPU_TUNING_FILE", file.c_str());
  const convolution conv;
  const tensor<float> want = conv.reference();
  const std::string device = hip::kernel_tuning::device_identity(gpu().device());

  {
    const scoped_environment off("SWINFER_GPU_TUNE", "off");
    check_close(conv.run().y, want);
    CHECK_FALSE(fs::exists(file));
  }

  const scoped_environment on("SWINFER_GPU_TUNE", "on");
  const auto tuned = conv.run();
  CHECK(tuned.note.empty());
  check_close(tuned.y, want);
  REQUIRE(fs::exists(file));
  const json file_json = read_json(file);
  CHECK(file_json.at("swinfer") == version_string);
  REQUIRE(file_json.at("devices").size() == 1);
  const json entries = device_entries(file_json);
  REQUIRE(entries.size() == 1);
  const std::string key = entries.begin().key();
  const json entry = entries.begin().value();
  INFO(key << ": " << entry.dump());
  CHECK(key.find("conv3d fp16 48->48 n1 3x5x4") == 0);
  CHECK(key.find("channels-last") != std::string::npos);
  const json& ms = entry.at("ms");
  CHECK(ms.contains("halo"));
  CHECK(ms.contains("gemm"));
  CHECK(ms.contains("wgmma") == tuned.wgmma);
  for (const auto& [kernel, t] : ms.items()) CHECK(t.get<float>() > 0.0f);
  // The kept kernel is the fastest measured, and the output is the one it computes.
  const std::string chosen = entry.at("kernel");
  for (const auto& [kernel, t] : ms.items()) CHECK(ms.at(chosen).get<float>() <= t.get<float>());
  CHECK(hip::kernel_name(tuned.kernel) == chosen);
  {
    const scoped_environment forced("SWINFER_GPU_CONV", chosen.c_str());
    check_equal(conv.run().y, tuned.y);
  }

  // The next context reads the file: a kernel written there by hand is used, and nothing is measured again.
  for (const char* planted : {"gemm", "halo"}) {
    json edited = file_json;
    edited["devices"][device][key]["kernel"] = planted;
    write_text(file, edited.dump(2));
    const auto again = conv.run();
    CHECK(hip::kernel_name(again.kernel) == std::string(planted));
    CHECK(read_json(file) == edited);
    check_close(again.y, want);
  }

  // refresh measures the shape again and rewrites its entry.
  json bogus = file_json;
  bogus["devices"][device][key] = {{"kernel", "gemm"}, {"ms", {{"gemm", 12345.0}}}};
  write_text(file, bogus.dump(2));
  {
    const scoped_environment refresh("SWINFER_GPU_TUNE", "refresh");
    check_close(conv.run().y, want);
  }
  const json refreshed = device_entries(file).at(key);
  CHECK(refreshed.at("ms").contains("halo"));
  CHECK(refreshed.at("ms").at("gemm").get<float>() != 12345.0f);
}

TEST_CASE("gpu kernel tuning: a corrupt, stale or unwritable file is ignored with a warning that names it",
          "[gpu][context][tuning]") {
  const scratch_folder folder;
  fs::create_directories(folder.path);
  const fs::path file = folder.path / "gpu-kernels.json";
  const scoped_environment automatic("SWINFER_GPU_CONV", "auto"), where("SWINFER_GPU_TUNING_FILE", file.c_str()),
      on("SWINFER_GPU_TUNE", "on");
  const convolution conv;
  const tensor<float> want = conv.reference();
  const auto ignored_then_rewritten = [&](const std::string& contents, const std::string& why) {
    write_text(file, contents);
    const auto r = conv.run();
    INFO(r.note);
    CHECK(r.note.find(file.string()) != std::string::npos);
    CHECK(r.note.find(why) != std::string::npos);
    check_close(r.y, want);
    const json rewritten = read_json(file);
    CHECK(rewritten.at("swinfer") == version_string);
    CHECK(device_entries(rewritten).size() == 1);
  };
  ignored_then_rewritten("{\"format\": \"swinfer GPU kernel ch", "cannot be read as a kernel tuning file");
  ignored_then_rewritten("[1, 2, 3]", "not a swinfer kernel tuning file");
  ignored_then_rewritten(R"({"format": "swinfer GPU kernel choices", "format_version": "one", "devices": {}})",
                         "cannot be read as a kernel tuning file");
  ignored_then_rewritten(R"({"format": "swinfer GPU kernel choices", "format_version": 1, "swinfer": "0.0.1",
                             "devices": {}})",
                         "written by swinfer 0.0.1");
  // An entry that names no kernel is measured again; other devices' entries stay.
  const std::string device = hip::kernel_tuning::device_identity(gpu().device());
  json j = read_json(file);
  const std::string key = j["devices"][device].begin().key();
  j["devices"][device][key]["kernel"] = "fastest";
  j["devices"]["another GPU (sm_100, 1 multiprocessors, nvidia)"]["conv3d fp16 1->1"] = {{"kernel", "gemm"}};
  write_text(file, j.dump());
  const auto r = conv.run();
  CHECK(r.note.find("names no kernel") != std::string::npos);
  const json after = read_json(file);
  CHECK(after["devices"].size() == 2);
  CHECK(after["devices"]["another GPU (sm_100, 1 multiprocessors, nvidia)"].contains("conv3d fp16 1->1"));
  CHECK(after["devices"][device][key]["kernel"] != "fastest");

  // Where the file cannot be written, the choices are kept for the process and the warning says so.
  const fs::path blocked = folder.path / "not-a-folder";
  write_text(blocked, "");
  const scoped_environment unwritable("SWINFER_GPU_TUNING_FILE", (blocked / "gpu-kernels.json").c_str());
  const auto kept = conv.run();
  INFO(kept.note);
  CHECK(kept.note.find("cannot be written") != std::string::npos);
  check_close(kept.y, want);
}
