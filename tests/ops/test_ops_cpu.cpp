// The shared op suite (tests/ops/op_suite.hpp) on the cpu backend: fp32/fp16/bf16/int8 x ncdhw/ndhwc, each row with
// 1, 2 and 5 workers, and conv3d and linear with bf16 weights exact and rounded (backend_options<cpu>::bf16_weights);
// conv3d also on every implementation of its list that can run each case, forced (kernel_choices::conv3d). Under
// int8 the products (conv3d, conv_transpose3d, linear, the attention's qkv and proj) run quantized against the
// references' int8 scheme; the int8 rows (int8_op_suite.hpp) add dynamic scales and check that the result is
// visibly quantized.
#include <memory>
#include <string_view>
#include <tuple>
#include <vector>

#include "ops/int8_op_suite.hpp"
#include "ops/op_suite.hpp"
#include "swinfer/backend/cpu.hpp"

namespace swinfer_ops_test {

template <>
struct op_backend<swinfer::backend::cpu> : host_backend {
  static constexpr std::string_view name = "cpu";

  static std::vector<run_context> contexts(bool bf16_weight_modes) {
    std::vector<run_context> v;
    for (const int threads : {1, 2, 5}) {
      const std::string t = " (" + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
      if (bf16_weight_modes) {
        v.push_back({t + ", bf16 weights exact)", {threads}, false});
        v.push_back({t + ", bf16 weights rounded)", {threads}, true});
      } else {
        v.push_back({t + ")", {threads}});
      }
    }
    return v;
  }

  /// Every implementation in the op's list, forced, on 2 workers (for bf16 storage with bf16 weights exact and
  /// rounded: some implementations need rounded ones; the mode changes nothing for other storage).
  template <class K>
  static std::vector<run_context> implementations(op_id op) {
    std::vector<run_context> v;
    if (op != op_id::conv3d) return v;
    using S = typename K::storage;
    for (const auto name : swinfer::cpu::conv3d_implementations<S>::names) {
      for (const bool rounded : {false, true}) {
        if (rounded && !std::is_same_v<S, Eigen::bfloat16>) continue;
        v.push_back({" (2 threads, kernel " + std::string(name) + (rounded ? ", bf16 weights rounded)" : ")"), {2},
                     rounded, std::string(name)});
      }
    }
    return v;
  }

  template <class K>
  static std::shared_ptr<typename K::context> make_context(const run_context& rc) {
    swinfer::backend_options<swinfer::backend::cpu> o = rc.options;
    o.bf16_weights = rc.round_bf16_weights ? swinfer::bf16_weight_mode::rounded : swinfer::bf16_weight_mode::exact;
    if (!rc.kernel.empty()) {
      REQUIRE(swinfer::cpu::conv3d_implementations<typename K::storage>::parse(rc.kernel, o.kernels.conv3d));
    }
    return std::make_shared<typename K::context>(o);
  }

  /// Rounded to bf16 where the kernel stores them so (the pair dot product, AMX with rounded weights); as given on
  /// every other path (float32, AMX hi + lo), so the reference stays exact for those.
  template <class S, class Kernel>
  static std::vector<float> reference_weights(const Kernel& kernel, std::vector<float> weight) {
    bool rounded = false;
    if constexpr (requires { kernel.rounds_weights(); }) {
      rounded = kernel.rounds_weights();
    } else if constexpr (requires { kernel.path(); }) {
      const std::string_view path = kernel.path();
      rounded = path == "avx512 bf16 dot" || path == "amx bf16 rounded";
    }
    if (rounded) swinfer_test::round_weights_like_storage<S>(weight);
    return weight;
  }

  /// The window attention's inner operands rounded to bf16 on the pair dot product path, as the kernel does.
  template <class S, class Kernel>
  static swinfer::ops::ref::operand_rounding reference_operands(const Kernel& kernel) {
    if (std::string_view(kernel.path()) != "avx512 bf16 dot") return nullptr;
    return [](float v) { return static_cast<float>(Eigen::bfloat16(v)); };
  }

  /// max|kernel - ref| <= kernel_tolerance<S>() * max|ref| for every op.
  template <class S>
  static void check(op_id, const swinfer::tensor<S>& got, const swinfer::tensor<float>& want, std::int64_t = 0) {
    swinfer_test::check_close(got, want);
  }
};

template <class P, class L>
using cpu_target = target<swinfer::backend::cpu, P, L>;
using cpu_targets = std::tuple<cpu_target<swinfer::precision::fp32, swinfer::layout::ncdhw>,
                               cpu_target<swinfer::precision::fp32, swinfer::layout::ndhwc>,
                               cpu_target<swinfer::precision::fp16, swinfer::layout::ncdhw>,
                               cpu_target<swinfer::precision::fp16, swinfer::layout::ndhwc>,
                               cpu_target<swinfer::precision::bf16, swinfer::layout::ncdhw>,
                               cpu_target<swinfer::precision::bf16, swinfer::layout::ndhwc>,
                               cpu_target<swinfer::precision::int8, swinfer::layout::ncdhw>,
                               cpu_target<swinfer::precision::int8, swinfer::layout::ndhwc>>;
using cpu_int8_targets = std::tuple<cpu_target<swinfer::precision::int8, swinfer::layout::ncdhw>,
                                    cpu_target<swinfer::precision::int8, swinfer::layout::ndhwc>>;

}  // namespace swinfer_ops_test

SWINFER_OP_TESTS("cpu", "[cpu]", swinfer_ops_test::cpu_targets)
SWINFER_INT8_OP_TESTS("cpu", "[cpu]", swinfer_ops_test::cpu_int8_targets)
