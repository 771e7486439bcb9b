// swinfer hip backend, CPU emulator only (SWINFER_GPU_PLATFORM=emulator): the fiber switch of
// vendor/emulator.hpp. System V x86-64: push the callee-saved registers on the current stack, store the stack
// pointer to *save_sp (rdi), load new_sp (rsi), pop that context's registers and return into it. A fresh fiber's
// stack holds six zero registers and the address of its entry function (vendor/emulator.hpp, start()).
#if !defined(__x86_64__)
#error "the swinfer GPU emulator's fiber switch is written for x86-64"
#endif

asm(R"(
  .text
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
  .section .note.GNU-stack, "", @progbits
)");
