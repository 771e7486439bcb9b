// swinfer runtime: the cpu backend's kernels compiled for several x86-64 levels in one executable, one chosen at run
// time from cpuid (SWINFER_CPU_DISPATCH, on in the static build; cmake/SwinferCpuDispatch.cmake compiles
// src/cpu_level.cpp once per level). Other builds have one set, compiled for the build's target (-march=native by
// default, the baseline in the aarch64 static build).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <swinfer/backend/cpu/cpu_features.hpp>
#include <swinfer/backend/cpu/options.hpp>
#include <swinfer/model/network.hpp>

namespace swinfer::runtime {

/// What make_backend_network(cpu, ...) was asked for, handed to one level's factory.
struct cpu_network_request {
  const swinfer::network_choice& choice;
  const swinfer::swin_unetr_config& config;
  const swinfer::state_dict& weights;
  const swinfer::backend_options<swinfer::backend::cpu>& options;
  const std::string& weights_name;
};

/// One compiled set of cpu kernels: a name users pass to cap the choice, the instruction sets it is compiled for,
/// whether a CPU runs them, and the factory (the only global symbol of its object, so the compiler's output for
/// this level can never stand in for another level's copy of the same inline function).
struct cpu_kernel_level {
  std::string_view name;
  std::string_view instructions;
  bool (*runs_on)(const swinfer::cpu::cpu_features&);
  /// The model for a request, or null for a precision this level does not compile (`precisions`).
  swinfer::network* (*make)(const cpu_network_request&);
  std::string_view precisions = "all";  ///< "all", or the precisions whose kernels use this level's instructions
};

/// Whether a level's precision list ("all", or names separated by commas) holds `precision`.
constexpr bool names_precision(std::string_view list, std::string_view precision) {
  if (list == "all") return true;
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (list.substr(0, comma) == precision) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

/// The levels compiled into this executable, lowest first; empty in a build with one set of kernels.
std::span<const cpu_kernel_level> cpu_kernel_levels();

/// The highest compiled level this CPU runs, at most the cap (`--cpu-level`, else the environment variable
/// SWINFER_CPU_LEVEL). An unknown cap, or a CPU below the lowest level, is an error saying what is there; so is a
/// build with one set of kernels, which has nothing to choose.
const cpu_kernel_level& chosen_cpu_kernel_level();

/// The level that builds a model of `precision`: the chosen one, or, for a precision it leaves out, the highest
/// level below it that compiles that precision (every CPU that runs a level runs the levels below it).
const cpu_kernel_level& cpu_kernel_level_for(std::string_view precision);

/// Caps the choice at the level named `name` (the `--cpu-level` flag; overrides SWINFER_CPU_LEVEL). A build with one
/// set of kernels accepts only "native", which changes nothing.
void cap_cpu_kernel_level(std::string_view name);

/// One line per compiled level and whether this CPU runs it, the chosen one marked (for `swinfer info`); in a build
/// with one set of kernels, the instruction sets it was compiled for.
std::string describe_cpu_kernel_levels();

}  // namespace swinfer::runtime
