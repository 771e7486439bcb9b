// swinfer GPU emulator: the fibers that stand for a block's GPU threads, their barriers, and the launch that runs a
// grid's blocks one after another on the calling thread.
//
// The threads of a block are fibers with their own stacks, switched by a small x86-64 routine (src/emulator.cpp)
// only at __syncthreads and warp barriers (shuffles, matrix-core operations), so shared memory (`__shared__` is
// `static`: one block at a time) and barriers have GPU semantics. A barrier that not every live thread reaches
// aborts with "deadlock". The state a thread carries for the asynchronous operations (async_operations.hpp) and
// the warp's matrix-core slots (warp_operations.hpp) live here, in the block's state.
#pragma once

#include "swinfer_gpu_emulator/device_description.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

}  // namespace swinfer::gpu_emulator
