// swinfer hip backend: the fastest kernel per convolution shape on this device, measured once and kept between runs
// in the file backend_options<hip>::tuning_file names (cuDNN's benchmark mode, but persistent).
#pragma once

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
#include "swinfer/backend/hip/options.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/io/atomic_file.hpp"
#include "swinfer/version.hpp"

namespace swinfer::hip {


/// The kernels a 3x3x3 convolution can run on, in the order kernel tuning tries them.
inline constexpr conv_kernel_choice conv_kernels[] = {conv_kernel_choice::halo, conv_kernel_choice::wgmma,
                                                      conv_kernel_choice::gemm, conv_kernel_choice::direct};

/// The name of a kernel choice (conv_kernel_names).
inline const char* kernel_name(conv_kernel_choice c) {
  for (const auto& [name, choice] : conv_kernel_names)
    if (choice == c) return name.data();
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
  /// `device` names the device in the file (device_identity); the file (none where `file` is empty: the choices stay
  /// in memory) is read now unless `mode` is off.
  kernel_tuning(tuning_mode mode, std::filesystem::path file, std::string device, int runs = 5)
      : mode_(mode), file_(std::move(file)), device_(std::move(device)), runs_(runs) {
    if (mode_ != tuning_mode::off) load();
  }

  /// The tuning `options` ask for on device `d`: their mode (unset: on, or off where `emulated`) and file (empty:
  /// in memory only).
  static kernel_tuning from_options(const backend_options<backend::hip>& options, const device_properties& d,
                                    bool emulated) {
    const tuning_mode mode = options.tuning.value_or(emulated ? tuning_mode::off : tuning_mode::on);
    // One timed launch per kernel on the emulator: its times are host times, and only the bookkeeping is tested.
    return kernel_tuning(mode, options.tuning_file, device_identity(d), emulated ? 1 : 5);
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
    const std::string where = file_.empty() ? std::string("in memory") : file_.string();
    std::string s = std::string(mode_ == tuning_mode::refresh ? "refresh" : "on") + " (" + where + ", " +
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
    if (file_.empty() || !std::filesystem::exists(file_, ec)) return;
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
    if (file_.empty()) return;
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
