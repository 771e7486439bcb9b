// swinfer cpu backend: InstanceNorm (no affine, batch statistics) fused with the residual add and LeakyReLU.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"

// The channel loops below carry no dependence from one iteration to the next (in place only element by element), which
// GCC cannot prove through the pointers. Only GCC is told: clang warns on GCC's ivdep, vectorises these loops behind a
// run-time overlap check anyway, and its own forced hint is an error under -Werror where a loop cannot vectorise.
#if defined(__GNUC__) && !defined(__clang__)
#define SWINFER_CPU_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define SWINFER_CPU_INDEPENDENT_ITERATIONS
#endif

namespace swinfer::cpu {

namespace internal {

/// Voxels converted to float32 at a time inside a work item (a few KiB per channel block).
inline constexpr std::int64_t norm_voxels_per_step = 64;

/// Channels-last with C not a whole number of packets and at most this many channels (the demo model's 12 and 24):
/// a voxel's C values would leave the packet loops for scalar code, so each step's values are taken as one run
/// against per-channel values repeated for each of its voxels (repeat_per_voxel).
inline constexpr std::int64_t repeated_channels_most = 64;
inline bool repeats_per_voxel(std::int64_t channels) {
  return channels > 1 && channels % packet_size != 0 && channels <= repeated_channels_most;
}
/// out[v * C + c] = per_channel[c] for the norm_voxels_per_step voxels of a step.
template <class T>
void repeat_per_voxel(const T* per_channel, std::int64_t channels, float* out) {
  for (std::int64_t v = 0; v < norm_voxels_per_step; ++v)
    for (std::int64_t c = 0; c < channels; ++c) out[v * channels + c] = static_cast<float>(per_channel[c]);
}

/// Values [offset, offset + count) of `data` as float32: the data itself for float32 storage (no copy), otherwise
/// converted into `buffer`.
template <class S>
const float* floats_at(const S* data, std::int64_t offset, std::int64_t count, float* buffer) {
  if constexpr (std::is_same_v<S, float>) {
    return data + offset;
  } else {
    to_floats(data + offset, buffer, count);
    return buffer;
  }
}

/// One value of the epilogue: act((x - mean) * inv + residual), LeakyReLU keeping y >= 0.
template <bool Residual, bool Leaky, class T>
inline T normalized(const T& x, const T& mean, const T& inv, const T& residual, const T& slope) {
  using namespace Eigen::internal;
  T y = Residual ? pmadd(psub(x, mean), inv, residual) : pmul(psub(x, mean), inv);
  if constexpr (Leaky) y = pselect(pcmp_le(pset1<T>(0.0f), y), y, pmul(y, slope));
  return y;
}

/// x = act((x - mean) * inv + residual) over n voxels of C interleaved channels (channels-last, per-channel
/// mean/inv, or where repeats_per_voxel(C) mean/inv repeated for a step's voxels) or of one channel (C = 1, a
/// channels-first plane: one mean/inv). With NormalizedResidual the residual joins as (residual - residual_mean) *
/// residual_inv (its statistics laid out as mean/inv), the value the separate op would have stored in float32.
/// Explicit packets: GCC 12 leaves the LeakyReLU's select as a scalar branch per value otherwise. The epilogue's
/// options are template arguments.
template <bool Residual, bool Leaky, bool NormalizedResidual, class S>
void normalize_run_as(S* x, const S* residual, std::int64_t n, std::int64_t channels, const float* mean,
                      const float* inv, float slope, float* buffer, float* residual_buffer,
                      const float* residual_mean, const float* residual_inv) {
  using namespace Eigen::internal;
  const packet slopes = pset1<packet>(slope), no_residual = pset1<packet>(0.0f);
  // Channels-first planes, and voxels of repeated statistics, normalise the whole step as one run.
  const bool one_channel = channels == 1, whole_step = one_channel || repeats_per_voxel(channels);
  for (std::int64_t v0 = 0; v0 < n; v0 += norm_voxels_per_step) {
    const std::int64_t voxels = std::min(norm_voxels_per_step, n - v0), count = voxels * channels;
    const float* in = floats_at(x, v0 * channels, count, buffer);
    const float* res = Residual ? floats_at(residual, v0 * channels, count, residual_buffer) : nullptr;
    float* result = buffer;  // float32 storage is normalised in place (result == in, element by element)
    if constexpr (std::is_same_v<S, float>) result = x + v0 * channels;
    const std::int64_t run = whole_step ? count : channels, runs = whole_step ? 1 : voxels;
    for (std::int64_t r = 0; r < runs; ++r) {
      const float* rin = in + r * run;
      const float* rres = Residual ? res + r * run : nullptr;
      float* rout = result + r * run;
      std::int64_t c = 0;
      for (; c + packet_size <= run; c += packet_size) {
        const packet m = one_channel ? pset1<packet>(mean[0]) : ploadu<packet>(mean + c);
        const packet i = one_channel ? pset1<packet>(inv[0]) : ploadu<packet>(inv + c);
        packet r = Residual ? ploadu<packet>(rres + c) : no_residual;
        if constexpr (NormalizedResidual) {
          const packet rm = one_channel ? pset1<packet>(residual_mean[0]) : ploadu<packet>(residual_mean + c);
          const packet ri = one_channel ? pset1<packet>(residual_inv[0]) : ploadu<packet>(residual_inv + c);
          r = pmul(psub(r, rm), ri);
        }
        pstoreu(rout + c, normalized<Residual, Leaky>(ploadu<packet>(rin + c), m, i, r, slopes));
      }
      for (; c < run; ++c) {
        const std::int64_t k = one_channel ? 0 : c;
        float r = Residual ? rres[c] : 0.0f;
        if constexpr (NormalizedResidual) r = (r - residual_mean[k]) * residual_inv[k];
        rout[c] = normalized<Residual, Leaky>(rin[c], mean[k], inv[k], r, slope);
      }
    }
    if constexpr (!std::is_same_v<S, float>) from_floats(buffer, x + v0 * channels, count);
  }
}

/// normalize_run_as for the epilogue `e`; a residual with statistics (residual_mean and residual_inv, laid out as
/// mean and inv) joins normalised.
template <class S>
void normalize_run(S* x, const S* residual, std::int64_t n, std::int64_t channels, const float* mean, const float* inv,
                   const ops::instance_norm_epilogue& e, float* buffer, float* residual_buffer,
                   const float* residual_mean = nullptr, const float* residual_inv = nullptr) {
  const float slope = e.negative_slope.value_or(0.0f);
  const auto run = [&](auto residual_mode, auto leaky) {
    constexpr int mode = decltype(residual_mode)::value;  // 0: none, 1: as stored, 2: normalised
    normalize_run_as<mode != 0, decltype(leaky)::value, mode == 2>(x, residual, n, channels, mean, inv, slope, buffer,
                                                                   residual_buffer, residual_mean, residual_inv);
  };
  const auto with_leaky = [&](auto residual_mode) {
    if (e.negative_slope) {
      run(residual_mode, std::true_type{});
    } else {
      run(residual_mode, std::false_type{});
    }
  };
  if (!residual) {
    with_leaky(std::integral_constant<int, 0>{});
  } else if (residual_mean) {
    with_leaky(std::integral_constant<int, 2>{});
  } else {
    with_leaky(std::integral_constant<int, 1>{});
  }
}

/// Floats of `buffer` accumulate_moments uses for C channels.
inline std::int64_t moments_scratch(std::int64_t channels) {
  return (repeats_per_voxel(channels) ? 4 * norm_voxels_per_step : norm_voxels_per_step + 3) * channels;
}

/// Adds sum(x - shift) and sum((x - shift)^2) over n voxels of C interleaved channels into sum/sq (double). The shift
/// (one sample of each channel) keeps the single-pass variance free of cancellation. Values are summed in float32
/// packets, at most 64 terms per sum (about 2^-18 of their magnitude), and those sums added to the totals in double
/// (float32 totals drift over 96^3 voxels): per channel over each step of norm_voxels_per_step voxels, or where
/// repeats_per_voxel(C) per position of the step over up to 64 steps. `buffer`: moments_scratch(C) floats.
template <class S>
void accumulate_moments(const S* x, std::int64_t n, std::int64_t channels, const double* __restrict shift,
                        double* __restrict sum, double* __restrict sq, float* buffer) {
  if (repeats_per_voxel(channels)) {
    const std::int64_t step_values = norm_voxels_per_step * channels;
    float* __restrict shifts = buffer + step_values;
    float* __restrict position_sum = shifts + step_values;
    float* __restrict position_sq = position_sum + step_values;
    repeat_per_voxel(shift, channels, shifts);
    constexpr std::int64_t steps_per_fold = 64;
    for (std::int64_t f0 = 0; f0 < n; f0 += steps_per_fold * norm_voxels_per_step) {
      std::fill_n(position_sum, 2 * step_values, 0.0f);
      const std::int64_t f1 = std::min(n, f0 + steps_per_fold * norm_voxels_per_step);
      for (std::int64_t v0 = f0; v0 < f1; v0 += norm_voxels_per_step) {
        const std::int64_t count = std::min(norm_voxels_per_step, f1 - v0) * channels;
        const float* __restrict values = floats_at(x, v0 * channels, count, buffer);
        for (std::int64_t i = 0; i < count; ++i) {
          const float d = values[i] - shifts[i];
          position_sum[i] += d;
          position_sq[i] += d * d;
        }
      }
      for (std::int64_t i = 0; i < step_values; ++i) {
        sum[i % channels] += position_sum[i];
        sq[i % channels] += position_sq[i];
      }
    }
    return;
  }
  float* __restrict step_shift = buffer + norm_voxels_per_step * channels;
  float* __restrict step_sum = step_shift + channels;
  float* __restrict step_sq = step_sum + channels;
  for (std::int64_t c = 0; c < channels; ++c) step_shift[c] = static_cast<float>(shift[c]);
  for (std::int64_t v0 = 0; v0 < n; v0 += norm_voxels_per_step) {
    const std::int64_t voxels = std::min(norm_voxels_per_step, n - v0);
    const float* __restrict values = floats_at(x, v0 * channels, voxels * channels, buffer);
    if (channels == 1) {  // a channels-first plane: the step is one run
      const auto d = Eigen::Map<const Eigen::ArrayXf>(values, voxels) - step_shift[0];
      sum[0] += d.sum();
      sq[0] += d.square().sum();
      continue;
    }
    std::fill_n(step_sum, 2 * channels, 0.0f);
    for (std::int64_t v = 0; v < voxels; ++v) {
      const float* __restrict row = values + v * channels;
SWINFER_CPU_INDEPENDENT_ITERATIONS
      for (std::int64_t c = 0; c < channels; ++c) {
        const float d = row[c] - step_shift[c];
        step_sum[c] += d;
        step_sq[c] += d * d;
      }
    }
    for (std::int64_t c = 0; c < channels; ++c) {
      sum[c] += step_sum[c];
      sq[c] += step_sq[c];
    }
  }
}

}  // namespace internal

/// InstanceNorm's statistics per (sample, channel), [n][c]: the mean and 1 / sqrt(biased variance + eps).
struct instance_statistics {
  std::vector<float> mean, inv;
};

namespace internal {

/// About 64 blocks per sample, of 512 to 8192 voxels (multiples of 64): many cores stay busy on the small grids
/// (a 24^3 grid in 8192-voxel blocks kept 2 workers busy); the blocks, and so the sums, depend on the grid alone.
inline std::int64_t norm_block_voxels(std::int64_t voxels) {
  return std::clamp<std::int64_t>(round_up(voxels / 64, 64), 512, 8192);
}

/// The mean and inverse deviation of `voxels` values from their sums shifted by `shift`.
inline void finish_moments(double shift, double sum, double sq, std::int64_t voxels, float eps, float& mean,
                           float& inv) {
  const double mean_shifted = sum / static_cast<double>(voxels);
  const double var = std::max(0.0, sq / static_cast<double>(voxels) - mean_shifted * mean_shifted);
  mean = static_cast<float>(shift + mean_shifted);
  inv = static_cast<float>(1.0 / std::sqrt(var + eps));
}

}  // namespace internal

/// The statistics of x (either layout). Mean and biased variance are accumulated in double from float32 sums of 64
/// voxels (float32 totals drift over 96^3 voxels).
/// Threads, channels-last: each sample's voxels split into blocks (their size set by the grid) whose per-channel
///   partial moments are summed in a fixed order (results do not depend on the thread count).
/// Threads, channels-first: work items are (sample, channel) planes.
template <class S>
instance_statistics instance_norm_statistics(context& ctx, const tensor<S>& x, float eps) {
  const shape5& s = x.shape();
  const std::int64_t voxels = s.d * s.h * s.w, c = s.c;
  instance_statistics stats{std::vector<float>(static_cast<std::size_t>(s.n * c)),
                            std::vector<float>(static_cast<std::size_t>(s.n * c))};
  if (voxels == 0 || c == 0 || s.n == 0) return stats;
  if (x.layout() == layout_kind::ncdhw) {
    ctx.parallel_for(s.n * c, 1, [&](std::int64_t p0, std::int64_t p1, int worker) {
      float* buffer = ctx.workspace(worker).reserve(internal::moments_scratch(1));
      for (std::int64_t p = p0; p < p1; ++p) {
        const S* plane = x.data() + p * voxels;
        const double shift = to_float(plane[0]);
        double sum = 0, sq = 0;
        internal::accumulate_moments(plane, voxels, 1, &shift, &sum, &sq, buffer);
        internal::finish_moments(shift, sum, sq, voxels, eps, stats.mean[p], stats.inv[p]);
      }
    });
    return stats;
  }
  const std::int64_t block = internal::norm_block_voxels(voxels), blocks = (voxels + block - 1) / block;
  std::vector<double> shift(static_cast<std::size_t>(s.n * c));
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t ch = 0; ch < c; ++ch) shift[n * c + ch] = to_float(x.data()[n * voxels * c + ch]);
  std::vector<double> partial(static_cast<std::size_t>(s.n * blocks * 2 * c), 0.0);  // [n][block][sum | sq][c]
  ctx.parallel_for(s.n * blocks, 1, [&](std::int64_t t0, std::int64_t t1, int worker) {
    float* buffer = ctx.workspace(worker).reserve(internal::moments_scratch(c));
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t n = t / blocks, v0 = (t % blocks) * block, v1 = std::min(voxels, v0 + block);
      double* sums = partial.data() + t * 2 * c;
      internal::accumulate_moments(x.data() + (n * voxels + v0) * c, v1 - v0, c, shift.data() + n * c, sums, sums + c,
                                   buffer);
    }
  });
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      double sum = 0, sq = 0;
      for (std::int64_t b = 0; b < blocks; ++b) {
        sum += partial[((n * blocks + b) * 2) * c + ch];
        sq += partial[((n * blocks + b) * 2 + 1) * c + ch];
      }
      internal::finish_moments(shift[n * c + ch], sum, sq, voxels, eps, stats.mean[n * c + ch], stats.inv[n * c + ch]);
    }
  return stats;
}

namespace internal {

/// x = act((x - mean) * inv + residual) in place with x's statistics; a residual given its statistics joins
/// normalised. A float32 pass over blocks of voxels (channels-last) or over (sample, channel) planes (channels-first).
template <class S>
void normalize(context& ctx, tensor<S>& x, const tensor<S>* residual, const instance_statistics& stats,
               const instance_statistics* residual_stats, const ops::instance_norm_epilogue& e) {
  const shape5& s = x.shape();
  const std::int64_t voxels = s.d * s.h * s.w, c = s.c;
  if (x.layout() == layout_kind::ncdhw) {
    ctx.parallel_for(s.n * c, 1, [&](std::int64_t p0, std::int64_t p1, int worker) {
      float* buffer = ctx.workspace(worker).reserve(2 * norm_voxels_per_step);
      for (std::int64_t p = p0; p < p1; ++p) {
        normalize_run(x.data() + p * voxels, residual ? residual->data() + p * voxels : nullptr, voxels, 1,
                      &stats.mean[p], &stats.inv[p], e, buffer, buffer + norm_voxels_per_step,
                      residual_stats ? &residual_stats->mean[p] : nullptr,
                      residual_stats ? &residual_stats->inv[p] : nullptr);
      }
    });
    return;
  }
  // The conversion buffers, and where statistics repeat per voxel the repeated means and invs (x's, the residual's).
  const bool repeated = repeats_per_voxel(c);
  const int statistics = residual_stats ? 4 : 2;
  const std::int64_t step_values = norm_voxels_per_step * c;
  const std::int64_t block = norm_block_voxels(voxels), blocks = (voxels + block - 1) / block;
  ctx.parallel_for(s.n * blocks, 1, [&](std::int64_t t0, std::int64_t t1, int worker) {
    float* buffer = ctx.workspace(worker).reserve((repeated ? 2 + statistics : 2) * step_values);
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t n = t / blocks, v0 = (t % blocks) * block, v1 = std::min(voxels, v0 + block);
      const std::int64_t offset = (n * voxels + v0) * c;
      const float* per_channel[4] = {stats.mean.data() + n * c, stats.inv.data() + n * c,
                                     residual_stats ? residual_stats->mean.data() + n * c : nullptr,
                                     residual_stats ? residual_stats->inv.data() + n * c : nullptr};
      if (repeated) {
        for (int k = 0; k < statistics; ++k) {
          float* laid_out = buffer + (2 + k) * step_values;
          repeat_per_voxel(per_channel[k], c, laid_out);
          per_channel[k] = laid_out;
        }
      }
      normalize_run(x.data() + offset, residual ? residual->data() + offset : nullptr, v1 - v0, c, per_channel[0],
                    per_channel[1], e, buffer, buffer + step_values, per_channel[2], per_channel[3]);
    }
  });
}

}  // namespace internal

/// \brief x = act(IN(x) + residual) in place, per (sample, channel) over D*H*W voxels; either layout: the statistics
/// (instance_norm_statistics), then a float32 normalisation pass (internal::normalize).
template <class S>
void instance_norm(context& ctx, tensor<S>& x, const tensor<S>* residual, const ops::instance_norm_epilogue& e) {
  const shape5& s = x.shape();
  ops::check_instance_norm(s, residual ? &residual->shape() : nullptr);
  if (residual && residual->layout() != x.layout()) detail::fail("instance_norm: residual and x need one layout");
  if (s.spatial() == 0 || s.c == 0 || s.n == 0) return;
  const auto timed = ctx.time_op([&] {
    return op_label{"instance_norm",
                    detail::concat("instance_norm C", s.c, " @", grid_name(s), residual ? " +residual" : "")};
  });
  internal::normalize(ctx, x, residual, instance_norm_statistics(ctx, x, e.eps), nullptr, e);
}

/// \brief x = act(IN(x) + IN(residual)) in place, `residual` left as it is (ops::ref::instance_norm_sum): both
/// tensors' statistics, then one normalisation pass that normalises the residual as it adds it, instead of writing
/// it normalised and reading it again.
template <class S>
void instance_norm_sum(context& ctx, tensor<S>& x, const tensor<S>& residual, const ops::instance_norm_epilogue& e) {
  const shape5& s = x.shape();
  ops::check_instance_norm(s, &residual.shape());
  if (residual.layout() != x.layout()) detail::fail("instance_norm_sum: residual and x need one layout");
  if (s.spatial() == 0 || s.c == 0 || s.n == 0) return;
  const auto timed = ctx.time_op([&] {
    return op_label{"instance_norm",
                    detail::concat("instance_norm C", s.c, " @", grid_name(s), " +normalised residual")};
  });
  const instance_statistics residual_stats = instance_norm_statistics(ctx, residual, e.eps);
  internal::normalize(ctx, x, &residual, instance_norm_statistics(ctx, x, e.eps), &residual_stats, e);
}

}  // namespace swinfer::cpu

#undef SWINFER_CPU_INDEPENDENT_ITERATIONS
