"""Render a Kernel as one CUDA C translation unit for NVRTC (and for host emulation).

For a kernel ``k0`` over ``(n0, n1)`` with an input whose outer stride arrives at run time
the emitter writes (after the preamble)::

    extern "C" __global__ void k0(const double *__restrict__ x, double *__restrict__ out,
        long long size0, long long size1, long long st0_0) {
      const long long n = size0 * size1;
      const long long step = (long long)blockDim.x * gridDim.x;
      for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        long long rest = i;
        const long long i1 = rest % size1; rest /= size1;
        const long long i0 = rest;
        const double v0 = x[i0 * st0_0 + i1];
        ...
        out[i0 * 7LL + i1] = v2;
      }
    }

plus, under ``#ifdef AUTOJIT_EMULATE``, ``k0_emulate(void **data, const long long *meta,
int grid, int block)`` that runs every (block, thread) on the host (see ``emulate.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import Op
from autojit.lower_gpu.rules import CALLED_NAMES, CUDA_RULES, Operands, c_type, rule_kind

# The include guard lets several kernels share one translation unit (the emulation tests
# compile dozens at once). NVRTC gets the fixed-width typedefs here because it has no
# <stdint.h> without an include path; under emulation <cstdint> already supplies them.
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

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Names the emitter itself declares inside the kernel, C/C++ words and the math functions
# the rules call (a parameter called `fmod` would hide fmod()); such a parameter is renamed.
_INTERNAL = re.compile(r"(v\d+|i\d*|n|step|rest|size\d+|st\d+_\d+|aj_\w*|(u?int\d+_t))\Z")
_C_WORDS_TEXT = """
    bool char short int long float double signed unsigned void const volatile return for
    if else while do switch case default break continue true false auto static extern
    struct union enum sizeof typedef goto register inline template typename class new
    delete this operator namespace using private public protected virtual friend throw try
    catch explicit mutable export constexpr nullptr decltype noexcept static_assert
    thread_local alignas alignof wchar_t char16_t char32_t asm and or not xor bitand bitor
    compl and_eq or_eq xor_eq not_eq restrict gridDim blockDim blockIdx threadIdx"""
_C_WORDS = frozenset(_C_WORDS_TEXT.split()) | CALLED_NAMES


@dataclass(frozen=True)
class _Names:
    buffers: tuple[str, ...]
    scalars: tuple[str, ...]


def _safe_names(raw: list[str], prefix: str, taken: set[str]) -> tuple[str, ...]:
    """Return C identifiers for ``raw``: the name itself when usable, else ``<prefix><i>``."""
    names = []
    for i, name in enumerate(raw):
        usable = (_IDENTIFIER.match(name) and not _INTERNAL.match(name)
                  and name not in _C_WORDS and name not in taken)
        chosen = name if usable else f"{prefix}{i}"
        taken.add(chosen)
        names.append(chosen)
    return tuple(names)


def _param_names(kernel: Kernel) -> _Names:
    taken: set[str] = set()
    buffers = _safe_names([b.name for b in kernel.buffers], "aj_buf", taken)
    scalars = _safe_names([s.name for s in kernel.scalars], "aj_arg", taken)
    return _Names(buffers, scalars)


def _coord(kernel: Kernel, dim: int) -> str:
    return "i" if kernel.rank == 1 else f"i{dim}"


def _offset(kernel: Kernel, b: int) -> str:
    """Return the element offset of buffer ``b``: ``i0 * st0_0 + i1 * 3LL + i2``."""
    terms = []
    for d, stride in enumerate(kernel.buffers[b].strides):
        coord = _coord(kernel, d)
        terms += {None: [f"{coord} * st{b}_{d}"], 0: [], 1: [coord]}.get(
            stride, [f"{coord} * {stride}LL"])
    return " + ".join(terms) or "0"


def _pointer_types(kernel: Kernel) -> list[str]:
    """Return each buffer's pointer type: ``const double *`` unless the kernel writes it."""
    written = {ins.attr for ins in kernel.body if ins.op is Op.STORE}
    return [f"{'' if buf.is_output or b in written else 'const '}{c_type(buf.dtype)} *"
            for b, buf in enumerate(kernel.buffers)]


def _signature(kernel: Kernel, names: _Names) -> str:
    """Return ``extern "C" __global__ void k(const double *__restrict__ x, ...)``."""
    params = [f"{pointer}__restrict__ {name}"
              for pointer, name in zip(_pointer_types(kernel), names.buffers, strict=True)]
    params += [f"{c_type(p.dtype)} {name}"
               for p, name in zip(kernel.scalars, names.scalars, strict=True)]
    params += [f"long long size{d}" for d in range(kernel.rank)]
    params += [f"long long st{b}_{d}" for b, d in kernel.runtime_strides()]
    return f'extern "C" __global__ void {kernel.name}(\n    ' + ",\n    ".join(params) + ")"


def _loop_header(kernel: Kernel) -> list[str]:
    """Return the grid-stride loop's opening lines and the N-d index decoding."""
    total = " * ".join(f"size{d}" for d in range(kernel.rank)) or "1LL"
    lines = [
        f"  const long long n = {total};",
        "  const long long step = (long long)blockDim.x * gridDim.x;",
        "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
        " i += step) {",
    ]
    if kernel.rank > 1:
        lines.append("    long long rest = i;")
        lines += [f"    const long long i{d} = rest % size{d}; rest /= size{d};"
                  for d in range(kernel.rank - 1, 0, -1)]
        lines.append("    const long long i0 = rest;")
    return lines


def _render_instr(kernel: Kernel, names: _Names, ins: Instr,
                  dtypes: dict[int, np.dtype]) -> str:
    """Return one body line: ``const float v4 = sinf(v3);`` or ``out[i] = v4;``."""
    operand = dtypes[ins.args[0]] if ins.args else None
    key = (ins.op, rule_kind(ins.op, ins.dtype, operand))
    if key not in CUDA_RULES:
        raise NotImplementedError(f"no CUDA rule for {ins.op.value} on kind {key[1]!r}")
    attr = {
        Op.LOAD: lambda: f"{names.buffers[ins.attr]}[{_offset(kernel, ins.attr)}]",
        Op.STORE: lambda: f"{names.buffers[ins.attr]}[{_offset(kernel, ins.attr)}]",
        Op.LOAD_SCALAR: lambda: names.scalars[ins.attr],
    }.get(ins.op, lambda: ins.attr)()
    args = tuple(f"v{a}" for a in ins.args)
    expr = CUDA_RULES[key](Operands(ins.dtype, operand or ins.dtype, args, attr))
    if ins.op is Op.STORE:
        return f"    {expr};"
    return f"    const {c_type(ins.dtype)} v{ins.id} = {expr};"


def _render_kernel(kernel: Kernel, names: _Names) -> str:
    dtypes: dict[int, np.dtype] = {}
    body = []
    for ins in kernel.body:
        body.append(_render_instr(kernel, names, ins, dtypes))
        dtypes[ins.id] = ins.dtype
    lines = [_signature(kernel, names) + " {", *_loop_header(kernel), *body, "  }", "}"]
    return "\n".join(lines) + "\n"


def _render_emulate(kernel: Kernel) -> str:
    """Return the host entry point that unpacks ``(data, meta)`` and plays every thread."""
    nb = len(kernel.buffers)
    args = [f"({pointer})data[{i}]" for i, pointer in enumerate(_pointer_types(kernel))]
    args += [f"*(const {c_type(p.dtype)} *)data[{nb + i}]" for i, p in enumerate(kernel.scalars)]
    args += [f"meta[{m}]" for m in range(kernel.rank + len(kernel.runtime_strides()))]
    call = f"{kernel.name}(" + ", ".join(args) + ");"
    return "\n".join([
        "#ifdef AUTOJIT_EMULATE",
        f'extern "C" void {kernel.name}_emulate(void **data, const long long *meta,'
        " int grid, int block) {",
        "  gridDim.x = grid; blockDim.x = block;",
        "  for (int b = 0; b < grid; ++b) {",
        "    for (int t = 0; t < block; ++t) {",
        "      blockIdx.x = b; threadIdx.x = t;",
        f"      {call}",
        "    }",
        "  }",
        "}",
        "#endif",
    ]) + "\n"


def render_cuda(kernel: Kernel) -> str:
    """Return the complete CUDA C source of ``kernel``: preamble, ``__global__`` entry
    point named ``kernel.name`` (``extern "C"``, so unmangled) and the emulation entry."""
    if not _IDENTIFIER.match(kernel.name):
        raise ValueError(f"kernel name {kernel.name!r} is not a C identifier")
    names = _param_names(kernel)
    return "\n".join([PREAMBLE, _render_kernel(kernel, names), _render_emulate(kernel)])
