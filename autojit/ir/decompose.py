"""Rewrite graph ops into the primitives renderers implement, with NumPy's exact semantics.

Each rule receives a :class:`Builder`, the operand instruction ids (already in the loop
dtype NumPy chose) and returns the id of the result. Rules are a table keyed by op; a
graph op absent from the table that is itself a primitive is emitted as is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from autojit.errors import InternalError
from autojit.ir.ops import OP_TABLE, Op

BOOL = np.dtype(bool)


class Builder(Protocol):
    def emit(self, op: Op, args: tuple[int, ...], dtype: np.dtype, attr: Any = None) -> int: ...
    def const(self, value: Any, dtype: np.dtype) -> int: ...
    def dtype_of(self, value: int) -> np.dtype: ...
    def const_value(self, value: int) -> Any | None: ...


Rule = Callable[[Builder, tuple[int, ...], np.dtype], int]


class Emit:
    """Small helper so rules read like the formulas they implement."""

    def __init__(self, b: Builder, dtype: np.dtype) -> None:
        self.b, self.dt = b, np.dtype(dtype)

    def op(self, op: Op, *args: int, dtype: np.dtype | None = None) -> int:
        if dtype is None:
            dtype = BOOL if OP_TABLE[op].bool_result else self.b.dtype_of(args[-1])
        return self.b.emit(op, args, np.dtype(dtype))

    def k(self, value: Any, dtype: np.dtype | None = None) -> int:
        return self.b.const(value, dtype or self.dt)

    def select(self, cond: int, a: int, b: int) -> int:
        return self.b.emit(Op.SELECT, (cond, a, b), self.b.dtype_of(a))


def _kind(b: Builder, value: int) -> str:
    return b.dtype_of(value).kind


def _bool_alias(bool_op: Op, numeric_op: Op) -> Rule:
    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        op = bool_op if _kind(b, args[0]) == "b" else numeric_op
        return b.emit(op, args, out)
    return rule


def _float_divmod(e: Emit, a: int, b: int) -> tuple[int, int]:
    """NumPy's ``npy_divmod`` (npymath): returns (floor quotient, Python-style remainder)."""
    mod = e.op(Op.REM, a, b)
    b_zero = e.op(Op.EQ, b, e.k(0.0))
    div = e.op(Op.DIV, e.op(Op.SUB, a, mod), b)
    mod_nonzero = e.op(Op.NE, mod, e.k(0.0))
    signs_differ = e.op(Op.NE, e.op(Op.LT, b, e.k(0.0)), e.op(Op.LT, mod, e.k(0.0)))
    adjust = e.op(Op.AND, mod_nonzero, signs_differ)
    mod = e.select(adjust, e.op(Op.ADD, mod, b), mod)
    div = e.select(adjust, e.op(Op.SUB, div, e.k(1.0)), div)
    mod = e.select(mod_nonzero, mod, e.op(Op.COPYSIGN, e.k(0.0), b))
    floor = e.op(Op.FLOOR, div)
    floor = e.select(e.op(Op.GT, e.op(Op.SUB, div, floor), e.k(0.5)),
                     e.op(Op.ADD, floor, e.k(1.0)), floor)
    quotient = e.op(Op.DIV, a, b)
    floor = e.select(e.op(Op.NE, div, e.k(0.0)), floor,
                     e.op(Op.COPYSIGN, e.k(0.0), quotient))
    return (e.select(b_zero, quotient, floor),
            e.select(b_zero, e.op(Op.REM, a, b), mod))


def _int_divmod(e: Emit, a: int, b: int) -> tuple[int, int, int, int]:
    """Integer floor division and remainder with NumPy's rules: x // 0 == 0, x % 0 == 0,
    MIN // -1 == MIN. Returns (floor quotient, remainder, truncated remainder, b == 0)."""
    zero, one = e.k(0), e.k(1)
    b_zero = e.op(Op.EQ, b, zero)
    unsafe = b_zero
    if e.dt.kind == "i":
        minimum = e.k(int(np.iinfo(e.dt).min))
        overflow = e.op(Op.AND, e.op(Op.EQ, a, minimum), e.op(Op.EQ, b, e.k(-1)))
        unsafe = e.op(Op.OR, b_zero, overflow)
    safe_b = e.select(unsafe, one, b)
    quotient, rem = e.op(Op.DIV, a, safe_b), e.op(Op.REM, a, safe_b)
    trunc_rem = rem
    if e.dt.kind == "i":
        signs_differ = e.op(Op.NE, e.op(Op.LT, rem, zero), e.op(Op.LT, b, zero))
        adjust = e.op(Op.AND, e.op(Op.NE, rem, zero), signs_differ)
        quotient = e.select(adjust, e.op(Op.SUB, quotient, one), quotient)
        rem = e.select(adjust, e.op(Op.ADD, rem, b), rem)
    return (e.select(b_zero, zero, quotient), e.select(b_zero, zero, rem),
            e.select(b_zero, zero, trunc_rem), b_zero)


def _floor_divide(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    e = Emit(b, out)
    return (_float_divmod if out.kind == "f" else _int_divmod)(e, *args)[0]


def _remainder(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    e = Emit(b, out)
    return (_float_divmod if out.kind == "f" else _int_divmod)(e, *args)[1]


def _fmod(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    if out.kind == "f":
        return b.emit(Op.REM, args, out)
    return _int_divmod(Emit(b, out), *args)[2]


def _power(b: Builder, args: tuple[int, ...], out: np.dtype,
           scalar_exponent: bool = False) -> int:
    e = Emit(b, out)
    base, exponent = args
    value = b.const_value(exponent)
    if out.kind == "f":
        # NumPy's power loop takes these shortcuts for a scalar exponent (one value for the
        # whole loop: a constant, or a runtime scalar such as a Python float argument).
        shortcuts = {2.0: lambda: e.op(Op.MUL, base, base), 0.5: lambda: e.op(Op.SQRT, base),
                     -1.0: lambda: e.op(Op.DIV, e.k(1.0), base)}
        if value is not None and float(value) in shortcuts:
            return shortcuts[float(value)]()
        if value is not None and np.isfinite(value) and float(value) != round(float(value)):
            return _guarded_power(e, base, exponent, float(value))
        result = e.op(Op.POW, base, exponent)
        if scalar_exponent and value is None:
            for constant, shortcut in shortcuts.items():
                result = e.select(e.op(Op.EQ, exponent, e.k(constant)), shortcut(), result)
        return result
    if value is None or int(value) < 0:
        raise InternalError("integer power needs a constant non-negative exponent (the "
                            "tracer refuses others)", Op.POWER, out)
    result, square, n = e.k(1), base, int(value)
    while n:
        if n & 1:
            result = e.op(Op.MUL, result, square)
        n >>= 1
        if n:
            square = e.op(Op.MUL, square, square)
    return result


def _guarded_power(e: Emit, base: int, exponent: int, c: float) -> int:
    """``x ** c`` for a constant, finite, non-integer ``c``, bit-identical to ``pow``.

    glibc's vector ``pow`` redoes a whole vector in scalar code when any lane's base is 0,
    negative, inf or NaN: on a clamped image (half zeros) that is 4-6x slower (measured:
    1M float32 with half zeros, 19.4 ms before, 4.1 ms after). So the call
    only sees positive finite bases, and the other lanes get C99's answers by select:
    ±0 -> 0 (c > 0) or inf, ±inf -> inf (c > 0) or 0, negative or NaN -> NaN."""
    inf = e.k(np.inf)
    ok = e.op(Op.AND, e.op(Op.GT, base, e.k(0.0)), e.op(Op.LT, base, inf), dtype=BOOL)
    power = e.op(Op.POW, e.select(ok, base, e.k(1.0)), exponent)
    at_zero, at_inf = (e.k(0.0), inf) if c > 0 else (inf, e.k(0.0))
    special = e.select(e.op(Op.EQ, base, e.k(0.0)), at_zero,
                       e.select(e.op(Op.EQ, e.op(Op.FABS, base), inf), at_inf, e.k(np.nan)))
    return e.select(ok, power, special)


def _reciprocal(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    """Float: 1/x. Integer: NumPy computes ``(T)(1.0 / x)``; for x == 0 that converts inf,
    which x86 turns into the minimum of 32/64-bit types and 0 for narrower or unsigned ones."""
    (x,) = args
    e = Emit(b, out)
    if out.kind == "f":
        return e.op(Op.DIV, e.k(1.0), x)
    zero_result = int(np.iinfo(out).min) if out.kind == "i" and out.itemsize >= 4 else 0
    result = e.select(e.op(Op.EQ, x, e.k(1)), e.k(1), e.k(0))
    if out.kind == "i":
        result = e.select(e.op(Op.EQ, x, e.k(-1)), e.k(-1), result)
    return e.select(e.op(Op.EQ, x, e.k(0)), e.k(zero_result), result)


def _absolute(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    (x,) = args
    e = Emit(b, out)
    if out.kind == "f":
        return e.op(Op.FABS, x)
    if out.kind == "i":
        return e.select(e.op(Op.LT, x, e.k(0)), e.op(Op.NEG, x), x)
    return x


def _sign(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    (x,) = args
    e = Emit(b, out)
    zero, one = e.k(0), e.k(1)
    if out.kind == "u":
        return e.select(e.op(Op.GT, x, zero), one, zero)
    inner = e.select(e.op(Op.EQ, x, zero), zero, x) if out.kind == "f" else zero
    inner = e.select(e.op(Op.LT, x, zero), e.k(-1), inner)
    return e.select(e.op(Op.GT, x, zero), one, inner)


def _extremum(pick_first: Op, nan_wins: bool = True) -> Rule:
    """np.maximum / np.minimum (``pick_first`` GT / LT), NumPy's ``(a > b || isnan(a)) ? a
    : b``: a NaN wins (the first operand's if both are NaN) and ties (0.0 vs -0.0) give the
    second operand; every NumPy loop (scalar or SIMD, any layout) agrees on this.

    ``nan_wins=False``: np.fmax / np.fmin, ``(a > b || isnan(b)) ? a : b``: the non-NaN
    operand wins, the first if both are NaN, and ties give the second operand, as NumPy's
    vector loop (``max_pd`` with a NaN mask) answers for every element of its full vectors,
    in every layout. IEEE 754 leaves ties unspecified, and NumPy's scalar remainder loop
    answers some of them with the first operand instead (which ones depends on the length,
    the layout and the machine's vector width), so no rule per element can match NumPy
    everywhere."""

    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        x, y = args
        e = Emit(b, out)
        if out.kind == "b":
            return e.op(Op.OR if pick_first is Op.GT else Op.AND, x, y)
        take_first = e.op(pick_first, x, y)
        if out.kind == "f":
            nan = x if nan_wins else y
            take_first = e.op(Op.OR, take_first, e.op(Op.NE, nan, nan))
        return e.select(take_first, x, y)

    return rule


_maximum, _minimum = _extremum(Op.GT), _extremum(Op.LT)


def _clip(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    """np.clip with array bounds: NumPy's ``minimum(maximum(x, lo), hi)`` loop (NaN in x
    wins, then in lo, then in hi; a tie with a bound gives the bound)."""
    x, low, high = args
    return _minimum(b, (_maximum(b, (x, low), out), high), out)


def _clip_constant_bounds(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    """np.clip with bounds that are one value for the whole loop (0-d bounds): NumPy's
    separate loop, ``isnan(lo) ? lo : isnan(hi) ? hi : m > hi ? hi : m`` with
    ``m = x < lo ? lo : x``, so a tie with a bound keeps x's zero and a NaN bound wins over
    a NaN x. Integers and bools cannot tell the two loops apart."""
    if out.kind != "f":
        return _clip(b, args, out)
    x, low, high = args
    e = Emit(b, out)
    m = e.select(e.op(Op.LT, x, low), low, x)
    m = e.select(e.op(Op.GT, m, high), high, m)
    m = e.select(e.op(Op.NE, high, high), high, m)
    return e.select(e.op(Op.NE, low, low), low, m)


def _to_bool(e: Emit, x: int) -> int:
    if e.b.dtype_of(x).kind == "b":
        return x
    return e.op(Op.NE, x, e.k(0, e.b.dtype_of(x)))


def _logical(op: Op) -> Rule:
    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        e = Emit(b, BOOL)
        return e.op(op, *(_to_bool(e, a) for a in args), dtype=BOOL)
    return rule


def _logical_not(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
    e = Emit(b, BOOL)
    return e.op(Op.NOT, _to_bool(e, args[0]), dtype=BOOL)


def _float_test(float_rule: Callable[[Emit, int], int], int_answer: bool) -> Rule:
    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        (x,) = args
        dtype = b.dtype_of(x)
        if dtype.kind != "f":
            return b.const(int_answer, BOOL)
        return float_rule(Emit(b, dtype), x)
    return rule


def _identity_unless_float(op: Op) -> Rule:
    """NumPy 2 keeps integer dtypes for floor/ceil/trunc, where they change nothing."""
    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        return b.emit(op, args, out) if out.kind == "f" else args[0]
    return rule


#: ``y OP x`` is ``x MIRRORED y``.
_MIRRORED = {Op.EQ: Op.EQ, Op.NE: Op.NE, Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE}
#: For a signed ``x`` and an unsigned ``y``: (how ``x < 0`` decides the answer, joined by
#: OR: true when x < 0; by AND: false when x < 0) — the rest compares ``x`` as unsigned.
_NEGATIVE_MAKES_TRUE = {Op.EQ: False, Op.NE: True, Op.LT: True, Op.LE: True, Op.GT: False,
                        Op.GE: False}


def _compare(op: Op) -> Rule:
    """Comparisons are exact for every operand pair, as NumPy 2's: its mixed int64/uint64
    loops (``qQ->?``, ``Qq->?``) compare the values, not float64 or wrapped bit patterns.
    A negative signed operand decides the answer; otherwise both compare as unsigned."""

    def rule(b: Builder, args: tuple[int, ...], out: np.dtype) -> int:
        x, y = args
        kinds = _kind(b, x) + _kind(b, y)
        if b.dtype_of(x) == b.dtype_of(y) or kinds not in ("iu", "ui"):
            return b.emit(op, args, BOOL)
        which = op
        if kinds == "ui":
            x, y, which = y, x, _MIRRORED[op]
        e = Emit(b, b.dtype_of(x))
        unsigned = e.op(which, b.emit(Op.CAST, (x,), b.dtype_of(y)), y)
        negative = e.op(Op.LT, x, e.k(0))
        if _NEGATIVE_MAKES_TRUE[which]:
            return e.op(Op.OR, negative, unsigned, dtype=BOOL)
        return e.op(Op.AND, e.op(Op.NOT, negative, dtype=BOOL), unsigned, dtype=BOOL)

    return rule


DECOMPOSITIONS: dict[Op, Rule] = {
    **{op: _compare(op) for op in _MIRRORED},
    Op.FLOOR: _identity_unless_float(Op.FLOOR),
    Op.CEIL: _identity_unless_float(Op.CEIL),
    Op.TRUNC: _identity_unless_float(Op.TRUNC),
    Op.ADD: _bool_alias(Op.OR, Op.ADD),
    Op.MUL: _bool_alias(Op.AND, Op.MUL),
    Op.FLOOR_DIVIDE: _floor_divide,
    Op.REMAINDER: _remainder,
    Op.FMOD: _fmod,
    Op.POWER: _power,
    Op.SQUARE: lambda b, a, out: _bool_alias(Op.AND, Op.MUL)(b, (a[0], a[0]), out),
    Op.RECIPROCAL: _reciprocal,
    Op.ABSOLUTE: _absolute,
    Op.SIGN: _sign,
    Op.POSITIVE: lambda b, a, out: a[0],
    Op.MAXIMUM: _maximum,
    Op.MINIMUM: _minimum,
    Op.FMAX: _extremum(Op.GT, nan_wins=False),
    Op.FMIN: _extremum(Op.LT, nan_wins=False),
    Op.CLIP: _clip,
    Op.LOGICAL_AND: _logical(Op.AND),
    Op.LOGICAL_OR: _logical(Op.OR),
    Op.LOGICAL_XOR: _logical(Op.XOR),
    Op.LOGICAL_NOT: _logical_not,
    Op.ISNAN: _float_test(lambda e, x: e.op(Op.NE, x, x), False),
    Op.ISINF: _float_test(lambda e, x: e.op(Op.EQ, e.op(Op.FABS, x), e.k(np.inf)), False),
    Op.ISFINITE: _float_test(lambda e, x: e.op(Op.LT, e.op(Op.FABS, x), e.k(np.inf)), True),
}

#: (op, attribute) -> the rule used instead when the graph node's attribute is true.
ATTR_VARIANTS: dict[tuple[Op, str], Rule] = {
    (Op.CLIP, "constant_bounds"): _clip_constant_bounds,
}


def decompose(b: Builder, op: Op, args: tuple[int, ...], out: np.dtype,
              attrs: dict[str, Any] | None = None) -> int:
    """Emit graph op ``op`` as primitives through ``b``; return the result's id."""
    if op is Op.FILL:
        return b.const((attrs or {})["value"], out)
    if op is Op.POWER:
        return _power(b, args, np.dtype(out), bool((attrs or {}).get("scalar_exponent")))
    rule = DECOMPOSITIONS.get(op)
    for (attr_op, key), variant in ATTR_VARIANTS.items():
        if attr_op is op and (attrs or {}).get(key):
            rule = variant
    if rule is not None:
        return rule(b, args, np.dtype(out))
    if not OP_TABLE[op].is_primitive:
        raise InternalError(f"no decomposition for {op.value}", op, out)
    return b.emit(op, args, np.dtype(out))
