// swinfer tool: command-line flags for how a network runs, shared by the swinfer tool and the benchmarks
// (CLI11: linked by the swinfer_app_flags target; swinfer::runtime does not depend on CLI11).
#pragma once

#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <swinfer/core/options.hpp>

namespace swinfer_tool {

/// Adds --bf16-weights exact|rounded (swinfer::bf16_weight_mode) to a command.
inline void add_bf16_weights_option(CLI::App& cmd, swinfer::bf16_weight_mode& mode) {
  const std::map<std::string, swinfer::bf16_weight_mode> modes = {{"exact", swinfer::bf16_weight_mode::exact},
                                                                  {"rounded", swinfer::bf16_weight_mode::rounded}};
  cmd.add_option("--bf16-weights", mode,
                 "bf16 on the cpu backend: exact weights (default; bf16 only where activations are stored) or "
                 "weights rounded to bf16 (linears, attention and small-grid convolutions on the bf16 dot product "
                 "on CPUs with AVX512_BF16 and no AMX: the forward ~1.2x faster, ~9% more error)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case));
}

}  // namespace swinfer_tool
