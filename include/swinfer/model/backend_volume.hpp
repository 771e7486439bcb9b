// swinfer: moving the model's input and outputs across the host edge. Host backends (cpu, onednn) take
// swinfer::tensor; a device backend (hip) declares `using volume = ...` (its device-resident tensor) in its
// kernels<> specialisation, and upload/download host edges (swinfer/backend/contract.hpp).
#pragma once

#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer {

namespace model {

/// The float32 host input as a volume of K in layout `kind`: a conversion on host backends, one upload (then a
/// conversion on the device) on device backends.
template <class K>
backend_volume_t<K> to_volume(typename K::context& ctx, const tensor<float>& host, layout_kind kind) {
  if constexpr (device_resident<K>) {
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
  if constexpr (device_resident<K>) {
    return K::template download<float>(ctx, v, kind);
  } else {
    tensor<float> f(v.shape(), kind);
    K::convert(ctx, v, f);
    return f;
  }
}

}  // namespace model
}  // namespace swinfer
