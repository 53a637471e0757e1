"""The C text every generated translation unit starts with.

``PREAMBLE`` serves every kernel (fixed-width types, exact inf/NaN constants, saturating
casts). ``REDUCE_PREAMBLE`` is added in front of reduction kernels: the (value, index) pair
of argmax/argmin, warp shuffles of any element type, the team reduction (shuffles within a
warp, shared memory across the warps of a block) and the helpers that let several blocks
share one row (partials in a scratch buffer, the last block to arrive combines them).

Both are guarded, so one translation unit may hold many kernels. The same text is compiled
by NVRTC and, with ``emulation.h`` force-included, by g++ (see ``emulate.py``).
"""

from __future__ import annotations

# NVRTC gets the fixed-width typedefs here because it has no <stdint.h> without an include
# path; under emulation <cstdint> already supplies them.
PREAMBLE = r"""// ---- autojit preamble ----
#ifndef AUTOJIT_PREAMBLE
#define AUTOJIT_PREAMBLE
#ifndef AUTOJIT_EMULATE
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif
// inf and NaN constants from their bit patterns: no portable literal spells them.
union aj_f32_pun { uint32_t u; float f; };
union aj_f64_pun { uint64_t u; double f; };
__device__ __forceinline__ float aj_f32_bits(uint32_t u) { aj_f32_pun p; p.u = u; return p.f; }
__device__ __forceinline__ double aj_f64_bits(uint64_t u) { aj_f64_pun p; p.u = u; return p.f; }
// float -> int as LLVM's fptosi.sat / fptoui.sat (the CPU backend): NaN -> 0, clamp to
// [low, top]; a plain C cast of an out-of-range value is undefined behaviour.
template <typename T, typename F>
__device__ __forceinline__ T aj_sat_cast(F x, F low, F high, T top) {
  if (x != x) return (T)0;
  if (x <= low) return (T)low;
  if (x >= high) return top;
  return (T)x;
}
#endif
// ---- end of preamble ----
"""

# Block sizes are multiples of 32 (the launcher guarantees it; the emulator checks it), so
# every warp is full and the 0xffffffff shuffle mask is always right.
REDUCE_PREAMBLE = r"""// ---- autojit reduction preamble ----
#ifndef AUTOJIT_REDUCE_PREAMBLE
#define AUTOJIT_REDUCE_PREAMBLE
// argmax/argmin accumulate (value, flat row index) pairs.
template <typename T> struct aj_vi { T v; long long i; };
// __shfl_*_sync has no 8- and 16-bit or bool overloads: those travel as int.
template <typename T> struct aj_wide { typedef T type; };
template <> struct aj_wide<bool> { typedef int type; };
template <> struct aj_wide<signed char> { typedef int type; };
template <> struct aj_wide<unsigned char> { typedef int type; };
template <> struct aj_wide<short> { typedef int type; };
template <> struct aj_wide<unsigned short> { typedef int type; };
template <typename T>
__device__ __forceinline__ T aj_shfl_down(T x, int delta, int width) {
  return (T)__shfl_down_sync(0xffffffffu, (typename aj_wide<T>::type)x, delta, width);
}
template <typename T>
__device__ __forceinline__ aj_vi<T> aj_shfl_down(aj_vi<T> x, int delta, int width) {
  aj_vi<T> r; r.v = aj_shfl_down(x.v, delta, width); r.i = aj_shfl_down(x.i, delta, width);
  return r;
}
template <typename T>
__device__ __forceinline__ T aj_shfl_first(T x, int width) {
  return (T)__shfl_sync(0xffffffffu, (typename aj_wide<T>::type)x, 0, width);
}
template <typename T>
__device__ __forceinline__ aj_vi<T> aj_shfl_first(aj_vi<T> x, int width) {
  aj_vi<T> r; r.v = aj_shfl_first(x.v, width); r.i = aj_shfl_first(x.i, width);
  return r;
}
// Combine the partial results of a team (team <= 32: a power of two, lanes of one warp;
// else the whole block) in a fixed tree order; every thread of the team gets the result.
// No trailing barrier: the next call writes aj_warps[warp] only after its own barrier,
// which every thread passes after reading aj_warps[32].
template <typename T, typename C>
__device__ __forceinline__ T aj_team_reduce(T x, long long team, C combine) {
  if (team <= 32) {
    const int width = (int)team;
    for (int d = width >> 1; d > 0; d >>= 1) x = combine(x, aj_shfl_down(x, d, width));
    return aj_shfl_first(x, width);
  }
  __shared__ T aj_warps[33];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (int d = 16; d > 0; d >>= 1) x = combine(x, aj_shfl_down(x, d, 32));
  if (lane == 0) aj_warps[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const unsigned warps = blockDim.x >> 5;
    x = aj_warps[lane < warps ? lane : 0];
    for (int d = 16; d > 0; d >>= 1) {
      const T other = aj_shfl_down(x, d, 32);
      if (lane + d < warps) x = combine(x, other);
    }
    if (lane == 0) aj_warps[32] = x;
  }
  __syncthreads();
  return aj_warps[32];
}
// Split rows: each block stores its partial in 64-bit scratch words; the last block to
// arrive at a row's counter combines the partials in split order (deterministic).
// Values travel through a union, like aj_f64_bits (NVRTC has no memcpy builtin).
template <typename T> struct aj_tag {};
template <typename T> union aj_word { unsigned long long u; T x; };
template <typename T>
__device__ __forceinline__ void aj_put(unsigned long long *p, T x) {
  aj_word<T> w; w.u = 0; w.x = x; *p = w.u;
}
template <typename T>
__device__ __forceinline__ void aj_put(unsigned long long *p, aj_vi<T> x) {
  aj_put(p, x.v); aj_put(p + 1, x.i);
}
template <typename T>
__device__ __forceinline__ T aj_get(const volatile unsigned long long *p, aj_tag<T>) {
  aj_word<T> w; w.u = *p; return w.x;
}
template <typename T>
__device__ __forceinline__ aj_vi<T> aj_get(const volatile unsigned long long *p,
                                           aj_tag<aj_vi<T> >) {
  aj_vi<T> x; x.v = aj_get(p, aj_tag<T>()); x.i = aj_get(p + 1, aj_tag<long long>());
  return x;
}
__device__ __forceinline__ bool aj_last_arrival(unsigned long long *counter, long long splits) {
  __shared__ bool aj_last;
  if (threadIdx.x == 0) {
    __threadfence();
    aj_last = atomicAdd(counter, 1ULL) == (unsigned long long)(splits - 1);
  }
  __syncthreads();
  const bool last = aj_last;
  if (last) __threadfence();
  return last;
}
template <typename T, typename C>
__device__ __forceinline__ T aj_gather(const volatile unsigned long long *base, long long stride,
                                       long long count, T x, C combine) {
  for (long long s = threadIdx.x; s < count; s += blockDim.x)
    x = combine(x, aj_get(base + s * stride, aj_tag<T>()));
  return x;
}
#endif
// ---- end of reduction preamble ----
"""
