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
``aj_scratch``, and the last block to arrive at the row combines them and goes on. The
emitter is ``rows.RowEmitter`` (which ``render_scan`` shares) with a reduction's units.
"""

from __future__ import annotations

from autojit.ir.kernel import Instr, Kernel
from autojit.lower_gpu.kernel_text import Names, emulate_call
from autojit.lower_gpu.rows import RowEmitter

__all__ = ["ReduceEmitter", "render_reduce_emulate", "render_reduce_kernel"]


class ReduceEmitter(RowEmitter):
    """A reduction's row kernel: a unit is a row, or with ``aj_splits`` blocks sharing a
    single-phase kernel's row, one of its ``aj_splits`` chunks (``split_tail``)."""

    def units(self) -> list[str]:
        if self.split:
            return ["  const long long aj_units = aj_outer * aj_splits;",
                    "  const long long aj_chunk = (aj_row + aj_splits - 1) / aj_splits;"]
        return ["  const long long aj_units = aj_outer;"]

    def unit_bounds(self) -> list[str]:
        if self.split:
            return ["    const long long aj_o = aj_u / aj_splits;",
                    "    const long long aj_begin = aj_u % aj_splits * aj_chunk;",
                    "    const long long aj_end = aj_begin + aj_chunk < aj_row ?"
                    " aj_begin + aj_chunk : aj_row;"]
        return ["    const long long aj_o = aj_u;"]

    def combine_tail(self, reduces: list[Instr]) -> list[str]:
        return self.split_tail(reduces) if self.split else []

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


def render_reduce_kernel(kernel: Kernel, names: Names) -> str:
    """Return the reduction preamble, the kernel's combine functors and the kernel."""
    return ReduceEmitter(kernel, names).render()


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
