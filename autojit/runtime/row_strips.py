"""Row strips: a producer/consumer pair of a loop body's kernels run strip by strip.

NumPy evaluates ``u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + ... - 4 * u[1:-1, 1:-1])`` into
a temporary first, then writes it: two kernels, ``k0`` computing the temporary ``T`` from
views of ``u`` and ``k1`` writing ``T`` into ``u``. Run one after the other, ``T`` goes
through the cache twice per iteration; the native driver (``native_region``) may instead
run ``k0`` on rows ``[a, b)`` of its first loop dimension, then ``k1`` on the rows it may
now write, lagging behind so that no later row of ``k0`` reads a row ``k1`` has written:
``T``'s strip is still in L1 when ``k1`` reads it. Each launch is the same kernel with its
row pointers moved and its first loop size set (no new kernel code); every element is
computed by the same instructions, only the order of independent rows changes, so results
are bit-identical.

This module proves a pair may run so, and how far ``k1`` lags; every condition not met
keeps today's schedule. The proof works on each operand's memory as an affine map from
loop indices to the indices of the array it lies in (its *root*: an argument of the loop,
a temporary or a constant of the plan), a root whose elements have distinct addresses in
a nested layout (each axis' stride past the extent of the smaller ones: C, Fortran,
transposed, sliced arrays). For a read of a root the other kernel writes, the writer's
loop row of each element read is the reader's row plus a constant (both first loop
dimensions walk the same root axis the same way, no other dimension of the reader walks
it), and those constants give the lag. Operands of other roots are other memory: other
arguments are checked apart at each call (``Compiled.bind``: every array argument against
every written one), temporaries are the driver's own buffers.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the strip schedule's switches (the A/B benchmark turns it off; ``rows`` > 0 fixes the
#: strip height instead of choosing it), part of a kept program's key
SETTINGS: dict[str, Any] = {"enabled": True, "rows": 0}
#: the bytes of a strip's rows (``_height``), a third of a 48 KiB L1 (the rest holds the
#: lines prefetched ahead). Measured on heat 150x150 f64 (one process, interleaved runs,
#: medians): 4-6 rows (12-16 KB) best, 8-16 rows 2-5% slower, 24 rows (57 KB, past L1)
#: no faster than one launch after the other, 3 rows slower (twice the launches)
BUDGET = 16 * 1024
MIN_ROWS, MAX_ROWS = 4, 64
#: how far (rows) a read may be shifted from the written view for the pair to take strips
MAX_LAG = 8


@dataclass(frozen=True)
class Operand:
    """One kernel operand's memory: its root (``key`` names it; ``shape``/``strides`` its
    layout), its first element's byte offset in the root, its byte stride along each of
    the kernel's loop dimensions, and whether the kernel writes it."""

    key: Hashable
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    loop_strides: tuple[int, ...]
    itemsize: int
    output: bool


@dataclass(frozen=True)
class Side:
    """One kernel of the pair: its loop sizes (ints) and operands, whether it is
    elementwise over independent rows of its first loop dimension (``plain``)."""

    sizes: tuple[int, ...]
    operands: tuple[Operand, ...]
    plain: bool


@dataclass(frozen=True)
class StripPlan:
    """How the pair runs: ``rows`` rows per strip, ``k1`` ``lag`` rows behind ``k0``."""

    rows: int
    lag: int
    total: int


def settings_key() -> tuple:
    return (bool(SETTINGS["enabled"]), int(SETTINGS["rows"]))


def plain_kernel(kernel: Any) -> bool:
    """Whether splitting ``kernel``'s first loop dimension into ranges computes every
    element as one launch does: elementwise (no reduction, scan or recurrence), no loop
    index read, and a first dimension that is not the innermost (the vectorised loop
    meets the same elements in its remainder)."""
    from autojit.ir.ops import Op
    return (kernel.row_dims == 0 and kernel.phases == 1 and kernel.rank >= 2
            and not kernel.aliased_buffers
            and not any(ins.op in (Op.INDEX, Op.REDUCE, Op.SCAN, Op.RECUR, Op.RECUR_SET)
                        for ins in kernel.body))


def _unravel(offset: int, shape: Sequence[int], strides: Sequence[int]
             ) -> tuple[int, ...] | None:
    """The index of the element at byte ``offset`` of an array of ``shape`` and
    ``strides``, or None where its layout is not nested (two elements may then share an
    address) or no element lies there."""
    order = sorted((d for d in range(len(shape)) if shape[d] > 1),
                   key=lambda d: abs(strides[d]))
    extent = 0
    for d in order:
        if abs(strides[d]) <= extent:
            return None
        extent += (shape[d] - 1) * abs(strides[d])
    # negative strides: counted from the other end
    rest = offset - sum((shape[d] - 1) * strides[d] for d in order if strides[d] < 0)
    index = [0] * len(shape)
    for d in reversed(order):
        step, size = abs(strides[d]), shape[d]
        position, rest = divmod(rest, step)
        if not 0 <= position < size:
            return None
        index[d] = position if strides[d] > 0 else size - 1 - position
    return tuple(index) if rest == 0 else None


def _axes(operand: Operand, sizes: Sequence[int]) -> tuple[tuple[int, ...], list] | None:
    """The root index of the operand's first element, and per loop dimension the root
    axis it walks and its direction (None: it stays, a broadcast or a size of one); None
    where a dimension walks no single root axis by one element or leaves the root."""
    origin = _unravel(operand.offset, operand.shape, operand.strides)
    if origin is None:
        return None
    walks: list[tuple[int, int] | None] = []
    used: set[int] = set()
    for size, stride in zip(sizes, operand.loop_strides):
        if size == 1 or stride == 0:
            walks.append(None)
            continue
        axes = [k for k, (n, s) in enumerate(zip(operand.shape, operand.strides))
                if n > 1 and abs(s) == abs(stride)]
        if len(axes) != 1 or axes[0] in used:
            return None
        axis = axes[0]
        sign = 1 if stride == operand.strides[axis] else -1
        last = origin[axis] + sign * (size - 1)
        if not 0 <= last < operand.shape[axis]:
            return None
        used.add(axis)
        walks.append((axis, sign))
    return origin, walks


def _shift(reader: Operand, reader_sizes: Sequence[int], writer: Operand,
           writer_sizes: Sequence[int]) -> int | None:
    """The writer's loop row of every element the reader reads at its loop row ``l``,
    minus ``l`` (one constant), or None where it is not one constant."""
    mapped_r, mapped_w = _axes(reader, reader_sizes), _axes(writer, writer_sizes)
    if mapped_r is None or mapped_w is None:
        return None
    (origin_r, walks_r), (origin_w, walks_w) = mapped_r, mapped_w
    if walks_w[0] is None or walks_r[0] != walks_w[0]:
        return None
    if any(w is not None and w[0] == walks_w[0][0] for w in walks_r[1:]):
        return None
    axis, sign = walks_w[0]
    return sign * (origin_r[axis] - origin_w[axis])


def plan_strips(k0: Side, k1: Side) -> StripPlan | str:
    """The strip schedule of ``k0`` (writing only a temporary ``T``) then ``k1`` (reading
    ``T`` row by row, writing one view ``W``), or why the pair keeps today's schedule."""
    if not SETTINGS["enabled"]:
        return "row strips turned off"
    if not (k0.plain and k1.plain):
        return "a kernel that is not elementwise over independent rows"
    if k0.sizes != k1.sizes:
        return "kernels over different loop sizes"
    out0 = [o for o in k0.operands if o.output]
    out1 = [o for o in k1.operands if o.output]
    if len(out0) != 1 or len(out1) != 1:
        return "a kernel with more than one result"
    temp, written = out0[0], out1[0]
    if not isinstance(temp.key, tuple) or temp.key[0] != "temporary":
        return "a first kernel writing memory that is not a temporary of the body"
    if written.key == temp.key:
        return "the second kernel writing the temporary"
    if any(o.key == temp.key for o in k0.operands if not o.output):
        return "the first kernel reading its own result"
    sizes = k0.sizes
    shifts_w = []
    for operand in k0.operands:
        if operand.output or operand.key != written.key:
            continue
        shift = _shift(operand, sizes, written, sizes)
        if shift is None:
            return "a read of the written array that is not a row shift of the written view"
        shifts_w.append(shift)
    shifts_t = []
    for operand in k1.operands:
        if operand.key == temp.key:
            shift = _shift(operand, sizes, temp, sizes)
            if shift is None:
                return "the temporary read in another layout than written"
            shifts_t.append(shift)
    if not shifts_t:
        return "a second kernel not reading the first's result"
    lag = max(0, *(-s for s in shifts_w), *shifts_t)
    if lag > MAX_LAG:
        return "reads shifted too far from the written rows"
    total = sizes[0]
    rows = SETTINGS["rows"] or _height(k0, k1, lag)
    rows = max(rows, lag + 1)
    if total < 2 * rows:
        return "too few rows for two strips"
    return StripPlan(rows, lag, total)


def _height(k0: Side, k1: Side, lag: int) -> int:
    """The strip height whose working set fits ``BUDGET``: per row, each distinct root's
    row of every operand (views of one root share their rows), ``lag`` rows more of the
    written root and of the temporary."""
    per_row: dict[Hashable, int] = {}
    for side in (k0, k1):
        for o in side.operands:
            row = o.itemsize * int(np.prod(side.sizes[1:]))
            per_row[o.key] = max(per_row.get(o.key, 0), row)
    total = sum(per_row.values())
    rows = (BUDGET // max(total, 1)) - 2 * lag
    return int(min(MAX_ROWS, max(MIN_ROWS, rows)))
