// swinfer hip backend: the fastest kernel per convolution shape on this device, measured once and kept between runs
// in a file under the user's cache directory (cuDNN's benchmark mode, but persistent).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/io/atomic_file.hpp"
#include "swinfer/version.hpp"

namespace swinfer::hip {

/// $SWINFER_GPU_TUNE: on (the default on a GPU: shapes the file does not know are measured and added), off (the
/// built-in choice by volume; no file is read or written; the default on the CPU emulator, whose times say nothing
/// about a GPU), refresh (every shape this process meets is measured again and its entry rewritten).
enum class tuning_mode { off, on, refresh };

/// The kernels a 3x3x3 convolution can run on, in the order kernel tuning tries them.
inline constexpr conv_kernel_choice conv_kernels[] = {conv_kernel_choice::halo, conv_kernel_choice::wgmma,
                                                      conv_kernel_choice::gemm, conv_kernel_choice::direct};

/// The name of a kernel choice, as $SWINFER_GPU_CONV spells it.
inline const char* kernel_name(conv_kernel_choice c) {
  switch (c) {
    case conv_kernel_choice::halo: return "halo";
    case conv_kernel_choice::gemm: return "gemm";
    case conv_kernel_choice::wgmma: return "wgmma";
    case conv_kernel_choice::direct: return "direct";
    case conv_kernel_choice::automatic: break;
  }
  return "auto";
}

/// \brief Which kernel runs each 3x3x3 convolution shape fastest on this device, measured the first time the shape
/// is met (every kernel that can run it, on the op's own operands, the median of `runs` launches each) and kept in
/// a JSON file: per device, per shape key, the kernel and each kernel's milliseconds (readable, and editable: an
/// entry names the kernel used). The file belongs to one swinfer version (kernels change between versions): one
/// written by another version, or one that cannot be read, is ignored with a warning on stderr (note() keeps it) and
/// replaced on the next measurement. The file is rewritten atomically after each measurement; where it cannot be
/// written the choices stay in memory and the warning says why. Not thread-safe: one context, one thread.
class kernel_tuning {
 public:
  /// Launches the convolution with env's choice and returns the kernel that ran (launch_conv3d).
  using conv_launch = std::function<conv_kernel_choice(const launch_env&)>;

  /// Tuning off.
  kernel_tuning() = default;
  /// `device` names the device in the file (device_identity); the file is read now unless `mode` is off.
  kernel_tuning(tuning_mode mode, std::filesystem::path file, std::string device, int runs = 5)
      : mode_(mode), file_(std::move(file)), device_(std::move(device)), runs_(runs) {
    if (mode_ != tuning_mode::off) load();
  }

  /// $SWINFER_GPU_TUNE (on, off, refresh; unset or empty: on, or off where `emulated`) and $SWINFER_GPU_TUNING_FILE
  /// (default_file() where unset or empty). A wrong value fails, naming the accepted ones.
  static kernel_tuning from_environment(const device_properties& d, bool emulated) {
    const char* env = std::getenv("SWINFER_GPU_TUNE");
    const std::string v = env ? env : "";
    tuning_mode mode = emulated ? tuning_mode::off : tuning_mode::on;
    if (v == "on") {
      mode = tuning_mode::on;
    } else if (v == "off") {
      mode = tuning_mode::off;
    } else if (v == "refresh") {
      mode = tuning_mode::refresh;
    } else if (!v.empty()) {
      detail::fail("SWINFER_GPU_TUNE=", v, " is not a kernel tuning mode: use one of on, off, refresh");
    }
    const char* file = std::getenv("SWINFER_GPU_TUNING_FILE");
    // One timed launch per kernel on the emulator: its times are host times, and only the bookkeeping is tested.
    return kernel_tuning(mode, file && *file ? std::filesystem::path(file) : default_file(), device_identity(d),
                         emulated ? 1 : 5);
  }

  /// $XDG_CACHE_HOME/swinfer/gpu-kernels.json, else $HOME/.cache/swinfer/gpu-kernels.json, else (no home) in the
  /// system's temporary folder.
  static std::filesystem::path default_file() {
    const auto path_from = [](const char* variable) {  // empty where unset or empty
      const char* v = std::getenv(variable);
      return v && *v ? std::filesystem::path(v) : std::filesystem::path();
    };
    std::filesystem::path dir = path_from("XDG_CACHE_HOME");
    if (dir.empty() && !path_from("HOME").empty()) dir = path_from("HOME") / ".cache";
    if (dir.empty()) dir = std::filesystem::temp_directory_path();
    return dir / "swinfer" / "gpu-kernels.json";
  }

  /// What distinguishes devices in the file: name, architecture, multiprocessors, platform.
  static std::string device_identity(const device_properties& d) {
    return d.name + " (" + d.arch + ", " + std::to_string(d.multiprocessors) + " multiprocessors, " + d.platform +
           ")";
  }

  tuning_mode mode() const { return mode_; }
  const std::filesystem::path& file() const { return file_; }
  /// The last problem with the file, empty when there was none.
  const std::string& note() const { return note_; }
  /// For reports: "on (FILE, N shapes of this device)", "off", or with the note.
  std::string describe() const {
    if (mode_ == tuning_mode::off) return "off";
    std::string s = std::string(mode_ == tuning_mode::refresh ? "refresh" : "on") + " (" + file_.string() + ", " +
                    std::to_string(choices_.size()) + " shapes of this device)";
    return note_.empty() ? s : s + "; " + note_;
  }

  /// The kernel to run the convolution `key` with: the file's or an earlier measurement's; else (and always once
  /// per key under refresh) each kernel choice is launched once and, for each distinct kernel that ran, timed over
  /// `runs` launches (launch_conv3d writes the op's own output each time, the same values every time); the
  /// fastest is kept and the file rewritten. Off: env's own choice.
  conv_kernel_choice conv3d(const std::string& key, const launch_env& env, const conv_launch& launch) {
    if (mode_ == tuning_mode::off) return env.kernels.conv;
    const auto known = choices_.find(key);
    if (known != choices_.end() && (mode_ != tuning_mode::refresh || measured_.count(key) != 0)) return known->second;
    nlohmann::json ms = nlohmann::json::object();
    conv_kernel_choice best = conv_kernel_choice::automatic;
    float best_ms = 0.0f;
    for (const conv_kernel_choice c : conv_kernels) {
      launch_env forced = env;
      forced.kernels.conv = c;
      const conv_kernel_choice ran = launch(forced);  // the warm-up, and which kernel this choice comes to here
      if (ms.contains(kernel_name(ran))) continue;
      const float t = median_launch_ms(env.stream, runs_, [&] { launch(forced); });
      ms[kernel_name(ran)] = t;
      if (best == conv_kernel_choice::automatic || t < best_ms) {
        best = ran;
        best_ms = t;
      }
    }
    choices_[key] = best;
    measured_.insert(key);
    file_json_["devices"][device_][key] = {{"kernel", kernel_name(best)}, {"ms", ms}};
    save();
    return best;
  }

 private:
  static constexpr int format_version = 1;
  static constexpr const char* format_name = "swinfer GPU kernel choices";

  void warn(std::string message) {
    note_ = std::move(message);
    std::cerr << "swinfer: warning: " << note_ << '\n';
  }

  /// A fresh file's contents: no device measured yet.
  static nlohmann::json empty_file() {
    return {{"format", format_name}, {"format_version", format_version}, {"swinfer", version_string},
            {"devices", nlohmann::json::object()}};
  }

  /// Reads the file (a missing one is no problem); anything else wrong with it is warned about and ignored.
  void load() {
    file_json_ = empty_file();
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) return;
    const std::string where = "the kernel tuning file " + file_.string();
    std::ifstream in(file_);
    if (!in) return warn(where + " cannot be read; it is ignored");
    try {
      nlohmann::json j = nlohmann::json::parse(in);
      if (!j.is_object() || j.value("format", "") != format_name || j.value("format_version", 0) != format_version ||
          !j.contains("devices") || !j["devices"].is_object()) {
        return warn(where + " is not a swinfer kernel tuning file of format version " +
                    std::to_string(format_version) + "; it is ignored and will be rewritten");
      }
      if (j.value("swinfer", "") != version_string) {
        return warn(where + " was written by swinfer " + j.value("swinfer", "(unknown)") + ", this is " +
                    version_string + ": its kernels may differ, so the shapes are measured again");
      }
      const nlohmann::json mine = j["devices"].value(device_, nlohmann::json::object());
      if (!mine.is_object()) {
        return warn(where + ": the entry of " + device_ + " is not an object; it is ignored and will be rewritten");
      }
      for (const auto& [key, entry] : mine.items()) {
        const std::string kernel = entry.is_object() ? entry.value("kernel", "") : "";
        conv_kernel_choice c = conv_kernel_choice::automatic;
        for (const conv_kernel_choice k : conv_kernels)
          if (kernel == kernel_name(k)) c = k;
        if (c == conv_kernel_choice::automatic) {
          warn(where + ": \"" + key + "\" names no kernel (halo, gemm, wgmma, direct); that shape is measured again");
        } else {
          choices_[key] = c;
        }
      }
      file_json_ = std::move(j);
      file_json_["devices"][device_] = mine;
    } catch (const nlohmann::json::exception& e) {
      choices_.clear();
      warn(where + " cannot be read as a kernel tuning file (" + e.what() + "); it is ignored and will be rewritten");
    }
  }

  /// Rewrites the file with every device's entries; a failure is a warning, not an error.
  void save() {
    try {
      std::filesystem::create_directories(file_.parent_path().empty() ? "." : file_.parent_path());
      write_file_atomically(file_, [&](const std::filesystem::path& temporary) {
        std::ofstream out(temporary);
        out << file_json_.dump(2) << '\n';
        if (!out.flush()) detail::fail("cannot write ", temporary.string());
      });
    } catch (const std::exception& e) {
      warn("the kernel tuning file " + file_.string() + " cannot be written (" + e.what() +
           "); the choices measured are kept for this process only");
    }
  }

  tuning_mode mode_ = tuning_mode::off;
  std::filesystem::path file_;
  std::string device_;
  int runs_ = 5;
  std::map<std::string, conv_kernel_choice> choices_;  ///< this device's, by shape key
  std::set<std::string> measured_;                     ///< keys measured by this process (refresh measures once)
  nlohmann::json file_json_;                           ///< what the file holds, every device's entries
  std::string note_;
};

}  // namespace swinfer::hip
