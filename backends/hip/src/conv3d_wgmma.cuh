// swinfer hip backend: the 3x3x3 stride-1 convolution of channels-last fp16/bf16 tensors on Hopper's warpgroup
// matrix multiply (wgmma, sm_90a; vendor/warpgroup_mma.hpp). Included only by conv3d.cu and self_tests.cu, after
// conv3d_halo.cuh, whose box scheme it shares: a block owns a box of output positions and 48 output channels, stages
// the box's input neighbourhood once per 48 input channels (normalised once, where the norm is applied on load) and
// walks the 27 taps as shifts into it, with the weights of each (tap, 48 channels) step staged in a ring.
//
// What differs from the halo tile's mma.sync kernel: the matrix cores read both operands straight from shared
// memory, one instruction per 64 x 48 x 16 product for the whole warpgroup, instead of every warp loading its
// fragments through registers (the halo kernel's 10 instructions per mma). For that the operands are laid out as
// the instruction's core matrices (8 rows x 16 bytes, contiguous): the halo as [channel / 8][halo row][8 channels],
// the weights as [channel / 8][output][8 channels], each channel plane one row longer than its rows, so 16-byte
// stores of consecutive channel packs fall in different banks. A 64-row product is one z slice of an 8 x 8 (h, w)
// box face: its 8-row groups (one h each) lie a fixed 10 halo rows apart at any tap, which a descriptor can
// express. The box is 4 x 8 x 8 (256 rows, four products per k step), so each weight fetched from L2 serves 256
// outputs (the halo tile's 128).
//
// Same float32 accumulation and k order per output (tap, then channel) as the other kernels, so a convolution gives
// the same values on each up to the order of the float32 additions.
#pragma once

#include <cstdint>
#include <type_traits>

#include "conv3d_halo.cuh"
#include "swinfer/backend/hip/vendor/warpgroup_mma.hpp"

namespace swinfer::hip::kern {

/// This kernel's box: 4 x 8 x 8 output positions (256 rows, four 64-row products), 6 x 10 x 10 = 600 halo rows.
using wgmma_box = box_shape<4, 8, 8>;

/// Where the kernel's tiles lie in its dynamic shared memory: the halo ([channel / 8][halo row][8], 56.3 KiB in
/// 16-bit types), then the ring of weight stages ([channel / 8][output][8], 4.6 KiB each); 70.1 KiB, three blocks
/// per multiprocessor on Hopper.
template <class T>
struct wgmma_tiles {
  static constexpr int pack = 8;  ///< channels per core-matrix row: 16 bytes
  static_assert(sizeof(T) * pack == 16 && halo_channels % pack == 0);
  static constexpr int packs = halo_channels / pack;
  /// Rows per channel plane: one more than used, so plane p starts p banks of 16 bytes further on.
  static constexpr int halo_plane = wgmma_box::halo_rows + 1, weight_plane = halo_channels + 1;
  /// Weight stages: the next step's copies in flight while one is multiplied and one may still be read by the
  /// products of the step before (retired one step late).
  static constexpr int stages = 3;
  static constexpr std::size_t halo_bytes = std::size_t{halo_plane} * halo_channels * sizeof(T);
  static constexpr std::size_t stage_bytes = std::size_t{weight_plane} * halo_channels * sizeof(T);
  static constexpr std::size_t bytes = halo_bytes + stages * stage_bytes;
  /// At most what the kernel's static row and column tables take besides (checked there).
  static constexpr std::size_t table_bytes = 3 * 1024;
  /// Offset in elements of (halo row r, channel c) and of (output o, channel c) within a stage.
  SWINFER_GPU_HOST_DEVICE static int halo_at(int r, int c) { return ((c / pack) * halo_plane + r) * pack + c % pack; }
  SWINFER_GPU_HOST_DEVICE static int weight_at(int o, int c) {
    return ((c / pack) * weight_plane + o) * pack + c % pack;
  }
};

/// The convolution of one box and 48 output channels per block, on one warpgroup.
/// Shapes: input (N, cin, D, H, W) channels-last through `in`; weights (N_out, K = 27 cin) in T, k = tap * cin + ci,
/// 16-byte aligned rows; C (samples * od * oh * ow, N_out) through `epi`, 8 consecutive outputs of a row at a time
/// (store_box_tile).
/// Geometry: grid (samples * boxes_d * boxes_h * boxes_w, N_out / 48, slices), 128 threads (one warpgroup; warp w
/// holds rows 16w .. 16w + 15 of each z slice's 64 x 48 accumulator, 4 x 24 floats per thread);
/// wgmma_tiles<T>::bytes of dynamic shared memory. Steps: (48-channel chunk, tap), 27 per chunk; per step 3 k16 x 4
/// z-slice products of 64 x 48 x 16. The weights of step s + 1 are copied (cp.async, 96 contiguous bytes per
/// output) while step s multiplies; each step's products are retired one step later, so a stage is overwritten two
/// steps after its products were issued. Split K as the tiled GEMM's (`partial` not null): block z sums input channels
/// [z * chunk_slice, (z + 1) * chunk_slice) and stores float32 sums (split_k_partials).
template <class T, class Source, class Epi>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(128)
    conv3d_wgmma_kernel(Source in, const T* __restrict__ weights, int boxes_d, int boxes_h, int boxes_w,
                        std::int64_t M, int N, int K, int chunk_slice, float* partial, Epi epi) {
  using Box = wgmma_box;
  using Tiles = wgmma_tiles<T>;
  constexpr int taps = 27, stages = Tiles::stages, row_bytes = 16, V = pack_width<T>;
  T* const halo = reinterpret_cast<T*>(gpu::dynamic_shared_memory());
  T* const weight_ring = reinterpret_cast<T*>(gpu::dynamic_shared_memory() + Tiles::halo_bytes);
  __shared__ typename Epi::row_type c_rows[Box::rows];
  __shared__ typename Epi::col_type c_cols[halo_channels];
  static_assert(sizeof c_rows + sizeof c_cols <= Tiles::table_bytes);
  const int tid = static_cast<int>(threadIdx.x);
  const box_block<Box> blk(boxes_d, boxes_h, boxes_w, in.cin, chunk_slice);
  const int n0 = blk.n0;
  const epilogue_tables<Box::rows, halo_channels, Epi, box_rows<Box>> out(epi, c_rows, c_cols, blk.rows(in), n0, N);
  const split_k_partials sums{partial, M, N};
  const int steps = blk.steps;
  // One copy group per step (empty past the last), so that "all but the newest group landed" means this step's.
  const auto issue = [&](int step) {
    if (step < steps) {
      const int k0 = step % taps * in.cin + blk.chunk_of(step);
      T* stage = weight_ring + step % stages * (Tiles::stage_bytes / sizeof(T));
      for (int i = tid; i < halo_channels * Tiles::packs; i += 128) {
        const int o = i / Tiles::packs, c = i % Tiles::packs * V;  // consecutive threads: an output's packs
        gpu::copy_async_16(stage + Tiles::weight_at(o, c), weights + static_cast<std::int64_t>(n0 + o) * K + k0 + c);
      }
    }
    gpu::copy_async_commit();
  };
  const std::uint32_t halo_address = gpu::shared_address(halo), ring_address = gpu::shared_address(weight_ring);
  float acc[Box::d][gpu::wgmma_acc] = {};
  __syncthreads();  // the row tables are written
  issue(0);
  for (int step = 0; step < steps; ++step) {
    if (step % taps == 0) {
      gpu::wgmma_wait<0>();  // every product reading the previous chunk's halo has retired
      __syncthreads();
      blk.stage(in, step, halo, [](int r, int c) { return Tiles::halo_at(r, c); });
    }
    int ta = 0, tb = 0, tc = 0;
    blk.tap_of(step, ta, tb, tc);
    gpu::copy_async_wait<0>();         // this thread's copies of this step's weights have landed
    gpu::fence_shared_for_wgmma();     // its writes (copies, the normalised halo) are visible to the products
    __syncthreads();                   // and everyone's; every thread retired step - 2's products last step
    issue(step + 1);
    const std::uint32_t stage_address = ring_address + step % stages * static_cast<std::uint32_t>(Tiles::stage_bytes);
#pragma unroll
    for (int zz = 0; zz < Box::d; ++zz) gpu::keep_registers(acc[zz]);
    gpu::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < halo_channels / 16; ++ks) {
      // k 16 ks .. 16 ks + 15 are the channel planes 2 ks and 2 ks + 1.
      const gpu::k_major_operand b{stage_address + static_cast<std::uint32_t>(2 * ks * Tiles::weight_plane * row_bytes),
                                   static_cast<std::uint32_t>(Tiles::weight_plane * row_bytes), 8 * row_bytes};
#pragma unroll
      for (int zz = 0; zz < Box::d; ++zz) {
        // Output row (zz, y, x) reads halo row ((zz + ta) * 10 + y + tb) * 10 + x + tc: 8-row groups (one y) 10
        // halo rows apart.
        const int first_row = ((zz + ta) * Box::halo_h + tb) * Box::halo_w + tc;
        const gpu::k_major_operand a{
            halo_address + static_cast<std::uint32_t>((2 * ks * Tiles::halo_plane + first_row) * row_bytes),
            static_cast<std::uint32_t>(Tiles::halo_plane * row_bytes),
            static_cast<std::uint32_t>(Box::halo_w * row_bytes)};
        gpu::wgmma_64x48x16<T>(a, b, acc[zz]);
      }
    }
    gpu::wgmma_commit();
    gpu::wgmma_wait<1>();  // the previous step's products have retired
#pragma unroll
    for (int zz = 0; zz < Box::d; ++zz) gpu::keep_registers(acc[zz]);
  }
  gpu::wgmma_wait<0>();
  gpu::copy_async_wait<0>();  // the empty groups past the last step
  // The sums leave through shared memory (the halo's space, free once every product has retired).
  float* const tile = reinterpret_cast<float*>(gpu::dynamic_shared_memory());
  static_assert(std::size_t{Box::rows} * box_tile_ld * sizeof(float) <= Tiles::halo_bytes);
  // The moments' segments in the weight ring, free once the last copies have landed.
  float* const segments = reinterpret_cast<float*>(weight_ring);
  static_assert(box_moment_scratch_bytes<Box> <= Tiles::stages * Tiles::stage_bytes);
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32;
#pragma unroll
  for (int zz = 0; zz < Box::d; ++zz) {
    gpu::keep_registers(acc[zz]);
#pragma unroll
    for (int j = 0; j < gpu::wgmma_n / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = zz * 64 + 16 * warp + lane / 4 + 8 * (e / 2), c = 8 * j + 2 * (lane % 4) + e % 2;
        tile[r * box_tile_ld + c] = acc[zz][4 * j + e];
      }
  }
  __syncthreads();
  store_box_tile<Box>(tile, out, epi, sums, partial != nullptr, segments);
}

/// Runs the convolution on conv3d_wgmma_kernel and returns true where the device has the warpgroup products
/// (env.warpgroup_mma: sm_90a code on an sm_90 GPU, or the emulator with 32-lane warps), env.kernels.conv is
/// wgmma, box_conv_fits (73 KiB of shared memory with the tables) and plan_box_grid agree;
/// otherwise returns false and launches nothing. `gathered` as run_conv3d_halo's.
template <class T, class Source, class Epi>
bool run_conv3d_wgmma(const launch_env& env, const Source& in, const T* weights, const conv_geometry& g, int split,
                      std::int64_t samples, const Epi& epi, bool& gathered) {
  if constexpr (std::is_same_v<T, float>) {
    return false;  // float32 models multiply on FMA
  } else {
    box_grid plan;
    if (env.kernels.conv != conv_kernel_choice::wgmma || !env.warpgroup_mma ||
        !box_conv_fits(env, in, weights, g, split, wgmma_tiles<T>::bytes + wgmma_tiles<T>::table_bytes) ||
        !plan_box_grid<wgmma_box>(env, in, g, samples, plan)) {
      return false;
    }
    const int K = 27 * g.cin;
    const char* what = "conv3d kernel launch";
    launch_with_slices(env, plan.slices, plan.M, g.cout, epi, what, [&](float* partial) {
      gpu::launch_shared(what, conv3d_wgmma_kernel<T, Source, Epi>, plan.grid, 128u, wgmma_tiles<T>::bytes,
                         stream_of(env), in, weights, static_cast<int>(plan.boxes_d), static_cast<int>(plan.boxes_h),
                         static_cast<int>(plan.boxes_w), plan.M, g.cout, K, plan.chunk_slice, partial, epi);
    });
    gathered = plan.slices == 1 && epi.moments != nullptr;
    return true;
  }
}

}  // namespace swinfer::hip::kern
