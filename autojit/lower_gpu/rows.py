"""The row emitter: what the reduction and the scan emitters share (``render_reduce``,
``render_scan``), as one base class with named hooks.

A row kernel's launch is a reduction's (``reduce_launch``): a *team* of ``aj_team`` threads
handles one *unit* (a row, or a chunk of one when blocks share it), blocks stride over the
units ``aj_teams`` at a time (``GRID_STRIDE_HEAD``). ``RowEmitter.render`` lays the kernel
out as::

    <preambles> <one combine functor per (kind, dtype)> <signature + EXTRA_PARAMS> {
      <prologue: constants, aj_outer, aj_row, aj_teams, aj_lane, then units()>
      <loop_head: the grid-stride loop, then unit_bounds(), then the outer indices>
        // phase p, for each phase:
        <row_loop(p)>  <combine(p)>  <outer_lines(p)>
      }
    }

A subclass says how a row is cut into units (``units``, ``unit_bounds``), may walk a phase's
row its own way (``row_loop``, ``row_line``), add to the team combine (``combine_tail``),
and names its preambles and the ops it emits combine functors for.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import ARG_KINDS, Op
from autojit.ir.zero_sign import indexed_reduces
from autojit.lower_gpu.cuda_rules import (
    accumulator_type,
    c_type,
    reduce_combine,
    reduce_start,
    zero_code,
    zero_coded_result,
)
from autojit.lower_gpu.kernel_text import Names, decode, render_instr, signature, size_product
from autojit.lower_gpu.preamble import REDUCE_PREAMBLE
from autojit.lower_gpu.reduce_launch import can_split, partial_words

__all__ = ["EXTRA_PARAMS", "GRID_STRIDE_HEAD", "HOISTED", "RowEmitter"]

#: the launch arguments every row kernel takes after the kernel's own parameters
EXTRA_PARAMS = ("unsigned long long *__restrict__ aj_scratch", "long long aj_team",
                "long long aj_splits")
#: instructions emitted once, before the loops (they are read at every level)
HOISTED = (Op.CONST, Op.LOAD_SCALAR)

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


class RowEmitter:
    """Collects the lines of one row kernel (module docstring); a subclass gives the units."""

    #: the preambles the kernel text starts with
    preambles: tuple[str, ...] = (REDUCE_PREAMBLE,)
    #: the instructions whose (kind, dtype) gets a combine functor (``functors``)
    combined: tuple[Op, ...] = (Op.REDUCE,)

    def __init__(self, kernel: Kernel, names: Names) -> None:
        self.kernel, self.names = kernel, names
        self.dtypes = {ins.id: np.dtype(ins.dtype) for ins in kernel.body}
        self.outer_dims = range(kernel.outer_rank)
        self.row_dims = range(kernel.outer_rank, kernel.rank)
        self.split = can_split(kernel)
        self.words = partial_words(kernel)
        self.indexed = indexed_reduces(kernel)   # argmax/argmin, coded float max/min
        self.buckets: dict[tuple[int, Level], list[Instr]] = defaultdict(list)
        for ins in kernel.body:
            if ins.op not in HOISTED:
                self.buckets[ins.phase, ins.level].append(ins)

    # -- hooks ----------------------------------------------------------------------------

    def units(self) -> list[str]:
        """Return the prologue lines that cut rows into units: at least ``aj_units``."""
        raise NotImplementedError

    def unit_bounds(self) -> list[str]:
        """Return the lines at the top of the grid-stride loop that find unit ``aj_u``'s
        outer position ``aj_o`` (and its row span, where units are chunks)."""
        raise NotImplementedError

    def combine_tail(self, reduces: list[Instr]) -> list[str]:
        """Return what follows the team reductions of a phase's ``reduces`` (none here)."""
        return []

    # -- the parts ------------------------------------------------------------------------

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
        """Return the row bookkeeping before the loops (constants hoisted first)."""
        k = self.kernel
        lines = [f"  {render_instr(k, self.names, ins, self.dtypes)}"
                 for ins in k.body if ins.op in HOISTED]
        return lines + [f"  const long long aj_outer = {size_product(self.outer_dims)};",
                        f"  const long long aj_row = {size_product(self.row_dims)};",
                        "  const long long aj_teams = (long long)blockDim.x / aj_team;",
                        "  const long long aj_lane = (long long)threadIdx.x % aj_team;",
                        *self.units()]

    def loop_head(self) -> list[str]:
        """Return the grid-stride loop over units and the outer indices."""
        return [*GRID_STRIDE_HEAD, *self.unit_bounds(),
                *decode(self.kernel, "aj_o", self.outer_dims, "    ")]

    def accumulators(self, phase: int) -> list[str]:
        """Return the declarations of the phase's REDUCE accumulators, at their starts."""
        return [f"    {self.acc_type(ins)} aj_acc{ins.id} = {self.start(ins)};"
                for ins in self.buckets.get((phase, Level.ROW), []) if ins.op is Op.REDUCE]

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
        body = self.buckets.get((phase, Level.ROW), [])
        if not body:
            return []
        lines = self.accumulators(phase)
        first, end = ("aj_begin + aj_lane", "aj_end") if self.split else ("aj_lane", "aj_row")
        lines.append(f"    for (long long aj_r = {first}; aj_r < {end}; aj_r += aj_team) {{")
        lines += decode(self.kernel, "aj_r", self.row_dims, "      ")
        lines += [f"      {self.row_line(ins)}" for ins in body]
        return lines + ["    }"]

    def reductions(self, phase: int) -> list[Instr]:
        return [ins for ins in self.buckets.get((phase, Level.ROW), []) if ins.op is Op.REDUCE]

    def combine(self, phase: int) -> list[str]:
        """Return the team reductions of the phase, ``combine_tail``, and the results."""
        reduces = self.reductions(phase)
        lines = [f"    aj_acc{ins.id} = aj_team_reduce(aj_acc{ins.id}, aj_team, "
                 f"{self.functor(ins)}());" for ins in reduces]
        if reduces:
            lines += self.combine_tail(reduces)
        for ins in reduces:
            value = (f"aj_acc{ins.id}.i" if ins.attr in ARG_KINDS else
                     zero_coded_result(f"aj_acc{ins.id}", ins.dtype) if self.coded(ins) else
                     f"aj_acc{ins.id}")
            lines.append(f"    const {c_type(ins.dtype)} v{ins.id} = {value};")
        return lines

    def outer_lines(self, phase: int) -> list[str]:
        """Return the phase's once-per-row instructions; stores by the team's lane 0."""
        lines = []
        for ins in self.buckets.get((phase, Level.OUTER), []):
            line = render_instr(self.kernel, self.names, ins, self.dtypes, self.outer_dims)
            lines.append(f"    if (aj_leader) {line}" if ins.op is Op.STORE else f"    {line}")
        return lines

    def functors(self) -> list[str]:
        """Return one guarded combine functor per (kind, dtype) the kernel combines with
        (``combined``: a scan combines with the reduction rule of its name)."""
        lines: list[str] = []
        seen: set[str] = set()
        for ins in self.kernel.body:
            if ins.op not in self.combined or self.functor(ins) in seen:
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

    def render(self) -> str:
        """Return the kernel's text: preambles, combine functors and the kernel."""
        kernel = self.kernel
        lines = [*self.preambles, *self.functors(),
                 signature(kernel, self.names, EXTRA_PARAMS) + " {",
                 *self.prologue(), *self.loop_head()]
        for phase in range(kernel.phases):
            lines.append(f"    // phase {phase}")
            lines += self.row_loop(phase) + self.combine(phase) + self.outer_lines(phase)
        return "\n".join([*lines, "  }", "}"]) + "\n"
