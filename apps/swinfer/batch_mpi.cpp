// swinfer CLI: a batch over the ranks of an MPI job (built with -DSWINFER_MPI=ON). Rank 0 lists and sizes the
// inputs and deals them; every rank, rank 0 included, loads the model once and segments what it is dealt. A rank
// takes its GPU and its share of the cores by its index among the ranks of its machine.
//
// Rank 0 deals on its main thread while its own worker runs on a second one, so a rank that finishes a volume gets
// the next at once however long rank 0's own volume takes. Only the main thread calls MPI (MPI_THREAD_FUNNELED,
// which every MPI provides). A rank that dies takes the job down (MPI's model); --resume is the recovery.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <swinfer/core/error.hpp>

#include "batch_workers.hpp"

namespace swinfer_tool::batch {
namespace {

constexpr int request_tag = 1;  // worker -> rank 0: a finished volume and a request, or leaving
constexpr int deal_tag = 2;     // rank 0 -> worker: the next volume, or stop

/// MPI from construction to destruction; the default error handler aborts the job on any MPI error.
class mpi_session {
 public:
  mpi_session() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  ~mpi_session() { MPI_Finalize(); }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
};

// Messages are bytes (MessagePack, batch_workers.hpp), so MPI_BYTE: no conversion between machines.
void send_message(const std::string& bytes, int to, int tag) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

std::string receive_message(int from, int tag) {
  MPI_Status status;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
  int size = 0;
  MPI_Get_count(&status, MPI_BYTE, &size);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  MPI_Recv(bytes.data(), size, MPI_BYTE, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return bytes;
}

/// Ends the whole job from this rank.
[[noreturn]] void end_job(int rank, const char* why) {
  std::fprintf(stderr, "swinfer: error: rank %d: %s\n", rank, why);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

/// A worker rank's source: rank 0.
class rank0_source final : public volume_source {
 public:
  std::optional<dealt_volume> next(const worker_identity& me, std::optional<finished_volume> finished) override {
    send_message(request_message(me, finished), 0, request_tag);
    return read_deal(receive_message(0, deal_tag));
  }
  void leave(const worker_identity& me, const std::string& why) override {
    send_message(leave_message(me, why), 0, request_tag);
  }
};

/// Rank 0 answers the other ranks until each is finished, or until `give_up` is set. It polls with short sleeps
/// instead of blocking because Open MPI's blocking receive spins a core, which rank 0's own worker needs.
void deal_to_ranks(volume_queue& queue, int ranks_working, const std::atomic<bool>& give_up) {
  using std::chrono::milliseconds;
  milliseconds pause(1);
  while (ranks_working > 0 && !give_up) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, request_tag, MPI_COMM_WORLD, &arrived, &status);
    if (!arrived) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, milliseconds(20));
      continue;
    }
    pause = milliseconds(1);
    const auto answer = answer_worker(queue, receive_message(status.MPI_SOURCE, request_tag));
    if (answer.reply) send_message(*answer.reply, status.MPI_SOURCE, deal_tag);
    if (answer.worker_finished) --ranks_working;
  }
}

/// This rank's place: its index among the ranks of its machine (MPI_COMM_TYPE_SHARED) and its share of the CPUs
/// the machine's ranks may use together.
worker_placement place_rank(const batch_job& job, int rank, int ranks) {
  MPI_Comm machine;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &machine);
  int machine_rank = 0, machine_ranks = 1;
  MPI_Comm_rank(machine, &machine_rank);
  MPI_Comm_size(machine, &machine_ranks);
  cpu_set_t own, shared;
  CPU_ZERO(&own);
  sched_getaffinity(0, sizeof own, &own);
  MPI_Allreduce(&own, &shared, sizeof(cpu_set_t), MPI_BYTE, MPI_BOR, machine);
  MPI_Comm_free(&machine);
  const int threads = threads_per_worker(job.threads, CPU_COUNT(&shared), CPU_COUNT(&own), machine_ranks);
  return {rank, ranks, machine_rank, machine_ranks, threads, host_name()};
}

}  // namespace

std::optional<batch_outcome> run_batch_under_mpi(const batch_job& job) {
  if (mpi_launcher_processes() == 0) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  mpi_session mpi;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (job.flags.jobs > 1) {
    swinfer::detail::fail("--jobs starts worker processes on one machine; under mpirun every rank is a worker, so ask "
                          "for more ranks instead");
  }
  const worker_placement where = place_rank(job, rank, ranks);

  // Rank 0 opens the queue and tells the others whether there is work (-1: the batch cannot start).
  std::unique_ptr<volume_queue> queue;
  std::string why_not;
  long long waiting = 0;
  if (rank == 0) {
    try {
      queue = open_queue(job);
      waiting = static_cast<long long>(queue->waiting());
    } catch (const std::exception& e) {
      why_not = e.what();
      waiting = -1;
    }
  }
  MPI_Bcast(&waiting, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (waiting < 0) {
    if (rank == 0) throw swinfer::error(why_not);
    swinfer::detail::fail("rank ", rank, ": the batch did not start (rank 0 says why)");
  }
  // From here on the ranks wait on each other: a rank that fails can no longer leave cleanly (MPI_Finalize would
  // wait for the others), so it ends the job as a rank that dies would, and --resume is the recovery.
  if (rank != 0) {
    if (waiting > 0) {
      try {
        rank0_source source;
        run_worker(source, where, job);
      } catch (const std::exception& e) {
        end_job(rank, e.what());
      }
    }
    return batch_outcome{};
  }
  // Rank 0's own worker; only the main thread calls MPI, so a failure there is handed over to it.
  std::atomic<bool> own_worker_failed = false;
  std::string own_worker_error;
  std::jthread own_worker;
  if (waiting > 0) {
    own_worker = std::jthread([&] {
      try {
        queue_source source(*queue);
        run_worker(source, where, job);
      } catch (const std::exception& e) {
        own_worker_error = e.what();
        own_worker_failed = true;
      }
    });
  }
  try {
    deal_to_ranks(*queue, waiting > 0 ? ranks - 1 : 0, own_worker_failed);
  } catch (const std::exception& e) {
    end_job(rank, e.what());
  }
  if (!own_worker_failed && own_worker.joinable()) own_worker.join();
  if (own_worker_failed) end_job(rank, own_worker_error.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return finish_batch(*queue, job, "mpi", seconds);
}

}  // namespace swinfer_tool::batch
