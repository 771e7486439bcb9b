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

/// Adds sum(x - shift) and sum((x - shift)^2) over a channels-first plane's n values into sum/sq (double). The shift
/// (one of the plane's values) keeps the single-pass variance free of cancellation. Values are summed in float32, at
/// most norm_voxels_per_step terms per sum (about 2^-18 of their magnitude), and those sums added in double (float32
/// totals drift over 96^3 voxels). `buffer`: norm_voxels_per_step floats.
template <class S>
void accumulate_plane_moments(const S* x, std::int64_t n, double shift, double& sum, double& sq, float* buffer) {
  const auto shift_f = static_cast<float>(shift);
  for (std::int64_t v0 = 0; v0 < n; v0 += norm_voxels_per_step) {
    const std::int64_t voxels = std::min(norm_voxels_per_step, n - v0);
    const auto d = Eigen::Map<const Eigen::ArrayXf>(floats_at(x, v0, voxels, buffer), voxels) - shift_f;
    sum += d.sum();
    sq += d.square().sum();
  }
}

/// Channel slots of a channels-last row as row_moments reads it: whole packets.
inline std::int64_t padded_channels(std::int64_t channels) { return round_up(channels, packet_size); }

/// row_moments for the P packets of channels from c0, the values taken as storage S holds them (as_stored). Per
/// segment: float32 sums from the segment's first value, two accumulators per packet (even and odd voxels: more adds
/// in flight than one chain's latency allows); the segments merged in order (Chan et al.'s pairwise update).
template <class S, int P>
void row_moments_packets(const float* values, std::int64_t ld, std::int64_t voxels, std::int64_t c0, float* mean,
                         float* m2) {
  using namespace Eigen::internal;
  packet row_mean[P], row_m2[P], shift[P], sum[2][P], sq[2][P];
  const auto accumulate = [&](int a, std::int64_t v) {
    const float* at = values + v * ld + c0;
    for (int k = 0; k < P; ++k) {
      const packet d = psub(as_stored<S>(ploadu<packet>(at + k * packet_size)), shift[k]);
      sum[a][k] = padd(sum[a][k], d);
      sq[a][k] = pmadd(d, d, sq[a][k]);
    }
  };
  const packet zero = pset1<packet>(0.0f);
  for (int k = 0; k < P; ++k) row_mean[k] = row_m2[k] = zero;
  for (std::int64_t v0 = 0; v0 < voxels; v0 += norm_voxels_per_step) {
    const std::int64_t v1 = std::min(voxels, v0 + norm_voxels_per_step);
    for (int k = 0; k < P; ++k) {
      shift[k] = as_stored<S>(ploadu<packet>(values + v0 * ld + c0 + k * packet_size));
      sum[0][k] = sum[1][k] = sq[0][k] = sq[1][k] = zero;
    }
    std::int64_t v = v0;
    for (; v + 2 <= v1; v += 2) {
      accumulate(0, v);
      accumulate(1, v + 1);
    }
    if (v < v1) accumulate(0, v);
    const auto n = static_cast<float>(v1 - v0), before = static_cast<float>(v0);
    const packet inv_n = pset1<packet>(1.0f / n);
    for (int k = 0; k < P; ++k) {
      const packet s = padd(sum[0][k], sum[1][k]);
      const packet segment_mean = pmadd(s, inv_n, shift[k]);
      const packet segment_m2 = psub(padd(sq[0][k], sq[1][k]), pmul(pmul(s, s), inv_n));  // merge() clamps at 0
      if (v0 == 0) {
        row_mean[k] = segment_mean;
        row_m2[k] = segment_m2;
      } else {
        const packet delta = psub(segment_mean, row_mean[k]);
        row_mean[k] = pmadd(delta, pset1<packet>(n / (before + n)), row_mean[k]);
        const packet weight = pset1<packet>(before * n / (before + n));
        row_m2[k] = padd(padd(row_m2[k], segment_m2), pmul(pmul(delta, delta), weight));
      }
    }
  }
  for (int k = 0; k < P; ++k) {
    pstoreu(mean + c0 + k * packet_size, row_mean[k]);
    pstoreu(m2 + c0 + k * packet_size, row_m2[k]);
  }
}

/// \brief The moments of one channels-last row of `voxels` voxels, voxel v's channel c at values[v * ld + c] (readable
/// up to padded_channels(channels)), taken as storage S holds them: per channel the row's mean and its sum of squared
/// deviations m2, into mean[c] and m2[c] (written up to padded_channels(channels)). Segments of up to
/// norm_voxels_per_step voxels are summed in float32 from their first value (the shift, against cancellation) and
/// merged. A convolution's epilogue and the statistics pass both compute a row's moments here from the same values,
/// so their statistics agree bit for bit.
template <class S>
void row_moments(const float* values, std::int64_t ld, std::int64_t voxels, std::int64_t channels, float* mean,
                 float* m2) {
  constexpr int most = 4;  // packets at a time
  const std::int64_t packets = padded_channels(channels) / packet_size;
  std::int64_t k = 0;
  for (; k + most <= packets; k += most) row_moments_packets<S, most>(values, ld, voxels, k * packet_size, mean, m2);
  switch (packets - k) {
    case 3: row_moments_packets<S, 3>(values, ld, voxels, k * packet_size, mean, m2); break;
    case 2: row_moments_packets<S, 2>(values, ld, voxels, k * packet_size, mean, m2); break;
    case 1: row_moments_packets<S, 1>(values, ld, voxels, k * packet_size, mean, m2); break;
    default: break;
  }
}

}  // namespace internal

/// InstanceNorm's moments per (sample, channel), [n][c]: the mean and the biased variance, in double.
struct channel_moments {
  std::vector<double> mean, variance;

  /// Fails, naming `op` and the shape, unless these are moments for a tensor of shape s (one per sample and channel).
  void check_for(const shape5& s, const char* op) const {
    const auto count = static_cast<std::size_t>(s.n * s.c);
    if (mean.size() != count || variance.size() != count) {
      detail::fail(op, ": moments for ", mean.size(), " (sample, channel) pairs given for a tensor ", s.str(), " of ",
                   count);
    }
  }
};

/// InstanceNorm's statistics per (sample, channel), [n][c]: the mean and 1 / sqrt(biased variance + eps).
struct instance_statistics {
  std::vector<float> mean, inv;
};

/// The statistics of moments m for the norm's eps.
inline instance_statistics statistics_from(const channel_moments& m, float eps) {
  instance_statistics stats{std::vector<float>(m.mean.size()), std::vector<float>(m.mean.size())};
  for (std::size_t i = 0; i < m.mean.size(); ++i) {
    stats.mean[i] = static_cast<float>(m.mean[i]);
    stats.inv[i] = static_cast<float>(1.0 / std::sqrt(m.variance[i] + eps));
  }
  return stats;
}

/// \brief The moments of every row of a channels-last tensor (its (n, z, y) lines of W voxels), recorded as the rows
/// are written or read, in any order and on any worker, then merged per (sample, channel): blocks of rows_per_block
/// rows in double, in parallel, then the blocks in order (the parallel variance of Chan et al.: each part's squared
/// deviations plus its count times its mean's squared offset from the whole's). The blocks are fixed by the shape, so
/// the result depends on neither the thread count nor who recorded a row. The records, [row][mean | m2][C padded to
/// whole packets] floats, live in the context's shared scratch until merge().
class row_moment_records {
 public:
  row_moment_records(context& ctx, const shape5& s)
      : ctx_(ctx), shape_(s), stride_(2 * internal::padded_channels(s.c)),
        records_(ctx.shared_workspace().reserve(s.n * s.d * s.h * stride_)) {}

  /// Row `row`'s channels [c0, c0 + count) from values (internal::row_moments' layout; c0 a multiple of
  /// group_width, or 0), taken as storage S holds them.
  template <class S>
  void record(std::int64_t row, const float* values, std::int64_t ld, std::int64_t c0, std::int64_t count) const {
    float* at = records_ + row * stride_ + c0;
    internal::row_moments<S>(values, ld, shape_.w, count, at, at + stride_ / 2);
  }

  channel_moments merge() const {
    const std::int64_t c = shape_.c, rows = shape_.d * shape_.h, blocks = (rows + rows_per_block - 1) / rows_per_block;
    std::vector<double> partial(static_cast<std::size_t>(shape_.n * blocks * 2 * c));  // [n][block][mean | m2][c]
    const auto row_voxels = static_cast<double>(shape_.w);
    ctx_.parallel_for(shape_.n * blocks, 1, [&](std::int64_t b0, std::int64_t b1, int) {
      for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t r0 = (b / blocks) * rows + (b % blocks) * rows_per_block;
        const std::int64_t r1 = std::min((b / blocks + 1) * rows, r0 + rows_per_block);
        double* mean = partial.data() + b * 2 * c;
        double* m2 = mean + c;
        for (std::int64_t r = r0; r < r1; ++r) {
          const float* row_mean = records_ + r * stride_;
          for (std::int64_t ch = 0; ch < c; ++ch) mean[ch] += row_mean[ch];
        }
        for (std::int64_t ch = 0; ch < c; ++ch) mean[ch] /= static_cast<double>(r1 - r0);
        for (std::int64_t r = r0; r < r1; ++r) {
          const float* row_mean = records_ + r * stride_;
          const float* row_m2 = row_mean + stride_ / 2;
          for (std::int64_t ch = 0; ch < c; ++ch) {
            const double offset = row_mean[ch] - mean[ch];
            m2[ch] += row_m2[ch] + row_voxels * offset * offset;
          }
        }
      }
    });
    channel_moments m{std::vector<double>(static_cast<std::size_t>(shape_.n * c), 0.0),
                      std::vector<double>(static_cast<std::size_t>(shape_.n * c), 0.0)};
    const auto block_voxels = [&](std::int64_t b) {
      return row_voxels * static_cast<double>(std::min(rows, (b + 1) * rows_per_block) - b * rows_per_block);
    };
    const double voxels = row_voxels * static_cast<double>(rows);
    for (std::int64_t n = 0; n < shape_.n; ++n) {
      double* mean = m.mean.data() + n * c;
      double* variance = m.variance.data() + n * c;
      const double* first = partial.data() + n * blocks * 2 * c;
      for (std::int64_t b = 0; b < blocks; ++b)
        for (std::int64_t ch = 0; ch < c; ++ch) mean[ch] += block_voxels(b) * first[b * 2 * c + ch];
      for (std::int64_t ch = 0; ch < c; ++ch) mean[ch] /= voxels;
      for (std::int64_t b = 0; b < blocks; ++b)
        for (std::int64_t ch = 0; ch < c; ++ch) {
          const double offset = first[b * 2 * c + ch] - mean[ch];
          variance[ch] += first[b * 2 * c + c + ch] + block_voxels(b) * offset * offset;
        }
      for (std::int64_t ch = 0; ch < c; ++ch) variance[ch] = std::max(0.0, variance[ch] / voxels);
    }
    return m;
  }

 private:
  static constexpr std::int64_t rows_per_block = 64;
  context& ctx_;
  shape5 shape_;
  std::int64_t stride_;  ///< floats per row record
  float* records_;
};

/// The moments of x (either layout) in a pass over it.
/// Channels-last: row_moment_records, the rows split over the workers.
/// Channels-first: work items are (sample, channel) planes, each summed from its first value
///   (internal::accumulate_plane_moments).
template <class S>
channel_moments instance_norm_moments(context& ctx, const tensor<S>& x) {
  const shape5& s = x.shape();
  const std::int64_t voxels = s.d * s.h * s.w, c = s.c;
  if (voxels == 0 || c == 0 || s.n == 0) {
    return {std::vector<double>(static_cast<std::size_t>(s.n * c)),
            std::vector<double>(static_cast<std::size_t>(s.n * c))};
  }
  if (x.layout() == layout_kind::ncdhw) {
    channel_moments m{std::vector<double>(static_cast<std::size_t>(s.n * c)),
                      std::vector<double>(static_cast<std::size_t>(s.n * c))};
    ctx.parallel_for(s.n * c, 1, [&](std::int64_t p0, std::int64_t p1, int worker) {
      float* buffer = ctx.workspace(worker).reserve(internal::norm_voxels_per_step);
      for (std::int64_t p = p0; p < p1; ++p) {
        const S* plane = x.data() + p * voxels;
        const double shift = to_float(plane[0]);
        double sum = 0, sq = 0;
        internal::accumulate_plane_moments(plane, voxels, shift, sum, sq, buffer);
        const double mean_shifted = sum / static_cast<double>(voxels);
        m.mean[p] = shift + mean_shifted;
        m.variance[p] = std::max(0.0, sq / static_cast<double>(voxels) - mean_shifted * mean_shifted);
      }
    });
    return m;
  }
  const row_moment_records records(ctx, s);
  const std::int64_t rows = s.n * s.d * s.h, row_values = s.w * c, ld = internal::padded_channels(c);
  // Rows are read where they are when they are float32 and whole packets; converted or padded otherwise.
  const bool in_place = std::is_same_v<S, float> && ld == c;
  ctx.parallel_for(rows, ctx.even_grain(rows), [&](std::int64_t r0, std::int64_t r1, int worker) {
    float* buffer = in_place ? nullptr : ctx.workspace(worker).reserve(s.w * ld);
    for (std::int64_t r = r0; r < r1; ++r) {
      const S* row = x.data() + r * row_values;
      if constexpr (std::is_same_v<S, float>) {
        if (in_place) {
          records.record<float>(r, row, c, 0, c);
          continue;
        }
      }
      if (ld == c) {
        to_floats(row, buffer, row_values);
      } else {
        for (std::int64_t v = 0; v < s.w; ++v) to_floats(row + v * c, buffer + v * ld, c);
      }
      records.record<float>(r, buffer, ld, 0, c);
    }
  });
  return records.merge();
}

/// The statistics of x (either layout): its moments (instance_norm_moments) for the norm's eps.
template <class S>
instance_statistics instance_norm_statistics(context& ctx, const tensor<S>& x, float eps) {
  return statistics_from(instance_norm_moments(ctx, x), eps);
}

namespace internal {

/// About 64 blocks per sample, of 512 to 8192 voxels (multiples of 64): many cores stay busy on the small grids
/// (a 24^3 grid in 8192-voxel blocks kept 2 workers busy).
inline std::int64_t norm_block_voxels(std::int64_t voxels) {
  return std::clamp<std::int64_t>(round_up(voxels / 64, 64), 512, 8192);
}

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

/// The checks, timing and normalisation pass of the norms below: x's moments (a pass over x when null), and where
/// the residual joins normalised, its moments (a pass over it when null).
template <class S>
void instance_norm_op(context& ctx, tensor<S>& x, const channel_moments* x_moments, const tensor<S>* residual,
                      bool normalised_residual, const channel_moments* residual_moments,
                      const ops::instance_norm_epilogue& e) {
  const shape5& s = x.shape();
  ops::check_instance_norm(s, residual ? &residual->shape() : nullptr);
  if (residual && residual->layout() != x.layout()) detail::fail("instance_norm: residual and x need one layout");
  if (x_moments) x_moments->check_for(s, "instance_norm");
  if (residual_moments) residual_moments->check_for(s, "instance_norm");
  if (s.spatial() == 0 || s.c == 0 || s.n == 0) return;
  const auto timed = ctx.time_op([&] {
    return op_label{"instance_norm", detail::concat("instance_norm C", s.c, " @", grid_name(s),
                                                    !residual             ? ""
                                                    : normalised_residual ? " +normalised residual"
                                                                          : " +residual")};
  });
  const auto statistics = [&](const tensor<S>& t, const channel_moments* m) {
    return m ? statistics_from(*m, e.eps) : instance_norm_statistics(ctx, t, e.eps);
  };
  if (normalised_residual) {
    const instance_statistics residual_stats = statistics(*residual, residual_moments);
    normalize(ctx, x, residual, statistics(x, x_moments), &residual_stats, e);
  } else {
    normalize(ctx, x, residual, statistics(x, x_moments), nullptr, e);
  }
}

}  // namespace internal

/// \brief x = act(IN(x) + residual) in place, per (sample, channel) over D*H*W voxels; either layout: the statistics
/// (instance_norm_statistics), then a float32 normalisation pass (internal::normalize).
template <class S>
void instance_norm(context& ctx, tensor<S>& x, const tensor<S>* residual, const ops::instance_norm_epilogue& e) {
  internal::instance_norm_op(ctx, x, nullptr, residual, false, nullptr, e);
}

/// instance_norm with x's moments gathered where x was written (conv3d's run with moments): no pass over x for them.
template <class S>
void instance_norm(context& ctx, tensor<S>& x, const channel_moments& x_moments, const tensor<S>* residual,
                   const ops::instance_norm_epilogue& e) {
  internal::instance_norm_op(ctx, x, &x_moments, residual, false, nullptr, e);
}

/// \brief x = act(IN(x) + IN(residual)) in place, `residual` left as it is (ops::ref::instance_norm_sum): both
/// tensors' statistics, then one normalisation pass that normalises the residual as it adds it, instead of writing
/// it normalised and reading it again.
template <class S>
void instance_norm_sum(context& ctx, tensor<S>& x, const tensor<S>& residual, const ops::instance_norm_epilogue& e) {
  internal::instance_norm_op(ctx, x, nullptr, &residual, true, nullptr, e);
}

/// instance_norm_sum with both tensors' moments gathered where they were written.
template <class S>
void instance_norm_sum(context& ctx, tensor<S>& x, const channel_moments& x_moments, const tensor<S>& residual,
                       const channel_moments& residual_moments, const ops::instance_norm_epilogue& e) {
  internal::instance_norm_op(ctx, x, &x_moments, &residual, true, &residual_moments, e);
}

}  // namespace swinfer::cpu

