// swinfer hip backend: a CPU emulator of the CUDA dialect our kernels use, so the kernels' *logic* can be tested
// (over 350 lines: it mirrors, name for name, every runtime call and intrinsic vendor/gpu.hpp maps, in one place)
// on a machine without a GPU (SWINFER_GPU_PLATFORM=emulator; only vendor/gpu.hpp includes this, in the library's
// own translation units compiled by the C++ compiler with SWINFER_GPU_EMULATOR defined).
//
// It provides the CUDA runtime names vendor/gpu.hpp maps (host memory, synchronous copies, one fake device) and
// the device-side names (threadIdx, blockIdx, blockDim, gridDim, warpSize, __syncthreads, __shared__, warp
// shuffles, __half/__nv_bfloat16 as Eigen's round-to-nearest-even types), dynamic shared memory (0xff bytes at each
// block's start), cp.async's asynchronous copies (landing only when the issuing thread waits for their group,
// so a missing wait reads old data) and Hopper's warpgroup products (computed from shared memory only when the
// thread waits for their group, so a write before the wait changes them). A launch runs its blocks one after
// another on the calling thread; the threads of a block are fibers with their own stacks, switched by a small
// x86-64 routine (src/emulator.cpp) only at __syncthreads and warp shuffles, so shared memory (`__shared__` is
// `static`: one block at a time) and barriers have GPU semantics. A barrier that not every live thread reaches
// aborts with "deadlock"; fresh device memory is filled with 0xff bytes (NaN), so reads of unwritten memory show.
//
// Environment: SWINFER_GPU_EMULATOR_WARP = warp size (32 by default; 64 emulates CDNA), and
// SWINFER_GPU_EMULATOR_ORDER=reverse resumes the threads of a block in reverse order (shakes out order-dependent
// races between barriers). What it cannot show: timing, occupancy, register or shared-memory limits, memory
// coalescing, data races inside one barrier interval in other interleavings, device-compiler bugs.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <vector>

/// Saves the callee-saved registers and the stack pointer to *save_sp and resumes the context at new_sp
/// (src/emulator.cpp, System V x86-64).
extern "C" void swinfer_gpu_emulator_switch(void** save_sp, void* new_sp);

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

namespace swinfer::gpu_emulator {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
inline int warp_size() {
  static const int ws = env_int("SWINFER_GPU_EMULATOR_WARP", 32);
  return ws;
}
/// SWINFER_GPU_EMULATOR_ORDER: "reverse" resumes a block's threads in reverse order; "warps" runs one warp at a
/// time from one block barrier to the next (warp 0 first), so a warp that reads what another warp writes in the same
/// barrier interval reads it before it is written.
inline const char* order_name() {
  static const char* v = [] {
    const char* e = std::getenv("SWINFER_GPU_EMULATOR_ORDER");
    return e ? e : "";
  }();
  return v;
}
inline bool reverse_order() {
  static const bool r = std::strcmp(order_name(), "reverse") == 0;
  return r;
}
inline bool warp_serial() {
  static const bool w = std::strcmp(order_name(), "warps") == 0;
  return w;
}

enum class wait_kind { none, block, warp };

inline constexpr std::size_t mma_slots = 3 * 256;  ///< A, B and D, per warp
inline constexpr std::size_t mma_s8_slots = 2 * 512 + 256;  ///< the int8 operation's A (16 x 32), B, D, per warp

/// A 16-byte asynchronous copy not yet landed: the source's bytes as they were when it was issued.
struct pending_copy {
  unsigned char* dst;
  unsigned char bytes[16];
};

/// A K-major shared-memory operand of a warpgroup product (vendor/warpgroup_mma.hpp's k_major_operand).
struct smem_operand {
  std::uint32_t start, half_stride, group_stride;
};

/// A warpgroup product issued and not yet retired: computed into `d` when its group is waited for.
struct pending_wgmma {
  smem_operand a, b;
  float* d;
  int n;
  bool bf16;
};

struct fiber {
  void* sp = nullptr;
  std::vector<char> stack;
  uint3 tid;
  int linear = 0;
  bool done = false;
  wait_kind waiting = wait_kind::none;
  std::vector<pending_copy> open_copies;             ///< issued since the last commit
  std::deque<std::vector<pending_copy>> copy_groups;  ///< committed, oldest first, landing only when waited for
  std::vector<pending_wgmma> open_wgmma;              ///< warpgroup products issued since the last commit
  std::deque<std::vector<pending_wgmma>> wgmma_groups;  ///< committed, oldest first, computed when waited for
};

/// The state of the block being run (one at a time).
struct block_state {
  std::vector<fiber> fibers;
  void* scheduler_sp = nullptr;
  fiber* current = nullptr;
  uint3 block_idx;
  dim3 block_dim, grid_dim;
  int threads = 0, live = 0, block_arrived = 0;
  int round_position = -1;  ///< the running fiber's place in this round's order
  int active_warp = 0;      ///< warp_serial(): the one warp whose threads this round runs
  std::vector<int> warp_live, warp_arrived;
  std::vector<float> lanes;  ///< one shuffle slot per thread
  std::vector<float> mma;    ///< per warp: A, B and D (16 x 16 each) of its matrix-core operation
  std::vector<int> mma_s8;   ///< per warp: A, B and D of its int8 matrix-core operation
  std::vector<char> mma_done;  ///< per warp: whether this operation's D has been computed
  std::vector<unsigned char> dynamic_shared;  ///< the launch's dynamic shared memory, 0xff bytes at each block's start
  const std::function<void()>* body = nullptr;
};
inline block_state& state() {
  static block_state s;
  return s;
}

/// The first fiber after round place `after` that can run (not done, not waiting), in this round's order; -1: none.
inline int next_runnable(int after) {
  block_state& s = state();
  int end = s.threads;
  if (warp_serial()) {
    after = std::max(after, s.active_warp * warp_size() - 1);
    end = std::min(end, (s.active_warp + 1) * warp_size());
  }
  for (int k = after + 1; k < end; ++k) {
    const fiber& f = s.fibers[static_cast<std::size_t>(reverse_order() ? s.threads - 1 - k : k)];
    if (!f.done && f.waiting == wait_kind::none) return k;
  }
  return -1;
}

/// Leaves the running fiber (its context saved to *save_sp) for the next one of the round that can run, directly,
/// or for the scheduler when the round is over: one switch per wait.
inline void switch_onward(void** save_sp) {
  block_state& s = state();
  const int k = next_runnable(s.round_position);
  if (k < 0) return swinfer_gpu_emulator_switch(save_sp, s.scheduler_sp);
  s.round_position = k;
  s.current = &s.fibers[static_cast<std::size_t>(reverse_order() ? s.threads - 1 - k : k)];
  swinfer_gpu_emulator_switch(save_sp, s.current->sp);
}

[[noreturn]] inline void fiber_entry() {
  block_state& s = state();
  (*s.body)();
  fiber* f = s.current;
  f->done = true;
  s.live--;
  s.warp_live[static_cast<std::size_t>(f->linear / warp_size())]--;
  void* unused = nullptr;
  switch_onward(&unused);
  std::abort();  // never resumed
}

inline void wait(wait_kind k) {
  block_state& s = state();
  s.current->waiting = k;
  if (k == wait_kind::block) {
    s.block_arrived++;
  } else {
    s.warp_arrived[static_cast<std::size_t>(s.current->linear / warp_size())]++;
  }
  switch_onward(&s.current->sp);
}

inline constexpr std::size_t stack_bytes = 256 * 1024;

inline void start(fiber& f) {
  if (f.stack.empty()) f.stack.resize(stack_bytes);
  auto top = reinterpret_cast<std::uintptr_t>(f.stack.data() + f.stack.size()) & ~std::uintptr_t{15};
  top -= 16;  // the return-address slot on a 16-byte boundary: after `ret`, rsp = 8 mod 16, as at a call
  *reinterpret_cast<void**>(top) = reinterpret_cast<void*>(&fiber_entry);
  auto** saved = reinterpret_cast<void**>(top - 6 * sizeof(void*));  // rbp rbx r12 r13 r14 r15, popped first
  std::fill(saved, saved + 6, nullptr);
  f.sp = saved;
  f.done = false;
  f.waiting = wait_kind::none;
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "swinfer gpu emulator: %s (block %u,%u,%u)\n", what, state().block_idx.x,
               state().block_idx.y, state().block_idx.z);
  std::abort();
}

inline void release(int first, int last, wait_kind k) {
  block_state& s = state();
  for (int i = first; i < last; ++i) {
    fiber& f = s.fibers[static_cast<std::size_t>(i)];
    if (f.done) continue;
    if (f.waiting != k) fail("threads wait at different barriers (__syncthreads vs a warp shuffle)");
    f.waiting = wait_kind::none;
  }
}

inline void run_block(const std::function<void()>& body) {
  block_state& s = state();
  const int n = static_cast<int>(s.block_dim.x * s.block_dim.y * s.block_dim.z), ws = warp_size();
  const int warps = (n + ws - 1) / ws;
  if (static_cast<int>(s.fibers.size()) < n) s.fibers.resize(static_cast<std::size_t>(n));
  s.warp_live.assign(static_cast<std::size_t>(warps), 0);
  s.warp_arrived.assign(static_cast<std::size_t>(warps), 0);
  s.lanes.assign(static_cast<std::size_t>(warps) * ws, 0.0f);
  s.mma.assign(static_cast<std::size_t>(warps) * mma_slots, 0.0f);
  s.mma_s8.assign(static_cast<std::size_t>(warps) * mma_s8_slots, 0);
  s.mma_done.assign(static_cast<std::size_t>(warps), 0);
  for (int i = 0; i < n; ++i) {
    fiber& f = s.fibers[static_cast<std::size_t>(i)];
    start(f);
    f.linear = i;
    f.tid = {i % s.block_dim.x, (i / s.block_dim.x) % s.block_dim.y, i / (s.block_dim.x * s.block_dim.y)};
    s.warp_live[static_cast<std::size_t>(i / ws)]++;
  }
  s.threads = n;
  s.live = n;
  s.block_arrived = 0;
  s.body = &body;
  while (s.live > 0) {
    if (warp_serial()) {  // the round's warp: the first with a thread that can run
      s.active_warp = 0;
      while (s.active_warp < warps - 1 && next_runnable(-1) < 0) s.active_warp++;
    }
    // A round: every fiber that can run, in order, each until it waits or ends (then on to the next, directly).
    const int first = next_runnable(-1);
    bool progressed = first >= 0;
    if (progressed) {
      s.round_position = first;
      s.current = &s.fibers[static_cast<std::size_t>(reverse_order() ? n - 1 - first : first)];
      swinfer_gpu_emulator_switch(&s.scheduler_sp, s.current->sp);
    }
    if (s.live > 0 && s.block_arrived == s.live) {  // exited threads count as arrived, as on current GPUs
      release(0, n, wait_kind::block);
      s.block_arrived = 0;
      progressed = true;
    }
    if (warp_serial() && first >= 0) progressed = true;  // other warps may still run before any barrier opens
    for (int w = 0; w < warps; ++w) {
      const auto wi = static_cast<std::size_t>(w);
      if (s.warp_live[wi] > 0 && s.warp_arrived[wi] == s.warp_live[wi]) {
        release(w * ws, std::min(n, (w + 1) * ws), wait_kind::warp);
        s.warp_arrived[wi] = 0;
        progressed = true;
      }
    }
    if (!progressed) fail("deadlock: a barrier that not every live thread of the block reaches");
  }
}

/// Runs every block of the grid, one after another, each with `shared_bytes` of dynamic shared memory.
inline void launch(dim3 grid, dim3 block, std::size_t shared_bytes, const std::function<void()>& body) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024) fail("a block needs 1 to 1024 threads");
  block_state& s = state();
  s.grid_dim = grid;
  s.block_dim = block;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        s.block_idx = {x, y, z};
        s.dynamic_shared.assign(shared_bytes, 0xff);  // what a block did not write reads as NaN
        run_block(body);
        for (const fiber& f : s.fibers) {
          if (!f.open_copies.empty() || !f.copy_groups.empty()) {
            fail("a thread ended with asynchronous copies in flight");
          }
          if (!f.open_wgmma.empty() || !f.wgmma_groups.empty()) {
            fail("a thread ended with warpgroup products in flight");
          }
        }
      }
}

/// cp.async as the devices order it: a 16-byte copy issued now (the source read now), landing in shared memory only
/// when the issuing thread waits for its group, so a read before the wait (and the barrier after it) sees old data.
inline void copy_async_16(void* dst, const void* src) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0) {
    fail("misaligned 16-byte asynchronous copy");
  }
  pending_copy c{static_cast<unsigned char*>(dst), {}};
  std::memcpy(c.bytes, src, sizeof c.bytes);
  state().current->open_copies.push_back(c);
}
inline void copy_async_commit() {
  fiber& f = *state().current;
  f.copy_groups.push_back(std::move(f.open_copies));
  f.open_copies.clear();
}
/// Lands every committed group but the newest `pending`.
inline void copy_async_wait(int pending) {
  fiber& f = *state().current;
  while (static_cast<int>(f.copy_groups.size()) > pending) {
    for (const pending_copy& c : f.copy_groups.front()) std::memcpy(c.dst, c.bytes, sizeof c.bytes);
    f.copy_groups.pop_front();
  }
}

/// The offset of p in the launch's dynamic shared memory: the address a warpgroup product's descriptor holds.
inline std::uint32_t shared_address(const void* p) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  const std::vector<unsigned char>& shared = state().dynamic_shared;
  if (bytes < shared.data() || bytes >= shared.data() + shared.size()) {
    fail("a warpgroup product's operand outside dynamic shared memory");
  }
  return static_cast<std::uint32_t>(bytes - shared.data());
}

/// Element (row, k) of a K-major operand (8-row core matrices of 8 x 16 bytes, no swizzle), 16-bit, as float.
inline float operand_element(const smem_operand& m, int row, int k, bool bf16) {
  const std::size_t at = m.start + static_cast<std::size_t>(row / 8) * m.group_stride +
                         static_cast<std::size_t>(k / 8) * m.half_stride + (row % 8) * 16 + (k % 8) * 2;
  const std::vector<unsigned char>& shared = state().dynamic_shared;
  if (at + 2 > shared.size()) fail("a warpgroup product reads past dynamic shared memory");
  std::uint16_t bits = 0;
  std::memcpy(&bits, shared.data() + at, sizeof bits);
  return bf16 ? static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits))
              : static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

/// wgmma.mma_async m64nNk16 (vendor/warpgroup_mma.hpp): issued now, computed when the thread's wait retires it. Only
/// 32-lane warps have the instruction; the thread's warp in its warpgroup and its lane pick its D elements.
inline void wgmma_64xNx16(smem_operand a, smem_operand b, float* d, int n, bool bf16) {
  if (warp_size() != 32) fail("warpgroup products need 32-lane warps");
  if ((a.start | a.half_stride | a.group_stride | b.start | b.half_stride | b.group_stride) % 16 != 0) {
    fail("a warpgroup product's operand is not 16-byte aligned");
  }
  state().current->open_wgmma.push_back({a, b, d, n, bf16});
}
inline void wgmma_commit() {
  fiber& f = *state().current;
  f.wgmma_groups.push_back(std::move(f.open_wgmma));
  f.open_wgmma.clear();
}
/// Computes every committed group but the newest `pending`, reading shared memory as it is now.
inline void wgmma_wait(int pending) {
  fiber& f = *state().current;
  const int lane = f.linear % 32, warp = f.linear / 32 % 4;
  while (static_cast<int>(f.wgmma_groups.size()) > pending) {
    for (const pending_wgmma& op : f.wgmma_groups.front()) {
      for (int j = 0; j < op.n / 8; ++j)
        for (int e = 0; e < 4; ++e) {
          const int row = 16 * warp + lane / 4 + 8 * (e / 2), col = 8 * j + 2 * (lane % 4) + e % 2;
          float sum = op.d[4 * j + e];
          for (int k = 0; k < 16; ++k) {
            sum += operand_element(op.a, row, k, op.bf16) * operand_element(op.b, col, k, op.bf16);
          }
          op.d[4 * j + e] = sum;
        }
    }
    f.wgmma_groups.pop_front();
  }
}

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

// ---- Device-side names ---------------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (::swinfer::gpu_emulator::state().current->tid)
#define blockIdx (::swinfer::gpu_emulator::state().block_idx)
#define blockDim (::swinfer::gpu_emulator::state().block_dim)
#define gridDim (::swinfer::gpu_emulator::state().grid_dim)
inline const int warpSize = ::swinfer::gpu_emulator::warp_size();
inline void __syncthreads() { ::swinfer::gpu_emulator::wait(::swinfer::gpu_emulator::wait_kind::block); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

inline float __shfl_xor_sync(unsigned, float v, int mask, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width, src = lane ^ mask;
  return ::swinfer::gpu_emulator::exchange(v, src, src >= seg && src < seg + width);
}
inline float __shfl_down_sync(unsigned, float v, unsigned delta, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width;
  const int src = lane + static_cast<int>(delta);
  return ::swinfer::gpu_emulator::exchange(v, src, src < seg + width);
}
inline float __shfl_sync(unsigned, float v, int src_lane, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width;
  return ::swinfer::gpu_emulator::exchange(v, seg + src_lane % width, true);
}

// ---- 16-bit types (bit-identical to the GPU ones, round to nearest even) ---------------------------------------

using __half = Eigen::half;
using __nv_bfloat16 = Eigen::bfloat16;
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __float2half(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return static_cast<float>(h); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }

// ---- Runtime names (one device, host memory, everything synchronous) ---------------------------------------------

enum cudaError_t { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
struct swinfer_gpu_emulator_stream;
/// An event is the host time it was recorded at: kernels have run by the time their launch returns.
struct swinfer_gpu_emulator_event {
  std::chrono::steady_clock::time_point at;
};
using cudaStream_t = swinfer_gpu_emulator_stream*;
using cudaEvent_t = swinfer_gpu_emulator_event*;
inline constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaDeviceProp {
  char name[256];
  int major, minor, warpSize, multiProcessorCount;
  std::size_t sharedMemPerBlock, sharedMemPerBlockOptin, totalGlobalMem;
};
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "out of memory"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
namespace swinfer::gpu_emulator {
/// The emulated device's memory in bytes: $SWINFER_GPU_EMULATOR_MEMORY_MIB (default 16 GiB), so that tests can run
/// out of it; allocations beyond it fail as a full device does.
inline std::size_t memory_capacity() {
  static const std::size_t capacity = [] {
    const char* mib = std::getenv("SWINFER_GPU_EMULATOR_MEMORY_MIB");
    return (mib && *mib ? std::strtoull(mib, nullptr, 10) : std::size_t{16} << 10) << 20;
  }();
  return capacity;
}
inline std::atomic<std::size_t>& memory_in_use() {
  static std::atomic<std::size_t> bytes{0};
  return bytes;
}
/// Each allocation is preceded by this many bytes holding its size (keeps the 256-byte alignment of cudaMalloc).
inline constexpr std::size_t allocation_header = 256;
}  // namespace swinfer::gpu_emulator

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  // As the devices each warp size stands for: CDNA's 64 KiB of LDS, Hopper's 227 KiB opt-in (the wgmma kernel's).
  p->sharedMemPerBlockOptin = (swinfer::gpu_emulator::warp_size() == 64 ? 64 : 227) * 1024;
  std::snprintf(p->name, sizeof p->name, "swinfer CPU emulator");
  p->major = 0;
  p->minor = 0;
  p->warpSize = ::swinfer::gpu_emulator::warp_size();
  p->multiProcessorCount = 4;
  p->sharedMemPerBlock = 48 * 1024;
  p->totalGlobalMem = ::swinfer::gpu_emulator::memory_capacity();
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  namespace emu = ::swinfer::gpu_emulator;
  *p = nullptr;
  const std::size_t size = (bytes + 255) / 256 * 256;
  if (size > emu::memory_capacity() || emu::memory_in_use().fetch_add(size) + size > emu::memory_capacity()) {
    if (size <= emu::memory_capacity()) emu::memory_in_use() -= size;
    return cudaErrorMemoryAllocation;
  }
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(256, emu::allocation_header + size));
  if (!block) {
    emu::memory_in_use() -= size;
    return cudaErrorMemoryAllocation;
  }
  std::memcpy(block, &size, sizeof size);
  *p = block + emu::allocation_header;
  std::memset(*p, 0xff, bytes);  // NaN in every element type: reading unwritten memory shows up
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  namespace emu = ::swinfer::gpu_emulator;
  if (!p) return cudaSuccess;
  auto* block = static_cast<unsigned char*>(p) - emu::allocation_header;
  std::size_t size = 0;
  std::memcpy(&size, block, sizeof size);
  emu::memory_in_use() -= size;
  std::free(block);
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
// Stream-ordered allocation: everything is synchronous here, so it is plain allocation; the pool calls do nothing.
enum cudaDeviceAttr { cudaDevAttrMemoryPoolsSupported = 115 };
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
using cudaMemPool_t = void*;
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  *pool = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, std::size_t) { return cudaSuccess; }
inline cudaError_t cudaProfilerStart() { return cudaSuccess; }
inline cudaError_t cudaProfilerStop() { return cudaSuccess; }
inline cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, std::size_t n, cudaMemcpyKind, cudaStream_t) {
  std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* d, std::size_t dpitch, const void* s, std::size_t spitch,
                                     std::size_t width, std::size_t height, cudaMemcpyKind, cudaStream_t) {
  for (std::size_t r = 0; r < height; ++r) {
    std::memmove(static_cast<char*>(d) + r * dpitch, static_cast<const char*>(s) + r * spitch, width);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, std::size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new swinfer_gpu_emulator_event{std::chrono::steady_clock::now()};
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 0;
  return cudaSuccess;
}
