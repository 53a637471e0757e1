"""Render a reduction kernel (``row_dims > 0`` or ``phases > 1``) as CUDA C.

A *team* of threads (``aj_team``: 1-32 lanes of a warp, or the whole block; see
``reduce_launch``) handles one row; blocks stride over rows. Per phase, every thread of the
team walks the row with stride ``aj_team`` accumulating privately, ``aj_team_reduce``
combines the team's accumulators (shuffles, then shared memory across warps) and hands the
result to every thread, so the outer instructions and later phases read it from a register.
Outer stores are done by the team's lane 0, row stores by each thread for its elements.
Softmax (``loop [n0, n1] rows 1 phases 3``) becomes::

    for (long long aj_base = (long long)blockIdx.x * aj_teams; aj_base < aj_units;
         aj_base += (long long)gridDim.x * aj_teams) {
      const long long aj_unit = aj_base + (long long)threadIdx.x / aj_team;
      const bool aj_valid = aj_unit < aj_units;     // else: shadow the last row, store nothing
      const long long aj_u = aj_valid ? aj_unit : aj_units - 1;
      ...
      const long long i0 = aj_o;
      // phase 0
      double aj_acc1 = aj_f64_bits(0xfff0000000000000ULL);
      for (long long aj_r = aj_lane; aj_r < aj_row; aj_r += aj_team) {
        const long long i1 = aj_r;
        const double v0 = in0[i0 * st0_0 + i1];
        aj_acc1 = aj_red_max_float64()(aj_acc1, v0);
      }
      aj_acc1 = aj_team_reduce(aj_acc1, aj_team, aj_red_max_float64());
      const double v1 = aj_acc1;
      // phase 1: the sum of exp(x - v1) the same way; phase 2 stores exp(x - v1) / v5
    }

Single-phase kernels also carry the split-row tail (``aj_splits > 1``): partials to
``aj_scratch``, and the last block to arrive at the row combines them and goes on.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import ARG_KINDS, Op
from autojit.ir.zero_sign import indexed_reduces
from autojit.lower_gpu.kernel_text import (
    Names,
    decode,
    emulate_call,
    render_instr,
    signature,
    size_product,
)
from autojit.lower_gpu.preamble import REDUCE_PREAMBLE
from autojit.lower_gpu.reduce_launch import can_split, partial_words
from autojit.lower_gpu.rules import (
    accumulator_type,
    c_type,
    reduce_combine,
    reduce_start,
    zero_code,
    zero_coded_result,
)

EXTRA_PARAMS = ("unsigned long long *__restrict__ aj_scratch", "long long aj_team",
                "long long aj_splits")
_ANYWHERE = (Op.CONST, Op.LOAD_SCALAR)

#: blocks stride over units (rows, or row chunks) ``aj_teams`` at a time; a thread past the
#: last unit shadows it (``aj_u``) but stores nothing (``aj_valid``)
GRID_STRIDE_HEAD = (
    "  for (long long aj_base = (long long)blockIdx.x * aj_teams; aj_base < aj_units;",
    "       aj_base += (long long)gridDim.x * aj_teams) {",
    "    const long long aj_unit = aj_base + (long long)threadIdx.x / aj_team;",
    "    const bool aj_valid = aj_unit < aj_units;",
    "    const long long aj_u = aj_valid ? aj_unit : aj_units - 1;",
    "    const bool aj_leader = aj_valid && aj_lane == 0;",
)


class _Emitter:
    """Collects the lines of one reduction kernel."""

    def __init__(self, kernel: Kernel, names: Names) -> None:
        self.kernel, self.names = kernel, names
        self.dtypes = {ins.id: np.dtype(ins.dtype) for ins in kernel.body}
        self.outer_dims = range(kernel.outer_rank)
        self.row_dims = range(kernel.outer_rank, kernel.rank)
        self.split = can_split(kernel)
        self.words = partial_words(kernel)
        self.indexed = indexed_reduces(kernel)   # argmax/argmin, coded float max/min
        self.buckets: dict[tuple[int, str], list[Instr]] = defaultdict(list)
        for ins in kernel.body:
            if ins.op not in _ANYWHERE:
                self.buckets[ins.phase, ins.level].append(ins)

    def source(self, ins: Instr) -> np.dtype:
        return self.dtypes[ins.args[0]]

    def coded(self, ins: Instr) -> bool:
        """Whether a REDUCE carries a last-zero code (``ops.zero_coded``)."""
        return ins.op is Op.REDUCE and ins.id in self.indexed and ins.attr not in ARG_KINDS

    def functor(self, ins: Instr) -> str:
        """Return the name of the combine functor: ``aj_red_max_float64`` (with its
        last-zero code: ``aj_red_max_z_float64``)."""
        return f"aj_red_{ins.attr}{'_z' if self.coded(ins) else ''}_{self.source(ins).name}"

    def acc_type(self, ins: Instr) -> str:
        return accumulator_type(ins.attr, self.source(ins), self.coded(ins))

    def start(self, ins: Instr) -> str:
        return reduce_start(ins.attr, self.source(ins), self.coded(ins))

    def prologue(self) -> list[str]:
        """Return the row bookkeeping before the row loop (constants hoisted first)."""
        k = self.kernel
        lines = [f"  {render_instr(k, self.names, ins, self.dtypes)}"
                 for ins in k.body if ins.op in _ANYWHERE]
        lines += [f"  const long long aj_outer = {size_product(self.outer_dims)};",
                  f"  const long long aj_row = {size_product(self.row_dims)};",
                  "  const long long aj_teams = (long long)blockDim.x / aj_team;",
                  "  const long long aj_lane = (long long)threadIdx.x % aj_team;"]
        if self.split:
            return lines + ["  const long long aj_units = aj_outer * aj_splits;",
                            "  const long long aj_chunk = (aj_row + aj_splits - 1) / aj_splits;"]
        return lines + ["  const long long aj_units = aj_outer;"]

    def loop_head(self) -> list[str]:
        """Return the grid-stride loop over rows (or row chunks) and the outer indices."""
        lines = list(GRID_STRIDE_HEAD)
        if self.split:
            lines += ["    const long long aj_o = aj_u / aj_splits;",
                      "    const long long aj_begin = aj_u % aj_splits * aj_chunk;",
                      "    const long long aj_end = aj_begin + aj_chunk < aj_row ?"
                      " aj_begin + aj_chunk : aj_row;"]
        else:
            lines += ["    const long long aj_o = aj_u;"]
        return lines + decode(self.kernel, "aj_o", self.outer_dims, "    ")

    def row_line(self, ins: Instr) -> str:
        """Return one line of the row loop (REDUCE accumulates, STORE only when valid)."""
        if ins.op is Op.REDUCE:
            value = f"v{ins.args[0]}"
            if ins.attr in ARG_KINDS:
                value = f"{self.acc_type(ins)}{{{value}, aj_r}}"
            elif self.coded(ins):
                value = f"{self.acc_type(ins)}{{{value}, {zero_code(value, 'aj_r')}}}"
            return f"aj_acc{ins.id} = {self.functor(ins)}()(aj_acc{ins.id}, {value});"
        line = render_instr(self.kernel, self.names, ins, self.dtypes)
        return f"if (aj_valid) {line}" if ins.op is Op.STORE else line

    def row_loop(self, phase: int) -> list[str]:
        """Return the phase's accumulators and its loop over the team's row elements."""
        body = self.buckets.get((phase, "row"), [])
        if not body:
            return []
        lines = [f"    {self.acc_type(ins)} aj_acc{ins.id} = {self.start(ins)};"
                 for ins in body if ins.op is Op.REDUCE]
        first, end = ("aj_begin + aj_lane", "aj_end") if self.split else ("aj_lane", "aj_row")
        lines.append(f"    for (long long aj_r = {first}; aj_r < {end}; aj_r += aj_team) {{")
        lines += decode(self.kernel, "aj_r", self.row_dims, "      ")
        lines += [f"      {self.row_line(ins)}" for ins in body]
        return lines + ["    }"]

    def reductions(self, phase: int) -> list[Instr]:
        return [ins for ins in self.buckets.get((phase, "row"), []) if ins.op is Op.REDUCE]

    def combine(self, phase: int) -> list[str]:
        """Return the team reductions of the phase, the split tail, and the results."""
        reduces = self.reductions(phase)
        lines = [f"    aj_acc{ins.id} = aj_team_reduce(aj_acc{ins.id}, aj_team, "
                 f"{self.functor(ins)}());" for ins in reduces]
        if self.split and reduces:
            lines += self.split_tail(reduces)
        for ins in reduces:
            value = (f"aj_acc{ins.id}.i" if ins.attr in ARG_KINDS else
                     zero_coded_result(f"aj_acc{ins.id}", ins.dtype) if self.coded(ins) else
                     f"aj_acc{ins.id}")
            lines.append(f"    const {c_type(ins.dtype)} v{ins.id} = {value};")
        return lines

    def split_tail(self, reduces: list[Instr]) -> list[str]:
        """Return the code that lets ``aj_splits`` blocks share a row (see module doc)."""
        words, slots, offset = self.words, [], 0
        for ins in reduces:
            slots.append(offset)
            offset += 2 if ins.id in self.indexed else 1
        lines = ["    if (aj_splits > 1) {",
                 "      if (threadIdx.x == 0) {"]
        lines += [f"        aj_put(aj_scratch + aj_u * {words} + {slot}, aj_acc{ins.id});"
                  for ins, slot in zip(reduces, slots)]
        lines += ["      }",
                  f"      if (!aj_last_arrival(aj_scratch + aj_units * {words} + aj_o, "
                  "aj_splits)) continue;",
                  f"      const unsigned long long *aj_part = aj_scratch + aj_o * aj_splits"
                  f" * {words};"]
        for ins, slot in zip(reduces, slots):
            start, functor = self.start(ins), self.functor(ins)
            lines.append(f"      aj_acc{ins.id} = aj_team_reduce(aj_gather(aj_part + {slot}, "
                         f"{words}, aj_splits, {start}, {functor}()), aj_team, {functor}());")
        return lines + ["    }"]

    def outer_lines(self, phase: int) -> list[str]:
        """Return the phase's once-per-row instructions; stores by the team's lane 0."""
        lines = []
        for ins in self.buckets.get((phase, "outer"), []):
            line = render_instr(self.kernel, self.names, ins, self.dtypes, self.outer_dims)
            lines.append(f"    if (aj_leader) {line}" if ins.op is Op.STORE else f"    {line}")
        return lines

    def functors(self) -> list[str]:
        """Return one guarded combine functor per (kind, dtype) the kernel reduces with."""
        lines: list[str] = []
        seen: set[str] = set()
        for ins in self.kernel.body:
            if ins.op is not Op.REDUCE or self.functor(ins) in seen:
                continue
            name, dtype = self.functor(ins), self.source(ins)
            seen.add(name)
            acc, coded = self.acc_type(ins), self.coded(ins)
            lines += [f"#ifndef {name.upper()}", f"#define {name.upper()}",
                      f"struct {name} {{",
                      f"  __device__ __forceinline__ {acc} operator()({acc} a, {acc} b) const {{",
                      f"    return {reduce_combine(ins.attr, dtype, 'a', 'b', coded)};",
                      "  }", "};", "#endif"]
        return lines


def render_reduce_kernel(kernel: Kernel, names: Names) -> str:
    """Return the reduction preamble, the kernel's combine functors and the kernel."""
    emit = _Emitter(kernel, names)
    lines = [REDUCE_PREAMBLE, *emit.functors(), signature(kernel, names, EXTRA_PARAMS) + " {",
             *emit.prologue(), *emit.loop_head()]
    for phase in range(kernel.phases):
        lines.append(f"    // phase {phase}")
        lines += emit.row_loop(phase) + emit.combine(phase) + emit.outer_lines(phase)
    return "\n".join([*lines, "  }", "}"]) + "\n"


def render_reduce_emulate(kernel: Kernel) -> str:
    """Return the host entry point: the grid played as blocks of fibers (emulation.h)."""
    call = emulate_call(kernel, ("scratch", "team", "splits"))
    return "\n".join([
        "#ifdef AUTOJIT_EMULATE",
        f'extern "C" void {kernel.name}_emulate(void **data, const long long *meta, int grid,'
        " int block, unsigned long long *scratch, long long team, long long splits) {",
        f"  aj_emulate_grid(grid, block, [&] {{ {call} }});",
        "}",
        "#endif",
    ]) + "\n"
