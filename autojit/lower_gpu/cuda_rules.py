"""CUDA C translation of every scalar primitive: one rule table keyed by (op, dtype kind).

A rule receives the already rendered operand expressions and returns one C expression,
for example ``(Op.ADD, "i")`` on ``int8`` values ``v1, v2`` gives::

    (int8_t)((unsigned int)v1 + (unsigned int)v2)

The kind is ``ops.rule_kind``'s, as on the CPU: that of the operand for comparisons (their
result is always bool) and casts (the target kind then picks the conversion from
``ops.CONVERSIONS``), that of the result otherwise. ``cuda_rule_gaps()`` lists the
(primitive, kind) pairs the op table asks for and this table lacks; it must stay empty.

Reductions have their own rows, keyed by (reduce kind, dtype kind), rendered from the
combine specs of ``ops.COMBINES`` (NaN, tie and zero-sign rules): each combines two
accumulators ``a`` and ``b`` (for argmax/argmin, ``aj_vi`` (value, index) pairs), e.g.
``("max", "f")`` gives ``((a > b || a != a) ? a : b)``, and with its last-zero code
``aj_vi<double>{((a.v > b.v || a.v != a.v) ? a.v : b.v), (a.i > b.i ? a.i : b.i)}``;
``cuda_reduce_gaps()`` must stay empty too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.errors import InternalError
from autojit.ir.ops import (
    ARG_KINDS,
    CONVERSIONS,
    OP_TABLE,
    PRIMITIVES,
    REDUCE_KINDS,
    Combine,
    Conversion,
    NanRule,
    Op,
    exact_constant,
    zero_coded,
)

C_TYPES: dict[str, str] = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
    "uint64": "uint64_t", "float32": "float", "float64": "double",
}


def c_type(dtype: np.dtype) -> str:
    """Return the C type of a dtype: ``double``, ``int8_t``, ``bool``."""
    return C_TYPES[np.dtype(dtype).name]


@dataclass(frozen=True)
class Operands:
    """What a rule sees of one instruction.

    ``dtype`` is the result dtype, ``source`` the dtype of the first operand (the result
    dtype for leaves), ``args`` the operand expressions and ``attr`` the instruction's
    constant value, or for memory ops the rendered element (``in0[i]``) or parameter name.
    """

    dtype: np.dtype
    source: np.dtype
    args: tuple[str, ...]
    attr: Any = None

    @property
    def t(self) -> str:
        return c_type(self.dtype)


Rule = Callable[[Operands], str]


# -- literals --------------------------------------------------------------------------
def float_literal(value: float, dtype: np.dtype) -> str:
    """Return an exact C literal: ``0x1.8000000000000p+0``, ``-0x0.0p+0f``, and for inf
    and NaN a bit pattern, ``aj_f64_bits(0x7ff0000000000000ULL)``."""
    dtype = np.dtype(dtype)
    scalar = exact_constant(value, dtype)
    if np.isfinite(scalar):
        # Every float32 is a double, so the double's hex form is exact for both.
        return float(scalar).hex() + ("f" if dtype.itemsize == 4 else "")
    bits = int(scalar.view(f"u{dtype.itemsize}"))
    return f"aj_f{dtype.itemsize * 8}_bits({bits:#x}{'U' if dtype.itemsize == 4 else 'ULL'})"


def int_literal(value: int, dtype: np.dtype) -> str:
    """Return a literal of exactly ``dtype``: ``(int32_t)-7LL``, ``(uint64_t)255ULL``;
    the int64 minimum is spelled ``(int64_t)(-9223372036854775807LL - 1)`` because its
    magnitude is not a valid ``long long`` literal."""
    number = exact_constant(value, dtype)
    if number == -(2**63):
        return "(int64_t)(-9223372036854775807LL - 1)"
    suffix = "LL" if number < 0 else "ULL"
    return f"({c_type(dtype)}){number}{suffix}"


def _const(o: Operands) -> str:
    literal = {
        "b": lambda: "true" if exact_constant(o.attr, o.dtype) else "false",
        "f": lambda: float_literal(o.attr, o.dtype),
    }.get(o.dtype.kind, lambda: int_literal(o.attr, o.dtype))
    return literal()


# -- arithmetic -------------------------------------------------------------------------
def _wide_unsigned(dtype: np.dtype) -> str:
    # Small types promote to int, where e.g. uint16 * uint16 can overflow (undefined);
    # unsigned int / unsigned long long arithmetic wraps by definition.
    return "unsigned long long" if np.dtype(dtype).itemsize == 8 else "unsigned int"


def _wrap(symbol: str) -> Rule:
    def rule(o: Operands) -> str:
        w = _wide_unsigned(o.dtype)
        a, b = o.args
        return f"({o.t})(({w}){a} {symbol} ({w}){b})"
    return rule


def _wrap_neg(o: Operands) -> str:
    return f"({o.t})(-({_wide_unsigned(o.dtype)}){o.args[0]})"


def _infix(symbol: str) -> Rule:
    return lambda o: f"({o.args[0]} {symbol} {o.args[1]})"


def _infix_cast(symbol: str) -> Rule:
    """Integer ops whose operands promote to int: cast the result back to the type."""
    return lambda o: f"({o.t})({o.args[0]} {symbol} {o.args[1]})"


def _math(name: str) -> Rule:
    """CUDA / libm call: ``sin(v)`` for double, ``sinf(v)`` for float."""
    def rule(o: Operands) -> str:
        suffix = "f" if o.dtype.itemsize == 4 else ""
        return f"{name}{suffix}({', '.join(o.args)})"
    return rule


# -- casts ------------------------------------------------------------------------------
def _saturating_cast(o: Operands) -> str:
    """float -> int like LLVM's ``fptosi.sat``/``fptoui.sat``: NaN -> 0, clamp to range.
    The bounds are powers of two, exact in float and double."""
    bits = o.dtype.itemsize * 8
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if o.dtype.kind == "i" else (0, 2**bits)
    top = int_literal(high - 1, o.dtype)
    src = c_type(o.source)
    return (f"aj_sat_cast<{o.t}, {src}>({o.args[0]}, {float_literal(low, o.source)}, "
            f"{float_literal(high, o.source)}, {top})")


def _plain_cast(o: Operands) -> str:
    return f"({o.t})({o.args[0]})"


def _cast_to_bool(o: Operands) -> str:
    # NumPy: x != 0, so NaN -> true.
    return f"({o.args[0]} != 0)"


#: how each conversion of ``ops.CONVERSIONS`` is spelled in C
_CONVERSION_RULES: dict[Conversion, Rule] = {
    Conversion.SAME: _plain_cast,
    Conversion.WRAP: _plain_cast,        # C's conversion to an integer type is modular
    Conversion.ROUND: _plain_cast,       # round to nearest, ties to even
    Conversion.NONZERO: _cast_to_bool,
    Conversion.SATURATE: _saturating_cast,
}


def _cast(o: Operands) -> str:
    """CAST, keyed by the source kind (``ops.rule_kind``) as on the CPU; the target kind
    picks the conversion from the one table both renderers share."""
    return _CONVERSION_RULES[CONVERSIONS[o.source.kind, o.dtype.kind]](o)


# -- the table --------------------------------------------------------------------------
_COMPARE = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_BITWISE = {Op.AND: "&", Op.OR: "|", Op.XOR: "^"}
_WRAPPING = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*"}
_INT_DIVISION = {Op.DIV: "/", Op.REM: "%"}
_FLOAT_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
_MATH_OPS = tuple(op for op in PRIMITIVES if OP_TABLE[op].math_name)

_ROWS: list[tuple[Op, str, Rule]] = [
    (Op.CONST, "biuf", _const),
    (Op.LOAD, "biuf", lambda o: o.attr),
    (Op.LOAD_SCALAR, "biuf", lambda o: o.attr),
    (Op.INDEX, "i", lambda o: o.attr),          # the loop coordinate, e.g. ``i1``
    (Op.STORE, "biuf", lambda o: f"{o.attr} = {o.args[0]}"),
    (Op.SELECT, "biuf", lambda o: f"({o.args[0]} ? {o.args[1]} : {o.args[2]})"),
    (Op.CAST, "biuf", _cast),
    (Op.NEG, "iu", _wrap_neg),
    (Op.NEG, "f", lambda o: f"(-{o.args[0]})"),
    (Op.REM, "f", _math("fmod")),
    (Op.NOT, "iu", lambda o: f"({o.t})(~{o.args[0]})"),
    (Op.NOT, "b", lambda o: f"(!{o.args[0]})"),
    *[(op, "iu", _wrap(sym)) for op, sym in _WRAPPING.items()],
    *[(op, "iu", _infix_cast(sym)) for op, sym in _INT_DIVISION.items()],
    *[(op, "f", _infix(sym)) for op, sym in _FLOAT_INFIX.items()],
    *[(op, "biuf", _infix(sym)) for op, sym in _COMPARE.items()],
    *[(op, "biu", _infix_cast(sym)) for op, sym in _BITWISE.items()],
    *[(op, "f", _math(OP_TABLE[op].math_name)) for op in _MATH_OPS],
]

CUDA_RULES: dict[tuple[Op, str], Rule] = {
    (op, kind): rule for op, kinds, rule in _ROWS for kind in kinds
}


#: Functions the rules call; a kernel parameter of the same name would hide them.
CALLED_NAMES: frozenset[str] = frozenset(
    {name + suffix
     for name in ("fmod", "fmax", "fmin", *(OP_TABLE[op].math_name for op in _MATH_OPS))
     for suffix in ("", "f")} | {"aj_sat_cast", "aj_f32_bits", "aj_f64_bits", "signbit"})


def cuda_rule_gaps() -> list[tuple[Op, str]]:
    """Return the (primitive, kind) pairs the op table requires that have no CUDA rule."""
    return [(op, kind) for op in PRIMITIVES for kind in OP_TABLE[op].primitive_kinds
            if (op, kind) not in CUDA_RULES]


# -- reductions -------------------------------------------------------------------------
def _nan_first(symbol: str) -> Rule:
    """np.maximum / np.minimum: a NaN operand wins (``a`` first, so which NaN is moot)."""
    return lambda o: f"(({o.args[0]} {symbol} {o.args[1]} || {o.args[0]} != {o.args[0]})" \
                     f" ? {o.args[0]} : {o.args[1]})"


def _nan_skipping(symbol: str) -> Rule:
    """np.fmax / np.fmin reductions, as the CPU's accumulator (``lower_cpu/reduce.py``): keep
    ``a`` when it is strictly beyond ``b`` or ``b`` is NaN, so a tie of zeros takes ``b``
    on both renderers (CUDA's ``fmax`` leaves the sign of a zero tie to the hardware)."""
    return lambda o: f"(({o.args[0]} {symbol} {o.args[1]} || {o.args[1]} != {o.args[1]})" \
                     f" ? {o.args[0]} : {o.args[1]})"


def _pick(symbol: str) -> Rule:
    return lambda o: f"({o.args[1]} {symbol} {o.args[0]} ? {o.args[1]} : {o.args[0]})"


def _arg_best(symbol: str) -> Rule:
    """argmax (``>``) / argmin (``<``) of pairs: the extreme wins, ties and NaN against NaN
    go to the lower index, and a NaN beats any number (NumPy: the first NaN)."""
    def rule(o: Operands) -> str:
        a, b = o.args
        beats = f"({b}.v {symbol} {a}.v || ({b}.v == {a}.v && {b}.i < {a}.i))"
        if o.dtype.kind == "f":
            beats = (f"({a}.v != {a}.v ? ({b}.v != {b}.v && {b}.i < {a}.i)"
                     f" : ({b}.v != {b}.v || {beats}))")
        return f"({beats} ? {b} : {a})"
    return rule


_LOGICAL = {Op.OR: "||", Op.AND: "&&"}


def _zero_coded(extremum: Rule) -> Rule:
    """A float max/min carrying its last-zero code (``ops.zero_coded``): the value by the
    plain rule, the codes by max, so a zero result can take the row's last zero's sign."""
    def rule(o: Operands) -> str:
        a, b = o.args
        value = extremum(Operands(o.dtype, o.source, (f"{a}.v", f"{b}.v")))
        return f"aj_vi<{o.t}>{{{value}, ({a}.i > {b}.i ? {a}.i : {b}.i)}}"
    return rule


def _render_combine(spec: Combine, kind: str) -> Rule:
    """Return the C rule of one combine spec (``ops.COMBINES``) on one dtype kind, through
    this file's scalar tables."""
    if spec.op is not None:
        if kind == "b":
            return _infix(_LOGICAL[spec.op])
        return _wrap(_WRAPPING[spec.op]) if kind in "iu" else _infix(_FLOAT_INFIX[spec.op])
    symbol = _COMPARE[spec.beats]
    if spec.position:
        return _arg_best(symbol)
    if kind == "b":
        return _infix(_LOGICAL[spec.bool_op])
    if kind in "iu":
        return _pick(symbol)
    return (_nan_first if spec.nan is NanRule.WINS else _nan_skipping)(symbol)


#: Combine rules of reductions, keyed by (REDUCE_KINDS key, dtype kind of the reduced value).
REDUCE_RULES: dict[tuple[str, str], Rule] = {
    (name, kind): _render_combine(info.combine, kind)
    for name, info in REDUCE_KINDS.items() for kind in info.kinds
}

INT64_MAX_LITERAL = "9223372036854775807LL"


def accumulator_type(kind: str, dtype: np.dtype, coded: bool = False) -> str:
    """Return the C type of a reduction's accumulator: ``double``, ``aj_vi<float>`` (the
    arg kinds; ``coded``: a float max/min with its last-zero code)."""
    paired = kind in ARG_KINDS or (coded and zero_coded(kind, dtype))
    return f"aj_vi<{c_type(dtype)}>" if paired else c_type(dtype)


def reduce_start(kind: str, dtype: np.dtype, coded: bool = False) -> str:
    """Return the accumulator's start value (REDUCE_KINDS' ``start``) as a C expression;
    argmax/argmin start at index INT64_MAX, which every real element beats on ties, a
    last-zero code at 0 (no zero seen)."""
    dtype = np.dtype(dtype)
    operands = Operands(dtype, dtype, (), REDUCE_KINDS[kind].start(dtype))
    value = _const(operands)
    if kind in ARG_KINDS:
        return f"{accumulator_type(kind, dtype)}{{{value}, {INT64_MAX_LITERAL}}}"
    if coded and zero_coded(kind, dtype):
        return f"{accumulator_type(kind, dtype, coded)}{{{value}, 0LL}}"
    return value


def reduce_combine(kind: str, dtype: np.dtype, a: str, b: str, coded: bool = False) -> str:
    """Return the C expression combining accumulators ``a`` and ``b``."""
    dtype = np.dtype(dtype)
    rule = REDUCE_RULES.get((kind, dtype.kind))
    if rule is None:
        raise InternalError.no_rule("CUDA", f"reduce.{kind}", dtype)
    if coded and zero_coded(kind, dtype):
        rule = _zero_coded(rule)
    return rule(Operands(dtype, dtype, (a, b)))


def zero_code(value: str, position: str) -> str:
    """Return the last-zero code of element ``value`` at row ``position`` (``ops.zero_coded``):
    ``2p + 1`` for -0, ``2p + 2`` for +0, 0 otherwise."""
    return f"({value} == 0 ? 2 * {position} + (signbit({value}) ? 1 : 2) : 0LL)"


def zero_coded_result(acc: str, dtype: np.dtype) -> str:
    """Return the value of a coded accumulator: a zero takes the sign of the last zero."""
    negative, positive = float_literal(-0.0, dtype), float_literal(0.0, dtype)
    return f"({acc}.v == 0 ? (({acc}.i & 1) ? {negative} : {positive}) : {acc}.v)"


def cuda_reduce_gaps() -> list[tuple[str, str]]:
    """Return the (reduce kind, dtype kind) pairs REDUCE_KINDS allows that have no rule."""
    return [(kind, dtype_kind) for kind, info in REDUCE_KINDS.items()
            for dtype_kind in info.kinds if (kind, dtype_kind) not in REDUCE_RULES]
