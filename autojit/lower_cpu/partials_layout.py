"""The contract between the thread splitter (``threads.py``) and the partials renderer
(``partials.py``): the entry names, which values are carried from phase to phase, which
sums are cut at ``pairwise_sum``'s nodes, and the byte layout of the blocks they share.

Here, below both, so that neither imports the other (the renderer pulls in llvmlite; the
splitter is imported by every call and must not) and cached partials are found without
importing the renderer. A partials record is ``RECORD_BYTES``: the accumulator at offset
0, the int64 position at ``POSITION_OFFSET``; a carry slot is ``CARRY_BYTES``.
"""

from __future__ import annotations

from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import Op

__all__ = ["CARRY_BYTES", "POSITION_OFFSET", "RECORD_BYTES", "carried", "partial_symbols",
           "tree_sums"]

#: bytes of one chunk's record of one accumulator: its value, then its int64 position
RECORD_BYTES = 16
POSITION_OFFSET = 8
#: bytes of one carried value
CARRY_BYTES = 8


def partial_symbols(symbol: str, phases: int) -> tuple[str, ...]:
    """Return the entry names ``partials.render_partials`` defines: part0, finish0, part1,
    ... (here, so that cached partials are found without importing the renderer)."""
    return tuple(f"{symbol}.{step}{p}" for p in range(phases) for step in ("part", "finish"))


def tree_sums(kernel: Kernel) -> frozenset[int]:
    """Return the REDUCEs ``partials`` must cut at ``pairwise_sum``'s nodes and add back in
    tree order: float sums NumPy adds pairwise (``Kernel.pairwise``), one run per row."""
    return frozenset(i for i, chunk in kernel.pairwise if chunk == 0)


def carried(kernel: Kernel) -> tuple[Instr, ...]:
    """Return the values a later phase reads from an earlier one (reductions and
    outer-level results), in body order: the slots of the partials' carry block."""
    by_id = {ins.id: ins for ins in kernel.body}
    used = {a for ins in kernel.body for a in ins.args if by_id[a].phase < ins.phase}
    return tuple(ins for ins in kernel.body if ins.id in used
                 and ins.op not in (Op.CONST, Op.LOAD_SCALAR, Op.STORE)
                 and (ins.op is Op.REDUCE or ins.level == Level.OUTER))
