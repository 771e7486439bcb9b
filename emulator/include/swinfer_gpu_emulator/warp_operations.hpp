// swinfer GPU emulator: the operations of a warp's lanes together, each between warp barriers: the lane exchange
// behind the shuffles (device_names.hpp) and the matrix-core operations (vendor/matrix_core.hpp), whose fragment
// layouts are checked to cover each tile exactly once.
#pragma once

#include "swinfer_gpu_emulator/scheduler.hpp"

#include <cstddef>

namespace swinfer::gpu_emulator {

inline int lane_id() { return state().current->linear % warp_size(); }

/// Every lane of the calling thread's warp publishes v; out[j] = lane src[j]'s value, for one pair of warp barriers.
template <int N>
void exchange_many(float v, const int (&src)[N], float (&out)[N]) {
  block_state& s = state();
  const int lane = s.current->linear % warp_size(), base = s.current->linear - lane;
  s.lanes[static_cast<std::size_t>(s.current->linear)] = v;
  wait(wait_kind::warp);
  for (int j = 0; j < N; ++j) out[j] = s.lanes[static_cast<std::size_t>(base + src[j])];
  wait(wait_kind::warp);  // nobody overwrites a slot before every lane has read
}
/// Lane `src`'s value of v (own value when !valid).
inline float exchange(float v, int src, bool valid) {
  const int source[1] = {valid ? src : lane_id()};
  float out[1];
  exchange_many(v, source, out);
  return out[0];
}

/// D += A B on row-major 16 x 16 tiles, each element's 16 products added in k order with one rounding each (fmaf),
/// the matrix cores' float32 accumulation (src/emulator.cpp; vectorised over a row where the CPU has FMA).
void accumulate_16x16x16(const float* a, const float* b, float* d);

/// Whether a fragment layout covers each element of A (16 x K), B (K x 16) and D (16 x 16) exactly once over the
/// warp's lanes, each lane holding elems_ab elements of A and B and elems_d of D; aborts if not. A layout is a pure
/// function of (lane, element), so each is checked once per process (the warp size is fixed).
template <int K, class CoordA, class CoordB, class CoordC>
bool check_layout(int elems_ab, int elems_d, CoordA coord_a, CoordB coord_b, CoordC coord_c) {
  int count_a[16 * K] = {}, count_b[16 * K] = {}, count_d[256] = {};
  auto count = [](int* counts, int r, int c, int rows, int cols) {
    if (r < 0 || r >= rows || c < 0 || c >= cols) fail("matrix-core fragment layout leaves its tile");
    counts[r * cols + c]++;
  };
  for (int lane = 0; lane < warp_size(); ++lane) {
    for (int i = 0; i < elems_ab; ++i) {
      int r = 0, c = 0;
      coord_a(lane, i, r, c);
      count(count_a, r, c, 16, K);
      coord_b(lane, i, r, c);
      count(count_b, r, c, K, 16);
    }
    for (int i = 0; i < elems_d; ++i) {
      int r = 0, c = 0;
      coord_c(lane, i, r, c);
      count(count_d, r, c, 16, 16);
    }
  }
  for (int e = 0; e < 16 * K; ++e) {
    if (count_a[e] != 1 || count_b[e] != 1) fail("matrix-core fragment layout does not cover A or B exactly");
  }
  for (int e = 0; e < 256; ++e) {
    if (count_d[e] != 1) fail("matrix-core fragment layout does not cover D exactly");
  }
  return true;
}

/// The warp's matrix-core operation D (16 x 16) += A (16 x K) B (K x 16) in the warp's slot (A, then B, then D,
/// row-major): every lane publishes its fragment elements at the coordinates the layout gives; once all have, the
/// first lane to resume computes the warp's product (`multiply(A, B, D)`) and each lane takes back its D elements.
template <int K, class V, class CoordA, class CoordB, class CoordC, class Multiply>
void warp_matrix_op(const V* a, const V* b, V* d, int elems_ab, int elems_d, V* slot, CoordA coord_a, CoordB coord_b,
                    CoordC coord_c, Multiply multiply) {
  block_state& s = state();
  const int lane = s.current->linear % warp_size();
  const auto warp = static_cast<std::size_t>(s.current->linear / warp_size());
  V *A = slot, *B = slot + 16 * K, *D = slot + 32 * K;
  for (int i = 0; i < elems_ab; ++i) {
    int r = 0, c = 0;
    coord_a(lane, i, r, c);
    A[r * K + c] = a[i];
    coord_b(lane, i, r, c);
    B[r * 16 + c] = b[i];
  }
  for (int i = 0; i < elems_d; ++i) {
    int r = 0, c = 0;
    coord_c(lane, i, r, c);
    D[r * 16 + c] = d[i];
  }
  s.mma_done[warp] = 0;
  wait(wait_kind::warp);
  if (!s.mma_done[warp]) {
    multiply(A, B, D);
    s.mma_done[warp] = 1;
  }
  for (int i = 0; i < elems_d; ++i) {
    int r = 0, c = 0;
    coord_c(lane, i, r, c);
    d[i] = D[r * 16 + c];
  }
  wait(wait_kind::warp);  // no lane publishes the next tile before every lane has taken this one's D
}

/// The 16-bit matrix-core operation (vendor/matrix_core.hpp, mma_16x16x16): float32 fragments of `elems` elements
/// of A, B and D per lane.
template <class CoordA, class CoordB, class CoordC>
void mma_16x16x16(const float* a, const float* b, float* d, int elems, CoordA coord_a, CoordB coord_b,
                  CoordC coord_c) {
  [[maybe_unused]] static const bool layout_checked = check_layout<16>(elems, elems, coord_a, coord_b, coord_c);
  block_state& s = state();
  float* slot = s.mma.data() + static_cast<std::size_t>(s.current->linear / warp_size()) * mma_slots;
  warp_matrix_op<16>(a, b, d, elems, elems, slot, coord_a, coord_b, coord_c, accumulate_16x16x16);
}

/// The int8 matrix-core operation (vendor/matrix_core.hpp, mma_16x16x32_s8): D (int32) += A B exactly, A 16 x 32
/// and B 32 x 16 signed bytes; elems_ab elements of A and B and elems_d of D per lane.
template <class CoordA, class CoordB, class CoordC>
void mma_16x16x32_s8(const int* a, const int* b, int* d, int elems_ab, int elems_d, CoordA coord_a, CoordB coord_b,
                     CoordC coord_c) {
  [[maybe_unused]] static const bool layout_checked = check_layout<32>(elems_ab, elems_d, coord_a, coord_b, coord_c);
  block_state& s = state();
  int* slot = s.mma_s8.data() + static_cast<std::size_t>(s.current->linear / warp_size()) * mma_s8_slots;
  const auto multiply = [](const int* A, const int* B, int* D) {
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 32; ++k)
        for (int c = 0; c < 16; ++c) D[r * 16 + c] += A[r * 32 + k] * B[k * 16 + c];
  };
  warp_matrix_op<32>(a, b, d, elems_ab, elems_d, slot, coord_a, coord_b, coord_c, multiply);
}

}  // namespace swinfer::gpu_emulator
