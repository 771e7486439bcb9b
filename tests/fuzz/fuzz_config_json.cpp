// libFuzzer harness: the model configuration reader (one key table, ranges, Swin Fusion options) on arbitrary JSON;
// a configuration it accepts must also survive config_to_json -> config_from_json unchanged.
#include <swinfer/model/config_json.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;  // not JSON: load_config reports that before the reader sees anything
  swinfer_fuzz::expect_success_or_error([&] {
    const auto c = swinfer::config_from_json(j, "fuzz.json");
    const auto written = swinfer::config_to_json(c);
    if (swinfer::config_to_json(swinfer::config_from_json(written, "written.json")) != written) __builtin_trap();
  });
  return 0;
}
