// swinfer cpu backend: max / average pooling with kernel = stride (the Swin Fusion skips' downsampling).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer::cpu {

/// \brief out (N, C, D/k, H/k, W/k) = max or mean over each k^3 block of in (N, C, D, H, W), either layout.
/// ndhwc: work items are output rows (n, z, y); each output voxel reduces k^3 contiguous C-channel runs into a
/// float32 accumulator row in the worker's scratch. ncdhw: work items are (n, c, z) output planes.
/// Averages add each input row first, then the rows, so the float32 sums of up to 32^3 terms stay accurate.
template <class S>
void pool3d(context& ctx, const tensor<S>& in, const ops::pool3d_problem& p, tensor<S>& out) {
  p.check(in.shape(), out.shape());
  const shape5& os = out.shape();
  if (in.layout() != out.layout()) detail::fail("pool3d: input and output need one layout");
  const shape5& is = in.shape();
  const std::int64_t k = p.kernel, C = is.c;
  const auto timed = ctx.time_op([&] {
    return op_label{"pool3d", detail::concat("pool3d k", p.kernel, " C", C, " @", grid_name(os))};
  });
  const bool is_max = p.mode == ops::pool_mode::max;
  const float lowest = -std::numeric_limits<float>::infinity(), inv_volume = 1.0f / float(k * k * k);
  if (in.layout() == layout_kind::ndhwc) {
    ctx.parallel_for(os.n * os.d * os.h, 1, [&](std::int64_t r0, std::int64_t r1, int worker) {
      float* acc = ctx.workspace(worker).reserve(2 * C);
      float* row = acc + C;
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t n = r / (os.d * os.h), z = (r / os.h) % os.d, y = r % os.h;
        for (std::int64_t x = 0; x < os.w; ++x) {
          std::fill(acc, acc + C, is_max ? lowest : 0.0f);
          for (std::int64_t a = 0; a < k; ++a)
            for (std::int64_t b = 0; b < k; ++b) {
              const S* src = in.data() + (((n * is.d + z * k + a) * is.h + y * k + b) * is.w + x * k) * C;
              std::fill(row, row + C, is_max ? lowest : 0.0f);
              for (std::int64_t e = 0; e < k; ++e, src += C)
                for (std::int64_t c = 0; c < C; ++c) {
                  const float v = to_float(src[c]);
                  row[c] = is_max ? std::max(row[c], v) : row[c] + v;
                }
              for (std::int64_t c = 0; c < C; ++c) acc[c] = is_max ? std::max(acc[c], row[c]) : acc[c] + row[c];
            }
          S* dst = out.data() + (((n * os.d + z) * os.h + y) * os.w + x) * C;
          for (std::int64_t c = 0; c < C; ++c) dst[c] = from_float<S>(is_max ? acc[c] : acc[c] * inv_volume);
        }
      }
    });
  } else {
    ctx.parallel_for(os.n * os.c * os.d, 1, [&](std::int64_t q0, std::int64_t q1, int) {
      for (std::int64_t q = q0; q < q1; ++q) {
        const std::int64_t nc = q / os.d, z = q % os.d;
        const S* plane = in.data() + nc * is.d * is.h * is.w;
        S* dst = out.data() + (nc * os.d + z) * os.h * os.w;
        for (std::int64_t y = 0; y < os.h; ++y)
          for (std::int64_t x = 0; x < os.w; ++x) {
            float acc = is_max ? lowest : 0.0f;
            for (std::int64_t a = 0; a < k; ++a)
              for (std::int64_t b = 0; b < k; ++b) {
                const S* src = plane + ((z * k + a) * is.h + y * k + b) * is.w + x * k;
                float row = is_max ? lowest : 0.0f;
                for (std::int64_t e = 0; e < k; ++e) row = is_max ? std::max(row, to_float(src[e])) : row + to_float(src[e]);
                acc = is_max ? std::max(acc, row) : acc + row;
              }
            dst[y * os.w + x] = from_float<S>(is_max ? acc : acc * inv_volume);
          }
      }
    });
  }
}

}  // namespace swinfer::cpu
