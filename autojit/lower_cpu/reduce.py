"""LLVM accumulators for REDUCE instructions: one update rule per (reduction, dtype kind).

Each accumulator is an ``alloca`` in the entry block (mem2reg turns it into a phi),
reset before its phase's row loop and read after it. Float sums and products combine in
NumPy's order, with no ``reassoc``: one element after another in row order, or (sums
along NumPy's inner loop, ``Kernel.pairwise``) through ``pairwise.emit_pairwise``, which
adds like NumPy's ``pairwise_sum``; integer sums and products may reassociate. Samples::

    add (f):  %s = fadd double %acc, %v
    max (f):  %s = call double @llvm.maximum.f64(double %acc, double %v)   ; NaN wins
              %z = select (%v == 0), 2*position + (signbit %v ? 1 : 2), 0
              %c = call i64 @llvm.smax.i64(i64 %code, i64 %z)      ; the last zero seen
    argmax:   value and index accumulators; the index is the row position in C order

Float max/min: a select chain (``acc > v or isnan(acc) ? acc : v``) is one long dependency
the vectoriser refuses; ``llvm.maximum``/``minimum`` (NaN-propagating) vectorise, but
order -0 < +0 where NumPy keeps the *last* of equal zeros (``max([0., -0.])`` is -0.).
The zero code restores that exactly: the largest code is the last zero, its low bit its
sign, and it decides the result's sign only when the result is a zero. Measured on softmax
(256,128,128) float32, one thread: the max pass alone 2.7 ms before.

Where no store can see the result's zero sign (``ir/zero_sign.py``: softmax's max only
feeds ``exp(x - max)``) the code is left out and the intrinsic carries ``nsz``, which lets
the backend drop the blends that order -0 below +0: one ``vmaxps`` and a NaN check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import llvmlite.ir as ir
import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr
from autojit.ir.ops import REDUCE_KINDS, NanRule, Op, zero_coded
from autojit.ir.ops import Combine as CombineSpec
from autojit.lower_cpu.llvm_rules import (
    ARITH_METHODS,
    BITWISE_METHODS,
    COMPARE_SYMBOLS,
    I64,
    constant,
    llvm_type,
)

Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value, str], ir.Value]
_Entry = TypeVar("_Entry")

_GREATER = {"i": "icmp_signed", "u": "icmp_unsigned", "b": "icmp_unsigned"}


def _greater(b: ir.IRBuilder, x: ir.Value, y: ir.Value, kind: str, op: str) -> ir.Value:
    if kind == "f":
        return b.fcmp_ordered(op, x, y)
    return getattr(b, _GREATER[kind])(op, x, y)


def _is_nan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", x, x)


def _arith(float_op: str, int_op: str) -> Combine:
    """Floats combine in order (``ops.ordered_reduction``); integers wrap, in any order."""
    def combine(b: ir.IRBuilder, acc: ir.Value, v: ir.Value, kind: str) -> ir.Value:
        if kind == "f":
            return getattr(b, float_op)(acc, v)
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


def _float_extreme(intrinsic: str) -> Callable[..., ir.Value]:
    def combine(b: ir.IRBuilder, acc: ir.Value, v: ir.Value, kind: str,
                fastmath: tuple[str, ...] = ()) -> ir.Value:
        suffix = "f32" if isinstance(acc.type, ir.FloatType) else "f64"
        return b.call(_declare(b.module, f"llvm.{intrinsic}.{suffix}", acc.type, 2), [acc, v],
                      fastmath=fastmath)
    return combine


def _declare(module: ir.Module, name: str, ty: ir.Type, arity: int) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)


def render_combine(spec: CombineSpec) -> Combine:
    """Return the LLVM combine of one spec (``ops.COMBINES``: NaN, tie and zero-sign
    rules), through the scalar table's builder methods; the arg kinds keep only their
    comparison (``ARG_COMPARE``: they also carry the position)."""
    if spec.op in BITWISE_METHODS:
        method = BITWISE_METHODS[spec.op]
        return lambda b, acc, v, kind: getattr(b, method)(acc, v)
    if spec.op is not None:
        signed, _, floating = ARITH_METHODS[spec.op]
        return _arith(floating, signed)
    return _extreme(COMPARE_SYMBOLS[spec.beats], spec.nan is NanRule.SKIPPED,
                    BITWISE_METHODS[spec.bool_op])


#: NaN-propagating LLVM intrinsics of the float extrema that vectorise
_NAN_WINS_INTRINSICS = {Op.GT: "maximum", Op.LT: "minimum"}

#: float reductions whose value combines through a vectorisable intrinsic; their index
#: accumulator holds the last-zero code (module docstring, ``ops.zero_coded``)
ZERO_CODED = {name: _float_extreme(_NAN_WINS_INTRINSICS[info.combine.beats])
              for name, info in REDUCE_KINDS.items() if zero_coded(name, np.dtype("f8"))}

COMBINE: dict[str, Combine] = {name: render_combine(info.combine)
                               for name, info in REDUCE_KINDS.items()
                               if not info.combine.position}
ARG_COMPARE = {name: COMPARE_SYMBOLS[info.combine.beats]
               for name, info in REDUCE_KINDS.items() if info.combine.position}


def _lookup(table: dict[str, _Entry], name: str, dtype: np.dtype) -> _Entry:
    """Return ``table[name]``; a missing entry is an InternalError naming the reduction
    (``InternalError.no_rule``, the CUDA renderer's words), never a KeyError."""
    entry = table.get(name)
    if entry is None:
        raise InternalError.no_rule("LLVM", f"reduce.{name}", dtype)
    return entry


def combine_rule(name: str, dtype: np.dtype) -> Combine:
    """Return the LLVM combine of reduction ``name`` (``COMBINE``) on ``dtype``."""
    return _lookup(COMBINE, name, dtype)


def arg_compare(name: str, dtype: np.dtype) -> str:
    """Return the comparison of arg reduction ``name`` (``ARG_COMPARE``) on ``dtype``."""
    return _lookup(ARG_COMPARE, name, dtype)


def zero_coded_rule(name: str, dtype: np.dtype) -> Callable[..., ir.Value]:
    """Return the vectorisable float extreme of reduction ``name`` (``ZERO_CODED``)."""
    return _lookup(ZERO_CODED, name, dtype)


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
    sign_matters: bool = True         # whether a zero result's sign can reach a store

    @classmethod
    def allocate(cls, b: ir.IRBuilder, ins: Instr, source: np.dtype,
                 sign_matters: bool = True) -> Accumulator:
        if ins.attr not in ARG_COMPARE:
            combine_rule(ins.attr, source)   # a reduction without a rule fails here
        value = b.alloca(llvm_type(source), name=f"acc{ins.id}")
        indexed = ins.attr in ARG_COMPARE or cls.zero_coded_for(ins, source, sign_matters)
        index = b.alloca(I64, name=f"acc{ins.id}.at") if indexed else None
        return cls(ins, np.dtype(source), value, index, sign_matters)

    @staticmethod
    def zero_coded_for(ins: Instr, source: np.dtype, sign_matters: bool = True) -> bool:
        return zero_coded(ins.attr, source, sign_matters)

    @property
    def zero_coded(self) -> bool:
        return self.zero_coded_for(self.ins, self.source, self.sign_matters)

    @property
    def signless_extreme(self) -> bool:
        """A float max/min whose zero sign nothing sees: the intrinsic alone, with nsz."""
        return (self.ins.attr in ZERO_CODED and self.source.kind == "f"
                and not self.sign_matters)

    @property
    def needs_position(self) -> bool:
        """Whether ``update`` wants the element's row position."""
        return self.index is not None

    def global_index(self, b: ir.IRBuilder, base: ir.Value) -> ir.Value:
        """Return the index accumulator shifted to a row that starts ``base`` elements
        later (thread partials): positions move by ``base``, zero codes by ``2 * base``."""
        index = b.load(self.index)
        if not self.zero_coded:
            return b.add(index, base, flags=("nsw",))
        shifted = b.add(index, b.shl(base, ir.Constant(I64, 1)), flags=("nsw",))
        return b.select(b.icmp_signed(">", index, ir.Constant(I64, 0)), shifted, index)

    def reset(self, b: ir.IRBuilder) -> None:
        start = REDUCE_KINDS[self.ins.attr].start(self.source)
        b.store(constant(self.source, start), self.value)
        if self.index is not None:
            b.store(ir.Constant(I64, 0), self.index)

    def update(self, b: ir.IRBuilder, v: ir.Value, position: ir.Value | None) -> None:
        kind = self.source.kind
        acc = b.load(self.value)
        if self.signless_extreme:
            b.store(zero_coded_rule(self.ins.attr, self.source)(b, acc, v, kind, ("nsz",)),
                    self.value)
            return
        if self.index is None:
            b.store(combine_rule(self.ins.attr, self.source)(b, acc, v, kind), self.value)
            return
        if self.zero_coded:
            bits = ir.IntType(8 * self.source.itemsize)
            negative = b.icmp_signed("<", b.bitcast(v, bits), ir.Constant(bits, 0))
            twice = b.shl(position, ir.Constant(I64, 1))
            code = b.add(twice, b.select(negative, ir.Constant(I64, 1), ir.Constant(I64, 2)))
            is_zero = b.fcmp_ordered("==", v, ir.Constant(v.type, 0.0))
            self.merge(b, v, b.select(is_zero, code, ir.Constant(I64, 0)))
            return
        take = _greater(b, v, acc, kind, arg_compare(self.ins.attr, self.source))
        if kind == "f":  # the first NaN wins, as in NumPy
            take = b.or_(take, b.and_(_is_nan(b, v), b.not_(_is_nan(b, acc))))
        b.store(b.select(take, v, acc), self.value)
        b.store(b.select(take, position, b.load(self.index)), self.index)

    def merge(self, b: ir.IRBuilder, value: ir.Value, index: ir.Value | None) -> None:
        """Combine a partial result (a thread chunk's value and global index) into this
        accumulator, as if its elements had been reduced here."""
        if not self.zero_coded:
            self.update(b, value, index)
            return
        acc = b.load(self.value)
        b.store(zero_coded_rule(self.ins.attr, self.source)(b, acc, value, "f"), self.value)
        smax = _declare(b.module, "llvm.smax.i64", I64, 2)
        b.store(b.call(smax, [b.load(self.index), index]), self.index)

    def result(self, b: ir.IRBuilder) -> ir.Value:
        if self.zero_coded:   # a zero result takes the sign of the row's last zero
            value = b.load(self.value)
            odd = b.trunc(b.load(self.index), ir.IntType(1))
            zero = b.select(odd, ir.Constant(value.type, -0.0), ir.Constant(value.type, 0.0))
            return b.select(b.fcmp_ordered("==", value, ir.Constant(value.type, 0.0)),
                            zero, value)
        return b.load(self.index if self.index is not None else self.value)
