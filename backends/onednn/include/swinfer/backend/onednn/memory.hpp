// swinfer oneDNN backend: element types, memory descriptors over swinfer tensors, and per-op weight storage.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// oneDNN data type of a storage type. Eigen::bfloat16 has oneDNN's bf16 bits (upper half of an IEEE float).
template <class T>
constexpr dt data_type_of() {
  if constexpr (std::is_same_v<T, float>) {
    return dt::f32;
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    static_assert(sizeof(Eigen::bfloat16) == 2, "Eigen::bfloat16 must be a bare 16-bit value");
    return dt::bf16;
  } else {
    static_assert(detail::dependent_false_v<T>, "swinfer onednn backend: storage types are float and Eigen::bfloat16");
  }
}

inline tag volume_tag(layout_kind k) { return k == layout_kind::ncdhw ? tag::ncdhw : tag::ndhwc; }

inline dnnl::memory::dims volume_dims(const shape5& s) { return {s.n, s.c, s.d, s.h, s.w}; }

/// Descriptor of a packed volume (N, C, D, H, W) in either layout.
template <class T>
dnnl::memory::desc volume_md(const shape5& s, layout_kind k) {
  return {volume_dims(s), data_type_of<T>(), volume_tag(k)};
}

/// Descriptor of a strided view: logical dims in swinfer order, strides in elements.
template <class T>
dnnl::memory::desc strided_md(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides) {
  return {dims, data_type_of<T>(), strides};
}

/// Wraps caller memory without copying. oneDNN takes a non-const handle; inputs are only read.
inline dnnl::memory wrap(context& ctx, const dnnl::memory::desc& md, const void* data) {
  return {md, ctx.engine(), const_cast<void*>(data)};
}

template <class T>
dnnl::memory wrap_volume(context& ctx, const tensor<T>& t) {
  return wrap(ctx, volume_md<T>(t.shape(), t.layout()), t.data());
}

/// Rows of `cols` contiguous values: the token-matrix view the linear and norm layers work on.
template <class T>
dnnl::memory::desc rows_md(std::int64_t rows, std::int64_t cols) {
  return {{rows, cols}, data_type_of<T>(), tag::ab};
}

/// Row-major strides of `dims` (the last axis is contiguous).
inline dnnl::memory::dims dense_strides(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

/// An owned, row-major f32 array as oneDNN memory (biases, scales, statistics), initialised from `values`.
inline dnnl::memory f32_memory(context& ctx, const dnnl::memory::dims& dims, const float* values) {
  dnnl::memory m({dims, dt::f32, dense_strides(dims)}, ctx.engine());
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::copy(values, values + n, static_cast<float*>(m.get_data_handle()));
  return m;
}

/// \brief An op's weights: an owned copy in the user's layout, reordered to whatever layout each primitive
/// descriptor asks for (format_tag::any), once per distinct layout.
///
/// Weights are converted to the op's data type on construction. The plain copy is dropped as soon as a primitive
/// wants a different layout, so a model holds one copy of its weights in the steady state.
class weights_store {
 public:
  weights_store(context& ctx, const dnnl::memory::dims& dims, tag user_tag, dt type, const float* values) : ctx_(&ctx) {
    const dnnl::memory::desc user_f32(dims, dt::f32, user_tag);
    dnnl::memory plain({dims, type, user_tag}, ctx.engine());
    ctx.reorder(wrap(ctx, user_f32, values), plain);
    copies_.push_back(plain);
  }

  /// The weights in layout `want`, reordering (exactly: same data type) on the first request for it.
  dnnl::memory get(const dnnl::memory::desc& want) {
    for (const auto& m : copies_) {
      if (m.get_desc() == want) {
        in_use_ = true;
        return m;
      }
    }
    dnnl::memory m(want, ctx_->engine());
    ctx_->reorder(copies_.front(), m);
    if (in_use_) {
      copies_.push_back(m);
    } else {
      copies_.front() = m;
    }
    in_use_ = true;
    return m;
  }

 private:
  context* ctx_;
  std::vector<dnnl::memory> copies_;
  bool in_use_ = false;  // once a primitive uses copies_.front(), it must not be replaced
};

/// Executes a primitive whose src and dst layouts were left to oneDNN (format_tag::any) on caller volumes:
/// `src`/`dst` are used in place when the primitive chose their layout, and reordered into / out of the
/// primitive's layout otherwise. `args` carries everything else (weights, bias).
template <class PD>
void execute_on_volumes(context& ctx, const dnnl::primitive& prim, const PD& pd, const dnnl::memory& src,
                        const dnnl::memory& dst, std::unordered_map<int, dnnl::memory> args) {
  dnnl::memory s = src, d = dst;
  if (pd.src_desc() != src.get_desc()) {
    s = dnnl::memory(pd.src_desc(), ctx.engine());
    ctx.reorder(src, s);
  }
  if (pd.dst_desc() != dst.get_desc()) d = dnnl::memory(pd.dst_desc(), ctx.engine());
  args[DNNL_ARG_SRC] = s;
  args[DNNL_ARG_DST] = d;
  ctx.execute(prim, args);
  if (d != dst) ctx.reorder(d, dst);
}

}  // namespace swinfer::onednn
