// swinfer hip backend: the 3x3x3 stride-1 convolution of channels-last fp16/bf16 tensors on the matrix cores, from
// a halo tile. Included only by gemm.cu (conv3d), after gemm_core.cuh.
//
// The tiled GEMM (gemm_core.cuh) reads every input element 27 times, once per kernel tap, each time through the
// im2col index arithmetic, and normalises it each time when the InstanceNorm is applied on load. Here a block owns
// a box of 4 x 4 x 8 output positions and stages the box's input neighbourhood (6 x 6 x 10 positions, 48 channels at
// a time) in shared memory once, normalised once; the 27 taps then read their A fragments from that tile at a
// shift (the rows of a fragment are output positions of the box, gathered by gpu::mma_load_a_rows), and only the
// weights (48 outputs x 48 channels per tap) are staged per step. Same float32 accumulation, same epilogue, the
// same k order (tap, then channel) as the tiled GEMM, so a convolution gives the same values on either kernel up to
// the order of the float32 additions.
//
// A source (conv_loader in gemm.cu) provides
//   const element* at(int n, int z, int y, int x, int ci) const   channels ci .. ci+V-1 of sample n at input
//                                        position (z, y, x), 16-byte aligned, or null in the padding
//   void normalize_channels(int n, int ci, pack<element, V>&) const   the norm on load of those channels (or none)
//   od, oh, ow, cin, pz, py, px          the output extents, input channels and padding
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "gemm_core.cuh"

namespace swinfer::hip::kern {

/// The input channels staged at a time, and the output channels of a block: fs48 models have multiples of 48.
constexpr int halo_channels = 48;

/// A block's output box, 4 x 4 x 8 positions (d, h, w), row i at (i / 32, i / 8 % 4, i % 8), and its input
/// neighbourhood under a 3x3x3 kernel of stride 1, 6 x 6 x 10 positions ("halo" rows in the same order).
struct halo_box {
  static constexpr int d = 4, h = 4, w = 8, rows = d * h * w;
  static constexpr int halo_d = d + 2, halo_h = h + 2, halo_w = w + 2, halo_rows = halo_d * halo_h * halo_w;
  /// The halo row under output row i at tap (0, 0, 0).
  SWINFER_GPU_HOST_DEVICE static int halo_row(int i) { return ((i / (h * w)) * halo_h + i / w % h) * halo_w + i % w; }
};

/// The rows of C a box covers (the epilogue's row map, as row_range): output positions inside the volume only.
struct box_rows {
  std::int64_t n;
  int z0, y0, x0;
  std::int64_t od, oh, ow;
  SWINFER_GPU_DEVICE bool inside(int i) const {
    return z0 + i / (halo_box::h * halo_box::w) < od && y0 + i / halo_box::w % halo_box::h < oh &&
           x0 + i % halo_box::w < ow;
  }
  SWINFER_GPU_DEVICE std::int64_t global(int i) const {
    const std::int64_t z = z0 + i / (halo_box::h * halo_box::w), y = y0 + i / halo_box::w % halo_box::h;
    return ((n * od + z) * oh + y) * ow + x0 + i % halo_box::w;
  }
};

/// Channels c0 .. c0 + halo_channels - 1 of the box's neighbourhood (corner (z, y, x) in input coordinates, in the
/// padding where negative) into halo[row * ld + c], normalised where the source normalises, 0 in the padding. Loads
/// go out `batch` packs per thread at a time, so their latencies overlap.
template <class T, class Source>
SWINFER_GPU_DEVICE void stage_halo(const Source& in, int n, int z, int y, int x, int c0, T* halo, int ld) {
  constexpr int V = pack_width<T>, per_row = halo_channels / V, total = halo_box::halo_rows * per_row, batch = 6;
  const int threads = static_cast<int>(blockDim.x);
  for (int first = static_cast<int>(threadIdx.x); first < total; first += batch * threads) {
    pack<T, V> v[batch];
    const T* p[batch];
#pragma unroll
    for (int j = 0; j < batch; ++j) {
      const int i = first + j * threads, r = i / per_row, ci = c0 + i % per_row * V;
      p[j] = i < total ? in.at(n, z + r / (halo_box::halo_h * halo_box::halo_w),
                               y + r / halo_box::halo_w % halo_box::halo_h, x + r % halo_box::halo_w, ci)
                       : nullptr;
      v[j] = p[j] ? load_pack<T, V>(p[j]) : zero_pack<T, V>();
    }
#pragma unroll
    for (int j = 0; j < batch; ++j) {
      const int i = first + j * threads;
      if (i >= total) continue;
      if (p[j]) in.normalize_channels(n, c0 + i % per_row * V, v[j]);
      store_pack(halo + (i / per_row) * ld + i % per_row * V, v[j]);
    }
  }
}

/// The convolution of one box and 48 output channels per block.
/// Shapes: input (N, cin, D, H, W) channels-last through `in`, weights (N_out, K = 27 cin) in T, k = tap * cin + ci;
/// C (samples * od * oh * ow, N_out) through `epi`. Geometry: grid (samples * boxes_d * boxes_h * boxes_w, N_out /
/// 48, slices), 4 warps (128 threads on NVIDIA, 256 on CDNA), each owning 32 rows (2 x 3 matrix-core tiles of
/// 16 x 16) of the 128 x 48 output tile. Split K as the tiled GEMM's (`partial` not null): block z sums input
/// channels [z * chunk_slice, (z + 1) * chunk_slice) and stores float32 sums (split_k_partials). Per chunk of 48 input channels: the halo tile (360 x 48, rows 112 bytes apart so an
/// ldmatrix of 8 consecutive rows touches every bank once: 39.4 KiB) staged once, then 27 taps of three 16-deep
/// matrix-core steps, the next tap's weights (48 x 48, 5.3 KiB) loaded into registers while this one multiplies.
template <class T, class Source, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    conv3d_halo_kernel(Source in, rows_loader<T> w, int boxes_d, int boxes_h, int boxes_w, std::int64_t M, int N,
                       int K, int chunk_slice, float* partial, Epi epi) {
  using Tile = mma_tall48_tile;
  static_assert(Tile::bm == halo_box::rows && Tile::bn == halo_channels && Tile::warps_n == 1);
  constexpr int TM = Tile::tm, TN = Tile::tn, ld = halo_channels + 8, taps = 27;
  struct alignas(16) tiles {
    T halo[halo_box::halo_rows][ld];
    T b[Tile::bn][ld];
  };
  __shared__ tiles smem;
  __shared__ std::int64_t b_rows[Tile::bn];
  __shared__ typename Epi::row_type c_rows[Tile::bm];
  __shared__ typename Epi::col_type c_cols[Tile::bn];
  const int wm = static_cast<int>(threadIdx.x) / SWINFER_GPU_WARP_SIZE * TM * 16;
  int box = static_cast<int>(blockIdx.x);
  const int x0 = box % boxes_w * halo_box::w;
  box /= boxes_w;
  const int y0 = box % boxes_h * halo_box::h;
  box /= boxes_h;
  const int z0 = box % boxes_d * halo_box::d, n = box / boxes_d;
  const int n0 = static_cast<int>(blockIdx.y) * Tile::bn;
  operand_stage<Tile::bn, halo_channels, pack_width<T>, mma_warps * 32, rows_loader<T>> b;
  const int b_valid = decltype(b)::stage_rows(w, n0, N, b_rows);
  const epilogue_tables<Tile::bm, Tile::bn, Epi, box_rows> out(epi, c_rows, c_cols,
                                                                box_rows{n, z0, y0, x0, in.od, in.oh, in.ow}, n0, N);
  const split_k_partials sums{partial, M, N};
  const int c_begin = static_cast<int>(blockIdx.z) * chunk_slice;
  const int c_end = c_begin + chunk_slice < in.cin ? c_begin + chunk_slice : in.cin;
  // Each lane's fragment rows: the halo rows under its output rows at tap (0, 0, 0), in elements.
  const auto row_offset = [wm](int i) { return [wm, i](int r) { return halo_box::halo_row(wm + 16 * i + r) * ld; }; };
  float acc[TM][TN][gpu::mma_max_elems] = {};
  for (int c0 = c_begin; c0 < c_end; c0 += halo_channels) {
    __syncthreads();  // the tables are written; the previous chunk's tiles are no longer read
    stage_halo(in, n, z0 - in.pz, y0 - in.py, x0 - in.px, c0, &smem.halo[0][0], ld);
    b.fetch(w, b_rows, b_valid, c0, K);
    b.store_row_major(&smem.b[0][0], ld);
    __syncthreads();
    int ta = 0, tb = 0, tc = 0;  // the tap (a, b, c)
    for (int tap = 0; tap < taps; ++tap) {
      const bool more = tap + 1 < taps;
      if (more) b.fetch(w, b_rows, b_valid, (tap + 1) * in.cin + c0, K);  // in flight while this tap multiplies
      const T* shifted = &smem.halo[(ta * halo_box::halo_h + tb) * halo_box::halo_w + tc][0];
#pragma unroll
      for (int ks = 0; ks < halo_channels; ks += 16) {
        T af[TM][gpu::mma_max_elems], bf[TN][gpu::mma_max_elems];
#pragma unroll
        for (int i = 0; i < TM; ++i) gpu::mma_load_a_rows(shifted + ks, row_offset(i), af[i]);
#pragma unroll
        for (int j = 0; j < TN; ++j) gpu::mma_load_b(&smem.b[16 * j][ks], ld, bf[j]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
      }
      if (more) {  // one weight tile: every warp is past this tap before it is replaced
        __syncthreads();
        b.store_row_major(&smem.b[0][0], ld);
        __syncthreads();
      }
      if (++tc == 3) {
        tc = 0;
        if (++tb == 3) tb = 0, ++ta;
      }
    }
  }
  for_each_mma_output(acc, wm, 0, [&](int r, int c, float v) {
    if (!partial) {
      out.store(epi, r, c, v);
    } else if (out.block_rows.inside(r)) {
      sums.store(out.block_rows.global(r), n0 + c, v);
    }
  });
}

/// Runs the convolution (geometry g, `split` the channels of the source's first part) on conv3d_halo_kernel and
/// returns true where it applies: fp16/bf16 on matrix cores, a 3x3x3 kernel of stride 1, channels-last input in
/// packs, input channels, both parts' and the outputs in multiples of 48, and (env.conv automatic) boxes that hold at
/// least half as many output positions as they span (not 6^3 and below, at the bottom of the U, where the tiled
/// GEMM with split K runs). Where the boxes and column tiles give fewer than two blocks per multiprocessor, the
/// input channels are split across blocks (whole chunks of 48) as the tiled GEMM splits K. Otherwise returns false
/// and launches nothing.
template <class T, class Source, class Epi>
bool run_conv3d_halo(const launch_env& env, const Source& in, const T* weights, const conv_geometry& g, int split,
                     std::int64_t samples, const Epi& epi) {
  if constexpr (std::is_same_v<T, float>) {
    return false;
  } else {
    const int K = 27 * g.cin;
    const bool shape_fits = g.kernel == std::array<int, 3>{3, 3, 3} && g.stride == std::array<int, 3>{1, 1, 1} &&
                            g.cin % halo_channels == 0 && split % halo_channels == 0 &&
                            g.cout % halo_channels == 0;
    if (env.conv == conv_kernel_choice::gemm || !env.matrix_cores || !in.vector_ok || !shape_fits ||
        !packs_fit<T>(weights, {K})) {
      return false;
    }
    const std::int64_t boxes_d = (in.od + halo_box::d - 1) / halo_box::d,
                       boxes_h = (in.oh + halo_box::h - 1) / halo_box::h,
                       boxes_w = (in.ow + halo_box::w - 1) / halo_box::w;
    const std::int64_t boxes = samples * boxes_d * boxes_h * boxes_w, column_tiles = g.cout / halo_channels;
    const std::int64_t M = samples * in.od * in.oh * in.ow;
    const bool boxes_filled = 2 * M >= boxes * halo_box::rows;
    if ((env.conv == conv_kernel_choice::automatic && !boxes_filled) || boxes > 0x7fffffff) return false;
    const int chunks = g.cin / halo_channels;
    int slices = split_k_slices(boxes * column_tiles, chunks, 1, env.multiprocessors);
    const int chunk_slice = (chunks + slices - 1) / slices * halo_channels;
    slices = (g.cin + chunk_slice - 1) / chunk_slice;
    const dim3 grid(static_cast<unsigned>(boxes), static_cast<unsigned>(column_tiles), static_cast<unsigned>(slices));
    const char* what = "conv3d kernel launch";
    launch_with_slices(env, slices, M, g.cout, epi, what, [&](float* partial) {
      gpu::launch(what, conv3d_halo_kernel<T, Source, Epi>, grid, static_cast<unsigned>(mma_warps * env.warp_size),
                  stream_of(env), in, rows_loader<T>{weights, K, true}, static_cast<int>(boxes_d),
                  static_cast<int>(boxes_h), static_cast<int>(boxes_w), M, g.cout, K, chunk_slice, partial, epi);
    });
    return true;
  }
}

}  // namespace swinfer::hip::kern
