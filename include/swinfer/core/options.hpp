// swinfer: run-time options shared by every backend.
#pragma once

#include <memory>
#include <string_view>

#include "swinfer/core/value_range.hpp"

namespace swinfer {

struct int8_calibration;  // swinfer/model/int8_calibration.hpp
class op_profile;        // swinfer/core/op_profile.hpp

/// Worker threads a caller may ask for: 0 (one per hardware thread) up to more than any machine has cores; past
/// that a pool would try to start millions of threads.
inline constexpr value_range<int> thread_count_range{0, 4096};

/// Checks a requested thread count against thread_count_range; `where` prefixes the message.
inline void check_thread_count(int threads, std::string_view where) {
  detail::require_in_range(threads, thread_count_range, where, "threads", " (0: one per hardware thread)");
}

/// \brief What a bf16 model does with its weights on the cpu backend (other precisions and backends ignore it).
/// - exact (the default): weights keep 24 significant bits (float32 FMA) or 16 (AMX hi + lo), so bf16 only rounds
///   where an activation is stored; the same numbers on every CPU.
/// - rounded: weights rounded to bf16 once, like oneDNN, OpenVINO and PyTorch autocast; on CPUs with the AVX-512
///   BF16 pair dot product and no AMX (AMD Zen 4 and later) this runs the linears, the window attention's products
///   (their operands q, k, the softmax numerators, v and the heads' outputs rounded to bf16, as those engines round
///   them) and the convolutions Winograd does not take on an instruction with twice the float32 FMA's rate; the
///   3x3x3 convolutions on grids of 8^3 and more stay on float32 Winograd F(4x4x4) with exact weights, faster still
///   (measured on a 2-core Zen 4: the fs48 forward 1.15-1.22x the exact mode, 1.87x fp32). Costs about 9 % more
///   relative L2 on the goldens (docs/performance.md); AMX CPUs keep exact convolution weights.
enum class bf16_weight_mode { exact, rounded };

/// \brief Run-time settings an engine is created with.
struct engine_options {
  /// Worker threads for CPU backends; 0 means one per hardware thread.
  int threads = 0;
  /// bf16 models on the cpu backend: exact or rounded weights (see bf16_weight_mode).
  bf16_weight_mode bf16_weights = bf16_weight_mode::exact;
  /// precision::int8: the activation scales (read_calibration() of a `swinfer calibrate` file), checked against the
  /// weights; ignored by float precisions. precision::int8 needs this or int8_dynamic.
  std::shared_ptr<const int8_calibration> calibration;
  /// precision::int8 without calibration data: every product quantizes its input with the input's own scale,
  /// max|x| / 127: per tensor and forward (per sliding window) for the convolutions, per token row for the linears;
  /// docs/int8.md. Not together with `calibration`.
  bool int8_dynamic = false;
  /// Where the cpu backend records each op's time (bench_forward --profile); null: nothing is timed. Other
  /// backends ignore it.
  std::shared_ptr<op_profile> profile;
};

}  // namespace swinfer
