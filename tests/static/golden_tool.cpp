// The static build's test helper, independent of the tool under test: writes a golden case's input (the formula
// tensor its case.json names, as tools/goldens/formula.py makes it) and compares logits with MONAI's.
//   golden_tool input CASE_DIR OUT.npy
//   golden_tool compare GOT.npy REF.npy MAX_RELATIVE   (max|got - ref| / max|ref|; exit 1 above it)
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <swinfer/core/compare.hpp>
#include <swinfer/io/npy.hpp>

#include "formula_weights.hpp"

namespace {

int write_input(const std::string& case_dir, const std::string& out) {
  std::ifstream file(case_dir + "/case.json");
  if (!file) throw std::runtime_error("cannot read " + case_dir + "/case.json");
  const auto input = nlohmann::json::parse(file).at("input");
  const auto shape = input.at("shape").get<std::vector<std::int64_t>>();
  std::size_t count = 1;
  for (auto extent : shape) count *= static_cast<std::size_t>(extent);
  const auto values = swinfer_test::formula_tensor(input.at("key").get<std::string>(), count,
                                                   input.at("offset").get<float>(), input.at("scale").get<float>());
  swinfer::write_npy(out, shape, values.data());
  return 0;
}

swinfer::tensor<float> as_tensor(const swinfer::npy_array& a, const std::string& path) {
  if (a.shape.size() != 5) throw std::runtime_error(path + ": expected 5 dimensions");
  swinfer::tensor<float> t({a.shape[0], a.shape[1], a.shape[2], a.shape[3], a.shape[4]}, swinfer::layout_kind::ncdhw);
  std::copy(a.data.begin(), a.data.end(), t.data());
  return t;
}

int compare(const std::string& got_path, const std::string& ref_path, double max_relative) {
  const auto got = as_tensor(swinfer::read_npy(got_path), got_path);
  const auto ref = as_tensor(swinfer::read_npy(ref_path), ref_path);
  const auto d = swinfer::compare_tensors(got, ref);
  const bool ok = d.finite() && d.relative() <= max_relative;
  std::printf("%s vs %s: max|d| %.3g, max|ref| %.3g, relative %.3g (at most %.3g): %s\n", got_path.c_str(),
              ref_path.c_str(), d.max_abs, d.max_ref, d.relative(), max_relative, ok ? "ok" : "TOO FAR");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "input") return write_input(args[1], args[2]);
  if (args.size() == 4 && args[0] == "compare") return compare(args[1], args[2], std::stod(args[3]));
  std::fprintf(stderr, "usage: golden_tool input CASE_DIR OUT.npy | compare GOT.npy REF.npy MAX_RELATIVE\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "golden_tool: %s\n", e.what());
  return 2;
}
