// swinfer CLI: what every way of running a batch shares (one process, --jobs worker processes, MPI ranks): the
// worker loop, where a worker gets its volumes, the dealer's answer to a worker's message, how a machine's cores are
// shared out, and how a batch opens and ends.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "batch.hpp"
#include "batch_queue.hpp"

namespace swinfer_tool::batch {

/// A volume dealt to a worker, with everything it needs to segment and record it.
struct dealt_volume {
  std::size_t index = 0;
  volume_item item;
};

/// A volume a worker has finished, done or failed, and its entry for the report.
struct finished_volume {
  std::size_t index = 0;
  nlohmann::json entry;
};

/// Where a worker gets its volumes: the queue itself in the same process, or a dealer over a socket or MPI.
class volume_source {
 public:
  virtual ~volume_source() = default;
  /// Hands in the volume just finished (none on the first call) and returns the next one; nullopt: no more work.
  virtual std::optional<dealt_volume> next(const worker_identity& me, std::optional<finished_volume> finished) = 0;
  /// The worker stops before doing any work (its model would not load: `why`).
  virtual void leave(const worker_identity& me, const std::string& why) = 0;
};

/// Takes volumes straight from the queue: the worker of a single process and rank 0's own worker. Every other
/// transport ends here too, on the dealer's side (answer_worker), so dealing is written once.
class queue_source final : public volume_source {
 public:
  explicit queue_source(volume_queue& queue) : queue_(queue) {}
  std::optional<dealt_volume> next(const worker_identity& me, std::optional<finished_volume> finished) override;
  void leave(const worker_identity& me, const std::string& why) override;

 private:
  volume_queue& queue_;
};

/// A worker: loads the model once, then segments what `source` deals until it deals no more. A volume that fails
/// is reported (stderr and its entry) and the worker goes on; a finished one gets its journal entry.
void run_worker(volume_source& source, const worker_placement& where, const batch_job& job);

/// The messages between a worker and a dealer in another process, as bytes (MessagePack) for any transport.
std::string request_message(const worker_identity& me, const std::optional<finished_volume>& finished);
std::string leave_message(const worker_identity& me, const std::string& why);
/// The dealer's reply: the next volume, or nullopt for "no more".
std::optional<dealt_volume> read_deal(const std::string& reply);

/// What the dealer sends back to a worker's message (after recording what it carried), and whether that worker is
/// finished: told there is no more work, or gone.
struct dealer_answer {
  std::optional<std::string> reply;
  bool worker_finished = false;
};
dealer_answer answer_worker(volume_queue& queue, const std::string& message);

/// CPUs this process may run on (its affinity mask: a Slurm allocation or an mpirun binding, not the whole machine).
int usable_cpus();
/// A worker's threads: `requested` (--threads) when given, otherwise its share of the `machine_cpus` that
/// `machine_workers` workers split, and never more than the `own_cpus` it is bound to.
int threads_per_worker(int requested, int machine_cpus, int own_cpus, int machine_workers);
std::string host_name();

/// Lists, sizes and sets up the job's volumes (journal, --resume); says how many there are unless quiet.
std::unique_ptr<volume_queue> open_queue(const batch_job& job);
/// Writes the batch report, prints the summary line and returns the outcome.
batch_outcome finish_batch(const volume_queue& queue, const batch_job& job, const std::string& launcher,
                           double wall_seconds);

/// How many processes an MPI launcher (mpirun, mpiexec, srun with PMI or PMIx) says it started, 0 when this process
/// was not started by one.
int mpi_launcher_processes();

/// In an MPI build under an MPI launcher: the batch over the job's ranks. nullopt when not launched by MPI.
/// batch_mpi.cpp, or batch_no_mpi.cpp in a build without MPI.
std::optional<batch_outcome> run_batch_under_mpi(const batch_job& job);

}  // namespace swinfer_tool::batch
