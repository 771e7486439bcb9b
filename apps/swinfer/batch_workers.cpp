// swinfer CLI: the parts of a batch every launcher shares (batch_workers.hpp).
#include "batch_workers.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <swinfer/core/error.hpp>
#include <swinfer/io/atomic_file.hpp>

#include "input_files.hpp"
#include "json_text.hpp"

namespace swinfer_tool::batch {

std::optional<dealt_volume> queue_source::next(const worker_identity& me, std::optional<finished_volume> finished) {
  queue_.worker_seen(me);
  if (finished) queue_.record(finished->index, std::move(finished->entry));
  const auto index = queue_.deal(me.worker);
  if (!index) return std::nullopt;
  return dealt_volume{*index, queue_.item(*index)};
}

void queue_source::leave(const worker_identity& me, const std::string& why) {
  queue_.worker_seen(me);
  queue_.worker_lost(me.worker, why);
}

namespace {

/// Segments one volume and returns its entry; a finished volume is recorded in the journal first.
nlohmann::json segment_and_record(volume_segmenter& segmenter, const volume_item& item, const worker_identity& me) {
  const auto start = std::chrono::steady_clock::now();
  const auto stamp = [&](nlohmann::json& entry) {
    entry["worker"] = me.worker;
    entry["host"] = me.host;
    entry["device"] = me.device;
    entry["voxels"] = item.voxels;
    entry["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  try {
    nlohmann::json entry = segmenter.segment(item.input);
    entry["status"] = "done";
    stamp(entry);
    record_done(item, entry);
    return entry;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "swinfer: error: %s\n", e.what());
    nlohmann::json entry = {{"input", item.input.string()}, {"status", "failed"}, {"error", e.what()}};
    stamp(entry);
    return entry;
  }
}

}  // namespace

void run_worker(volume_source& source, const worker_placement& where, const batch_job& job) {
  worker_identity me{where.worker, where.host, "", where.threads};
  std::unique_ptr<volume_segmenter> segmenter;
  try {
    segmenter = job.load_segmenter(where);
  } catch (const std::exception& e) {
    if (where.workers > 1) {
      std::fprintf(stderr, "swinfer: error: worker %d on %s: %s\n", where.worker, where.host.c_str(), e.what());
    } else {
      std::fprintf(stderr, "swinfer: error: %s\n", e.what());
    }
    source.leave(me, e.what());
    return;
  }
  me.device = segmenter->device();
  std::optional<finished_volume> finished;
  while (auto dealt = source.next(me, std::move(finished))) {
    finished = finished_volume{dealt->index, segment_and_record(*segmenter, dealt->item, me)};
  }
}

namespace {

// Messages are MessagePack, not JSON text: they carry file names and error messages holding them, which are bytes
// (not always UTF-8) that must arrive unchanged; the reports escape them only when they are written.
std::string encode(const nlohmann::json& m) {
  const auto bytes = nlohmann::json::to_msgpack(m);
  return {bytes.begin(), bytes.end()};
}

nlohmann::json decode(const std::string& message) { return nlohmann::json::from_msgpack(message); }

}  // namespace

std::string request_message(const worker_identity& me, const std::optional<finished_volume>& finished) {
  nlohmann::json m = {{"from", me}};
  if (finished) m["finished"] = {{"index", finished->index}, {"entry", finished->entry}};
  return encode(m);
}

std::string leave_message(const worker_identity& me, const std::string& why) {
  return encode({{"from", me}, {"leaving", why}});
}

std::optional<dealt_volume> read_deal(const std::string& reply) {
  const auto m = decode(reply);
  if (m.contains("stop")) return std::nullopt;
  return dealt_volume{m.at("index").get<std::size_t>(), m.at("item").get<volume_item>()};
}

dealer_answer answer_worker(volume_queue& queue, const std::string& message) {
  const auto m = decode(message);
  const auto me = m.at("from").get<worker_identity>();
  queue_source here(queue);
  if (m.contains("leaving")) {
    here.leave(me, m.at("leaving").get<std::string>());
    return {std::nullopt, true};
  }
  std::optional<finished_volume> finished;
  if (m.contains("finished")) finished = finished_volume{m["finished"].at("index").get<std::size_t>(), m["finished"].at("entry")};
  const auto dealt = here.next(me, std::move(finished));
  if (!dealt) return {encode({{"stop", true}}), true};
  return {encode({{"index", dealt->index}, {"item", dealt->item}}), false};
}

int usable_cpus() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) return std::max(1, CPU_COUNT(&cpus));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int threads_per_worker(int requested, int machine_cpus, int own_cpus, int machine_workers) {
  if (requested > 0) return requested;
  return std::max(1, std::min(own_cpus, machine_cpus / std::max(1, machine_workers)));
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

int mpi_launcher_processes() {
  const auto number = [](const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? std::max(1, std::atoi(value)) : 0;
  };
  if (const int n = number("OMPI_COMM_WORLD_SIZE")) return n;  // Open MPI's mpirun
  if (const int n = number("PMI_SIZE")) return n;              // MPICH's Hydra, srun --mpi=pmi2
  if (std::getenv("PMIX_RANK")) return std::max(1, number("SLURM_STEP_NUM_TASKS"));  // srun --mpi=pmix
  return 0;
}

std::unique_ptr<volume_queue> open_queue(const batch_job& job) {
  if (job.flags.resume && job.output_folder.empty()) {
    swinfer::detail::fail("--resume continues a batch (a folder or several inputs); a single input is simply run again");
  }
  const fs::path journal = job.output_folder.empty() ? fs::path() : job.output_folder / journal_folder_name;
  auto queue = std::make_unique<volume_queue>(describe_volumes(expand_inputs(job.inputs), job.outputs_of, journal),
                                              job.flags.resume);
  if (!job.quiet && !job.output_folder.empty()) {
    std::fprintf(stderr, "swinfer segment: %zu input(s), %zu to segment", queue->size(), queue->waiting());
    if (queue->skipped()) std::fprintf(stderr, " (%zu complete from an earlier run: skipped)", queue->skipped());
    std::fprintf(stderr, "\n");
  }
  return queue;
}

batch_outcome finish_batch(const volume_queue& queue, const batch_job& job, const std::string& launcher,
                           double wall_seconds) {
  const auto report = queue.report(launcher, wall_seconds);
  if (!job.report.empty()) {
    if (job.report.has_parent_path()) fs::create_directories(job.report.parent_path());
    swinfer::write_stream_atomically(job.report, [&](std::ostream& file) { file << json_text(report, 2) << "\n"; });
  }
  const auto& summary = report.at("summary");
  if (!job.quiet && !job.output_folder.empty()) {
    std::fprintf(stderr, "swinfer segment: %d done, %d failed, %d skipped of %zu in %.1f s: %.2f volumes/min on %zu worker(s)\n",
                 summary.at("done").get<int>(), summary.at("failed").get<int>(), summary.at("skipped").get<int>(),
                 queue.size(), wall_seconds, summary.at("volumes_per_minute").get<double>(),
                 summary.at("workers").size());
  }
  return {static_cast<int>(queue.size()), queue.failed()};
}

}  // namespace swinfer_tool::batch
