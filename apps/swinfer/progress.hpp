// swinfer CLI: progress of a long job on stderr: a redrawn bar on a terminal, plain lines otherwise.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace swinfer_tool {

/// \brief Reports done/total with rate and ETA. On a TTY the line is redrawn in place; in logs a line is printed
/// at every 10 % so CI output stays short. Silent when quiet.
class progress_bar {
 public:
  progress_bar(std::string label, std::int64_t total, std::string unit, bool quiet)
      : label_(std::move(label)), unit_(std::move(unit)), total_(total), quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1),
        start_(clock::now()) {}

  void update(std::int64_t done) {
    if (quiet_ || total_ <= 0) return;
    const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    if (tty_) {
      constexpr int width = 28;
      const int filled = static_cast<int>(width * done / total_);
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar.resize(width, '.');
      std::fprintf(stderr, "\r%s [%s] %lld/%lld %s  %.2f %s/s  ETA %s   ", label_.c_str(), bar.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(), rate, unit_.c_str(),
                   clock_text(eta).c_str());
      if (done == total_) std::fprintf(stderr, "\n");
    } else {
      const int decile = static_cast<int>(10 * done / total_);
      if (decile == last_decile_ && done != total_) return;
      last_decile_ = decile;
      std::fprintf(stderr, "%s: %lld/%lld %s (%.0f%%), %.2f %s/s, ETA %s\n", label_.c_str(), static_cast<long long>(done),
                   static_cast<long long>(total_), unit_.c_str(), 100.0 * done / total_, rate, unit_.c_str(),
                   clock_text(eta).c_str());
    }
    std::fflush(stderr);
  }

 private:
  using clock = std::chrono::steady_clock;
  static std::string clock_text(double seconds) {
    const auto s = static_cast<long long>(seconds + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    return buf;
  }

  std::string label_, unit_;
  std::int64_t total_;
  bool quiet_, tty_;
  int last_decile_ = -1;
  clock::time_point start_;
};

}  // namespace swinfer_tool
