// swinfer hip backend: the 3x3x3 stride-1 convolution of channels-last fp16/bf16 tensors on the matrix cores, from
// a halo tile. Included only by conv3d.cu and self_tests.cu (through conv3d_wgmma.cuh), after gemm_core.cuh.
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
// A source (conv_loader in conv3d.cu) provides
//   const element* at(int n, int z, int y, int x, int ci) const   channels ci .. ci+V-1 of sample n at input
//                                        position (z, y, x), 16-byte aligned, or null in the padding
//   bool normalizes() const              whether the input is read through a norm
//   void normalize_channels(int n, int ci, pack<element, V>&) const   the norm on load of those channels
//   od, oh, ow, cin, pz, py, px          the output extents, input channels and padding
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "gemm_core.cuh"

namespace swinfer::hip::kern {

/// The input channels staged at a time, and the output channels of a block: fs48 models have multiples of 48.
constexpr int halo_channels = 48;

/// A block's output box of D x H x W positions (d, h, w), row i at (i / (H W), i / W % H, i % W), and its input
/// neighbourhood under a 3x3x3 kernel of stride 1, (D + 2) x (H + 2) x (W + 2) positions ("halo" rows in the same
/// order).
template <int D, int H, int W>
struct box_shape {
  static constexpr int d = D, h = H, w = W, rows = d * h * w;
  static constexpr int halo_d = d + 2, halo_h = h + 2, halo_w = w + 2, halo_rows = halo_d * halo_h * halo_w;
  /// The halo row under output row i at tap (0, 0, 0).
  SWINFER_GPU_HOST_DEVICE static int halo_row(int i) { return ((i / (h * w)) * halo_h + i / w % h) * halo_w + i % w; }
};

/// This kernel's box: 4 x 4 x 8 positions (128 rows; 6 x 6 x 10 = 360 halo rows).
using halo_box = box_shape<4, 4, 8>;

/// The rows of C a box covers (the epilogue's row map, as row_range): output positions inside the volume only.
template <class Box>
struct box_rows {
  std::int64_t n;
  int z0, y0, x0;
  std::int64_t od, oh, ow;
  SWINFER_GPU_DEVICE bool inside(int i) const {
    return z0 + i / (Box::h * Box::w) < od && y0 + i / Box::w % Box::h < oh && x0 + i % Box::w < ow;
  }
  SWINFER_GPU_DEVICE std::int64_t global(int i) const {
    const std::int64_t z = z0 + i / (Box::h * Box::w), y = y0 + i / Box::w % Box::h;
    return ((n * od + z) * oh + y) * ow + x0 + i % Box::w;
  }
};

/// f(row, channel, src) for each 16-byte pack a thread stages of a box's neighbourhood (corner (z, y, x) in input
/// coordinates, negative in the padding), channels c0 .. c0 + halo_channels - 1: its halo row, its channel within
/// the 48, and where it is read from (null in the padding).
template <class Box, class T, class Source, class F>
SWINFER_GPU_DEVICE void for_each_halo_pack(const Source& in, int n, int z, int y, int x, int c0, const F& f) {
  constexpr int V = pack_width<T>, per_row = halo_channels / V, total = Box::halo_rows * per_row;
  for (int i = static_cast<int>(threadIdx.x); i < total; i += static_cast<int>(blockDim.x)) {
    const int r = i / per_row, c = i % per_row * V;
    f(r, c,
      in.at(n, z + r / (Box::halo_h * Box::halo_w), y + r / Box::halo_w % Box::halo_h, x + r % Box::halo_w,
            c0 + c));
  }
}

/// A box's neighbourhood, channels c0 .. c0 + halo_channels - 1, into halo[place(row, channel)] (a 16-byte
/// aligned offset in elements for each pack): asynchronous copies (no registers held), zeros in the padding; then,
/// where the source normalises, each thread normalises the packs it copied, in place. Waits for every copy group of
/// the thread in flight (the weights' too); a barrier must follow before other threads read the tile.
template <class Box, class T, class Source, class Place>
SWINFER_GPU_DEVICE void stage_halo(const Source& in, int n, int z, int y, int x, int c0, T* halo, const Place& place) {
  constexpr int V = pack_width<T>;
  for_each_halo_pack<Box, T>(in, n, z, y, x, c0, [&](int r, int c, const T* src) {
    if (src) {
      gpu::copy_async_16(halo + place(r, c), src);
    } else {
      store_pack(halo + place(r, c), zero_pack<T, V>());
    }
  });
  gpu::copy_async_commit();
  gpu::copy_async_wait<0>();
  if (!in.normalizes()) return;
  for_each_halo_pack<Box, T>(in, n, z, y, x, c0, [&](int r, int c, const T* src) {
    if (!src) return;  // the padding stays 0, as it pads the normalised tensor
    pack<T, V> v = load_pack<T, V>(halo + place(r, c));
    in.normalize_channels(n, c0 + c, v);
    store_pack(halo + place(r, c), v);
  });
}

/// Where a box kernel's block works: its box (sample n, first output position z0, y0, x0), its 48 output channels
/// from n0, and its slice of the input channels from c_begin as `steps` (48-channel chunk, tap) steps.
/// Geometry: blockIdx.x = the box, (n, z, y, x) with x fastest; blockIdx.y = the column tile; blockIdx.z = the slice.
template <class Box>
struct box_block {
  int n, z0, y0, x0, n0, c_begin, steps;
  SWINFER_GPU_DEVICE box_block(int boxes_d, int boxes_h, int boxes_w, int cin, int chunk_slice) {
    int box = static_cast<int>(blockIdx.x);
    x0 = box % boxes_w * Box::w;
    box /= boxes_w;
    y0 = box % boxes_h * Box::h;
    box /= boxes_h;
    z0 = box % boxes_d * Box::d;
    n = box / boxes_d;
    n0 = static_cast<int>(blockIdx.y) * halo_channels;
    c_begin = static_cast<int>(blockIdx.z) * chunk_slice;
    const int c_end = c_begin + chunk_slice < cin ? c_begin + chunk_slice : cin;
    steps = (c_end - c_begin) / halo_channels * 27;
  }
  /// The first input channel of a step's chunk, and the step's tap (a, b, c).
  SWINFER_GPU_DEVICE int chunk_of(int step) const { return c_begin + step / 27 * halo_channels; }
  SWINFER_GPU_DEVICE static void tap_of(int step, int& a, int& b, int& c) {
    const int tap = step % 27;
    a = tap / 9, b = tap / 3 % 3, c = tap % 3;
  }
  /// The rows of C the box covers.
  template <class Source>
  SWINFER_GPU_DEVICE box_rows<Box> rows(const Source& in) const {
    return {n, z0, y0, x0, in.od, in.oh, in.ow};
  }
  /// Stages the box's neighbourhood for the chunk of `step` (stage_halo).
  template <class T, class Source, class Place>
  SWINFER_GPU_DEVICE void stage(const Source& in, int step, T* halo, const Place& place) const {
    stage_halo<Box>(in, n, z0 - in.pz, y0 - in.py, x0 - in.px, chunk_of(step), halo, place);
  }
};

/// A box kernel's float32 sums (Rows x 48, row-major, box_tile_ld apart, in shared memory) leave 8 channels of a
/// row at a time: through epi.store8 (conv_epilogue's: one 16-byte store where the channels are contiguous) or, with
/// split K, as float32 partial sums. A fragment holds 2 adjacent channels of a row, so storing from the fragments
/// wrote 8 of each 32-byte sector.
constexpr int box_tile_ld = halo_channels + 4;  // rows 16 banks apart: a warp's float2 writes take 2 wavefronts

/// Bytes of shared memory gather_box_moments needs besides the tile.
template <class Box>
constexpr std::size_t box_moment_scratch_bytes = std::size_t{Box::rows} / 32 * halo_channels * 3 * sizeof(float);

/// The InstanceNorm moments of a box's stored outputs (tile: the box's rows x 48 channels as stored, box_tile_ld
/// apart), one record per moment_cell and channel (api.hpp): per channel, each 32-row segment of the box (one d
/// slice of a cell, 4 x 8 positions) in float32, its mean and then the squared deviations from it, into `segments`
/// (box_moment_scratch_bytes of shared memory); then each cell's segments merged in d order (Chan et al.). Rows
/// outside the volume count for nothing; a cell wholly outside writes nothing. Every thread of the block calls it.
/// Shapes: records (N, channels, chunks, 3), chunks = moment_cell_count(od, oh, ow); output channels n0 .. n0 + 47.
template <class Box>
SWINFER_GPU_DEVICE void gather_box_moments(const float* tile, const box_rows<Box>& rows, int n0, int channels,
                                           float* records, std::int64_t chunks, float* segments) {
  static_assert(Box::d == moment_cell::d && Box::w == moment_cell::w && Box::h % moment_cell::h == 0);
  constexpr int segment_rows = moment_cell::h * moment_cell::w, count = Box::rows / segment_rows;
  constexpr int cells = Box::h / moment_cell::h;  // per box; cell j holds segments j, j + cells, ...
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  for (int i = tid; i < count * halo_channels; i += threads) {
    const int first = i / halo_channels * segment_rows;
    const float* column = tile + first * box_tile_ld + i % halo_channels;
    float sum = 0.0f, n = 0.0f;
    for (int r = 0; r < segment_rows; ++r) {
      if (rows.inside(first + r)) sum += column[r * box_tile_ld], n += 1.0f;
    }
    const float mean = n > 0.0f ? sum / n : 0.0f;
    float m2 = 0.0f;
    for (int r = 0; r < segment_rows; ++r) {
      const float d = column[r * box_tile_ld] - mean;
      if (rows.inside(first + r)) m2 += d * d;
    }
    store_moment_record(segments + i * 3, n, mean, m2);
  }
  __syncthreads();
  const std::int64_t cells_h = (rows.oh + moment_cell::h - 1) / moment_cell::h;
  const std::int64_t cells_w = (rows.ow + moment_cell::w - 1) / moment_cell::w;
  for (int i = tid; i < cells * halo_channels; i += threads) {
    const int j = i / halo_channels, c = i % halo_channels;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int g = j; g < count; g += cells) {
      const float* s = segments + (g * halo_channels + c) * 3;
      if (s[0] == 0.0f) continue;
      const float total = n + s[0], delta = s[1] - mean;
      mean += delta * (s[0] / total);
      m2 += s[2] + delta * delta * (n * s[0] / total);
      n = total;
    }
    if (n == 0.0f) continue;
    const std::int64_t cell =
        (rows.z0 / moment_cell::d * cells_h + rows.y0 / moment_cell::h + j) * cells_w + rows.x0 / moment_cell::w;
    store_moment_record(records + ((rows.n * channels + n0 + c) * chunks + cell) * 3, n, mean, m2);
  }
}

/// store_box_tile with the output's moments gathered where the epilogue asks for them (conv_epilogue::moments) and
/// K is not split: the tile's values are replaced by the values as stored, then gather_box_moments. Every thread
/// of the block calls it after a barrier that follows the tile's writes; `segments` as gather_box_moments'.
template <class Box, class Epi>
SWINFER_GPU_DEVICE void store_box_tile(float* tile,
                                       const epilogue_tables<Box::rows, halo_channels, Epi, box_rows<Box>>& out,
                                       const Epi& epi, const split_k_partials& sums, bool split, float* segments) {
  constexpr int packs = halo_channels / 8;
  const bool gather = !split && epi.moments != nullptr;  // the same in every thread: the barrier below is safe
  for (int i = static_cast<int>(threadIdx.x); i < Box::rows * packs; i += static_cast<int>(blockDim.x)) {
    const int r = i / packs, c = i % packs * 8;  // consecutive threads: a row's packs
    if (!out.block_rows.inside(r)) continue;
    float* const v = tile + r * box_tile_ld + c;
    float sums8[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) sums8[e] = v[e];
    if (!split) {
      epi.store8(out.rows[r], out.cols + c, sums8);
      if (gather) {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = gpu::to_f32(epi.value(out.cols[c + e], sums8[e]));
      }
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) sums.store(out.block_rows.global(r), out.n0 + c + e, sums8[e]);
    }
  }
  if (!gather) return;
  __syncthreads();
  gather_box_moments(tile, out.block_rows, out.n0, static_cast<int>(epi.o.c), epi.moments, epi.moment_chunks,
                     segments);
}

/// Where the kernel's tiles lie in its dynamic shared memory: the halo (halo_rows x ld), then the ring of weight
/// stages (48 x ld each). Rows are 112 bytes apart, so an ldmatrix of 8 consecutive rows touches every bank once.
template <class T>
struct halo_tiles {
  static constexpr int ld = halo_channels + 8;
  /// The weight tiles in flight: three taps ahead of the one being multiplied (an L2 round trip is longer than one
  /// tap's 36 matrix-core operations per warp).
  static constexpr int stages = 4;
  static constexpr std::size_t halo_bytes = std::size_t{halo_box::halo_rows} * ld * sizeof(T);
  static constexpr std::size_t stage_elements = std::size_t{tall_tile_n} * ld;
  static constexpr std::size_t bytes = halo_bytes + stages * stage_elements * sizeof(T);
  /// At most what the kernel's static row and column tables take besides (checked there).
  static constexpr std::size_t table_bytes = 3 * 1024;
};

/// The convolution of one box and 48 output channels per block.
/// Shapes: input (N, cin, D, H, W) channels-last through `in`, weights (N_out, K = 27 cin) in T, k = tap * cin + ci;
/// C (samples * od * oh * ow, N_out) through `epi`, 8 consecutive outputs of a row at a time (store_box_tile).
/// Geometry: grid (samples * boxes_d * boxes_h * boxes_w, N_out / 48, slices), 4 warps (128 threads on NVIDIA, 256
/// on CDNA), each owning 32 rows (2 x 3 matrix-core tiles of 16 x 16) of the 128 x 48 output tile;
/// halo_tiles<T>::bytes (60.4 KiB in 16-bit types) of dynamic shared memory.
/// Steps: (48-channel chunk, tap), 27 per chunk. Per chunk the halo tile (360 x 48: 39.4 KiB) is staged once by
/// asynchronous copies (then normalised in place where the norm is applied on load); per step the weights (48 x 48:
/// 5.3 KiB) go to a ring of four stages by asynchronous copies, three steps ahead, so one barrier per step both
/// publishes a step's weights and frees the stage the next copy overwrites. Split K as the tiled GEMM's (`partial`
/// not null): block z sums input channels [z * chunk_slice, (z + 1) * chunk_slice) and stores float32 sums
/// (split_k_partials).
template <class T, class Source, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(256)
    conv3d_halo_kernel(Source in, rows_loader<T> w, int boxes_d, int boxes_h, int boxes_w, std::int64_t M, int N,
                       int K, int chunk_slice, float* partial, Epi epi) {
  using Tile = mma_tall48_tile;
  using Tiles = halo_tiles<T>;
  static_assert(Tile::bm == halo_box::rows && Tile::bn == halo_channels && Tile::warps_n == 1);
  constexpr int TM = Tile::tm, TN = Tile::tn, ld = Tiles::ld, taps = 27, stages = Tiles::stages;
  T* const halo = reinterpret_cast<T*>(gpu::dynamic_shared_memory());
  T* const weight_ring = reinterpret_cast<T*>(gpu::dynamic_shared_memory() + Tiles::halo_bytes);
  __shared__ std::int64_t b_rows[Tile::bn];
  __shared__ typename Epi::row_type c_rows[Tile::bm];
  __shared__ typename Epi::col_type c_cols[Tile::bn];
  static_assert(sizeof b_rows + sizeof c_rows + sizeof c_cols <= Tiles::table_bytes);
  const int wm = static_cast<int>(threadIdx.x) / SWINFER_GPU_WARP_SIZE * TM * 16;
  const box_block<halo_box> blk(boxes_d, boxes_h, boxes_w, in.cin, chunk_slice);
  const operand_stage<Tile::bn, halo_channels, pack_width<T>, mma_warps * 32, rows_loader<T>> b;
  const int b_valid = decltype(b)::stage_rows(w, blk.n0, N, b_rows);
  const epilogue_tables<Tile::bm, Tile::bn, Epi, box_rows<halo_box>> out(epi, c_rows, c_cols, blk.rows(in), blk.n0,
                                                                          N);
  const split_k_partials sums{partial, M, N};
  const int steps = blk.steps;
  // One copy group per step (empty past the last), so that waiting for "all but stages - 2 groups" means this
  // step's weights.
  const auto issue = [&](int step) {
    if (step < steps) {
      const int k0 = step % taps * in.cin + blk.chunk_of(step);
      b.copy_async(w, b_rows, b_valid, k0, K, weight_ring + step % stages * Tiles::stage_elements, ld);
    }
    gpu::copy_async_commit();
  };
  // Each lane's fragment rows: the halo rows under its output rows at tap (0, 0, 0), in elements.
  const auto row_offset = [wm](int i) { return [wm, i](int r) { return halo_box::halo_row(wm + 16 * i + r) * ld; }; };
  float acc[TM][TN][gpu::mma_max_elems] = {};
  __syncthreads();  // the row tables are written
  for (int step = 0; step < stages - 1; ++step) issue(step);
  for (int step = 0; step < steps; ++step) {
    if (step % taps == 0) {
      __syncthreads();  // every warp is done with the previous chunk's halo
      blk.stage(in, step, halo, [](int r, int c) { return r * ld + c; });
    }
    int ta = 0, tb = 0, tc = 0;
    blk.tap_of(step, ta, tb, tc);
    gpu::copy_async_wait<stages - 2>();  // this thread's copies of this step's weights have landed
    __syncthreads();  // everyone's (and the halo); every warp is past the previous step, whose stage is reused next
    issue(step + stages - 1);
    const T* shifted = halo + ((ta * halo_box::halo_h + tb) * halo_box::halo_w + tc) * ld;
    const T* weights = weight_ring + step % stages * Tiles::stage_elements;
#pragma unroll
    for (int ks = 0; ks < halo_channels; ks += 16) {
      T af[TM][gpu::mma_max_elems], bf[TN][gpu::mma_max_elems];
#pragma unroll
      for (int i = 0; i < TM; ++i) gpu::mma_load_a_rows(shifted + ks, row_offset(i), af[i]);
#pragma unroll
      for (int j = 0; j < TN; ++j) gpu::mma_load_b(weights + 16 * j * ld + ks, ld, bf[j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) gpu::mma_16x16x16(af[i], bf[j], acc[i][j]);
    }
  }
  gpu::copy_async_wait<0>();  // the empty groups past the last step
  // The sums leave through shared memory (the halo's space, free once every warp is past its last step).
  float* const tile = reinterpret_cast<float*>(gpu::dynamic_shared_memory());
  static_assert(std::size_t{Tile::bm} * box_tile_ld * sizeof(float) <= Tiles::halo_bytes);
  // The moments' segments in the weight ring, free once the last copies have landed.
  float* const segments = reinterpret_cast<float*>(weight_ring);
  static_assert(box_moment_scratch_bytes<halo_box> <= Tiles::stages * Tiles::stage_elements * sizeof(T));
  __syncthreads();
  for_each_mma_output(acc, wm, 0, [&](int r, int c, float v) { tile[r * box_tile_ld + c] = v; });
  __syncthreads();
  store_box_tile<halo_box>(tile, out, epi, sums, partial != nullptr, segments);
}

/// Whether a box kernel (this one, conv3d_wgmma.cuh's) can run the convolution (geometry g, `split` the channels of
/// the source's first part) with `shared_bytes` of shared memory per block: fp16/bf16 (T) on matrix cores, a 3x3x3
/// kernel of stride 1, channels-last input in packs, input channels, both parts' and the outputs in multiples of 48,
/// and a device that gives a block that much shared memory.
template <class T, class Source>
bool box_conv_fits(const launch_env& env, const Source& in, const T* weights, const conv_geometry& g, int split,
                   std::size_t shared_bytes) {
  const bool shape_fits = g.kernel == std::array<int, 3>{3, 3, 3} && g.stride == std::array<int, 3>{1, 1, 1} &&
                          g.cin % halo_channels == 0 && split % halo_channels == 0 && g.cout % halo_channels == 0;
  return env.kernels.conv != conv_kernel_choice::gemm && env.matrix_cores &&
         in.vector_ok && shape_fits && packs_fit<T>(weights, {27 * g.cin}) && env.max_shared_per_block >= shared_bytes;
}

/// A box kernel's launch over a convolution: boxes of Box along each axis, the grid (boxes, output column tiles of
/// 48, K slices) and the input channels each slice sums.
struct box_grid {
  std::int64_t boxes_d, boxes_h, boxes_w, M;
  int slices, chunk_slice;
  dim3 grid;
};

/// The launch of a box kernel, or false where (env.kernels.conv automatic) the boxes hold fewer than half as many
/// output positions as they span (6^3 and below, at the bottom of the U, where the tiled GEMM with split K runs) or
/// there are too many. Where the boxes and column tiles give fewer than two blocks per multiprocessor, the input
/// channels are split across blocks (whole chunks of 48) as the tiled GEMM splits K.
template <class Box, class Source>
bool plan_box_grid(const launch_env& env, const Source& in, const conv_geometry& g, std::int64_t samples,
                   box_grid& plan) {
  plan.boxes_d = (in.od + Box::d - 1) / Box::d;
  plan.boxes_h = (in.oh + Box::h - 1) / Box::h;
  plan.boxes_w = (in.ow + Box::w - 1) / Box::w;
  const std::int64_t boxes = samples * plan.boxes_d * plan.boxes_h * plan.boxes_w;
  const std::int64_t column_tiles = g.cout / halo_channels;
  plan.M = samples * in.od * in.oh * in.ow;
  const bool boxes_filled = 2 * plan.M >= boxes * Box::rows;
  if ((env.kernels.conv == conv_kernel_choice::automatic && !boxes_filled) || boxes > 0x7fffffff) return false;
  const int chunks = g.cin / halo_channels;
  const int slices = split_k_slices(boxes * column_tiles, chunks, 1, env.multiprocessors);
  plan.chunk_slice = (chunks + slices - 1) / slices * halo_channels;
  plan.slices = (g.cin + plan.chunk_slice - 1) / plan.chunk_slice;
  plan.grid = dim3(static_cast<unsigned>(boxes), static_cast<unsigned>(column_tiles),
                   static_cast<unsigned>(plan.slices));
  return true;
}

/// Runs the convolution on conv3d_halo_kernel and returns true where box_conv_fits (63.4 KiB of shared memory with
/// the tables: NVIDIA from sm_80, CDNA) and plan_box_grid agree; otherwise returns false and launches nothing.
/// `gathered`: whether the kernel left the output's moments where epi asked for them (K not split).
template <class T, class Source, class Epi>
bool run_conv3d_halo(const launch_env& env, const Source& in, const T* weights, const conv_geometry& g, int split,
                     std::int64_t samples, const Epi& epi, bool& gathered) {
  if constexpr (std::is_same_v<T, float>) {
    return false;  // float32 models multiply on FMA
  } else {
    box_grid plan;
    if (!box_conv_fits(env, in, weights, g, split, halo_tiles<T>::bytes + halo_tiles<T>::table_bytes) ||
        !plan_box_grid<halo_box>(env, in, g, samples, plan)) {
      return false;
    }
    const int K = 27 * g.cin;
    const char* what = "conv3d kernel launch";
    launch_with_slices(env, plan.slices, plan.M, g.cout, epi, what, [&](float* partial) {
      gpu::launch_shared(what, conv3d_halo_kernel<T, Source, Epi>, plan.grid,
                         static_cast<unsigned>(mma_warps * env.warp_size), halo_tiles<T>::bytes, stream_of(env), in,
                         rows_loader<T>{weights, K, true}, static_cast<int>(plan.boxes_d),
                         static_cast<int>(plan.boxes_h), static_cast<int>(plan.boxes_w), plan.M, g.cout, K,
                         plan.chunk_slice, partial, epi);
    });
    gathered = plan.slices == 1 && epi.moments != nullptr;
    return true;
  }
}

}  // namespace swinfer::hip::kern
