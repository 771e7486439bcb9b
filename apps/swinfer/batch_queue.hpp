// swinfer CLI: many volumes as one work queue. The inputs are listed and sized, dealt largest first to whichever
// worker asks next, and each outcome is recorded; a journal of finished volumes makes a batch resumable; the batch
// report gathers every volume's entry and a summary. The same queue serves one process, --jobs workers and MPI ranks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace swinfer_tool::batch {

namespace fs = std::filesystem;

/// One input volume and what segmenting it writes.
struct volume_item {
  fs::path input;
  /// Voxels times channels, from its header: the size the queue deals by. 0 when the header cannot be read; such a
  /// volume goes last and its worker reports why it cannot be segmented.
  std::uint64_t voxels = 0;
  /// Every file segmenting it writes (the mask first).
  std::vector<fs::path> outputs;
  /// Its journal entry, written once every output is in place; empty for a single input, which has no journal.
  fs::path journal_entry;
};
void to_json(nlohmann::json& j, const volume_item& item);
void from_json(const nlohmann::json& j, volume_item& item);

/// The items for `files`: sized from their headers, with the outputs `outputs_of` names and, when `journal_folder`
/// is not empty, an entry in it. Two inputs that would write one file (same name in two folders) are an error
/// naming both, before anything runs.
std::vector<volume_item> describe_volumes(const std::vector<fs::path>& files,
                                          const std::function<std::vector<fs::path>(const fs::path&)>& outputs_of,
                                          const fs::path& journal_folder);

/// The folder of a batch's journal inside its output folder: hidden, so that listings show only results.
inline const char* const journal_folder_name = ".swinfer-journal";

/// \brief Records that `item` is done: adds the sizes of its outputs and the size and time of its input to
/// `entry` and writes that as its journal entry, atomically, after every output has been renamed into place. Until
/// then a volume counts as not done, whatever files exist, so a killed run leaves nothing --resume would take for
/// finished. Does nothing for an item without a journal entry.
void record_done(const volume_item& item, nlohmann::json& entry);

/// The journal entry of `item` when it is complete: status done, the same input (size and modification time) and
/// every output present at its recorded size. nullopt otherwise.
std::optional<nlohmann::json> completed_entry(const volume_item& item);

/// Who a worker is, for the report.
struct worker_identity {
  int worker = 0;  ///< the MPI rank, the --jobs worker's index, or 0 for a single process
  std::string host, device;
  int threads = 0;
};
void to_json(nlohmann::json& j, const worker_identity& who);
void from_json(const nlohmann::json& j, worker_identity& who);

/// \brief The dealer's state: which volumes are waiting, which worker holds which, and every outcome. Thread-safe:
/// rank 0 of an MPI job deals from one thread while its own worker takes volumes from another.
class volume_queue {
 public:
  /// Sets the batch up in its folders. With `resume`, a volume the journal shows complete is skipped and its
  /// earlier entry reported. Otherwise (and for volumes not complete) an old journal entry is removed first, so that
  /// the journal only ever vouches for outputs of the run that wrote them; so are temporaries a killed run left.
  volume_queue(std::vector<volume_item> items, bool resume);

  std::size_t size() const { return items_.size(); }
  std::size_t skipped() const { return skipped_; }
  /// Volumes not yet dealt.
  std::size_t waiting() const;
  const volume_item& item(std::size_t index) const { return items_.at(index); }

  /// The largest volume not yet dealt, now held by `worker`; nullopt when none is left.
  std::optional<std::size_t> deal(int worker);
  /// The outcome of volume `index` (its entry: status done or failed); the worker holding it is free again.
  void record(std::size_t index, nlohmann::json entry);
  /// Notes a worker's host, device and threads for the summary.
  void worker_seen(const worker_identity& who);
  /// `worker` stopped for good (its model would not load, its process died): the volume it held, if any, failed.
  /// Returns that volume's input.
  std::optional<fs::path> worker_lost(int worker, const std::string& why);
  /// Failed volumes, including those no worker was left to take.
  int failed() const;

  /// \brief The batch report: every volume's entry in input order and a summary (volumes done, failed and
  /// skipped, volumes per minute over `wall_seconds`, each worker's busy time). `launcher` says how the workers ran.
  nlohmann::json report(const std::string& launcher, double wall_seconds) const;

 private:
  mutable std::mutex mutex_;
  std::vector<volume_item> items_;
  std::vector<nlohmann::json> entries_;  ///< null until the volume's outcome is known
  std::vector<std::size_t> deal_order_;  ///< indices, largest volume first
  std::size_t next_ = 0;                 ///< position in deal_order_
  std::size_t skipped_ = 0;
  std::map<int, std::size_t> holding_;   ///< worker -> the volume it is segmenting
  std::map<int, worker_identity> workers_;
  std::map<int, std::string> lost_;      ///< worker -> why it stopped early
};

}  // namespace swinfer_tool::batch
