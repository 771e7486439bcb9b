// swinfer GPU emulator (SWINFER_GPU_PLATFORM=emulator): the matrix-core arithmetic of warp_operations.hpp and the
// fiber switch of scheduler.hpp.
#include "swinfer_gpu_emulator/scheduler.hpp"
#include "swinfer_gpu_emulator/warp_operations.hpp"

// One clone for CPUs with FMA (vfmadd over a row of 8 columns), one without (libm's fmaf): the same roundings.
__attribute__((target_clones("fma", "default"))) void swinfer::gpu_emulator::accumulate_16x16x16(
    const float* __restrict a, const float* __restrict b, float* __restrict d) {
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) {
      const float a_rk = a[r * 16 + k];
      for (int c = 0; c < 16; ++c) d[r * 16 + c] = __builtin_fmaf(a_rk, b[k * 16 + c], d[r * 16 + c]);
    }
}

// The fiber switch. System V x86-64: push the callee-saved registers on the current stack, store the stack
// pointer to *save_sp (rdi), load new_sp (rsi), pop that context's registers and return into it. A fresh fiber's
// stack holds six zero registers and the address of its entry function (scheduler.hpp, start()).
#if !defined(__x86_64__)
#error "the swinfer GPU emulator's fiber switch is written for x86-64"
#endif

asm(R"(
  .pushsection .text
  .globl swinfer_gpu_emulator_switch
  .type swinfer_gpu_emulator_switch, @function
swinfer_gpu_emulator_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size swinfer_gpu_emulator_switch, .-swinfer_gpu_emulator_switch
  .popsection
)");
