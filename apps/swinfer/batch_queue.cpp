// swinfer CLI: the batch work queue, its journal and its report (batch_queue.hpp).
#include "batch_queue.hpp"

#include "batch.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include <swinfer/core/error.hpp>
#include <swinfer/io/atomic_file.hpp>
#include <swinfer/io/nifti_read.hpp>
#include <swinfer/version.hpp>

#include "json_text.hpp"

namespace swinfer_tool::batch {

void to_json(nlohmann::json& j, const volume_item& item) {
  std::vector<std::string> outputs;
  for (const auto& out : item.outputs) outputs.push_back(out.string());
  j = {{"input", item.input.string()}, {"voxels", item.voxels}, {"outputs", outputs},
       {"journal_entry", item.journal_entry.string()}};
}

void from_json(const nlohmann::json& j, volume_item& item) {
  item.input = j.at("input").get<std::string>();
  item.voxels = j.at("voxels").get<std::uint64_t>();
  item.outputs.clear();
  for (const auto& out : j.at("outputs")) item.outputs.emplace_back(out.get<std::string>());
  item.journal_entry = j.at("journal_entry").get<std::string>();
}

void to_json(nlohmann::json& j, const worker_identity& who) {
  j = {{"worker", who.worker}, {"host", who.host}, {"device", who.device}, {"threads", who.threads}};
}

void from_json(const nlohmann::json& j, worker_identity& who) {
  who.worker = j.at("worker").get<int>();
  who.host = j.at("host").get<std::string>();
  who.device = j.at("device").get<std::string>();
  who.threads = j.at("threads").get<int>();
}

bool is_batch(const std::vector<std::string>& inputs) {
  return inputs.size() > 1 || std::any_of(inputs.begin(), inputs.end(), [](const auto& in) { return fs::is_directory(in); });
}

namespace {

/// Voxels x channels from the header; 0 when it cannot be read (the worker that gets the volume says why).
std::uint64_t header_voxels(const fs::path& file) {
  try {
    const auto shape = swinfer::read_nifti_shape(file);
    return static_cast<std::uint64_t>(shape.c * shape.spatial());
  } catch (const std::exception&) {
    return 0;
  }
}

/// Modification time in nanoseconds since 1970.
std::int64_t modified_ns(const fs::path& file) {
  const auto since_1970 = std::chrono::file_clock::to_sys(fs::last_write_time(file)).time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(since_1970).count();
}

/// Removes what write_file_atomically left of `targets` when a run was killed mid-write: one listing per folder.
void remove_unfinished_writes(const std::vector<fs::path>& targets) {
  std::set<fs::path> wanted, folders;
  for (const auto& t : targets) {
    wanted.insert(t.lexically_normal());
    folders.insert(t.has_parent_path() ? t.parent_path() : fs::path("."));
  }
  for (const auto& folder : folders) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      const auto target = swinfer::unfinished_write_target(e.path());
      if (target && wanted.count(target->lexically_normal())) fs::remove(e.path(), ec);
    }
  }
}

nlohmann::json not_segmented_entry(const volume_item& item) {
  return {{"input", item.input.string()}, {"status", "failed"}, {"voxels", item.voxels},
          {"error", "not segmented: no worker was left to take it (see the workers' errors)"}};
}

}  // namespace

std::vector<volume_item> describe_volumes(const std::vector<fs::path>& files,
                                          const std::function<std::vector<fs::path>(const fs::path&)>& outputs_of,
                                          const fs::path& journal_folder) {
  std::vector<volume_item> items;
  std::map<fs::path, fs::path> written_by;  // output -> input
  for (const auto& file : files) {
    volume_item item{file, header_voxels(file), outputs_of(file), {}};
    if (!journal_folder.empty()) item.journal_entry = journal_folder / (swinfer::nifti_stem(file) + ".json");
    for (const auto& out : item.outputs) {
      const auto [at, fresh] = written_by.emplace(out.lexically_normal(), file);
      if (!fresh) {
        swinfer::detail::fail("inputs '", at->second.string(), "' and '", file.string(), "' would both write '",
                              out.string(), "'; rename one or run them into different output folders");
      }
    }
    items.push_back(std::move(item));
  }
  return items;
}

void record_done(const volume_item& item, nlohmann::json& entry) {
  if (item.journal_entry.empty()) return;
  // Absolute paths: a resumed run may be started from another folder, or on another machine of the cluster.
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& out : item.outputs) {
    outputs.push_back({{"path", fs::weakly_canonical(out).string()}, {"bytes", fs::file_size(out)}});
  }
  entry["outputs"] = outputs;
  entry["input_file"] = fs::weakly_canonical(item.input).string();
  entry["input_bytes"] = fs::file_size(item.input);
  entry["input_modified_ns"] = modified_ns(item.input);
  fs::create_directories(item.journal_entry.parent_path());
  swinfer::write_stream_atomically(item.journal_entry, [&](std::ostream& file) { file << json_text(entry, 2) << "\n"; });
}

std::optional<nlohmann::json> completed_entry(const volume_item& item) {
  if (item.journal_entry.empty()) return std::nullopt;
  std::ifstream in(item.journal_entry);
  if (!in) return std::nullopt;
  auto entry = nlohmann::json::parse(in, nullptr, false);  // a damaged entry only means "not done"
  if (entry.is_discarded() || !entry.is_object()) return std::nullopt;
  try {
    std::error_code ec;
    // Names are compared as the journal writes them (json_text.hpp: a name that is not UTF-8 is escaped).
    if (entry.at("status") != "done" || entry.at("input_file") != utf8_text(fs::weakly_canonical(item.input).string())) {
      return std::nullopt;
    }
    if (entry.at("input_bytes") != fs::file_size(item.input, ec) || ec) return std::nullopt;
    if (entry.at("input_modified_ns") != modified_ns(item.input)) return std::nullopt;
    const auto& recorded = entry.at("outputs");
    for (const auto& out : item.outputs) {
      const std::string path = utf8_text(fs::weakly_canonical(out).string());
      const auto same = std::find_if(recorded.begin(), recorded.end(), [&](const auto& r) { return r.at("path") == path; });
      if (same == recorded.end() || same->at("bytes") != fs::file_size(out, ec) || ec) return std::nullopt;
    }
  } catch (const std::exception&) {  // a missing field, or the input gone
    return std::nullopt;
  }
  return entry;
}

volume_queue::volume_queue(std::vector<volume_item> items, bool resume)
    : items_(std::move(items)), entries_(items_.size()) {
  std::vector<fs::path> targets;
  for (std::size_t i = 0; i < items_.size(); ++i) {
    const auto& item = items_[i];
    if (resume) {
      if (auto earlier = completed_entry(item)) {
        (*earlier)["status"] = "skipped";
        entries_[i] = std::move(*earlier);
        ++skipped_;
        continue;
      }
    }
    if (!item.journal_entry.empty()) {
      std::error_code ec;
      fs::remove(item.journal_entry, ec);
      targets.push_back(item.journal_entry);
    }
    targets.insert(targets.end(), item.outputs.begin(), item.outputs.end());
    deal_order_.push_back(i);
  }
  remove_unfinished_writes(targets);
  // Largest first: the long volumes start early instead of leaving one worker busy at the end. Ties keep input order
  // (the index breaks them: libstdc++ 12's stable_sort uses an API clang 19 flags as deprecated).
  std::sort(deal_order_.begin(), deal_order_.end(), [&](std::size_t a, std::size_t b) {
    return items_[a].voxels != items_[b].voxels ? items_[a].voxels > items_[b].voxels : a < b;
  });
}

std::size_t volume_queue::waiting() const {
  std::lock_guard lock(mutex_);
  return deal_order_.size() - next_;
}

std::optional<std::size_t> volume_queue::deal(int worker) {
  std::lock_guard lock(mutex_);
  if (next_ == deal_order_.size()) return std::nullopt;
  const std::size_t index = deal_order_[next_++];
  holding_[worker] = index;
  return index;
}

void volume_queue::record(std::size_t index, nlohmann::json entry) {
  std::lock_guard lock(mutex_);
  entries_.at(index) = std::move(entry);
  std::erase_if(holding_, [&](const auto& held) { return held.second == index; });
}

void volume_queue::worker_seen(const worker_identity& who) {
  std::lock_guard lock(mutex_);
  workers_[who.worker] = who;
}

std::optional<fs::path> volume_queue::worker_lost(int worker, const std::string& why) {
  std::lock_guard lock(mutex_);
  lost_[worker] = why;
  const auto held = holding_.find(worker);
  if (held == holding_.end()) return std::nullopt;
  const fs::path input = items_[held->second].input;
  const auto& who = workers_[worker];
  entries_[held->second] = {{"input", items_[held->second].input.string()}, {"status", "failed"},
                            {"voxels", items_[held->second].voxels}, {"worker", worker}, {"host", who.host},
                            {"device", who.device},
                            {"error", swinfer::detail::concat("worker ", worker, " stopped while segmenting it: ", why)}};
  holding_.erase(held);
  return input;
}

int volume_queue::failed() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(entries_.begin(), entries_.end(),
                                        [](const auto& e) { return e.is_null() || e.at("status") == "failed"; }));
}

nlohmann::json volume_queue::report(const std::string& launcher, double wall_seconds) const {
  std::lock_guard lock(mutex_);
  nlohmann::json volumes = nlohmann::json::array(), failed_inputs = nlohmann::json::array();
  std::map<std::string, int> count{{"done", 0}, {"failed", 0}, {"skipped", 0}};
  struct work_done {
    int volumes = 0;
    double seconds = 0;
  };
  std::map<int, work_done> work;
  for (std::size_t i = 0; i < items_.size(); ++i) {
    const nlohmann::json entry = entries_[i].is_null() ? not_segmented_entry(items_[i]) : entries_[i];
    const std::string status = entry.at("status");
    ++count[status];
    if (status == "failed") failed_inputs.push_back(entry.at("input"));
    if (status != "skipped" && entry.contains("worker")) {  // a skipped volume's worker was in an earlier run
      auto& w = work[entry.at("worker").get<int>()];
      ++w.volumes;
      w.seconds += entry.value("seconds", 0.0);
    }
    volumes.push_back(entry);
  }
  nlohmann::json workers = nlohmann::json::array();
  std::set<int> ids;
  for (const auto& [id, who] : workers_) ids.insert(id);
  for (const auto& [id, w] : work) ids.insert(id);
  for (int id : ids) {
    nlohmann::json w = workers_.count(id) ? nlohmann::json(workers_.at(id)) : nlohmann::json{{"worker", id}};
    const auto done = work.count(id) ? work.at(id) : work_done{};
    w["volumes"] = done.volumes;
    w["busy_s"] = done.seconds;
    w["busy_fraction"] = wall_seconds > 0 ? done.seconds / wall_seconds : 0.0;
    if (lost_.count(id)) w["stopped_early"] = lost_.at(id);
    workers.push_back(w);
  }
  const nlohmann::json summary = {
      {"volumes", items_.size()},
      {"done", count["done"]},
      {"failed", count["failed"]},
      {"skipped", count["skipped"]},
      {"failed_inputs", failed_inputs},
      {"wall_s", wall_seconds},
      {"volumes_per_minute", wall_seconds > 0 ? 60.0 * count["done"] / wall_seconds : 0.0},
      {"workers", workers}};
  return {{"swinfer", swinfer::version_string}, {"launcher", launcher}, {"summary", summary}, {"volumes", volumes}};
}

}  // namespace swinfer_tool::batch
