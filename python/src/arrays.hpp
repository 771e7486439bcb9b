// swinfer's Python module: numpy and torch arrays (DLPack, through nanobind's ndarray) to and from swinfer tensors.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <swinfer/core/tensor.hpp>

namespace swinfer_python {

namespace nb = nanobind;

/// Any 5-D host array; dtype, strides and framework are checked here, not by nanobind's overload matching, so a wrong
/// one is a ValueError naming it instead of a TypeError listing signatures.
using host_array = nb::ndarray<nb::ro, nb::device::cpu>;

/// Input copies made since the module loaded: the tests check that contiguous float32 arrays are borrowed, not copied.
inline std::atomic<std::int64_t> input_copies{0};

inline std::string shape_text(const host_array& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

/// True when `strides` are those of `kind` packed, ignoring axes of extent 1 (whose stride never matters and which
/// torch and numpy give various strides).
inline bool packed_as(const swinfer::shape5& shape, const std::array<std::int64_t, 5>& strides,
                      swinfer::layout_kind kind) {
  const auto packed = swinfer::packed_strides(shape, kind);
  const std::array<std::int64_t, 5> extent{shape.n, shape.c, shape.d, shape.h, shape.w};
  for (std::size_t i = 0; i < 5; ++i) {
    if (extent[i] > 1 && strides[i] != packed[i]) return false;
  }
  return true;
}

/// The array as a float32 (N, C, D, H, W) tensor: borrowed when its strides are packed NCDHW (C order) or NDHWC
/// (torch's channels_last_3d), copied into NCDHW otherwise (counted in input_copies). The array must outlive the
/// returned tensor, which is only read.
inline swinfer::tensor<float> tensor_from_array(const host_array& a, const char* what) {
  if (a.ndim() != 5) {
    throw nb::value_error(("swinfer: " + std::string(what) + " must be 5-D (N, C, D, H, W), got shape " + shape_text(a))
                              .c_str());
  }
  if (a.dtype() != nb::dtype<float>()) {
    throw nb::value_error(("swinfer: " + std::string(what) +
                           " must be float32 (convert with .astype(numpy.float32) or .float()); got a dtype of " +
                           std::to_string(a.dtype().bits) + "-bit " +
                           (a.dtype().code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float) ? "float"
                                                                                                        : "non-float") +
                           " elements")
                              .c_str());
  }
  const swinfer::shape5 shape{static_cast<std::int64_t>(a.shape(0)), static_cast<std::int64_t>(a.shape(1)),
                              static_cast<std::int64_t>(a.shape(2)), static_cast<std::int64_t>(a.shape(3)),
                              static_cast<std::int64_t>(a.shape(4))};
  std::array<std::int64_t, 5> strides{};
  for (std::size_t i = 0; i < 5; ++i) strides[i] = a.stride(i);
  auto* data = static_cast<float*>(const_cast<void*>(a.data()));  // read only: every consumer takes const tensor&
  // Exact strides first: with one channel both layouts fit, and the strides say which one the caller made.
  for (const bool exact : {true, false}) {
    for (const auto kind : {swinfer::layout_kind::ncdhw, swinfer::layout_kind::ndhwc}) {
      if (exact ? strides == swinfer::packed_strides(shape, kind) : packed_as(shape, strides, kind)) {
        return swinfer::tensor<float>::borrow(data, shape, kind);
      }
    }
  }
  ++input_copies;
  swinfer::tensor<float> copy(shape, swinfer::layout_kind::ncdhw);
  swinfer::tensor_view<const float> source{data, shape, strides};
  for (std::int64_t n = 0; n < shape.n; ++n)
    for (std::int64_t c = 0; c < shape.c; ++c)
      for (std::int64_t d = 0; d < shape.d; ++d)
        for (std::int64_t h = 0; h < shape.h; ++h)
          for (std::int64_t w = 0; w < shape.w; ++w) copy(n, c, d, h, w) = source(n, c, d, h, w);
  return copy;
}

/// The tensor handed to Python without a copy, as an array of framework F (nb::numpy or nb::pytorch) whose strides
/// keep the tensor's layout (NDHWC logits come back channels-last, as the input was).
template <class F, class T>
nb::object array_from_tensor(swinfer::tensor<T>&& t) {
  auto* owned = new swinfer::tensor<T>(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<swinfer::tensor<T>*>(p); });
  const swinfer::shape5& s = owned->shape();
  const std::size_t shape[5] = {static_cast<std::size_t>(s.n), static_cast<std::size_t>(s.c),
                                static_cast<std::size_t>(s.d), static_cast<std::size_t>(s.h),
                                static_cast<std::size_t>(s.w)};
  const std::int64_t* strides = owned->strides().data();
  return nb::cast(nb::ndarray<F, T>(owned->data(), 5, shape, owner, strides));
}

}  // namespace swinfer_python
