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


/// \brief The run-time settings every backend takes. Each backend adds its own in backend_options<Backend>; nothing
/// here or there is read from the environment (the tool and the Python module map their variables onto them).
struct engine_options {
  /// Worker threads for CPU backends; 0 means one per hardware thread.
  int threads = 0;
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

/// \brief A backend's options: engine_options plus that backend's own, defined beside the backend
/// (<swinfer/backend/cpu/options.hpp>, .../hip/options.hpp, .../onednn/options.hpp). Each converts implicitly from
/// engine_options (the backend's own settings at their defaults), so code that sets only the common part passes an
/// engine_options wherever a backend's options are asked for.
template <class Backend>
struct backend_options;

/// The options a backend context is built from: its `options` type where it declares one, else engine_options.
template <class Context>
struct context_options {
  using type = engine_options;
};
template <class Context>
  requires requires { typename Context::options; }
struct context_options<Context> {
  using type = typename Context::options;
};
template <class Context>
using context_options_t = typename context_options<Context>::type;

}  // namespace swinfer
