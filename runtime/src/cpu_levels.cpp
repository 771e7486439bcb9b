// swinfer runtime: choosing among the cpu kernel levels compiled into this executable (cpu_levels.hpp).
#include <swinfer/runtime/cpu_levels.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <swinfer/core/error.hpp>

namespace swinfer::runtime {
namespace {

constexpr std::string_view native_name = "native";
constexpr std::string_view cap_variable = "SWINFER_CPU_LEVEL";

std::optional<std::string>& flag_cap() {
  static std::optional<std::string> cap;
  return cap;
}

std::string level_names() {
  std::string names;
  for (const auto& level : cpu_kernel_levels()) names += std::string(names.empty() ? "" : ", ") + std::string(level.name);
  return names;
}

/// The cap and where it came from, or nothing when neither the flag nor the environment sets one.
std::optional<std::pair<std::string, std::string>> requested_cap() {
  if (flag_cap()) return std::pair{*flag_cap(), std::string("--cpu-level")};
  if (const char* env = std::getenv(cap_variable.data()); env && *env) {
    return std::pair{std::string(env), std::string(cap_variable)};
  }
  return std::nullopt;
}

}  // namespace

void cap_cpu_kernel_level(std::string_view name) {
  const auto levels = cpu_kernel_levels();
  if (levels.empty() && name != native_name) {
    swinfer::detail::fail("--cpu-level ", name, ": this swinfer has one set of cpu kernels, compiled for ",
                          swinfer::cpu::compiled_kernel_isa(), " (an x86-64 build configured with "
                          "-DSWINFER_CPU_DISPATCH=ON chooses among levels at run time)");
  }
  if (!levels.empty() && std::ranges::none_of(levels, [&](const auto& level) { return level.name == name; })) {
    swinfer::detail::fail("--cpu-level ", name, " is not one of ", level_names());
  }
  flag_cap() = std::string(name);
}

const cpu_kernel_level& chosen_cpu_kernel_level() {
  const auto levels = cpu_kernel_levels();
  if (levels.empty()) swinfer::detail::fail("this swinfer has one set of cpu kernels, no levels to choose from");
  std::size_t top = levels.size();
  if (const auto cap = requested_cap()) {
    top = 0;
    while (top < levels.size() && levels[top].name != cap->first) ++top;
    if (top == levels.size()) {
      swinfer::detail::fail(cap->second, "=", cap->first, " is not a cpu kernel level of this swinfer (use one of ",
                            level_names(), ")");
    }
    ++top;
  }
  const auto& cpu = swinfer::cpu::host_cpu();
  for (std::size_t i = top; i-- > 0;) {
    if (levels[i].runs_on(cpu)) return levels[i];
  }
  swinfer::detail::fail("this CPU, ", cpu.describe(), ", lacks ", levels.front().name, " (",
                        levels.front().instructions, "), the lowest level of cpu kernels this swinfer was built for");
}

const cpu_kernel_level& cpu_kernel_level_for(std::string_view precision) {
  const auto levels = cpu_kernel_levels();
  const cpu_kernel_level* level = &chosen_cpu_kernel_level();
  while (!names_precision(level->precisions, precision) && level != levels.data()) --level;
  if (!names_precision(level->precisions, precision)) {
    swinfer::detail::fail("no cpu kernel level of this swinfer compiles precision ", precision, " (",
                          describe_cpu_kernel_levels(), ")");
  }
  return *level;
}

std::string describe_cpu_kernel_levels() {
  const auto levels = cpu_kernel_levels();
  if (levels.empty()) {
    return "  one set, compiled for " + swinfer::cpu::compiled_kernel_isa() +
           " (this build chooses none at run time: SWINFER_CPU_DISPATCH is for x86-64)\n";
  }
  const auto& cpu = swinfer::cpu::host_cpu();
  const cpu_kernel_level* chosen = nullptr;
  try {
    chosen = &chosen_cpu_kernel_level();
  } catch (const swinfer::error&) {
    // Reported per level below: none is marked chosen.
  }
  std::string out;
  for (const auto& level : levels) {
    const char* state = &level == chosen ? "chosen" : level.runs_on(cpu) ? "runs here" : "not on this CPU";
    const std::string models = level.precisions == "all" ? "" : "; " + std::string(level.precisions) + " models only";
    out += "  " + std::string(level.name) + "  " + std::string(level.instructions) + models + "  [" + state + "]\n";
  }
  return out;
}

}  // namespace swinfer::runtime
