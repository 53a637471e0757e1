"""The LLVM rule table: one rule per (primitive, dtype kind), nothing else decides codegen.

A rule receives the body context, the instruction and its operand values and returns the
result value (``None`` for a store). The kind that selects a rule is ``ops.rule_kind``'s,
as on the GPU: the operand's for comparisons and casts (the source; the target kind then
picks the conversion from ``ops.CONVERSIONS``), the result's otherwise. Samples of what rules emit::

    add (i):      %v = add i32 %a, %b                     ; wraps, as NumPy does
    lt (f):       %v = fcmp olt double %a, %b             ; ordered: NaN -> false
    ne (f):       %v = fcmp une double %a, %b             ; unordered: NaN -> true
    cast (f->i):  %v = call i32 @llvm.fptosi.sat.i32.f64(double %a)
    sin (f):      %v = call double @sin(double %a) "vector-function-abi-variant"="…"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import llvmlite.ir as ir
import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import CONVERSIONS, OP_TABLE, PRIMITIVES, Conversion, Op, exact_constant
from autojit.lower_cpu.mathlib import MathCalls

KINDS = "biuf"
I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)


def llvm_type(dtype: np.dtype) -> ir.Type:
    """Return the register type of ``dtype``: ``i1`` for bool, ``i32``, ``double``, …"""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return I1
    if dtype.kind == "f":
        return {4: ir.FloatType(), 8: ir.DoubleType()}[dtype.itemsize]
    return ir.IntType(8 * dtype.itemsize)


def memory_type(dtype: np.dtype) -> ir.Type:
    """Return the in-memory type of ``dtype``: NumPy stores a bool as one byte (``i8``)."""
    return I8 if np.dtype(dtype).kind == "b" else llvm_type(dtype)


@dataclass
class BodyContext:
    """What rules see while emitting one iteration of the loop body."""

    builder: ir.IRBuilder
    math: MathCalls
    kernel: Kernel
    pointers: list[ir.Value]            # element pointer of each buffer at this iteration
    scalars: list[ir.Value]             # scalar parameters, loaded once before the loops
    dtypes: dict[int, np.dtype] = field(default_factory=dict)

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """Return the declaration of ``name`` (e.g. ``llvm.floor.f64``), declaring it once."""
        module = self.builder.module
        existing = module.globals.get(name)
        return existing or ir.Function(module, ir.FunctionType(ret, args), name)


Rule = Callable[[BodyContext, Instr, list[ir.Value]], ir.Value | None]


def _suffix(ty: ir.Type) -> str:
    return {ir.FloatType: "f32", ir.DoubleType: "f64"}.get(type(ty)) or f"i{ty.width}"


def _call_intrinsic(base: str) -> Rule:
    """``%v = call double @llvm.floor.f64(double %a)``"""
    def rule(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
        ty = a[0].type
        fn = c.intrinsic(f"llvm.{base}.{_suffix(ty)}", ty, [v.type for v in a])
        return c.builder.call(fn, a)
    return rule


def _method(name: str, flags: tuple[str, ...] = ()) -> Rule:
    def rule(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
        method = getattr(c.builder, name)
        return method(*a, flags=flags) if flags else method(*a)
    return rule


def _compare(cmp: str, symbol: str) -> Rule:
    """``%v = icmp slt i32 %a, %b`` (cmp names the builder method: icmp_signed, …)."""
    return lambda c, ins, a: getattr(c.builder, cmp)(symbol, *a)


def _math_call(op: Op) -> Rule:
    name = OP_TABLE[op].math_name
    return lambda c, ins, a: c.math.call(c.builder, name, a)


# -- memory and leaves ---------------------------------------------------------------------
def _load(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
    """``%v = load double, ptr %p, align 8``; bool: ``load i8`` then ``icmp ne i8 %v, 0``."""
    value = c.builder.load(c.pointers[ins.attr], typ=memory_type(ins.dtype),
                           align=ins.dtype.itemsize)
    return c.builder.icmp_unsigned("!=", value, ir.Constant(I8, 0)) \
        if ins.dtype.kind == "b" else value


def _store(c: BodyContext, ins: Instr, a: list[ir.Value]) -> None:
    """``store double %v, ptr %p, align 8``; bool is widened with ``zext i1 … to i8``."""
    dtype = c.kernel.buffers[ins.attr].dtype
    value = c.builder.zext(a[0], I8) if dtype.kind == "b" else a[0]
    c.builder.store(value, c.pointers[ins.attr], align=dtype.itemsize)


def constant(dtype: np.dtype, value: Any) -> ir.Constant:
    """Return an exact LLVM constant: ``double 0x7FF0000000000000`` for inf, ``i64 -1`` for
    uint64's maximum (LLVM integer constants are written in two's complement)."""
    dtype = np.dtype(dtype)
    ty, exact = llvm_type(dtype), exact_constant(value, dtype)
    if dtype.kind in "fb":
        return ir.Constant(ty, float(exact) if dtype.kind == "f" else int(exact))
    bits = 8 * dtype.itemsize   # an unsigned value past the signed range, as LLVM spells it
    return ir.Constant(ty, exact - (1 << bits) if exact >> (bits - 1) == 1 else exact)


def _const(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
    return constant(ins.dtype, ins.attr)


def _load_scalar(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
    return c.scalars[ins.attr]


# -- casts: NumPy's astype, without poison -------------------------------------------------
CastRule = Callable[[ir.IRBuilder, ir.Value, ir.Type, BodyContext], ir.Value]


def _resize(wider: str) -> CastRule:
    """Integer resize: ``sext``/``zext`` (by the source's signedness) when widening,
    ``trunc`` when narrowing, nothing when the width is equal."""
    def rule(b: ir.IRBuilder, v: ir.Value, to: ir.Type, c: BodyContext) -> ir.Value:
        if to.width == v.type.width:
            return v
        return getattr(b, wider)(v, to) if to.width > v.type.width else b.trunc(v, to)
    return rule


def _float_resize(b: ir.IRBuilder, v: ir.Value, to: ir.Type, c: BodyContext) -> ir.Value:
    if type(to) is type(v.type):
        return v
    return b.fpext(v, to) if isinstance(to, ir.DoubleType) else b.fptrunc(v, to)


def _saturating(name: str) -> CastRule:
    """``call i32 @llvm.fptosi.sat.i32.f64(double %v)``: NaN -> 0, out of range saturates."""
    def rule(b: ir.IRBuilder, v: ir.Value, to: ir.Type, c: BodyContext) -> ir.Value:
        fn = c.intrinsic(f"llvm.{name}.sat.{_suffix(to)}.{_suffix(v.type)}", to, [v.type])
        return b.call(fn, [v])
    return rule


def _int_is_nonzero(b: ir.IRBuilder, v: ir.Value, to: ir.Type, c: BodyContext) -> ir.Value:
    return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))


def _float_is_nonzero(b: ir.IRBuilder, v: ir.Value, to: ir.Type, c: BodyContext) -> ir.Value:
    return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))   # NaN -> True, as NumPy


def _builder_cast(name: str) -> CastRule:
    return lambda b, v, to, c: getattr(b, name)(v, to)


_identity: CastRule = lambda b, v, to, c: v

#: how each conversion of ``ops.CONVERSIONS`` is emitted, given (source kind, target kind)
_CONVERSION_RULES: dict[Conversion, Callable[[str, str], CastRule]] = {
    Conversion.SAME: lambda s, t: _identity,
    Conversion.WRAP: lambda s, t: _resize("sext" if s == "i" else "zext"),
    Conversion.ROUND: lambda s, t: (_float_resize if s == "f" else
                                    _builder_cast("sitofp" if s == "i" else "uitofp")),
    Conversion.NONZERO: lambda s, t: _float_is_nonzero if s == "f" else _int_is_nonzero,
    Conversion.SATURATE: lambda s, t: _saturating("fptosi" if t == "i" else "fptoui"),
}

#: (source kind, target kind) -> cast rule, from the conversions both renderers share.
CAST_RULES: dict[tuple[str, str], CastRule] = {
    pair: _CONVERSION_RULES[conversion](*pair) for pair, conversion in CONVERSIONS.items()
}


def _cast(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
    source = c.dtypes[ins.args[0]].kind
    return CAST_RULES[source, ins.dtype.kind](c.builder, a[0], llvm_type(ins.dtype), c)


# -- the table ------------------------------------------------------------------------------
#: arithmetic: op -> builder method for (signed int, unsigned int, float) operands.
_ARITH: dict[Op, tuple[str, str, str]] = {
    Op.ADD: ("add", "add", "fadd"), Op.SUB: ("sub", "sub", "fsub"),
    Op.MUL: ("mul", "mul", "fmul"), Op.DIV: ("sdiv", "udiv", "fdiv"),
    Op.REM: ("srem", "urem", "frem"), Op.NEG: ("neg", "neg", "fneg"),
}
_COMPARE_SYMBOLS = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_COMPARE_METHODS = {"b": "icmp_unsigned", "i": "icmp_signed", "u": "icmp_unsigned",
                    "f": "fcmp_ordered"}
_BITWISE = {Op.AND: "and_", Op.OR: "or_", Op.XOR: "xor", Op.NOT: "not_"}
# roundeven, not rint: the same result under the default rounding mode, and independent of it.
_FLOAT_INTRINSICS = {Op.FABS: "fabs", Op.COPYSIGN: "copysign", Op.FLOOR: "floor",
                     Op.CEIL: "ceil", Op.TRUNC: "trunc", Op.RINT: "roundeven", Op.SQRT: "sqrt"}
_LIBM_OPS = [op for op in PRIMITIVES if OP_TABLE[op].math_name and op not in _FLOAT_INTRINSICS]


def _compare_rule(op: Op, kind: str) -> Rule:
    method = "fcmp_unordered" if (op, kind) == (Op.NE, "f") else _COMPARE_METHODS[kind]
    return _compare(method, _COMPARE_SYMBOLS[op])


def _build_table() -> dict[tuple[Op, str], Rule]:
    table: dict[tuple[Op, str], Rule] = {}
    for kind in KINDS:
        table[Op.LOAD, kind], table[Op.STORE, kind] = _load, _store
        table[Op.CONST, kind], table[Op.LOAD_SCALAR, kind] = _const, _load_scalar
        table[Op.SELECT, kind] = _method("select")
        table[Op.CAST, kind] = _cast
        table.update({(op, kind): _compare_rule(op, kind) for op in _COMPARE_SYMBOLS})
    for op, names in _ARITH.items():
        table.update({(op, kind): _method(name) for kind, name in zip("iuf", names, strict=True)})
    table.update({(op, k): _method(name) for op, name in _BITWISE.items() for k in "biu"})
    table.update({(op, "f"): _call_intrinsic(name) for op, name in _FLOAT_INTRINSICS.items()})
    table.update({(op, "f"): _math_call(op) for op in _LIBM_OPS})
    return table


LLVM_RULES: dict[tuple[Op, str], Rule] = _build_table()
#: the scalar table's parts the reduce and scan combines are rendered through
ARITH_METHODS, COMPARE_SYMBOLS, BITWISE_METHODS = _ARITH, _COMPARE_SYMBOLS, _BITWISE


def _handled_by_the_loop_nest(c: BodyContext, ins: Instr, a: list[ir.Value]) -> ir.Value:
    raise InternalError("INDEX is emitted by the loop nest, which knows the loop indices",
                        Op.INDEX, ins.dtype)


LLVM_RULES[Op.INDEX, "i"] = _handled_by_the_loop_nest


def llvm_rule_gaps() -> list[tuple[Op, str]]:
    """Return every (primitive, kind) the op table requires that has no LLVM rule; a cast
    counts as missing for a source kind lacking a rule to any target kind."""
    gaps = [(op, kind) for op in PRIMITIVES for kind in OP_TABLE[op].primitive_kinds
            if (op, kind) not in LLVM_RULES]
    gaps += [(Op.CAST, s) for s in OP_TABLE[Op.CAST].primitive_kinds
             if any((s, t) not in CAST_RULES for t in KINDS) and (Op.CAST, s) not in gaps]
    return gaps

