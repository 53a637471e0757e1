"""Kernel IR: one loop nest of scalar SSA instructions, the single input of both renderers.

A kernel iterates over ``loop_sizes`` (outermost first). Each loop size is a product of
size symbols (``()`` means 1). Every buffer is indexed with one element stride per loop
dimension: an ``int`` is known when compiling (0 for a broadcast dimension, 1 for a
contiguous inner one), ``None`` arrives at run time.

Calling convention, identical on every target::

    void <name>(void **data, const int64_t *meta)

``data`` holds one pointer per buffer (in ``buffers`` order) followed by one pointer per
scalar parameter (pointing at its value). ``meta`` holds the loop sizes, then for every
buffer the runtime strides (in elements) of its ``None`` dimensions, in order. See
``abi.py`` for the packing.

Reductions. The last ``row_dims`` loop dimensions are *row* dimensions; the others are
*outer* (parallel) dimensions. For every outer index the kernel runs ``phases`` passes
over the row::

    for o in outer index space:
        for p in range(phases):
            for r in row index space:       # one iteration when row_dims == 0
                instructions of phase p at level "row"   (REDUCE accumulates here)
            instructions of phase p at level "outer"    (REDUCE results usable here)

A REDUCE instruction's id names its accumulator: read from the "outer" level of its phase
or later, or from the "row" level of later phases (softmax: max in phase 0, sum of
exponentials in phase 1, the normalised row written in phase 2). An elementwise kernel is
the special case ``row_dims == 0, phases == 1`` with every instruction at level "row".

Float sums and products reproduce NumPy's order exactly: see ``Kernel.pairwise``.

Scans. A SCAN instruction (level "row") is a running REDUCE: its value in row iteration r
combines its operand over row positions 0..r in C order (``np.cumsum``), restarted for
every outer index and phase. It is an ordinary row value of its phase (stores and
consumers read it in the same iteration; a later phase reading it runs its own SCAN). A
SCAN's operand never depends on another SCAN of its phase: renderers may then compute a
row's scans in parallel, as chunk totals and an exclusive scan of them (``render_scan``).

Recurrences. ``%c = RECUR %init`` (level "row") is a value carried from one row iteration to
the next, as a loop region's carried scalar (``acc = acc * 0.5 + 1.0``): in row iteration
r it is the value ``RECUR_SET %c %next`` (level "row", no result) gave in iteration r - 1,
and ``%init`` (a CONST or LOAD_SCALAR) in iteration 0; read from the "outer" level it is
the value after the last iteration (``%init`` when the row is empty). The row's iterations
then run one after another in loop order (``Kernel.sequential``, as do those of a row with
no REDUCE or SCAN): renderers neither split nor reorder them (one thread on the GPU, no
partials on the CPU; the loop vectoriser cannot widen a phi chain).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.ir.ops import Op


class Level(enum.StrEnum):
    """Where an instruction of a reduction kernel runs; the values are the strings printed
    IR has always shown (``@row.0``)."""

    ROW = "row"        # once per loop iteration (per element of the row)
    OUTER = "outer"    # once per outer index (per row: a reduction's result and its uses)


@dataclass(frozen=True)
class Buffer:
    """An array the kernel reads (``is_output`` False) or writes."""

    name: str
    dtype: np.dtype
    strides: tuple[int | None, ...]
    is_output: bool = False
    value: int = -1          # graph node id this buffer holds
    axes: tuple[int | None, ...] | None = None   # array axis along each loop dim


@dataclass(frozen=True)
class ScalarParam:
    """A runtime scalar argument, read once per call."""

    name: str
    dtype: np.dtype
    value: int = -1          # graph node id


@dataclass(frozen=True)
class Instr:
    """A scalar SSA instruction: ``%id = op args : dtype``.

    ``attr`` is the buffer index for LOAD/STORE, the parameter index for LOAD_SCALAR and
    the Python value for CONST. CAST converts ``args[0]`` to ``dtype``.
    """

    id: int
    op: Op
    args: tuple[int, ...]
    dtype: np.dtype
    attr: Any = None
    node: int = -1           # graph node this instruction comes from (for reports)
    level: Level = Level.ROW   # once per loop iteration, or once per outer index
    phase: int = 0


@dataclass(frozen=True)
class Kernel:
    """A fused loop nest; see the module docstring for its calling convention."""

    name: str
    loop_sizes: tuple[tuple[str, ...], ...]
    buffers: tuple[Buffer, ...]
    scalars: tuple[ScalarParam, ...]
    body: tuple[Instr, ...]
    nodes: tuple[int, ...] = ()     # graph nodes fused into this kernel
    row_dims: int = 0
    phases: int = 1
    #: (REDUCE id, chunk) of float sums NumPy adds pairwise along the innermost row loop
    #: (``pairwise_dim``): ``pairwise_sum`` over each chunk of that many elements (0: the
    #: whole loop), the chunk sums added to the accumulator in order. Other float sums
    #: and products combine one element after another in loop order.
    pairwise: tuple[tuple[int, int], ...] = ()
    #: the loop dimension where a pairwise run over several row dimensions starts (it
    #: spans that one and all inner ones, positions in C order); None: the run is the
    #: innermost row dimension longer than one
    pairwise_from: int | None = None

    @property
    def pairwise_dim(self) -> int | None:
        """The loop dimension pairwise sums start at: ``pairwise_from``, else the innermost
        row dimension longer than one (None when the kernel has no pairwise sum or no such
        dimension)."""
        if not self.pairwise:
            return None
        if self.pairwise_from is not None:
            return self.pairwise_from
        longer = [d for d in range(self.outer_rank, self.rank) if self.loop_sizes[d]]
        return longer[-1] if longer else None

    @property
    def has_scan(self) -> bool:
        """True when a SCAN carries state along the row (its iterations are ordered)."""
        return any(ins.op is Op.SCAN for ins in self.body)

    @property
    def has_recurrence(self) -> bool:
        """True when a RECUR carries a value from one row iteration to the next."""
        return any(ins.op is Op.RECUR for ins in self.body)

    @property
    def sequential(self) -> bool:
        """True when the row's iterations run one after another, in order, on one thread:
        a kernel of one row loop with a recurrence, or with nothing to combine (no REDUCE
        or SCAN: a native loop, ``fuse.native_loop``, whose iterations may read what
        earlier ones stored)."""
        return self.rank == self.row_dims == 1 and (self.has_recurrence or not any(
            ins.op in (Op.REDUCE, Op.SCAN) for ins in self.body))

    @property
    def outer_rank(self) -> int:
        return self.rank - self.row_dims

    @property
    def rank(self) -> int:
        return len(self.loop_sizes)

    def runtime_strides(self) -> list[tuple[int, int]]:
        """Return (buffer index, loop dim) for each runtime stride, in ``meta`` order."""
        return [
            (b, d)
            for b, buf in enumerate(self.buffers)
            for d, s in enumerate(buf.strides)
            if s is None
        ]

    def array_axis(self, buffer: int, dim: int, ndim: int) -> int | None:
        """Return the axis of the buffer's array (of ``ndim`` dims) that loop ``dim`` walks:
        ``Buffer.axes`` when fusion reordered loops, else NumPy's right alignment."""
        axes = self.buffers[buffer].axes
        if axes is not None:
            return axes[dim]
        axis = dim - (self.rank - ndim)
        return axis if axis >= 0 else None

    @property
    def aliased_buffers(self) -> frozenset[int]:
        """Buffers that share memory with another buffer of this kernel (same graph value):
        a value stored in an early phase and reloaded in the last one (``fuse.plan``'s
        spills). Renderers must not promise no-aliasing (``noalias``, ``__restrict__``)
        for these."""
        seen: dict[int, list[int]] = {}
        for index, buf in enumerate(self.buffers):
            if buf.value >= 0:          # -1: a hand-built kernel's buffer, its own memory
                seen.setdefault(buf.value, []).append(index)
        return frozenset(i for group in seen.values() if len(group) > 1
                         and any(self.buffers[j].is_output for j in group) for i in group)

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if not b.is_output)

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.is_output)
