"""Render a Kernel as one CUDA C translation unit for NVRTC (and for host emulation).

An elementwise kernel ``k0`` over ``(n0, n1)`` with an input whose outer stride arrives at
run time becomes (after the preamble)::

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
Kernels with rows or phases (reductions) are rendered by ``render_reduce``, those with
scans by ``render_scan`` and those with recurrences (native loops) by ``render_loop``.
"""

from __future__ import annotations

from autojit.ir.kernel import Kernel
from autojit.ir.verify import check_kernel
from autojit.lower_gpu.kernel_text import (
    IDENTIFIER,
    Names,
    decode,
    emulate_call,
    param_names,
    render_instr,
    signature,
    size_product,
)
from autojit.lower_gpu.preamble import PREAMBLE
from autojit.lower_gpu.reduce_launch import is_reduction
from autojit.lower_gpu.render_loop import render_loop_kernel
from autojit.lower_gpu.render_reduce import render_reduce_emulate, render_reduce_kernel
from autojit.lower_gpu.render_scan import render_scan_kernel

__all__ = ["PREAMBLE", "render_cuda"]


def _loop_header(kernel: Kernel) -> list[str]:
    """Return the grid-stride loop's opening lines and the N-d index decoding."""
    lines = [
        f"  const long long n = {size_product(range(kernel.rank))};",
        "  const long long step = (long long)blockDim.x * gridDim.x;",
        "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
        " i += step) {",
    ]
    if kernel.rank > 1:
        lines += decode(kernel, "i", range(kernel.rank), "    ")
    return lines


def _render_kernel(kernel: Kernel, names: Names) -> str:
    dtypes = {}
    body = []
    for ins in kernel.body:
        body.append("    " + render_instr(kernel, names, ins, dtypes))
        dtypes[ins.id] = ins.dtype
    lines = [signature(kernel, names) + " {", *_loop_header(kernel), *body, "  }", "}"]
    return "\n".join(lines) + "\n"


def _render_emulate(kernel: Kernel) -> str:
    """Return the host entry point that unpacks ``(data, meta)`` and plays every thread."""
    return "\n".join([
        "#ifdef AUTOJIT_EMULATE",
        f'extern "C" void {kernel.name}_emulate(void **data, const long long *meta,'
        " int grid, int block) {",
        "  gridDim.x = grid; blockDim.x = block;",
        "  for (int b = 0; b < grid; ++b) {",
        "    for (int t = 0; t < block; ++t) {",
        "      blockIdx.x = b; threadIdx.x = t;",
        f"      {emulate_call(kernel)}",
        "    }",
        "  }",
        "}",
        "#endif",
    ]) + "\n"


def render_cuda(kernel: Kernel) -> str:
    """Return the complete CUDA C source of ``kernel``: preamble, ``__global__`` entry
    point named ``kernel.name`` (``extern "C"``, so unmangled) and the emulation entry."""
    if not IDENTIFIER.match(kernel.name):
        raise ValueError(f"kernel name {kernel.name!r} is not a C identifier")
    check_kernel(kernel)
    names = param_names(kernel)
    if kernel.sequential:   # a native loop: one thread, the iterations in order
        return "\n".join([PREAMBLE, render_loop_kernel(kernel, names), _render_emulate(kernel)])
    if is_reduction(kernel):
        rows = render_scan_kernel if kernel.has_scan else render_reduce_kernel
        return "\n".join([PREAMBLE, rows(kernel, names), render_reduce_emulate(kernel)])
    return "\n".join([PREAMBLE, _render_kernel(kernel, names), _render_emulate(kernel)])
