"""LLVM accumulators for REDUCE instructions: one update rule per (reduction, dtype kind).

Each accumulator is an ``alloca`` in the entry block (mem2reg turns it into a phi),
reset before its phase's row loop and read after it. Sums and products carry ``reassoc``
so the loop vectoriser may keep several partial sums (float32 sums already arrive widened
to float64 by the fuser). Samples::

    add (f):  %s = fadd reassoc double %acc, %v
    max (f):  %t = fcmp ogt double %acc, %v ; %n = fcmp uno double %acc, %acc
              %k = or i1 %t, %n ; %s = select i1 %k, double %acc, double %v
    argmax:   value and index accumulators; the index is the row position in C order
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from autojit.ir.kernel import Instr
from autojit.ir.ops import REDUCE_KINDS
from autojit.lower_cpu.rules import I64, constant, llvm_type

Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value, str], ir.Value]

_GREATER = {"i": "icmp_signed", "u": "icmp_unsigned", "b": "icmp_unsigned"}


def _greater(b: ir.IRBuilder, x: ir.Value, y: ir.Value, kind: str, op: str) -> ir.Value:
    if kind == "f":
        return b.fcmp_ordered(op, x, y)
    return getattr(b, _GREATER[kind])(op, x, y)


def _is_nan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", x, x)


def _arith(float_op: str, int_op: str) -> Combine:
    def combine(b: ir.IRBuilder, acc: ir.Value, v: ir.Value, kind: str) -> ir.Value:
        if kind == "f":
            result = getattr(b, float_op)(acc, v)
            result.flags.append("reassoc")
            return result
        return getattr(b, int_op)(acc, v)
    return combine


def _extreme(op: str, nan_from_value: bool | None, bool_op: str) -> Combine:
    """Keep the accumulator when ``acc op v`` (or, for floats, when the NaN rule says so:
    max/min keep a NaN accumulator; fmax/fmin take the other side of a NaN value)."""
    def combine(b: ir.IRBuilder, acc: ir.Value, v: ir.Value, kind: str) -> ir.Value:
        if kind == "b":
            return getattr(b, bool_op)(acc, v)
        keep = _greater(b, acc, v, kind, op)
        if kind == "f":
            keep = b.or_(keep, _is_nan(b, v if nan_from_value else acc))
        return b.select(keep, acc, v)
    return combine


COMBINE: dict[str, Combine] = {
    "add": _arith("fadd", "add"),
    "mul": _arith("fmul", "mul"),
    "max": _extreme(">", False, "or_"),
    "min": _extreme("<", False, "and_"),
    "fmax": _extreme(">", True, "or_"),
    "fmin": _extreme("<", True, "and_"),
    "or": lambda b, acc, v, kind: b.or_(acc, v),
    "and": lambda b, acc, v, kind: b.and_(acc, v),
}
ARG_COMPARE = {"argmax": ">", "argmin": "<"}


def llvm_reduce_gaps() -> list[tuple[str, str]]:
    """Return (reduction, dtype kind) pairs without an LLVM rule (must be empty)."""
    handled = set(COMBINE) | set(ARG_COMPARE)
    return [(name, kind) for name, info in REDUCE_KINDS.items() for kind in info.kinds
            if name not in handled]


@dataclass
class Accumulator:
    """The storage of one REDUCE: its value (and, for argmax/argmin, its index)."""

    ins: Instr
    source: np.dtype                  # dtype of the values reduced
    value: ir.Value
    index: ir.Value | None = None

    @classmethod
    def allocate(cls, b: ir.IRBuilder, ins: Instr, source: np.dtype) -> Accumulator:
        value = b.alloca(llvm_type(source), name=f"acc{ins.id}")
        index = b.alloca(I64, name=f"acc{ins.id}.at") if ins.attr in ARG_COMPARE else None
        return cls(ins, np.dtype(source), value, index)

    def reset(self, b: ir.IRBuilder) -> None:
        start = REDUCE_KINDS[self.ins.attr].start(self.source)
        b.store(constant(self.source, start), self.value)
        if self.index is not None:
            b.store(ir.Constant(I64, 0), self.index)

    def update(self, b: ir.IRBuilder, v: ir.Value, position: ir.Value | None) -> None:
        kind = self.source.kind
        acc = b.load(self.value)
        if self.index is None:
            b.store(COMBINE[self.ins.attr](b, acc, v, kind), self.value)
            return
        take = _greater(b, v, acc, kind, ARG_COMPARE[self.ins.attr])
        if kind == "f":  # the first NaN wins, as in NumPy
            take = b.or_(take, b.and_(_is_nan(b, v), b.not_(_is_nan(b, acc))))
        b.store(b.select(take, v, acc), self.value)
        b.store(b.select(take, position, b.load(self.index)), self.index)

    def result(self, b: ir.IRBuilder) -> ir.Value:
        return b.load(self.index if self.index is not None else self.value)
