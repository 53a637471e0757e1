"""Render a kernel with scans (``np.cumsum``) as CUDA C: a parallel scan of each row.

The launch is a reduction's (``reduce_launch``: a team of threads per row, 1-32 lanes of a
warp or the whole block; blocks stride over (row, chunk) units), and phases without a scan
are rendered as ``render_reduce`` renders them (both emitters are ``rows.RowEmitter``). A
phase with scans walks its chunk of the row (the whole row unless blocks share it, below)
in *tiles* of ``aj_team * aj_items`` elements; in a tile, thread ``aj_lane`` owns the
``aj_items`` consecutive elements from ``aj_lo`` and

1. combines each scan's operands over its elements (its total; only what the scans'
   operands need is computed here);
2. scans the team's totals (``aj_team_exscan``: warp shuffles, then shared memory across
   warps): each thread gets the combination of the totals before its own, and every thread
   the tile's total;
3. walks its elements again from ``carry ⊕ prefix``: each scan's running value, and the
   phase's consumers, reductions and stores, in the same iteration;
4. the tile's total joins the carry for the next tile.

A team of one thread (many short rows side by side in memory, ``x.cumsum(axis=0)``) skips
steps 1-2 and walks its row once, in NumPy's order. Otherwise float results differ from
NumPy's sequential sums by rounding only (totals are combined in a tree).

Few long rows (``np.cumsum`` of a vector) are split into ``aj_parts`` chunks, one block
each, and the kernel is launched twice (``reduce_launch.launch_splits``): with
``aj_splits < 0`` each block only stores its chunk's totals in ``aj_scratch``; then each
block starts its carry from the totals of the chunks before its own. Two launches, not one
with blocks waiting on each other: the kernel boundary orders them, so no block ever spins
on another. Only single-phase scan kernels without reductions split. The tile loop of
``np.cumsum(x, axis=1)`` over ``(n0, n1)``, after the carry::

    for (long long aj_t0 = aj_begin; aj_t0 < aj_end; aj_t0 += aj_tile) {
      const long long aj_lo = aj_t0 + aj_lane * aj_items;
      const long long aj_hi = aj_lo + aj_items < aj_end ? aj_lo + aj_items : aj_end;
      double aj_run1 = aj_carry1;
      if (aj_team > 1) {
        double aj_tot1 = -0x0.0p+0;
        for (long long aj_r = aj_lo; aj_r < aj_hi; ++aj_r) {
          const long long i1 = aj_r;
          const double v0 = in0[i0 * st0_0 + i1];
          aj_tot1 = aj_red_add_float64()(aj_tot1, v0);
        }
        const aj_scan_pair<double> aj_s1 = aj_team_exscan(aj_tot1, aj_team, -0x0.0p+0,
                                                          aj_red_add_float64());
        aj_run1 = aj_red_add_float64()(aj_carry1, aj_s1.prefix);
        aj_carry1 = aj_red_add_float64()(aj_carry1, aj_s1.total);
      }
      for (long long aj_r = aj_lo; aj_r < aj_hi; ++aj_r) {
        const long long i1 = aj_r;
        const double v0 = in0[i0 * st0_0 + i1];
        aj_run1 = aj_red_add_float64()(aj_run1, v0);
        const double v1 = aj_run1;
        if (aj_valid) out0[i0 * st1_0 + i1] = v1;
      }
      if (aj_team == 1) aj_carry1 = aj_run1;
    }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import SCAN_KINDS, Op
from autojit.lower_gpu.cuda_rules import REDUCE_RULES, c_type, float_literal, int_literal
from autojit.lower_gpu.kernel_text import Names, decode, render_instr
from autojit.lower_gpu.preamble import REDUCE_PREAMBLE
from autojit.lower_gpu.rows import RowEmitter

#: elements a thread owns per tile: enough to amortise the team scan, few enough that a
#: warp's chunks stay within the lines one tile brings into L1
SCAN_ITEMS = 8

# Block sizes are multiples of 32 and teams powers of two up to 32 or the whole block, as
# for reductions, so every shuffle has the full mask.
SCAN_PREAMBLE = r"""// ---- autojit scan preamble ----
#ifndef AUTOJIT_SCAN_PREAMBLE
#define AUTOJIT_SCAN_PREAMBLE
template <typename T> struct aj_scan_pair { T prefix; T total; };
template <typename T>
__device__ __forceinline__ T aj_shfl_from(T x, int lane, int width) {
  return (T)__shfl_sync(0xffffffffu, (typename aj_wide<T>::type)x, lane, width);
}
// Elements per thread and tile: a lone thread takes its whole row in one tile.
__device__ __forceinline__ long long aj_scan_items(long long row, long long team, long long most) {
  if (team == 1) return row > 1 ? row : 1;
  const long long each = (row + team - 1) / team;
  return each < 1 ? 1 : (each > most ? most : each);
}
// Inclusive scan over each segment of `width` lanes (a power of two <= 32), in lane order.
template <typename T, typename C>
__device__ __forceinline__ T aj_segment_scan(T x, int width, C combine) {
  const int lane = (int)(threadIdx.x & 31u) & (width - 1);
  for (int d = 1; d < width; d <<= 1) {
    const T before = aj_shfl_from(x, lane >= d ? lane - d : lane, width);
    if (lane >= d) x = combine(before, x);
  }
  return x;
}
// For each thread of a team (team <= 32: lanes of a warp; else the block): the combination
// of the earlier threads' values (`start` for the first thread) and of all the team's.
// Across warps: each warp's total to shared memory, warp 0 scans them into the upper half.
// No trailing barrier: a next call writes the lower half before its first barrier (read
// before this call's second one) and the upper half after it (read before reaching it).
template <typename T, typename C>
__device__ __forceinline__ aj_scan_pair<T> aj_team_exscan(T x, long long team, T start,
                                                          C combine) {
  aj_scan_pair<T> r;
  const int width = team <= 32 ? (int)team : 32;
  const int lane = (int)(threadIdx.x & 31u) & (width - 1);
  const T inclusive = aj_segment_scan(x, width, combine);
  const T before = aj_shfl_from(inclusive, lane > 0 ? lane - 1 : 0, width);
  if (team <= 32) {
    r.prefix = lane > 0 ? before : start;
    r.total = aj_shfl_from(inclusive, width - 1, width);
    return r;
  }
  __shared__ T aj_scan_warps[64];
  const unsigned warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 31) aj_scan_warps[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const T total = aj_scan_warps[(unsigned)lane < warps ? lane : 0];
    aj_scan_warps[32 + lane] = aj_segment_scan(total, 32, combine);
  }
  __syncthreads();
  const T earlier = warp > 0 ? aj_scan_warps[32 + warp - 1] : start;
  r.prefix = lane > 0 ? combine(earlier, before) : earlier;
  r.total = aj_scan_warps[32 + warps - 1];
  return r;
}
#endif
// ---- end of scan preamble ----
"""

_LITERALS: dict[str, Any] = {
    "b": lambda value, dtype: "true" if value else "false",
    "f": float_literal,
    "i": int_literal,
    "u": int_literal,
}


def scan_start(kind: str, dtype: np.dtype) -> str:
    """Return the scan's start value (SCAN_KINDS' exact identity) as a C literal."""
    dtype = np.dtype(dtype)
    return _LITERALS[dtype.kind](SCAN_KINDS[kind].start(dtype), dtype)


def cuda_scan_gaps() -> list[tuple[str, str]]:
    """Return the (scan kind, dtype kind) pairs SCAN_KINDS allows without a combine rule
    (scans combine with the reduction rules of the same name; must be empty)."""
    return [(kind, dtype_kind) for kind, info in SCAN_KINDS.items()
            for dtype_kind in info.kinds if (kind, dtype_kind) not in REDUCE_RULES]


class ScanEmitter(RowEmitter):
    """The row emitter with tiled parallel scans in the phases that have them."""

    preambles = (REDUCE_PREAMBLE, SCAN_PREAMBLE)
    combined = (Op.REDUCE, Op.SCAN)

    def units(self) -> list[str]:
        """Return the unit bookkeeping: a row is ``aj_parts`` chunks (one per block sharing
        it; ``aj_splits < 0`` marks the totals launch of a split scan), walked in tiles."""
        return [
            "  const bool aj_totals = aj_splits < 0;",
            "  const long long aj_parts = aj_totals ? -aj_splits : aj_splits;",
            "  const long long aj_units = aj_outer * aj_parts;",
            "  const long long aj_chunk = (aj_row + aj_parts - 1) / aj_parts;",
            f"  const long long aj_items = aj_scan_items(aj_chunk, aj_team, {SCAN_ITEMS}LL);",
            "  const long long aj_tile = aj_team * aj_items;"]

    def unit_bounds(self) -> list[str]:
        """Return the (row, chunk) of unit ``aj_u``: its outer position and row span."""
        return ["    const long long aj_o = aj_u / aj_parts;",
                "    const long long aj_first = aj_u % aj_parts * aj_chunk;",
                "    const long long aj_begin = aj_first < aj_row ? aj_first : aj_row;",
                "    const long long aj_end = aj_begin + aj_chunk < aj_row ? aj_begin + aj_chunk"
                " : aj_row;"]

    def scans(self, phase: int) -> list[Instr]:
        return [ins for ins in self.buckets.get((phase, Level.ROW), []) if ins.op is Op.SCAN]

    def operand_lines(self, phase: int, indent: str) -> list[str]:
        """Return the index decoding and the instructions the phase's scan operands need."""
        body, scans = self.buckets[(phase, Level.ROW)], self.scans(phase)
        needed = {ins.args[0] for ins in scans}
        for ins in reversed(body):
            if ins.id in needed:
                needed.update(ins.args)
        lines = decode(self.kernel, "aj_r", self.row_dims, indent)
        return lines + [f"{indent}{render_instr(self.kernel, self.names, ins, self.dtypes)}"
                        for ins in body if ins.id in needed]

    def totals(self, phase: int, indent: str) -> list[str]:
        """Return the loop body lines that combine each scan's operand into ``aj_tot``."""
        return [f"{indent}aj_tot{ins.id} = {self.functor(ins)}()(aj_tot{ins.id}, "
                f"v{ins.args[0]});" for ins in self.scans(phase)]

    def start_totals(self, phase: int, indent: str) -> list[str]:
        return [f"{indent}{c_type(ins.dtype)} aj_tot{ins.id} = "
                f"{scan_start(ins.attr, ins.dtype)};" for ins in self.scans(phase)]

    def chunk_totals(self, phase: int) -> list[str]:
        """Return step 1: each thread's total over its elements of the tile."""
        return [*self.start_totals(phase, "        "),
                "        for (long long aj_r = aj_lo; aj_r < aj_hi; ++aj_r) {",
                *self.operand_lines(phase, "          "), *self.totals(phase, "          "),
                "        }"]

    def slot(self, ins: Instr) -> int:
        """Return the scratch word of ``ins``'s chunk totals within a unit's words."""
        return [i.id for i in self.kernel.body if i.op is Op.SCAN].index(ins.id)

    def split_totals(self, phase: int) -> list[str]:
        """Return the totals launch of a split scan: the team's chunk totals to scratch."""
        if not self.split:
            return []
        lines = ["    if (aj_totals) {", *self.start_totals(phase, "      "),
                 "      for (long long aj_r = aj_begin + aj_lane; aj_r < aj_end;"
                 " aj_r += aj_team) {",
                 *self.operand_lines(phase, "        "), *self.totals(phase, "        "),
                 "      }"]
        for ins in self.scans(phase):
            lines += [f"      aj_tot{ins.id} = aj_team_reduce(aj_tot{ins.id}, aj_team, "
                      f"{self.functor(ins)}());",
                      f"      if (aj_leader) aj_put(aj_scratch + aj_u * {self.words} + "
                      f"{self.slot(ins)}, aj_tot{ins.id});"]
        return lines + ["      continue;", "    }"]

    def carries(self, phase: int) -> list[str]:
        """Return each scan's carry: its start, joined by the earlier chunks' totals."""
        lines = [f"    {c_type(ins.dtype)} aj_carry{ins.id} = "
                 f"{scan_start(ins.attr, ins.dtype)};" for ins in self.scans(phase)]
        if not self.split:
            return lines
        lines += ["    if (aj_parts > 1) {",
                  "      for (long long aj_p = aj_o * aj_parts + aj_lane; aj_p < aj_u;"
                  " aj_p += aj_team) {"]
        lines += [f"        aj_carry{ins.id} = {self.functor(ins)}()(aj_carry{ins.id}, "
                  f"aj_get(aj_scratch + aj_p * {self.words} + {self.slot(ins)}, "
                  f"aj_tag<{c_type(ins.dtype)}>()));" for ins in self.scans(phase)]
        lines.append("      }")
        lines += [f"      aj_carry{ins.id} = aj_team_reduce(aj_carry{ins.id}, aj_team, "
                  f"{self.functor(ins)}());" for ins in self.scans(phase)]
        return lines + ["    }"]

    def team_prefixes(self, phase: int) -> list[str]:
        """Return step 2: each thread's running start and the carry past the tile."""
        lines = []
        for ins in self.scans(phase):
            i, functor, t = ins.id, f"{self.functor(ins)}()", c_type(ins.dtype)
            lines += [f"        const aj_scan_pair<{t}> aj_s{i} = aj_team_exscan(aj_tot{i}, "
                      f"aj_team, {scan_start(ins.attr, ins.dtype)}, {functor});",
                      f"        aj_run{i} = {functor}(aj_carry{i}, aj_s{i}.prefix);",
                      f"        aj_carry{i} = {functor}(aj_carry{i}, aj_s{i}.total);"]
        return lines

    def row_line(self, ins: Instr) -> str:
        """Return one line of step 3; a scan advances its running value."""
        if ins.op is not Op.SCAN:
            return super().row_line(ins)
        return (f"aj_run{ins.id} = {self.functor(ins)}()(aj_run{ins.id}, v{ins.args[0]}); "
                f"const {c_type(ins.dtype)} v{ins.id} = aj_run{ins.id};")

    def row_loop(self, phase: int) -> list[str]:
        """Return the phase's row walk: tiled and scanned when the phase has scans."""
        scans = self.scans(phase)
        if not scans:
            return super().row_loop(phase)
        body = self.buckets[(phase, Level.ROW)]
        lines = self.accumulators(phase) + self.split_totals(phase) + self.carries(phase)
        lines += ["    for (long long aj_t0 = aj_begin; aj_t0 < aj_end; aj_t0 += aj_tile) {",
                  "      const long long aj_lo = aj_t0 + aj_lane * aj_items;",
                  "      const long long aj_hi = aj_lo + aj_items < aj_end ? aj_lo + aj_items"
                  " : aj_end;"]
        lines += [f"      {c_type(ins.dtype)} aj_run{ins.id} = aj_carry{ins.id};"
                  for ins in scans]
        lines += ["      if (aj_team > 1) {", *self.chunk_totals(phase),
                  *self.team_prefixes(phase), "      }",
                  "      for (long long aj_r = aj_lo; aj_r < aj_hi; ++aj_r) {"]
        lines += decode(self.kernel, "aj_r", self.row_dims, "        ")
        lines += [f"        {self.row_line(ins)}" for ins in body]
        lines.append("      }")
        lines += [f"      if (aj_team == 1) aj_carry{ins.id} = aj_run{ins.id};" for ins in scans]
        return lines + ["    }"]



def render_scan_kernel(kernel: Kernel, names: Names) -> str:
    """Return the reduction and scan preambles, the combine functors and the kernel."""
    return ScanEmitter(kernel, names).render()
