// swinfer runtime: where an int8 network's activation scales come from (an int8 model file's own calibration, a
// calibration file, or dynamic scales), checked against the precision asked for. The tool's flags and the Python
// module's arguments both go through here; `names` spells the choices as each front end does in its errors.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <swinfer/model/int8_calibration.hpp>
#include <swinfer/model/load.hpp>
#include <swinfer/runtime/backends.hpp>

namespace swinfer::runtime {

/// What a front end was asked for.
struct int8_choice {
  std::string calibration;  ///< a `swinfer calibrate` file; empty: none
  bool dynamic = false;     ///< scales from each input at run time
};

/// How the front end spells the choices, for its errors ("--calibration" in the tool, "calibration=" in Python).
struct int8_choice_names {
  std::string_view calibration, dynamic, precision;
};

/// Sets o.calibration and o.int8_dynamic for a network of `precision` built from `loaded` (named `model`): an int8
/// model file's own calibration (precision int8 only), the calibration file or dynamic scales for int8 (either with
/// another precision, both together, or either with an int8 model file, is an error naming what to drop).
inline void apply_int8_choice(network_options& o, const swinfer::loaded_model& loaded, const std::string& model,
                              std::string_view precision, const int8_choice& choice, const int8_choice_names& names) {
  using swinfer::detail::fail;
  const bool int8 = precision == swinfer::tag_name<swinfer::precision::int8>();
  if (!choice.calibration.empty() && !int8) fail(names.calibration, " applies to ", names.precision, " int8, not ", precision);
  if (choice.dynamic && !int8) fail(names.dynamic, " applies to ", names.precision, " int8, not ", precision);
  if (choice.dynamic && !choice.calibration.empty()) {
    fail(names.dynamic, " and ", names.calibration, " both give int8 scales; use one");
  }
  o.int8_dynamic = choice.dynamic;
  if (loaded.calibration) {
    if (!int8) {
      fail("'", model, "' holds int8 weights (from `swinfer quantize`): run it with ", names.precision,
           " int8, or use the float checkpoint it was made from");
    }
    if (!choice.calibration.empty() || choice.dynamic) {
      fail("'", model, "' carries its own calibration (from `swinfer quantize`); drop ",
           choice.calibration.empty() ? names.dynamic : names.calibration,
           ", or use the float checkpoint it was made from");
    }
    o.calibration = loaded.calibration;
  } else if (int8 && !choice.calibration.empty()) {
    o.calibration = std::make_shared<const swinfer::int8_calibration>(swinfer::read_calibration(choice.calibration));
  }
}

}  // namespace swinfer::runtime
