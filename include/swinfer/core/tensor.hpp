// swinfer: an owning 5-D tensor and a non-owning view; logical (N, C, D, H, W) shape, layout in the strides.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "swinfer/core/error.hpp"
#include "swinfer/core/checked.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/memory.hpp"
#include "swinfer/core/shape.hpp"

namespace swinfer {

/// \brief A non-owning view: pointer, logical shape and strides in elements.
/// \tparam T element type; const-qualified for read-only views.
template <class T>
struct tensor_view {
  T* data = nullptr;
  shape5 shape;
  std::array<std::int64_t, 5> strides{};

  std::int64_t offset(std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h, std::int64_t w) const {
    return n * strides[0] + c * strides[1] + d * strides[2] + h * strides[3] + w * strides[4];
  }
  T& operator()(std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h, std::int64_t w) const {
    return data[offset(n, c, d, h, w)];
  }
  /// True when the strides are the packed strides of `k`.
  bool is_packed(layout_kind k) const { return strides == packed_strides(shape, k); }
};

/// \brief An owning tensor with 64-byte aligned, packed storage in one of the two layouts.
/// Elements are left uninitialised on construction (activations are always written before read).
template <class T>
class tensor {
  static_assert(std::is_trivially_copyable_v<T>, "swinfer::tensor holds trivially copyable elements only");

 public:
  tensor() = default;
  tensor(const shape5& shape, layout_kind layout) : shape_(shape), layout_(layout) {
    if (shape.n < 0 || shape.c < 0 || shape.d < 0 || shape.h < 0 || shape.w < 0) {
      detail::fail("negative tensor shape ", shape);
    }
    strides_ = packed_strides(shape, layout);  // checks the element count fits in int64
    allocate(shape.numel());
  }
  /// A tensor over `data`, which the caller owns and keeps alive and unchanged while the tensor lives; packed in
  /// `layout`, any alignment. Language bindings hand their callers' arrays to the read-only `const tensor&`
  /// parameters this way, without a copy.
  static tensor borrow(T* data, const shape5& shape, layout_kind layout) {
    tensor t;
    t.shape_ = shape;
    t.layout_ = layout;
    t.strides_ = packed_strides(shape, layout);
    t.data_ = std::unique_ptr<T[], aligned_free>(data, aligned_free{false});
    return t;
  }
  /// Creates a tensor in the layout named by a tag: tensor<float>::make<layout::ndhwc>(shape).
  template <class Layout>
  static tensor make(const shape5& shape) {
    return tensor(shape, Layout::kind);
  }

  tensor(tensor&&) noexcept = default;
  tensor& operator=(tensor&&) noexcept = default;
  /// Copies are explicit (clone()) so a large activation is never duplicated by accident.
  tensor(const tensor&) = delete;
  tensor& operator=(const tensor&) = delete;

  tensor clone() const {
    tensor t(shape_, layout_);
    if (size()) std::memcpy(t.data(), data(), size() * sizeof(T));
    return t;
  }

  const shape5& shape() const { return shape_; }
  const std::array<std::int64_t, 5>& strides() const { return strides_; }
  layout_kind layout() const { return layout_; }
  std::int64_t size() const { return shape_.numel(); }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }

  T& operator()(std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h, std::int64_t w) {
    return data_[n * strides_[0] + c * strides_[1] + d * strides_[2] + h * strides_[3] + w * strides_[4]];
  }
  const T& operator()(std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h, std::int64_t w) const {
    return data_[n * strides_[0] + c * strides_[1] + d * strides_[2] + h * strides_[3] + w * strides_[4]];
  }

  tensor_view<T> view() { return {data(), shape_, strides_}; }
  tensor_view<const T> view() const { return {data(), shape_, strides_}; }

  void fill(T value) { std::fill(data(), data() + size(), value); }

 private:
  struct aligned_free {
    bool owned = true;  // false for borrow()
    void operator()(T* p) const {
      if (owned) std::free(p);
    }
  };
  /// Allocations this large are first checked against the memory available, so an absurd shape is refused with
  /// the numbers (overcommit would otherwise accept it and fail page by page); smaller ones skip the file read.
  static constexpr std::int64_t checked_allocation_bytes = std::int64_t{1} << 30;

  void allocate(std::int64_t count) {
    if (count == 0) return;
    const std::int64_t bytes = detail::checked_add(detail::checked_byte_size(count, sizeof(T), "tensor shape ", shape_),
                                                   63, "tensor shape ", shape_) / 64 * 64;
    if (bytes >= checked_allocation_bytes) {
      detail::require_memory(static_cast<double>(bytes), detail::concat("a tensor of shape ", shape_));
    }
    void* p = std::aligned_alloc(64, static_cast<std::size_t>(bytes));
    if (!p) {
      detail::fail("out of memory allocating a tensor of shape ", shape_, " (", bytes >> 20, " MiB)");
    }
    data_.reset(static_cast<T*>(p));
  }

  shape5 shape_{};
  std::array<std::int64_t, 5> strides_{};
  layout_kind layout_ = layout_kind::ndhwc;
  std::unique_ptr<T[], aligned_free> data_;
};

}  // namespace swinfer
