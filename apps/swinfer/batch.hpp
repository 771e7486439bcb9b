// swinfer CLI: running `segment` over its inputs with one worker, --jobs N worker processes, or the ranks of an MPI
// job; the command supplies how to load its model and segment one volume, this runs the queue.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <swinfer/core/value_range.hpp>

namespace CLI {
class App;  // only batch.cpp, which adds the options, needs CLI11 itself (a heavy header)
}  // namespace CLI

namespace swinfer_tool::batch {

/// Whether the inputs make a batch, with outputs in folders: more than one input, or any folder.
bool is_batch(const std::vector<std::string>& inputs);

/// --jobs: at least one worker; more than 1024 processes on one machine is a typo, not a plan (ask MPI for ranks).
inline constexpr swinfer::value_range<int> jobs_range{1, 1024};

/// --jobs and --resume.
struct batch_flags {
  int jobs = 1;
  bool resume = false;
};
void add_batch_options(CLI::App& cmd, batch_flags& flags);

/// Where a worker runs: which of how many, its share of its machine and the machine's name.
struct worker_placement {
  int worker = 0;         ///< the MPI rank, or the --jobs worker's index
  int workers = 1;
  int node_index = 0;     ///< among the workers on this machine: picks its GPU
  int node_workers = 1;
  int threads = 0;        ///< CPU threads (0: every hardware thread)
  std::string host;
};

/// For the hip backend: unless $SWINFER_GPU_DEVICE names a device, a worker takes GPU (node_index mod the GPUs
/// visible), so the workers of a machine spread over its GPUs. Call it in the worker, before the model is built.
void use_gpu_of(const worker_placement& where);

/// One worker's model, loaded once, segmenting volume after volume.
class volume_segmenter {
 public:
  virtual ~volume_segmenter() = default;
  /// Where it runs, for the report.
  virtual std::string device() const = 0;
  /// Segments `input` and writes its outputs; returns its report. Throws for a volume it cannot segment.
  virtual nlohmann::json segment(const std::filesystem::path& input) = 0;
};

/// What a `segment` run is: its inputs and options, and the two things only the command knows.
struct batch_job {
  std::vector<std::string> inputs;  ///< files and folders, as given
  batch_flags flags;
  /// The output folder of a batch, where its journal lives; empty for a single input (no journal, no --resume).
  std::filesystem::path output_folder;
  /// The batch report's file (every volume's entry and a summary); empty for none.
  std::filesystem::path report;
  int threads = 0;  ///< --threads per worker; 0: the machine's cores shared out between its workers
  bool quiet = false;
  /// Every file segmenting `input` writes.
  std::function<std::vector<std::filesystem::path>(const std::filesystem::path& input)> outputs_of;
  /// Loads the model for a worker (called once per worker, in the worker).
  std::function<std::unique_ptr<volume_segmenter>(const worker_placement& where)> load_segmenter;
};

struct batch_outcome {
  int volumes = 0;
  int failed = 0;  ///< 0 on MPI ranks other than 0, which report nothing
};

/// \brief Segments every input: under an MPI launcher (an MPI build, `mpirun`/`srun`), rank 0 deals and every rank
/// works; otherwise `flags.jobs` worker processes, or this process alone. A volume that fails is reported and the
/// others go on. The batch report goes to `report`, a summary to stderr.
/// \throws swinfer::error for what stops the whole run (inputs missing, two inputs writing one file, --resume
/// without a batch).
batch_outcome run_batch(const batch_job& job);

}  // namespace swinfer_tool::batch
