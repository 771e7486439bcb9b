// swinfer runtime: the hip (GPU) backend's models, every precision and layout it implements. Compiled only when
// swinfer is configured with -DSWINFER_GPU_PLATFORM=nvidia or amd (host code; the kernels are in swinfer::hip).
#include <algorithm>

#include <swinfer/backend/hip.hpp>
#include <swinfer/swinfer.hpp>

#include <swinfer/runtime/backends.hpp>

namespace swinfer::runtime {

std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::hip, const swinfer::network_choice& choice,
                                                       const swinfer::swin_unetr_config& config,
                                                       const swinfer::state_dict& weights,
                                                       const swinfer::backend_options<swinfer::backend::hip>& options,
                                                       const std::string& weights_name) {
  return swinfer::make_network<swinfer::backend::hip>(choice, config, weights, options, weights_name);
}

int visible_gpu_count() { return swinfer::hip::device_count(); }

void set_gpu_profiler_range(bool open) { swinfer::hip::set_profiler_range(open); }

double gpu_memory_peak_mib() {
  std::size_t peak = 0;
  for (int d = 0; d < swinfer::hip::device_count(); ++d) peak = std::max(peak, swinfer::hip::device_memory(d).peak);
  return static_cast<double>(peak) / (1 << 20);
}

void reset_gpu_memory_peak() {
  for (int d = 0; d < swinfer::hip::device_count(); ++d) swinfer::hip::reset_device_memory_peak(d);
}

}  // namespace swinfer::runtime
