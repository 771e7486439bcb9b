// swinfer hip backend: device-resident 5-D tensors, the GPU counterpart of swinfer::tensor.
#pragma once

#include <cstdint>
#include <type_traits>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::hip {

/// The device element type of a host storage type (bit-identical layouts: float, Eigen::half, Eigen::bfloat16).
template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, Eigen::half>) return dtype::f16;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return dtype::bf16;
  else static_assert(sizeof(T) == 0, "swinfer hip backend: element type must be float, Eigen::half or Eigen::bfloat16");
}

/// \brief A packed 5-D tensor in device memory: logical (N, C, D, H, W) shape, layout in the strides, exactly as
/// swinfer::tensor<T> but its data() points to GPU memory (never dereference it on the host). Move-only; elements
/// are uninitialised on construction. Moving data between host and device is explicit (upload/download).
template <class T>
class device_tensor {
 public:
  using value_type = T;
  static constexpr dtype type = dtype_of<T>();

  device_tensor() = default;
  device_tensor(const shape5& shape, layout_kind layout)
      : shape_(shape), layout_(layout), strides_(packed_strides(shape, layout)) {
    if (shape.n < 0 || shape.c < 0 || shape.d < 0 || shape.h < 0 || shape.w < 0) {
      detail::fail("negative tensor shape ", shape.str());
    }
    buffer_ = device_buffer(static_cast<std::size_t>(shape.numel()) * sizeof(T));
  }
  template <class Layout>
  static device_tensor make(const shape5& shape) {
    return device_tensor(shape, Layout::kind);
  }

  /// A device copy of a host tensor (same shape, layout and type); returns once the copy is done.
  static device_tensor upload(context& ctx, const tensor<T>& host) {
    device_tensor t(host.shape(), host.layout());
    copy_to_device(t.data(), host.data(), t.bytes(), ctx.stream());
    ctx.synchronize();
    return t;
  }
  /// A host copy (same shape, layout and type); waits for every op enqueued before it.
  tensor<T> download(context& ctx) const {
    tensor<T> host(shape_, layout_);
    copy_to_host(host.data(), data(), bytes(), ctx.stream());
    ctx.synchronize();
    return host;
  }

  const shape5& shape() const { return shape_; }
  const std::array<std::int64_t, 5>& strides() const { return strides_; }
  layout_kind layout() const { return layout_; }
  std::int64_t size() const { return shape_.numel(); }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(T); }
  T* data() { return static_cast<T*>(buffer_.get()); }
  const T* data() const { return static_cast<const T*>(buffer_.get()); }

  /// Shape and strides as the compiled kernels take them.
  strided5 desc() const { return {{shape_.n, shape_.c, shape_.d, shape_.h, shape_.w}, strides_}; }

 private:
  shape5 shape_{};
  layout_kind layout_ = layout_kind::ndhwc;
  std::array<std::int64_t, 5> strides_{};
  device_buffer buffer_;
};

/// Checks that two tensors have one layout (the kernels follow strides, but the contract keeps one layout).
template <class T, class U>
void require_same_layout(const char* op, const device_tensor<T>& a, const device_tensor<U>& b) {
  if (a.layout() != b.layout()) detail::fail(op, ": input and output need one layout");
}

}  // namespace swinfer::hip
