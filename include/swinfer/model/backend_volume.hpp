// swinfer: the tensor type a backend's ops take, and moving the model's input and outputs across the host edge.
// Host backends (cpu, onednn) take swinfer::tensor; a device backend (hip) declares `using volume = ...` (its
// device-resident tensor) in its kernels<> specialisation, and upload/download host edges.
#pragma once

#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer {

namespace detail {
template <class K>
struct backend_volume {
  using type = tensor<typename K::storage>;
};
template <class K>
  requires requires { typename K::volume; }
struct backend_volume<K> {
  using type = typename K::volume;
};
template <class K, class T>
struct backend_tensor {
  using type = tensor<T>;
};
template <class K, class T>
  requires requires { typename K::volume; }
struct backend_tensor<K, T> {
  using type = typename K::template tensor_type<T>;
};
}  // namespace detail

/// True for backends whose volumes live in device memory (they declare K::volume and the upload/download edges).
template <class K>
inline constexpr bool has_device_volumes_v = requires { typename K::volume; };

/// The tensor type of every volume and token tensor of kernels K: tensor<K::storage> for the host backends,
/// K::volume (hip::device_tensor<S>) for the hip backend. Same constructor (shape, layout), shape(), layout(),
/// size() and data() (a device pointer on the hip backend; never dereferenced by the model).
template <class K>
using backend_volume_t = typename detail::backend_volume<K>::type;

/// A tensor of element type T where kernels K keep their data: tensor<T> on host backends, K::tensor_type<T> on
/// device backends (the float32 window batches and sums of the sliding window).
template <class K, class T>
using backend_tensor_t = typename detail::backend_tensor<K, T>::type;

namespace model {

/// The float32 host input as a volume of K in layout `kind`: a conversion on host backends, one upload (then a
/// conversion on the device) on device backends.
template <class K>
backend_volume_t<K> to_volume(typename K::context& ctx, const tensor<float>& host, layout_kind kind) {
  if constexpr (has_device_volumes_v<K>) {
    backend_volume_t<K> v = K::upload(ctx, host);
    if (v.layout() == kind) return v;
    backend_volume_t<K> out(v.shape(), kind);
    K::convert(ctx, v, out);
    return out;
  } else {
    backend_volume_t<K> v(host.shape(), kind);
    K::convert(ctx, host, v);
    return v;
  }
}

/// A volume of K as a float32 host tensor in layout `kind`; on device backends this waits for the device.
template <class K>
tensor<float> to_host(typename K::context& ctx, const backend_volume_t<K>& v, layout_kind kind) {
  if constexpr (has_device_volumes_v<K>) {
    return K::template download<float>(ctx, v, kind);
  } else {
    tensor<float> f(v.shape(), kind);
    K::convert(ctx, v, f);
    return f;
  }
}

}  // namespace model
}  // namespace swinfer
