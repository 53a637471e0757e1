// Host emulation of the CUDA subset that autojit's render_cuda emits.
//
// emulate.py compiles a generated .cu file as C++ with
//   g++ -x c++ -DAUTOJIT_EMULATE -include emulation.h ...
// so the kernel source stays byte-for-byte what NVRTC compiles.
//
// Elementwise kernels: the <name>_emulate entry point sets gridDim/blockDim and plays every
// (block, thread) pair in turn through the globals below, which makes grid-stride indexing
// mistakes visible on the CPU.
//
// Reduction kernels need threads that meet: __syncthreads(), __shared__ memory and warp
// shuffles. Their entry point runs each block as blockDim.x fibers (ucontext) on one OS
// thread: a fiber runs until it waits at a barrier (the block's, or its warp's for a
// shuffle), then the next one runs. A barrier that can never complete (a thread left the
// kernel, or diverged to another barrier) is reported through aj_emulate_error() instead
// of hanging. Blocks run one after another, so a function-local static is exactly
// block-shared memory.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static thread_local

constexpr size_t AJ_FIBER_STACK = 64 * 1024;

// Fibers: a stack and a saved context. On x86-64 a six-register switch (callee-saved
// registers and the stack pointer; the kernels never change the FP control words), 20x
// cheaper than swapcontext, which makes a system call to save the signal mask.
#if defined(__x86_64__) && !defined(AJ_EMU_UCONTEXT)
struct aj_fiber { void *sp; };
extern "C" __attribute__((visibility("hidden"))) void aj_emu_switch(void **save, void *next);
asm(".text\n.globl aj_emu_switch\n.hidden aj_emu_switch\n.type aj_emu_switch, @function\n"
    "aj_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n.size aj_emu_switch, .-aj_emu_switch\n");
inline void aj_fiber_switch(aj_fiber *from, aj_fiber *to) { aj_emu_switch(&from->sp, to->sp); }
// The first switch pops six zero registers and "returns" into entry with the stack aligned
// as after a call; entry never returns (it switches away for good).
inline void aj_fiber_start(aj_fiber *fiber, char *stack, void (*entry)()) {
  void **sp = (void **)(stack + AJ_FIBER_STACK);
  *--sp = nullptr;
  *--sp = (void *)entry;
  for (int r = 0; r < 6; ++r) *--sp = nullptr;
  fiber->sp = sp;
}
#else
struct aj_fiber { ucontext_t context; };
inline void aj_fiber_switch(aj_fiber *from, aj_fiber *to) { swapcontext(&from->context, &to->context); }
inline void aj_fiber_start(aj_fiber *fiber, char *stack, void (*entry)()) {
  getcontext(&fiber->context);
  fiber->context.uc_stack.ss_sp = stack;
  fiber->context.uc_stack.ss_size = AJ_FIBER_STACK;
  fiber->context.uc_link = nullptr;
  makecontext(&fiber->context, entry, 0);
}
#endif

struct aj_dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

// One emulated thread at a time (per OS thread), so plain globals stand in for the CUDA
// built-ins; the fiber scheduler sets threadIdx before it resumes a fiber.
inline thread_local aj_dim3 gridDim, blockDim, blockIdx, threadIdx;

// Per OS thread; arrays sized for the largest block emulated so far (<stdlib> only: the
// header is compiled with every emulated kernel, so it stays light).
struct aj_emu_state {
  unsigned capacity = 0;
  aj_fiber *fibers = nullptr;
  char *stacks = nullptr;
  unsigned char *done = nullptr;
  unsigned *shuffles = nullptr;            // per thread: shuffles done (mailbox parity)
  unsigned long long *slots = nullptr;     // 2 x blockDim shuffle mailboxes
  unsigned long long *warp_gen = nullptr;  // per warp barrier: generation, arrivals
  unsigned *warp_arrived = nullptr;
  unsigned long long block_gen = 0;
  unsigned block_arrived = 0;
  unsigned long long progress = 0;         // arrivals + finished fibers
  aj_fiber scheduler;
  void (*body)(void *) = nullptr;          // calls the kernel with its arguments
  void *context = nullptr;
  const char *error = nullptr;
  void reserve(unsigned block) {
    if (block <= capacity) return;
    release();
    capacity = block;
    fibers = (aj_fiber *)std::calloc(block, sizeof(aj_fiber));
    stacks = (char *)std::malloc((size_t)block * AJ_FIBER_STACK);
    done = (unsigned char *)std::calloc(block, 1);
    shuffles = (unsigned *)std::calloc(block, sizeof(unsigned));
    slots = (unsigned long long *)std::calloc(2 * block, sizeof(unsigned long long));
    warp_gen = (unsigned long long *)std::calloc(block / 32 + 1, sizeof(unsigned long long));
    warp_arrived = (unsigned *)std::calloc(block / 32 + 1, sizeof(unsigned));
  }
  void release() {
    std::free(fibers); std::free(stacks); std::free(done); std::free(shuffles);
    std::free(slots); std::free(warp_gen); std::free(warp_arrived);
    capacity = 0;
  }
  ~aj_emu_state() { release(); }
};
inline thread_local aj_emu_state aj_emu;

extern "C" const char *aj_emulate_error(void) { return aj_emu.error; }

inline void aj_emu_wait(unsigned long long &gen, unsigned &arrived, unsigned members) {
  const unsigned long long mine = gen;
  ++aj_emu.progress;
  if (++arrived == members) {
    arrived = 0;
    ++gen;
    return;
  }
  while (gen == mine) aj_fiber_switch(&aj_emu.fibers[threadIdx.x], &aj_emu.scheduler);
}

inline void __syncthreads() { aj_emu_wait(aj_emu.block_gen, aj_emu.block_arrived, blockDim.x); }
inline void __threadfence() {}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}

// A shuffle: post the value, wait for the whole warp, read the source lane's post. Posts
// alternate between two mailboxes, so one barrier per shuffle is enough.
template <typename T> inline T aj_emu_shuffle(unsigned mask, T x, unsigned lane, int width) {
  if (mask != 0xffffffffu || width <= 0 || width > 32 || (width & (width - 1)))
    aj_emu.error = "shuffle with a partial mask or a width that is not a power of two <= 32";
  const unsigned t = threadIdx.x, warp = t >> 5;
  unsigned long long *box = &aj_emu.slots[(aj_emu.shuffles[t]++ & 1u) * blockDim.x];
  static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffle of a wide type");
  std::memcpy(&box[t], &x, sizeof(T));
  aj_emu_wait(aj_emu.warp_gen[warp], aj_emu.warp_arrived[warp], 32);
  T out;
  std::memcpy(&out, &box[(t & ~31u) + lane], sizeof(T));
  return out;
}
template <typename T> inline T __shfl_down_sync(unsigned mask, T x, int delta, int width = 32) {
  const unsigned lane = threadIdx.x & 31u, first = lane & ~(unsigned)(width - 1);
  const unsigned source = lane + delta < first + width ? lane + delta : lane;
  return aj_emu_shuffle(mask, x, source, width);
}
template <typename T> inline T __shfl_sync(unsigned mask, T x, int src, int width = 32) {
  const unsigned lane = threadIdx.x & 31u, first = lane & ~(unsigned)(width - 1);
  return aj_emu_shuffle(mask, x, first + ((unsigned)src & (unsigned)(width - 1)), width);
}

inline void aj_emu_fiber_main() {
  aj_emu.body(aj_emu.context);
  aj_emu.done[threadIdx.x] = 1;
  ++aj_emu.progress;
  aj_fiber_switch(&aj_emu.fibers[threadIdx.x], &aj_emu.scheduler);  // never resumed
}

// Run the current block (blockIdx) to completion; false when its barriers deadlock.
inline bool aj_emu_run_block() {
  const unsigned n = blockDim.x;
  for (unsigned t = 0; t < n; ++t) {
    aj_fiber_start(&aj_emu.fibers[t], &aj_emu.stacks[t * AJ_FIBER_STACK], aj_emu_fiber_main);
    aj_emu.done[t] = 0;
    aj_emu.shuffles[t] = 0;
  }
  unsigned live = n;
  while (live > 0) {
    const unsigned long long before = aj_emu.progress;
    for (unsigned t = 0; t < n; ++t) {
      if (aj_emu.done[t]) continue;
      threadIdx.x = t;
      aj_fiber_switch(&aj_emu.scheduler, &aj_emu.fibers[t]);
      live -= aj_emu.done[t];
    }
    if (live > 0 && aj_emu.progress == before) return false;
  }
  return true;
}

// Play a grid of blocks of fibers; each fiber calls body() (the kernel with its arguments).
template <typename F> inline void aj_emulate_grid(unsigned grid, unsigned block, F body) {
  aj_emu.error = nullptr;
  if (block == 0 || block % 32 != 0 || block > 1024) {
    aj_emu.error = "reduction kernels need a block of a multiple of 32 threads, at most 1024";
    return;
  }
  gridDim.x = grid;
  blockDim.x = block;
  aj_emu.reserve(block);
  aj_emu.body = [](void *f) { (*(F *)f)(); };
  aj_emu.context = &body;
  for (unsigned w = 0; w < block / 32; ++w) aj_emu.warp_gen[w] = aj_emu.warp_arrived[w] = 0;
  for (unsigned b = 0; b < grid && aj_emu.error == nullptr; ++b) {
    aj_emu.block_gen = 0;
    aj_emu.block_arrived = 0;
    blockIdx.x = b;
    if (!aj_emu_run_block())
      aj_emu.error = "deadlock: threads of a block wait at barriers that cannot complete "
                     "(__syncthreads or a shuffle not reached by every thread)";
  }
  threadIdx.x = 0;
}
