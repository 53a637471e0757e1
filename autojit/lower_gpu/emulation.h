// Host emulation of the CUDA subset that autojit's render_cuda emits.
//
// emulate.py compiles a generated .cu file as C++ with
//   g++ -x c++ -DAUTOJIT_EMULATE -include emulation.h ...
// so the kernel source stays byte-for-byte what NVRTC compiles. The <name>_emulate entry
// point sets gridDim/blockDim and plays every (block, thread) pair in turn through the
// globals below, which makes grid-stride indexing mistakes visible on the CPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <math.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))

struct aj_dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

// One emulated thread at a time, so plain globals stand in for the CUDA built-ins.
inline aj_dim3 gridDim, blockDim, blockIdx, threadIdx;
