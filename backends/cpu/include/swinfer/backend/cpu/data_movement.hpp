// swinfer cpu backend: kernels that only move and convert data: type/layout conversion, the decoder's channel
// concatenation, the patch-merging gather, and the row staging the convolutions read their input through.
// All of them follow each tensor's run-time layout (token tensors are ndhwc even when volumes are ncdhw).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/patch_merging.hpp"

namespace swinfer::cpu {

/// Voxels per parallel work item of the element-wise kernels: big enough to amortise scheduling, small enough
/// to balance two or more workers on the smallest (3^3) volumes.
inline constexpr std::int64_t voxels_per_task = 2048;

/// dst[i] = B(src[i]) through float32 (exact widening, one rounding).
template <class A, class B>
inline void convert_run(const A* src, B* dst, std::int64_t n) {
  if constexpr (std::is_same_v<A, B>) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(A));
  } else if constexpr (std::is_same_v<A, float>) {
    from_floats(src, dst, n);
  } else if constexpr (std::is_same_v<B, float>) {
    to_floats(src, dst, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = from_float<B>(to_float(src[i]));
  }
}

/// Copies voxels [x0, x0 + count) of row (n, z, y) of a volume into dst channels-last as D (float32, or S itself
/// for AMX): dst[(x - x0) * dst_channels + c] = t(n, c, z, y, x); dst_channels defaults to the volume's C (a
/// concatenation's part leaves room for the other part's channels).
template <class S, class D>
inline void load_voxel_run(const tensor<S>& t, std::int64_t n, std::int64_t z, std::int64_t y, std::int64_t x0,
                           std::int64_t count, D* dst, std::int64_t dst_channels = 0) {
  const shape5& s = t.shape();
  if (dst_channels == 0) dst_channels = s.c;
  if (t.layout() == layout_kind::ndhwc) {
    const S* src = t.data() + ((((n * s.d + z) * s.h + y) * s.w) + x0) * s.c;
    if (dst_channels == s.c) {
      convert_run(src, dst, count * s.c);
    } else {
      for (std::int64_t x = 0; x < count; ++x) convert_run(src + x * s.c, dst + x * dst_channels, s.c);
    }
  } else {
    const std::int64_t plane = s.d * s.h * s.w;
    const S* src = t.data() + n * s.c * plane + (z * s.h + y) * s.w + x0;
    for (std::int64_t c = 0; c < s.c; ++c, src += plane)
      for (std::int64_t x = 0; x < count; ++x) dst[x * dst_channels + c] = from_float<D>(to_float(src[x]));
  }
}

/// The whole voxel row (n, z, y): load_voxel_run from x = 0.
template <class S, class D>
inline void load_voxel_row(const tensor<S>& t, std::int64_t n, std::int64_t z, std::int64_t y, D* dst,
                           std::int64_t dst_channels = 0) {
  load_voxel_run(t, n, z, y, 0, t.shape().w, dst, dst_channels);
}

/// The int8 products' load_voxel_row: voxel row (n, z, y) channels-last, quantized to uint8 (int8 + zero point)
/// with 1 / scale = `inverse_scale`.
template <class S>
inline void quantize_voxel_row(const tensor<S>& t, std::int64_t n, std::int64_t z, std::int64_t y, std::uint8_t* dst,
                               float inverse_scale, std::int64_t dst_channels = 0) {
  const shape5& s = t.shape();
  if (dst_channels == 0) dst_channels = s.c;
  if (t.layout() == layout_kind::ndhwc) {
    const S* src = t.data() + (((n * s.d + z) * s.h + y) * s.w) * s.c;
    if (dst_channels == s.c) {
      int8_dot::quantize_run(src, dst, s.w * s.c, inverse_scale);
    } else {
      for (std::int64_t x = 0; x < s.w; ++x)
        int8_dot::quantize_run(src + x * s.c, dst + x * dst_channels, s.c, inverse_scale);
    }
  } else {
    const std::int64_t plane = s.d * s.h * s.w;
    const S* src = t.data() + n * s.c * plane + (z * s.h + y) * s.w;
    for (std::int64_t c = 0; c < s.c; ++c, src += plane)
      for (std::int64_t x = 0; x < s.w; ++x) {
        int8_dot::quantize_run(src + x, dst + x * dst_channels + c, 1, inverse_scale);
      }
  }
}

/// Element type and layout conversion; shapes must match. Same layout: a parallel element-wise cast.
/// Different layouts: per sample a blocked [C][DHW] <-> [DHW][C] transpose, parallel over voxel blocks.
template <class A, class B>
void convert(context& ctx, const tensor<A>& src, tensor<B>& dst) {
  ops::check_convert(src.shape(), dst.shape());
  const shape5& s = src.shape();
  const auto timed = ctx.time_op([&] {
    const std::string how = src.layout() == dst.layout()
                                ? std::string("copy")
                                : detail::concat(layout_name(src.layout()), "->", layout_name(dst.layout()));
    return op_label{"convert", detail::concat("convert ", how, " C", s.c, " @", grid_name(s))};
  });
  if (src.layout() == dst.layout()) {
    const std::int64_t total = src.size(), block = voxels_per_task * 16;
    ctx.parallel_for((total + block - 1) / block, 1, [&](std::int64_t b0, std::int64_t b1, int) {
      const std::int64_t i0 = b0 * block, i1 = std::min(total, b1 * block);
      convert_run(src.data() + i0, dst.data() + i0, i1 - i0);
    });
    return;
  }
  const std::int64_t voxels = s.d * s.h * s.w, blocks = (voxels + 63) / 64;
  const bool to_channels_last = dst.layout() == layout_kind::ndhwc;
  ctx.parallel_for(s.n * blocks, 16, [&](std::int64_t t0, std::int64_t t1, int) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t n = t / blocks, v0 = (t % blocks) * 64, v1 = std::min(voxels, v0 + 64);
      const A* in = src.data() + n * s.c * voxels;
      B* out = dst.data() + n * s.c * voxels;
      for (std::int64_t c = 0; c < s.c; ++c)
        for (std::int64_t v = v0; v < v1; ++v) {
          if (to_channels_last) {
            out[v * s.c + c] = from_float<B>(to_float(in[c * voxels + v]));
          } else {
            out[c * voxels + v] = from_float<B>(to_float(in[v * s.c + c]));
          }
        }
    }
  });
}

/// out = [parts...] along channels (decoder: upsampled first, skip second); all in one layout.
template <class S>
void concat_channels(context& ctx, const std::vector<const tensor<S>*>& parts, tensor<S>& out) {
  ops::check_concat_channels(parts, out.shape());
  const shape5& s = out.shape();
  const auto timed = ctx.time_op([&] {
    return op_label{"concat", detail::concat("concat C", s.c, " @", grid_name(s))};
  });
  for (const auto* p : parts)
    if (p->layout() != out.layout()) detail::fail("concat: all tensors need one layout");
  const std::int64_t voxels = s.d * s.h * s.w;
  if (out.layout() == layout_kind::ndhwc) {
    // Work items: blocks of voxels of one sample; each output voxel is each part's channels in turn.
    ctx.parallel_for(s.n * voxels, voxels_per_task, [&](std::int64_t v0, std::int64_t v1, int) {
      for (std::int64_t v = v0; v < v1; ++v) {
        S* o = out.data() + v * s.c;
        for (const auto* p : parts) {
          const std::int64_t c = p->shape().c;
          std::memcpy(o, p->data() + v * c, static_cast<std::size_t>(c) * sizeof(S));
          o += c;
        }
      }
    });
  } else {
    // Work items: (sample, output channel) planes, each one contiguous copy from the part holding it.
    const std::size_t plane_bytes = static_cast<std::size_t>(voxels) * sizeof(S);
    ctx.parallel_for(s.n * s.c, 1, [&](std::int64_t q0, std::int64_t q1, int) {
      for (std::int64_t q = q0; q < q1; ++q) {
        const std::int64_t n = q / s.c;
        std::int64_t c = q % s.c;
        std::size_t part = 0;
        while (c >= parts[part]->shape().c) c -= parts[part++]->shape().c;
        const S* src = parts[part]->data() + (n * parts[part]->shape().c + c) * voxels;
        std::memcpy(out.data() + q * voxels, src, plane_bytes);
      }
    });
  }
}

/// out[n, k*C + c, z, y, x] = x[n, c, 2z + a_k, 2y + b_k, 2x + c_k] for the 8 offsets of `order`.
template <class S>
void patch_merge_gather(context& ctx, const tensor<S>& x, ops::merge_order order, tensor<S>& out) {
  ops::check_patch_merge(x.shape(), out.shape());
  const shape5& os = out.shape();
  const auto timed = ctx.time_op([&] {
    return op_label{"patch_merge_gather", detail::concat("patch_merge_gather C", os.c, " @", grid_name(os))};
  });
  if (x.layout() != out.layout()) detail::fail("patch_merge_gather: input and output need one layout");
  const auto offsets = ops::merge_offsets(order);
  const shape5& is = x.shape();
  const std::int64_t c0 = is.c;
  if (out.layout() == layout_kind::ndhwc) {
    // Work items: output voxels (flattened over the batch); 8 contiguous channel copies each.
    const std::size_t bytes = static_cast<std::size_t>(c0) * sizeof(S);
    ctx.parallel_for(os.n * os.d * os.h * os.w, voxels_per_task, [&](std::int64_t v0, std::int64_t v1, int) {
      for (std::int64_t v = v0; v < v1; ++v) {
        const std::int64_t w = v % os.w, y = (v / os.w) % os.h, z = (v / (os.w * os.h)) % os.d,
                           n = v / (os.w * os.h * os.d);
        S* o = out.data() + v * os.c;
        for (int k = 0; k < 8; ++k) {
          const std::int64_t iz = 2 * z + offsets[k][0], iy = 2 * y + offsets[k][1], ix = 2 * w + offsets[k][2];
          std::memcpy(o + k * c0, x.data() + (((n * is.d + iz) * is.h + iy) * is.w + ix) * c0, bytes);
        }
      }
    });
  } else {
    // Work items: (sample, output channel) planes; strided gathers from one input plane.
    ctx.parallel_for(os.n * os.c, 1, [&](std::int64_t p0, std::int64_t p1, int) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t n = p / os.c, k = (p % os.c) / c0, c = p % c0;
        const S* src = x.data() + (n * c0 + c) * is.d * is.h * is.w;
        S* dst = out.data() + p * os.d * os.h * os.w;
        for (std::int64_t z = 0; z < os.d; ++z)
          for (std::int64_t y = 0; y < os.h; ++y) {
            const S* row = src + ((2 * z + offsets[k][0]) * is.h + 2 * y + offsets[k][1]) * is.w + offsets[k][2];
            for (std::int64_t w = 0; w < os.w; ++w) *dst++ = row[2 * w];
          }
      }
    });
  }
}

}  // namespace swinfer::cpu
