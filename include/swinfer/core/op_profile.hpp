// swinfer: where a forward pass spends its time, op by op: what `bench_forward --profile` prints. The cpu backend
// records into an op_profile when engine_options::profile points to one; the other backends ignore it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"

namespace swinfer {

/// A volume's spatial grid as an op name shows it: "96^3", or "96x64x32" when the sides differ.
inline std::string grid_name(const shape5& s) {
  return s.d == s.h && s.h == s.w ? detail::concat(s.d, "^3") : detail::concat(s.d, "x", s.h, "x", s.w);
}

/// \brief What one op records: the group it is summed in (e.g. "conv3d 3x3x3"), its own name with its sizes (e.g.
/// "conv3d 3x3x3 48->48 @96^3"), and its floating-point operations (2 x multiply-adds; 0 where not counted).
struct op_label {
  std::string kind;
  std::string name;
  double flop = 0;
};

/// \brief Wall time, worker time and CPU time per op name, summed over calls. Not thread-safe: one model records
/// into it at a time.
class op_profile {
 public:
  struct entry {
    op_label label;
    std::int64_t calls = 0;
    double seconds = 0;         ///< wall time from the op's start to its end on the calling thread
    double busy_seconds = 0;    ///< summed over workers: time inside the op's parallel loop bodies
    double worker_seconds = 0;  ///< seconds x the workers the op could have used
    double system_seconds = 0;  ///< the process's CPU time in the kernel meanwhile (page faults of fresh tensors)

    /// Worker time spent waiting: in serial parts of the op, or for the slowest worker of a parallel loop.
    double idle_seconds() const { return std::max(0.0, worker_seconds - busy_seconds); }
    void accumulate(const entry& e) {
      label.flop += e.label.flop;
      calls += e.calls;
      seconds += e.seconds;
      busy_seconds += e.busy_seconds;
      worker_seconds += e.worker_seconds;
      system_seconds += e.system_seconds;
    }
  };

  /// Adds one call of the op `label` names.
  void add(op_label label, double seconds, double busy_seconds, int workers, double system_seconds) {
    const entry call{label, 1, seconds, busy_seconds, seconds * workers, system_seconds};
    file(entries_, label.kind, std::move(label.name)).accumulate(call);
  }

  /// One entry per op name, in the order the ops first ran.
  const std::vector<entry>& entries() const { return entries_; }
  /// The entries summed per kind, in the order the kinds first ran.
  std::vector<entry> by_kind() const {
    std::vector<entry> kinds;
    for (const entry& e : entries_) file(kinds, e.label.kind, e.label.kind).accumulate(e);
    return kinds;
  }
  void clear() { entries_.clear(); }

 private:
  /// The entry of `entries` named `name` (a new, empty one of `kind` if there is none).
  static entry& file(std::vector<entry>& entries, const std::string& kind, std::string name) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const entry& e) { return e.label.name == name; });
    if (it != entries.end()) return *it;
    entries.push_back({{kind, std::move(name), 0}});
    return entries.back();
  }

  std::vector<entry> entries_;
};

}  // namespace swinfer
