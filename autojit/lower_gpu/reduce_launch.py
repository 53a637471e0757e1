"""How a reduction kernel is launched: threads per row, blocks per row, grid, scratch.

A reduction kernel (see ``render_reduce``) takes three parameters after the usual ones::

    unsigned long long *__restrict__ aj_scratch, long long aj_team, long long aj_splits

* ``team``: threads that share one row, a power of two up to 32 (lanes of one warp, short
  rows: several rows per block) or the whole block (long rows); one thread per row when
  the rows are adjacent in memory (``x.sum(axis=0)``) and numerous;
* ``splits``: blocks that share one row (> 1 only for single-phase kernels with
  ``team == block``: a whole-array ``np.sum`` must not run on one block). Each block
  writes its partial result to ``aj_scratch``; the last one to arrive at the row's counter
  (also in ``aj_scratch``, zeroed by the launcher) combines them in split order. A split
  scan (``np.cumsum`` of a long vector) is launched twice instead (``launch_splits``);
* ``grid``: enough blocks for every row (times ``splits``), capped; blocks stride over rows.

One function chooses all of it from the sizes, for the real launcher (``device.launch``)
and for the emulator (``emulate.run_emulated``), which uses a smaller block and device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autojit.ir.kernel import Kernel, Level
from autojit.ir.ops import Op
from autojit.ir.zero_sign import indexed_reduces

WARP = 32
WARP_ROW_LIMIT = 1024   # longer rows get a whole block (a warp would loop 32+ times)
MIN_SPLIT_ELEMENTS = 16  # per thread: below this a split only adds partials and atomics
WAVES = 4                # grid cap, in multiples of the blocks resident at once


@dataclass(frozen=True)
class ReduceLaunch:
    """One reduction launch: ``grid`` blocks of ``block`` threads, ``team`` threads per
    row, ``splits`` blocks per row, ``scratch_words`` 64-bit words of zeroed scratch."""

    grid: int
    block: int
    team: int
    splits: int
    scratch_words: int


def is_reduction(kernel: Kernel) -> bool:
    """Return True when ``kernel`` needs the row/phase structure (not a plain loop; a
    sequential row's one thread, ``render_loop``, launches as a plain loop does)."""
    if kernel.sequential:
        return False
    return kernel.row_dims > 0 or kernel.phases > 1 or any(
        ins.op is Op.REDUCE or ins.level == Level.OUTER for ins in kernel.body)


def can_split(kernel: Kernel) -> bool:
    """Return True when several blocks may share a row: one phase, so no block needs the
    row's result before the last block has combined it. A scan kernel splits only without
    reductions: it runs twice (``launch_splits``), chunk totals first."""
    reduces = any(ins.op is Op.REDUCE for ins in kernel.body)
    return kernel.phases == 1 and not (kernel.has_scan and reduces)


def launch_splits(kernel: Kernel, launch: ReduceLaunch) -> tuple[int, ...]:
    """Return the ``aj_splits`` argument of each launch of ``kernel``: one launch, except a
    split scan: ``-splits`` (each block stores its chunk's totals in scratch), then
    ``splits`` (each block starts from the totals of the chunks before its own)."""
    if kernel.has_scan and launch.splits > 1:
        return (-launch.splits, launch.splits)
    return (launch.splits,)


def partial_words(kernel: Kernel) -> int:
    """Return the 64-bit words one block's partial results take (two where the accumulator
    carries a position, ``zero_sign.indexed_reduces``: argmax/argmin, a float max/min's
    last-zero code; a scan's chunk total: one)."""
    indexed = indexed_reduces(kernel)
    return sum(2 if ins.id in indexed else 1 for ins in kernel.body
               if ins.op in (Op.REDUCE, Op.SCAN))


def row_extent(kernel: Kernel, extent: Sequence[int]) -> tuple[int, int]:
    """Return (rows, elements per row) for the concrete loop sizes ``extent``."""
    split = kernel.rank - kernel.row_dims
    return math.prod(extent[:split]), math.prod(extent[split:])


def scratch_words(kernel: Kernel, rows: int, splits: int) -> int:
    """Return the scratch size: a partial per (row, split), then a counter per row."""
    return rows * splits * partial_words(kernel) + rows if splits > 1 else 0


def walks_columns(kernel: Kernel) -> bool:
    """Return True when an input is contiguous along the outer rows, not along a row
    (``x.sum(axis=0)``): lanes of a warp then read adjacent memory only as adjacent rows."""
    last_outer, rows = kernel.outer_rank - 1, range(kernel.outer_rank, kernel.rank)
    return last_outer >= 0 and any(
        buf.strides[last_outer] == 1 and all(buf.strides[d] != 1 for d in rows)
        for buf in kernel.inputs)


def _team(kernel: Kernel, rows: int, row: int, block: int, resident_blocks: int) -> int:
    if walks_columns(kernel) and 4 * rows >= resident_blocks * block:
        return 1   # a thread per row: coalesced, and rows for a quarter of the device
    if row <= WARP:
        return 1 << max(row - 1, 0).bit_length()
    if row <= WARP_ROW_LIMIT and rows * WARP >= resident_blocks * block:
        return WARP
    return block


def choose_reduce_launch(kernel: Kernel, extent: Sequence[int], block: int,
                         resident_blocks: int) -> ReduceLaunch:
    """Return the launch of ``kernel`` over ``extent`` with ``block`` threads per block on
    a device that holds ``resident_blocks`` such blocks at once."""
    rows, row = row_extent(kernel, extent)
    team = _team(kernel, rows, row, block, resident_blocks)
    splits = 1
    if can_split(kernel) and team == block and 0 < rows < resident_blocks:
        splits = max(1, min(-(-2 * resident_blocks // rows), row // (block * MIN_SPLIT_ELEMENTS)))
    return make_reduce_launch(kernel, extent, block, team, splits,
                              grid_cap=WAVES * resident_blocks)


def make_reduce_launch(kernel: Kernel, extent: Sequence[int], block: int, team: int,
                       splits: int, grid_cap: int) -> ReduceLaunch:
    """Return the launch with these choices (grid from the row count); raise ValueError
    for a combination the generated code does not support."""
    rows, _ = row_extent(kernel, extent)
    if block % WARP or not WARP <= block <= 1024:
        raise ValueError(f"reduction blocks are a multiple of {WARP} threads up to 1024, "
                         f"not {block}")
    if team != block and (team > WARP or team & (team - 1) or team < 1):
        raise ValueError(f"team of {team} threads: a power of two up to {WARP}, or the block")
    if splits < 1 or (splits > 1 and (team != block or not can_split(kernel))):
        raise ValueError(f"{splits} blocks per row need one phase and team == block")
    units = rows * splits
    grid = max(1, min(-(-units // (block // team)), grid_cap))
    return ReduceLaunch(grid, block, team, splits, scratch_words(kernel, rows, splits))
