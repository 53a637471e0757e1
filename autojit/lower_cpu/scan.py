"""LLVM running values for SCAN instructions: one combine rule per (scan, dtype kind).

A scan is a REDUCE whose running value is read in the same row iteration. Like an
accumulator it is an ``alloca`` in the entry block (mem2reg turns it into a phi), reset
before its phase's row loop; ``update`` returns the new running value. Unlike a sum, it
carries no ``reassoc``: every prefix is a result, so the order must be NumPy's own
(``np.add.accumulate`` is sequential), which makes float scans bit-exact. Sample (cumsum)::

    %s = fadd double %run, %v        ; %run starts at -0.0, the exact additive identity
    store double %s, ptr %run.slot
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr
from autojit.ir.ops import SCAN_KINDS
from autojit.ir.ops import Combine as CombineSpec
from autojit.lower_cpu.llvm_rules import constant, llvm_type
from autojit.lower_cpu.reduce import render_combine

Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


def _scan_combine(spec: CombineSpec) -> Callable[[str], Combine]:
    """Return the combine of one dtype kind for a scan's spec (``ops.SCAN_KINDS``: the
    reduction's of the same name): ``fadd`` for floats, wrapping ``add`` else."""
    combine = render_combine(spec)
    return lambda kind: lambda b, run, v: combine(b, run, v, kind)


SCAN_COMBINE: dict[str, Callable[[str], Combine]] = {
    name: _scan_combine(info.combine) for name, info in SCAN_KINDS.items()
}


def scan_combine(name: str, dtype: np.dtype) -> Combine:
    """Return the LLVM combine of scan ``name`` on ``dtype``; a missing entry is an
    InternalError naming the scan (``InternalError.no_rule``), never a KeyError."""
    make = SCAN_COMBINE.get(name)
    if make is None:
        raise InternalError.no_rule("LLVM", f"scan.{name}", dtype)
    return make(np.dtype(dtype).kind)


def llvm_scan_gaps() -> list[tuple[str, str]]:
    """Return (scan, dtype kind) pairs without an LLVM rule (must be empty)."""
    return [(name, kind) for name, info in SCAN_KINDS.items() for kind in info.kinds
            if name not in SCAN_COMBINE]


@dataclass
class ScanAccumulator:
    """The running value of one SCAN (the ``Accumulator`` interface of ``reduce.py``)."""

    ins: Instr
    source: np.dtype
    value: ir.Value

    @classmethod
    def allocate(cls, b: ir.IRBuilder, ins: Instr, source: np.dtype,
                 sign_matters: bool = True) -> ScanAccumulator:
        """``sign_matters`` is accepted for the ``Accumulator`` interface: the scans
        rendered here (sums, products, bitwise ones) need no zero-sign bookkeeping."""
        scan_combine(ins.attr, source)   # a scan without a rule fails here, not at reset
        return cls(ins, np.dtype(source), b.alloca(llvm_type(source), name=f"run{ins.id}"))

    def reset(self, b: ir.IRBuilder) -> None:
        b.store(constant(self.source, SCAN_KINDS[self.ins.attr].start(self.source)), self.value)

    def update(self, b: ir.IRBuilder, v: ir.Value, position: ir.Value | None = None
               ) -> ir.Value:
        """Combine ``v`` into the running value; return the new running value."""
        combined = scan_combine(self.ins.attr, self.source)(b, b.load(self.value), v)
        b.store(combined, self.value)
        return combined

    def result(self, b: ir.IRBuilder) -> ir.Value:
        """Return the running value after the row: the row's total."""
        return b.load(self.value)
