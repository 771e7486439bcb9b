// swinfer hip backend: device discovery, memory, streams, copies and timing (host code over the vendor runtime).
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common.cuh"
#include "swinfer/backend/hip/vendor/warpgroup_mma.hpp"

namespace swinfer::hip {

namespace kern {
namespace {
/// What the device code that ran was compiled with: 1, or 2 where it has the warpgroup products (sm_90a).
/// Shapes: flag one int (device memory). Geometry: one block of one thread.
SWINFER_GPU_GLOBAL void probe_kernel(int* flag) { *flag = gpu::warpgroup_mma_compiled() ? 2 : 1; }
}  // namespace
}  // namespace kern

namespace {
/// Runs probe_kernel on `stream` and waits: its flag, or 0 with the runtime's reason.
int probe_flag(gpu::stream_t s, std::string* why) {
  void* d_flag = nullptr;
  gpu::error_t e = gpu::device_malloc(&d_flag, sizeof(int));
  if (e == gpu::success) {
    e = gpu::enqueue(kern::probe_kernel, 1, 1, s, static_cast<int*>(d_flag));
    if (e == gpu::success) e = gpu::stream_synchronize(s);
  }
  int flag = 0;
  if (e == gpu::success) e = gpu::memcpy_d2h_async(&flag, d_flag, sizeof(int), s);
  if (e == gpu::success) e = gpu::stream_synchronize(s);
  if (d_flag) (void)gpu::device_free(d_flag);
  if (e != gpu::success || flag == 0) {
    (void)gpu::get_last_error();
    if (why) *why = e != gpu::success ? gpu::error_string(e) : "the probe kernel did not run";
    return 0;
  }
  return flag;
}
}  // namespace

const char* platform() { return gpu::platform_name; }

int device_count(std::string* why) {
  int n = 0;
  const gpu::error_t e = gpu::get_device_count(&n);
  if (e != gpu::success) {
    (void)gpu::get_last_error();  // clear the sticky "no device" error
    if (why) *why = gpu::error_string(e);
    return 0;
  }
  if (n == 0 && why) *why = "the runtime reports no devices";
  return n;
}

device_properties query_device(int index) {
  gpu::device_prop_t p{};
  SWINFER_GPU_CHECK(gpu::get_device_properties(&p, index));
  device_properties d;
  d.index = index;
  d.name = p.name;
  d.platform = gpu::platform_name;
#if SWINFER_GPU_AMD
  d.arch = gpu::arch_name(p);
#elif SWINFER_GPU_EMULATED
  d.arch = "cpu-emulator";
#else
  d.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#endif
  d.warp_size = p.warpSize;
  d.multiprocessors = p.multiProcessorCount;
  d.shared_memory_per_block = p.sharedMemPerBlock;
  d.max_shared_memory_per_block = gpu::max_shared_per_block(p);
  d.global_memory = p.totalGlobalMem;
  return d;
}

void set_device(int index) { SWINFER_GPU_CHECK(gpu::set_device(index)); }

bool probe_kernels(void* stream, std::string* why) {
  return probe_flag(static_cast<gpu::stream_t>(stream), why) != 0;
}

bool matrix_cores_supported(const device_properties& d, std::string* why) {
#if SWINFER_GPU_AMD
  for (const char* arch : {"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
    if (d.arch.rfind(arch, 0) == 0) return true;
  if (why) *why = d.arch + " has no MFMA path in swinfer (CDNA2/3 only)";
  return false;
#elif SWINFER_GPU_EMULATED
  (void)d, (void)why;
  return true;
#else
  if (d.arch.rfind("sm_", 0) == 0 && std::stoi(d.arch.substr(3)) >= 80) return true;
  if (why) *why = d.arch + " predates the sm_80 mma.sync shapes swinfer uses";
  return false;
#endif
}

bool warpgroup_mma_supported(const device_properties& d, void* stream, std::string* why) {
#if SWINFER_GPU_EMULATED
  (void)stream;
  if (d.warp_size == 32) return true;
  if (why) *why = "not with 64-lane warps (NVIDIA's instruction)";
  return false;
#elif SWINFER_GPU_NVIDIA
  if (d.arch != "sm_90") {
    if (why) *why = "not on " + d.arch + " (wgmma is sm_90a's)";
    return false;
  }
  std::string reason;
  const int flag = probe_flag(static_cast<gpu::stream_t>(stream), &reason);
  if (flag != 2 && why) *why = flag == 0 ? reason : "this build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES 90a)";
  return flag == 2;
#else
  (void)d, (void)stream;
  if (why) *why = "NVIDIA Hopper only";
  return false;
#endif
}

namespace {

/// Each device's stream and whether its allocations are stream-ordered (from the device's default memory pool).
struct device_stream_registry {
  std::mutex mutex;
  std::vector<gpu::stream_t> streams;
  std::vector<bool> pooled;

  /// The stream of `device` and its allocation mode, creating the stream on first use.
  std::pair<gpu::stream_t, bool> get(int device) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto d = static_cast<std::size_t>(device);
    if (streams.size() <= d) {
      streams.resize(d + 1, nullptr);
      pooled.resize(d + 1, false);
    }
    if (!streams[d]) {
      SWINFER_GPU_CHECK(gpu::stream_create(&streams[d]));
      int supported = 0;
      if (gpu::memory_pools_supported(&supported, device) != gpu::success ||
          (supported && gpu::retain_pool_memory(device) != gpu::success)) {
        (void)gpu::get_last_error();
        supported = 0;
      }
      pooled[d] = supported != 0;
    }
    return {streams[d], pooled[d]};
  }
};

device_stream_registry& stream_registry() {
  static device_stream_registry r;
  return r;
}

/// What device_alloc has handed out and not yet freed, per device: the bytes live now and the most since the last
/// reset (the activations, weights and scratch of swinfer's own tensors; the runtime's pool may hold more).
struct device_memory_ledger {
  std::mutex mutex;
  std::map<void*, std::pair<int, std::size_t>> blocks;  ///< pointer -> (device, bytes)
  std::map<int, device_memory_use> use;

  void add(void* p, int device, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    blocks[p] = {device, bytes};
    device_memory_use& u = use[device];
    u.in_use += bytes;
    if (u.in_use > u.peak) u.peak = u.in_use;
  }
  void remove(void* p) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = blocks.find(p);
    if (it == blocks.end()) return;
    use[it->second.first].in_use -= it->second.second;
    blocks.erase(it);
  }
};

device_memory_ledger& memory_ledger() {
  static device_memory_ledger l;
  return l;
}

int current_device() {
  int d = 0;
  if (gpu::get_device(&d) != gpu::success) (void)gpu::get_last_error();
  return d;
}

}  // namespace

void* device_stream(int device) { return static_cast<void*>(stream_registry().get(device).first); }

void release_cached_memory(int device) {
  const auto [stream, pooled] = stream_registry().get(device);
  SWINFER_GPU_CHECK(gpu::stream_synchronize(stream));
  if (pooled) SWINFER_GPU_CHECK(gpu::trim_pool_memory(device));
}

void set_profiler_range(bool open) { SWINFER_GPU_CHECK(open ? gpu::profiler_start() : gpu::profiler_stop()); }

void* device_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const auto [stream, pooled] = stream_registry().get(current_device());
  const gpu::error_t e = pooled ? gpu::malloc_async(&p, bytes, stream) : gpu::device_malloc(&p, bytes);
  if (e != gpu::success) {
    (void)gpu::get_last_error();
    const int device = current_device();
    gpu::device_prop_t props{};
    const bool known = gpu::get_device_properties(&props, device) == gpu::success;
    detail::fail("swinfer hip backend: out of device memory allocating ", (bytes + (1 << 20) - 1) >> 20,
                 " MiB on device ", device, known ? " (" : "", known ? props.name : "",
                 known ? ", " + std::to_string(props.totalGlobalMem >> 20) + " MiB)" : std::string(), ": ",
                 gpu::error_string(e), ". Free device memory, or lower the sliding window's batch (sw_batch_size, "
                 "--sw-batch) or ROI, or run in fp16/bf16");
  }
  memory_ledger().add(p, current_device(), bytes);
  return p;
}

device_memory_use device_memory(int device) {
  device_memory_ledger& l = memory_ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.use[device];
}

void reset_device_memory_peak(int device) {
  device_memory_ledger& l = memory_ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  device_memory_use& u = l.use[device];
  u.peak = u.in_use;
}

void device_free(void* d_ptr) noexcept {
  if (!d_ptr) return;
  try {
    memory_ledger().remove(d_ptr);
    const auto [stream, pooled] = stream_registry().get(current_device());
    // Stream-ordered: the memory returns to the pool once the work enqueued so far is done; no host wait.
    (void)(pooled ? gpu::free_async(d_ptr, stream) : gpu::device_free(d_ptr));
  } catch (...) {
    (void)gpu::device_free(d_ptr);  // the registry could not create a stream: free synchronously
  }
}

void stream_synchronize(void* stream) {
  SWINFER_GPU_CHECK(gpu::stream_synchronize(static_cast<gpu::stream_t>(stream)));
}

float median_launch_ms(void* stream, int runs, const std::function<void()>& launch) {
  runs = std::max(runs, 1);
  const auto s = static_cast<gpu::stream_t>(stream);
  std::vector<gpu::event_t> events(2 * static_cast<std::size_t>(runs), nullptr);
  std::vector<float> ms(static_cast<std::size_t>(runs));
  const auto destroy = [&] {
    for (gpu::event_t e : events)
      if (e) (void)gpu::event_destroy(e);
  };
  try {
    for (gpu::event_t& e : events) SWINFER_GPU_CHECK(gpu::event_create(&e));
    for (std::size_t r = 0; r < ms.size(); ++r) {
      SWINFER_GPU_CHECK(gpu::event_record(events[2 * r], s));
      launch();
      SWINFER_GPU_CHECK(gpu::event_record(events[2 * r + 1], s));
    }
    SWINFER_GPU_CHECK(gpu::event_synchronize(events.back()));
    for (std::size_t r = 0; r < ms.size(); ++r) {
      SWINFER_GPU_CHECK(gpu::event_elapsed_ms(&ms[r], events[2 * r], events[2 * r + 1]));
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

void copy_to_device(void* d_dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes) SWINFER_GPU_CHECK(gpu::memcpy_h2d_async(d_dst, src, bytes, static_cast<gpu::stream_t>(stream)));
}

void copy_to_host(void* dst, const void* d_src, std::size_t bytes, void* stream) {
  if (bytes) SWINFER_GPU_CHECK(gpu::memcpy_d2h_async(dst, d_src, bytes, static_cast<gpu::stream_t>(stream)));
}

void copy_on_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream) {
  if (bytes) SWINFER_GPU_CHECK(gpu::memcpy_d2d_async(d_dst, d_src, bytes, static_cast<gpu::stream_t>(stream)));
}

void copy_rows_on_device(void* d_dst, std::size_t dst_pitch, const void* d_src, std::size_t src_pitch,
                         std::size_t row_bytes, std::size_t rows, void* stream) {
  if (row_bytes && rows) {
    SWINFER_GPU_CHECK(gpu::memcpy2d_d2d_async(d_dst, dst_pitch, d_src, src_pitch, row_bytes, rows,
                                              static_cast<gpu::stream_t>(stream)));
  }
}

void fill_bytes(void* d_dst, int value, std::size_t bytes, void* stream) {
  if (bytes) SWINFER_GPU_CHECK(gpu::memset_async(d_dst, value, bytes, static_cast<gpu::stream_t>(stream)));
}

}  // namespace swinfer::hip
