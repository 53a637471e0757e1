"""A kernel with a recurrence (``RECUR``, ``ir.kernel`` "Recurrences": a native loop,
``fuse.native_loop``) as CUDA C: one thread runs the row's iterations in order, as a
dependent recurrence must (it is never split across threads or reassociated)::

    extern "C" __global__ void r0_loop(const double *__restrict__ in0, double *out1,
        double s0, long long size0, long long st0_0) {
      if (blockIdx.x != 0 || threadIdx.x != 0) return;
      const double v0 = s0;
      double r1 = v0;
      for (long long i = 0; i < size0; ++i) {
        const double v1 = r1;
        ...
        r1 = v4;
      }
      const double v1 = r1;      (the value after the last iteration, for the outer level)
      out1[0] = v1;
    }

The emulation entry is the elementwise one (``render._render_emulate``): every thread but
the first returns at once.
"""

from __future__ import annotations

import numpy as np

from autojit.ir.kernel import Kernel, Level
from autojit.ir.ops import Op
from autojit.lower_gpu.cuda_rules import c_type
from autojit.lower_gpu.kernel_text import Names, coord, render_instr, signature

__all__ = ["render_loop_kernel"]

_ANYWHERE = (Op.CONST, Op.LOAD_SCALAR)


def render_loop_kernel(kernel: Kernel, names: Names) -> str:
    """Return the ``__global__`` function of a sequential kernel (``Kernel.sequential``)."""
    dtypes: dict[int, np.dtype] = {}
    index = coord(kernel, 0)
    lines = [signature(kernel, names) + " {",
             "  if (blockIdx.x != 0 || threadIdx.x != 0) return;   // the iterations in order"]

    def line(ins, indent: str) -> str:
        if ins.op is Op.RECUR:
            text = f"const {c_type(ins.dtype)} v{ins.id} = r{ins.id};"
        elif ins.op is Op.RECUR_SET:
            text = f"r{ins.args[0]} = v{ins.args[1]};"
        else:
            text = render_instr(kernel, names, ins, dtypes)
        dtypes[ins.id] = ins.dtype
        return indent + text

    for ins in kernel.body:
        if ins.op in _ANYWHERE:
            lines.append(line(ins, "  "))
    for ins in kernel.body:
        if ins.op is Op.RECUR:
            lines.append(f"  {c_type(ins.dtype)} r{ins.id} = v{ins.args[0]};")
    lines.append(f"  for (long long {index} = 0; {index} < size0; ++{index}) {{")
    lines += [line(ins, "    ") for ins in kernel.body
              if ins.level == Level.ROW and ins.op not in _ANYWHERE]
    lines.append("  }")
    lines += [f"  const {c_type(ins.dtype)} v{ins.id} = r{ins.id};"
              for ins in kernel.body if ins.op is Op.RECUR]
    lines += [line(ins, "  ") for ins in kernel.body
              if ins.level == Level.OUTER and ins.op not in _ANYWHERE]
    lines.append("}")
    return "\n".join(lines) + "\n"
