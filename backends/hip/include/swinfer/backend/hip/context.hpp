// swinfer hip backend: the execution context (one device, one stream, growing scratch) and device memory RAII.
// Host code only: everything GPU-specific happens inside the compiled library (swinfer::hip).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/kernel_tuning.hpp"
#include "swinfer/backend/hip/options.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"

namespace swinfer::hip {

/// \brief Owns one device allocation (move-only). Bytes are uninitialised.
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes) : data_(device_alloc(bytes)), bytes_(bytes) {}
  ~device_buffer() { device_free(data_); }
  device_buffer(device_buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      device_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// \brief The hip backend's execution context: the selected device, the device's stream every op is enqueued on
/// (shared by all contexts of the device, so memory is allocated and freed in its order; ops never synchronise,
/// downloads do), and a scratch buffer that only grows.
///
/// The device, the kernels and the tuning are backend_options<hip>'s: device (an index, default 0); fp16/bf16 GEMMs
/// and convolutions use the matrix cores when matrix_cores is on, the device has them and a start-up self-test agrees
/// with float32 FMA bit for bit (device().matrix_cores and matrix_cores_note say). kernels picks the kernels where
/// several can run an op (kernels()): on Hopper, kernels.conv = wgmma runs the 3x3x3 convolutions on the warpgroup
/// products when their own self-test passes (device().warpgroup_mma); under automatic the 3x3x3 convolutions run the
/// kernel measured fastest for their shape on this device (tuning(), kept in tuning_file between runs; tuning off
/// uses the choice by volume). Construction fails with swinfer::error "no usable GPU: ..." when there is no device,
/// the index is out of range, or this build has no code for the device's architecture.
class context {
 public:
  using options = backend_options<backend::hip>;

  explicit context(const options& o = {}) {
    std::string why;
    const int count = device_count(&why);
    if (count == 0) detail::fail("no usable GPU: ", why, " (swinfer hip backend built for ", platform(), ")");
    if (o.device < 0 || o.device >= count) {
      detail::fail("no usable GPU: device ", o.device, " was asked for (backend_options<hip>::device) but ", count,
                   " device(s) are visible");
    }
    const int index = o.device;
    set_device(index);
    props_ = query_device(index);
    stream_ = device_stream(index);
    if (!probe_kernels(stream_, &why)) {
      detail::fail("no usable GPU: device ", index, " (", props_.name, ", ", props_.arch,
                   ") cannot run this build's kernels: ", why,
                   ". Rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES / CMAKE_HIP_ARCHITECTURES.");
    }
    kernels_ = o.kernels;
    tuning_ = kernel_tuning::from_options(o, props_, props_.arch == "cpu-emulator");
    enable_matrix_cores(o.matrix_cores);
    enable_warpgroup_mma();
  }
  /// Waits for the device and hands the memory cached for reuse back to the driver (the stream is shared by every
  /// context of the device and lives on).
  ~context() {
    scratch_ = device_buffer();
    try {
      release_cached_memory(props_.index);
    } catch (const std::exception&) {  // a destructor must not throw; the memory stays cached
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  const device_properties& device() const { return props_; }
  /// Where the kernels run, for reports: the GPU's name and architecture and whether the matrix cores are used.
  std::string describe_device() const {
    return props_.name + " (" + props_.arch + "), matrix cores " + props_.matrix_cores_note +
           ", wgmma convolutions " + props_.warpgroup_mma_note + ", kernel tuning " + tuning_.describe();
  }
  void* stream() const { return stream_; }
  launch_env env() const {
    return {stream_, props_.warp_size, props_.multiprocessors, props_.matrix_cores, kernels_,
            props_.max_shared_memory_per_block, props_.warpgroup_mma};
  }
  /// The kernels chosen where several can run an op: the options' at construction; set for A/B timings and tests
  /// (ops enqueued afterwards use them).
  const kernel_choices& kernels() const { return kernels_; }
  void choose_kernels(const kernel_choices& k) { kernels_ = k; }
  /// The 3x3x3 convolutions' kernel per shape, measured on this device where the choice is automatic
  /// (backend_options<hip>::tuning and tuning_file; kernel_tuning.hpp).
  kernel_tuning& tuning() { return tuning_; }
  const kernel_tuning& tuning() const { return tuning_; }
  /// Waits for everything enqueued so far.
  void synchronize() const { stream_synchronize(stream_); }

  /// Device scratch of at least `bytes`, valid until the next call (ops run one after another on the stream).
  void* scratch(std::size_t bytes) {
    if (bytes > scratch_.bytes()) scratch_ = device_buffer(bytes);  // the old one is freed in stream order
    return scratch_.get();
  }

  /// Copies host values to a new device buffer (parameters at load time); waits for the copy.
  template <class T>
  device_buffer upload(const T* host, std::size_t count) {
    device_buffer b(count * sizeof(T));
    copy_to_device(b.get(), host, count * sizeof(T), stream_);
    synchronize();
    return b;
  }
  template <class T>
  device_buffer upload(const std::vector<T>& host) {
    return upload(host.data(), host.size());
  }
  /// Packed float32 weights as a device buffer of S, the model's storage type (what the GEMMs multiply): each
  /// weight rounded once, to nearest even, as the host backends round activations.
  template <class S>
  device_buffer upload_weights(const std::vector<float>& packed) {
    if constexpr (std::is_same_v<S, float>) {
      return upload(packed);
    } else {
      return upload(std::vector<S>(packed.begin(), packed.end()));
    }
  }

 private:
  void enable_matrix_cores(bool wanted) {
    std::string why;
    if (!wanted) {
      props_.matrix_cores_note =
          "off (backend_options<hip>::matrix_cores = false; in the tool SWINFER_GPU_MATRIX_CORES=0)";
    } else if (!matrix_cores_supported(props_, &why)) {
      props_.matrix_cores_note = "off (" + why + ")";
    } else if (launch_env probe{stream_, props_.warp_size, props_.multiprocessors, true};
               !matrix_cores_verified(probe, &why)) {
      props_.matrix_cores_note = "off: " + why + "; float32 FMA is used instead (please report this device)";
    } else {
      props_.matrix_cores = true;
      props_.matrix_cores_note = "on (fp16/bf16/int8 GEMMs and convolutions; self-test passed)";
    }
  }

  /// Hopper's warpgroup products for the 3x3x3 convolutions where kernels.conv = wgmma asks for them or kernel
  /// tuning may choose them (the built-in choice by volume never does: docs/gpu.md, seventh session), the matrix
  /// cores are on, the device runs this build's sm_90a code and a start-up self-test agrees with the halo tile bit
  /// for bit.
  void enable_warpgroup_mma() {
    std::string why;
    launch_env probe = env();
    probe.warpgroup_mma = true;
    const bool tuned = kernels_.conv == conv_kernel_choice::automatic && tuning_.mode() != tuning_mode::off;
    if (kernels_.conv != conv_kernel_choice::wgmma && !tuned) {
      props_.warpgroup_mma_note = "off (kernels.conv = wgmma, SWINFER_GPU_CONV=wgmma in the tool, or kernel tuning "
                                  "turns them on)";
    } else if (!props_.matrix_cores) {
      props_.warpgroup_mma_note = "off (matrix cores off)";
    } else if (!warpgroup_mma_supported(props_, stream_, &why)) {
      props_.warpgroup_mma_note = "off (" + why + ")";
    } else if (!warpgroup_mma_verified(probe, &why)) {
      props_.warpgroup_mma_note = "off: " + why + "; the halo tile is used instead (please report this device)";
    } else {
      props_.warpgroup_mma = true;
      props_.warpgroup_mma_note = "on (self-test passed)";
    }
  }

  device_properties props_;
  void* stream_ = nullptr;
  kernel_choices kernels_;
  kernel_tuning tuning_;
  device_buffer scratch_;
};

}  // namespace swinfer::hip
