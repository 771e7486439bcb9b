// swinfer hip backend: the warp-level matrix-core primitives of each platform behind one interface: a warp computes
// D (16 x 16, float32) += A (16 x 16) B (16 x 16) with A and B in half_t or bf16_t, or D (16 x 16, int32) +=
// A (16 x 32) B (32 x 16) with signed bytes (precision::int8), each lane holding a fixed part of A, B and D (its
// "fragment"). Kernels place data into fragments only through the coordinate functions below, so
// the same kernel source serves every platform:
//
//   NVIDIA (sm_80+, 32 lanes): two mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"); 8 elements
//          of A, 8 of B and 8 of D per lane. g = lane / 4, t = lane % 4.
//   AMD (CDNA2/3, 64 lanes): one v_mfma_f32_16x16x16{f16,bf16_1k}; 4 elements each per lane.
//   emulator: the NVIDIA layout with 32-lane warps and the AMD one with 64 (SWINFER_GPU_EMULATOR_WARP), computed by
//          the emulator from every lane's fragment, so kernels are checked against both layouts.
//
// Only for vendor/gpu.hpp's users in the library's translation units (backends/hip/src).
#pragma once

#include <cstdint>
#include <type_traits>

#include "swinfer/backend/hip/vendor/gpu.hpp"

namespace swinfer::gpu {

/// Elements of A, B and D each lane holds (arrays are sized for the largest, 8).
inline constexpr int mma_max_elems = 8;

#if SWINFER_GPU_NVIDIA
SWINFER_GPU_DEVICE inline int mma_elems() { return 8; }
SWINFER_GPU_DEVICE inline bool mma_amd_layout() { return false; }
#elif SWINFER_GPU_AMD
SWINFER_GPU_DEVICE inline int mma_elems() { return 4; }
SWINFER_GPU_DEVICE inline bool mma_amd_layout() { return true; }
#else
SWINFER_GPU_DEVICE inline int mma_elems() { return warpSize == 64 ? 4 : 8; }
SWINFER_GPU_DEVICE inline bool mma_amd_layout() { return warpSize == 64; }
#endif

/// Consecutive fragment elements that share a row of A (a column of B) and have consecutive k: elements
/// i .. i + run - 1 for i a multiple of the run, in both A and B fragments (2 in mma's layout, 4 in MFMA's). With A
/// stored k-contiguous (row-major) and B stored n-major (each column's k contiguous), a run is one 4- or 8-byte
/// shared-memory load.
SWINFER_GPU_DEVICE inline int mma_k_run() { return mma_amd_layout() ? 4 : 2; }

/// Element i of the lane's A fragment is A[row][k].
SWINFER_GPU_DEVICE inline void mma_a_coord(int lane, int i, int& row, int& k) {
  if (mma_amd_layout()) {
    row = lane % 16;
    k = 4 * (lane / 16) + i;
  } else {
    row = lane / 4 + 8 * ((i >> 1) & 1);
    k = 2 * (lane % 4) + (i & 1) + 8 * (i >> 2);
  }
}
/// Element i of the lane's B fragment is B[k][col].
SWINFER_GPU_DEVICE inline void mma_b_coord(int lane, int i, int& k, int& col) {
  if (mma_amd_layout()) {
    col = lane % 16;
    k = 4 * (lane / 16) + i;
  } else {
    const int j = i & 3;  // i / 4 picks the n8 half
    k = 2 * (lane % 4) + (j & 1) + 8 * (j >> 1);
    col = 8 * (i >> 2) + lane / 4;
  }
}
/// Element i of the lane's D fragment is D[row][col].
SWINFER_GPU_DEVICE inline void mma_c_coord(int lane, int i, int& row, int& col) {
  if (mma_amd_layout()) {
    col = lane % 16;
    row = 4 * (lane / 16) + i;
  } else {
    const int j = i & 3;
    row = lane / 4 + 8 * (j >> 1);
    col = 8 * (i >> 2) + 2 * (lane % 4) + (j & 1);
  }
}

#if SWINFER_GPU_NVIDIA
SWINFER_GPU_DEVICE inline std::uint32_t pack_pair(half_t lo, half_t hi) {
  return static_cast<std::uint32_t>(__half_as_ushort(lo)) | (static_cast<std::uint32_t>(__half_as_ushort(hi)) << 16);
}
SWINFER_GPU_DEVICE inline std::uint32_t pack_pair(bf16_t lo, bf16_t hi) {
  return static_cast<std::uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<std::uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}
template <class T>
SWINFER_GPU_DEVICE inline void mma_m16n8k16(const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1,
                                            float* d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, half_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#else
  (void)a, (void)b0, (void)b1, (void)d;
  __trap();  // the host enables matrix cores only on sm_80 and newer
#endif
}
#endif

/// out[0 .. n-1] = p[0 .. n-1] for a run of fragment elements (n = mma_k_run(), p aligned to n elements): one
/// 4- or 8-byte load on the devices.
template <class T>
SWINFER_GPU_DEVICE inline void load_run(const T* p, int n, T* out) {
#if SWINFER_GPU_EMULATED
  for (int i = 0; i < n; ++i) out[i] = p[i];
#else
  static_assert(sizeof(T) == 2, "fragment runs are of 16-bit elements");
  struct alignas(4) two {
    T v[2];
  };
  struct alignas(8) four {
    T v[4];
  };
  if (n == 2) {
    const two r = *reinterpret_cast<const two*>(p);
    out[0] = r.v[0], out[1] = r.v[1];
  } else {
    const four r = *reinterpret_cast<const four*>(p);
    out[0] = r.v[0], out[1] = r.v[1], out[2] = r.v[2], out[3] = r.v[3];
  }
#endif
}

/// The lane's part of four 8 x 8 matrices of 16-byte rows in shared memory, as ldmatrix (x4) gives it: lanes
/// 8j .. 8j+7 give base + byte_offset for matrix j's eight rows (16-byte aligned), and the lane receives bytes
/// 4 (lane % 4) .. 4 (lane % 4) + 3 of row lane / 4 of each matrix as word r[j]. NVIDIA: one ldmatrix instruction;
/// the emulator (32-lane warps) fetches the same rows after one exchange of the lanes' offsets, so the address
/// arithmetic of the callers is tested there. Not used with AMD's layout.
SWINFER_GPU_DEVICE inline void load_matrix_words_x4(const void* base, int byte_offset, std::uint32_t (&r)[4]) {
#if SWINFER_GPU_NVIDIA
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address =
      static_cast<std::uint32_t>(__cvta_generic_to_shared(static_cast<const unsigned char*>(base) + byte_offset));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  (void)base, (void)byte_offset, (void)r;
  __trap();  // the host enables matrix cores only on sm_80 and newer
#endif
#elif SWINFER_GPU_EMULATED
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  const int source[4] = {lane / 4, 8 + lane / 4, 16 + lane / 4, 24 + lane / 4};  // matrix j's row lane / 4
  float rows[4];  // offsets below 2^24 travel exactly as float32
  swinfer::gpu_emulator::exchange_many(static_cast<float>(byte_offset), source, rows);
  for (int j = 0; j < 4; ++j) {
    __builtin_memcpy(&r[j], static_cast<const unsigned char*>(base) + static_cast<int>(rows[j]) + 4 * (lane % 4), 4);
  }
#else
  (void)base, (void)byte_offset, (void)r;
  __builtin_trap();  // AMD's layout loads its fragments in runs
#endif
}

/// The lane's part of four 8 x 8 matrices of 16-bit elements (load_matrix_words_x4 with row_offset in elements):
/// row lane / 4, elements 2 (lane % 4) and 2 (lane % 4) + 1, of matrix j as f[2j], f[2j + 1]. That is the order of
/// mma.m16n8k16's fragments when the matrices are the A tile's quarters or the B tile's halves.
template <class T>
SWINFER_GPU_DEVICE inline void load_matrices_x4(const T* base, int row_offset, T (&f)[mma_max_elems]) {
  static_assert(sizeof(T) == 2, "matrices of 16-bit elements");
  std::uint32_t r[4];
  load_matrix_words_x4(base, row_offset * 2, r);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f[2 * j] = bit_cast<T>(static_cast<unsigned short>(r[j] & 0xffffu));
    f[2 * j + 1] = bit_cast<T>(static_cast<unsigned short>(r[j] >> 16));
  }
}

/// The lane's A fragment of a 16 x 16 tile whose rows lie anywhere in shared memory: row r's k = 0 .. 15 at
/// base + row_offset(r) (an element offset); elements past mma_elems() are zero. Every 8-element row segment is
/// 16-byte aligned. In mma's layout one load_matrices_x4, in MFMA's runs of k. The convolution's halo tile gathers
/// its rows this way (output positions of a box, rows of the staged input neighbourhood).
template <class T, class RowOffset>
SWINFER_GPU_DEVICE inline void mma_load_a_rows(const T* base, const RowOffset& row_offset, T (&f)[mma_max_elems]) {
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  if (!mma_amd_layout()) {
    // Matrices 0-3: rows 0-7 k 0-7, rows 8-15 k 0-7, rows 0-7 k 8-15, rows 8-15 k 8-15 (a0..a3 of mma's A).
    load_matrices_x4(base, row_offset(lane % 16) + (lane / 16) * 8, f);
    return;
  }
  const int elems = mma_elems(), run = mma_k_run();
#pragma unroll
  for (int e = 0; e < mma_max_elems; ++e) {
    if (e >= elems) {
      f[e] = from_f32<T>(0.0f);
    } else if (e % run == 0) {
      int r = 0, k = 0;
      mma_a_coord(lane, e, r, k);
      load_run(base + row_offset(r) + k, run, &f[e]);
    }
  }
}

/// The lane's A fragment of the 16 x 16 tile at `a`, stored row-major (A[row][k] at a[row * ld + k]); `a` and ld
/// keep every 8-element row segment 16-byte aligned (ld a multiple of 8, `a` 16-byte aligned).
template <class T>
SWINFER_GPU_DEVICE inline void mma_load_a(const T* a, int ld, T (&f)[mma_max_elems]) {
  mma_load_a_rows(a, [ld](int r) { return r * ld; }, f);
}
/// The lane's B fragment of the 16 x 16 tile at `b`, stored column by column (B[k][col] at b[col * ld + k], the
/// layout of weights as (N, K) rows); elements past mma_elems() are zero. Alignment as mma_load_a.
template <class T>
SWINFER_GPU_DEVICE inline void mma_load_b(const T* b, int ld, T (&f)[mma_max_elems]) {
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  if (!mma_amd_layout()) {
    // Matrices 0-3: columns 0-7 k 0-7 and k 8-15 (b0, b1 of the first n8 half), columns 8-15 k 0-7 and k 8-15.
    load_matrices_x4(b, ((lane & 7) + ((lane >> 4) << 3)) * ld + ((lane >> 3) & 1) * 8, f);
    return;
  }
  const int elems = mma_elems(), run = mma_k_run();
#pragma unroll
  for (int e = 0; e < mma_max_elems; ++e) {
    if (e >= elems) {
      f[e] = from_f32<T>(0.0f);
    } else if (e % run == 0) {
      int k = 0, c = 0;
      mma_b_coord(lane, e, k, c);
      load_run(b + c * ld + k, run, &f[e]);
    }
  }
}

/// D += A B for one 16 x 16 x 16 tile; a, b, d hold mma_elems() valid elements (the lane's fragments).
template <class T>
SWINFER_GPU_DEVICE inline void mma_16x16x16(const T (&a)[mma_max_elems], const T (&b)[mma_max_elems],
                                            float (&d)[mma_max_elems]) {
#if SWINFER_GPU_NVIDIA
  const std::uint32_t pa[4] = {pack_pair(a[0], a[1]), pack_pair(a[2], a[3]), pack_pair(a[4], a[5]),
                               pack_pair(a[6], a[7])};
  mma_m16n8k16<T>(pa, pack_pair(b[0], b[1]), pack_pair(b[2], b[3]), d);
  mma_m16n8k16<T>(pa, pack_pair(b[4], b[5]), pack_pair(b[6], b[7]), d + 4);
#elif SWINFER_GPU_AMD
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
  using float4_t = float __attribute__((ext_vector_type(4)));
  float4_t acc = {d[0], d[1], d[2], d[3]};
  if constexpr (std::is_same_v<T, half_t>) {
    using half4_t = _Float16 __attribute__((ext_vector_type(4)));
    half4_t va, vb;
    for (int i = 0; i < 4; ++i) {
      va[i] = static_cast<_Float16>(static_cast<float>(a[i]));
      vb[i] = static_cast<_Float16>(static_cast<float>(b[i]));
    }
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, acc, 0, 0, 0);
  } else {
    using short4_t = short __attribute__((ext_vector_type(4)));
    short4_t va, vb;
    for (int i = 0; i < 4; ++i) {
      va[i] = static_cast<short>(a[i].data);
      vb[i] = static_cast<short>(b[i].data);
    }
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, acc, 0, 0, 0);
  }
  for (int i = 0; i < 4; ++i) d[i] = acc[i];
#else
  (void)a, (void)b, (void)d;
  __builtin_trap();  // the host enables matrix cores only on CDNA2/3 (gfx90a, gfx94x)
#endif
#else
  float fa[mma_max_elems], fb[mma_max_elems];
  for (int i = 0; i < mma_max_elems; ++i) {
    fa[i] = to_f32(a[i]);
    fb[i] = to_f32(b[i]);
  }
  ::swinfer::gpu_emulator::mma_16x16x16(fa, fb, d, mma_elems(), [](int lane, int i, int& r, int& c) {
    mma_a_coord(lane, i, r, c);
  }, [](int lane, int i, int& r, int& c) { mma_b_coord(lane, i, r, c); },
  [](int lane, int i, int& r, int& c) { mma_c_coord(lane, i, r, c); });
#endif
}

// ---- int8: D (16 x 16, int32) += A (16 x 32) B (32 x 16), signed bytes, exact ----------------------------------
//
//   NVIDIA: two mma.sync.m16n8k32.s32.s8.s8.s32 (PTX ISA, "Matrix Fragments for mma.m16n8k32"); 16 bytes of A and
//          16 of B (8 per n8 half) per lane, in four 32-bit words each. g = lane / 4, t = lane % 4.
//   AMD: CDNA3 (gfx94x) one v_mfma_i32_16x16x32_i8, CDNA2 (gfx90a) two v_mfma_i32_16x16x16i8 (the first on each
//          lane's word 0, the second on word 1: k permuted alike in A and B, so the sum is the same); 8 bytes of A
//          and of B per lane: A[lane % 16][8 (lane / 16) + i], B[8 (lane / 16) + i][lane % 16].
//   D as the 16-bit operation's (mma_c_coord).
// Byte i of a fragment is byte i % 4 of word i / 4.

/// 32-bit words of A and of B a lane holds (arrays are sized for the largest, 4).
inline constexpr int mma_s8_max_words = 4;
SWINFER_GPU_DEVICE inline int mma_s8_words() { return mma_amd_layout() ? 2 : 4; }

/// Byte i of the lane's A fragment is A[row][k].
SWINFER_GPU_DEVICE inline void mma_s8_a_coord(int lane, int i, int& row, int& k) {
  if (mma_amd_layout()) {
    row = lane % 16;
    k = 8 * (lane / 16) + i;
  } else {
    const int w = i / 4;
    row = lane / 4 + 8 * (w & 1);
    k = 16 * (w >> 1) + 4 * (lane % 4) + i % 4;
  }
}
/// Byte i of the lane's B fragment is B[k][col].
SWINFER_GPU_DEVICE inline void mma_s8_b_coord(int lane, int i, int& k, int& col) {
  if (mma_amd_layout()) {
    col = lane % 16;
    k = 8 * (lane / 16) + i;
  } else {
    const int w = i / 4;  // words 0, 1: columns 0-7, k 0-15 and 16-31; words 2, 3: columns 8-15
    col = lane / 4 + 8 * (w >> 1);
    k = 16 * (w & 1) + 4 * (lane % 4) + i % 4;
  }
}

/// The lane's A fragment of a 16 x 32 byte tile whose rows lie anywhere in shared memory: row r's k = 0 .. 31 at
/// base + row_offset(r) (a byte offset, 16-byte aligned). NVIDIA: one ldmatrix (the 16-bit layout's matrices are
/// the tile's quarters of 8 rows x 16 bytes); AMD: one 8-byte load.
template <class RowOffset>
SWINFER_GPU_DEVICE inline void mma_s8_load_a_rows(const std::int8_t* base, const RowOffset& row_offset,
                                                  std::uint32_t (&f)[mma_s8_max_words]) {
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  if (!mma_amd_layout()) {
    load_matrix_words_x4(base, row_offset(lane % 16) + (lane / 16) * 16, f);
    return;
  }
  const auto two = *reinterpret_cast<const std::uint64_t*>(base + row_offset(lane % 16) + 8 * (lane / 16));
  f[0] = static_cast<std::uint32_t>(two), f[1] = static_cast<std::uint32_t>(two >> 32), f[2] = f[3] = 0;
}
/// The lane's A fragment of the 16 x 32 byte tile at `a`, row-major with ld bytes per row (a multiple of 16).
SWINFER_GPU_DEVICE inline void mma_s8_load_a(const std::int8_t* a, int ld, std::uint32_t (&f)[mma_s8_max_words]) {
  mma_s8_load_a_rows(a, [ld](int r) { return r * ld; }, f);
}
/// The lane's B fragment of the 32 x 16 byte tile at `b`, stored column by column (B[k][col] at b[col * ld + k],
/// the weights' (N, K) rows), ld a multiple of 16.
SWINFER_GPU_DEVICE inline void mma_s8_load_b(const std::int8_t* b, int ld, std::uint32_t (&f)[mma_s8_max_words]) {
  const int lane = static_cast<int>(threadIdx.x) % SWINFER_GPU_WARP_SIZE;
  if (!mma_amd_layout()) {
    // Matrices 0-3: columns 0-7 k 0-15 and k 16-31, columns 8-15 k 0-15 and k 16-31.
    load_matrix_words_x4(b, ((lane & 7) + ((lane >> 4) << 3)) * ld + ((lane >> 3) & 1) * 16, f);
    return;
  }
  const auto two = *reinterpret_cast<const std::uint64_t*>(b + (lane % 16) * ld + 8 * (lane / 16));
  f[0] = static_cast<std::uint32_t>(two), f[1] = static_cast<std::uint32_t>(two >> 32), f[2] = f[3] = 0;
}

/// D += A B exactly for one 16 x 16 x 32 tile of signed bytes; a and b hold mma_s8_words() words, d mma_elems()
/// int32 sums (the lane's fragments).
SWINFER_GPU_DEVICE inline void mma_16x16x32_s8(const std::uint32_t (&a)[mma_s8_max_words],
                                               const std::uint32_t (&b)[mma_s8_max_words], int (&d)[mma_max_elems]) {
#if SWINFER_GPU_NVIDIA
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[4 * h]), "+r"(d[4 * h + 1]), "+r"(d[4 * h + 2]), "+r"(d[4 * h + 3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]));
  }
#else
  (void)a, (void)b, (void)d;
  __trap();  // the host enables matrix cores only on sm_80 and newer
#endif
#elif SWINFER_GPU_AMD
  using int4_t = int __attribute__((ext_vector_type(4)));
  int4_t acc = {d[0], d[1], d[2], d[3]};
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
  const auto pair = [](std::uint32_t lo, std::uint32_t hi) {
    return static_cast<long>(static_cast<std::uint64_t>(lo) | (static_cast<std::uint64_t>(hi) << 32));
  };
  acc = __builtin_amdgcn_mfma_i32_16x16x32_i8(pair(a[0], a[1]), pair(b[0], b[1]), acc, 0, 0, 0);
#elif defined(__gfx90a__)
  acc = __builtin_amdgcn_mfma_i32_16x16x16i8(static_cast<int>(a[0]), static_cast<int>(b[0]), acc, 0, 0, 0);
  acc = __builtin_amdgcn_mfma_i32_16x16x16i8(static_cast<int>(a[1]), static_cast<int>(b[1]), acc, 0, 0, 0);
#else
  (void)a, (void)b;
  __builtin_trap();  // the host enables matrix cores only on CDNA2/3 (gfx90a, gfx94x)
#endif
  for (int i = 0; i < 4; ++i) d[i] = acc[i];
#else
  const int bytes = 4 * mma_s8_words();
  int ia[4 * mma_s8_max_words], ib[4 * mma_s8_max_words];
  for (int i = 0; i < bytes; ++i) {
    ia[i] = static_cast<std::int8_t>((a[i / 4] >> (8 * (i % 4))) & 0xffu);
    ib[i] = static_cast<std::int8_t>((b[i / 4] >> (8 * (i % 4))) & 0xffu);
  }
  ::swinfer::gpu_emulator::mma_16x16x32_s8(ia, ib, d, bytes, mma_elems(), [](int lane, int i, int& r, int& c) {
    mma_s8_a_coord(lane, i, r, c);
  }, [](int lane, int i, int& r, int& c) { mma_s8_b_coord(lane, i, r, c); },
  [](int lane, int i, int& r, int& c) { mma_c_coord(lane, i, r, c); });
#endif
}

}  // namespace swinfer::gpu
