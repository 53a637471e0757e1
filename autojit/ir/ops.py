"""The op table: every operation autojit knows, in one place.

Two levels share one enum:

* **graph ops** are what the tracer records, one per NumPy ufunc or function, with NumPy's
  own callable as the reference (``numpy_ref``);
* **primitives** are the scalar operations that kernels contain and that each renderer
  (LLVM and CUDA C) translates through its own rule table.

A graph op that is not a primitive carries a ``decompose`` rule (see ``decompose.py``) that
rewrites it into primitives. Adding an op is one row here, plus a rule in each renderer
(LLVM, CUDA) if it is a new primitive; ``tests/unit/test_op_table.py`` fails when a rule is
missing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class OpGroup(enum.Enum):
    LEAF = "leaf"            # arguments and constants
    MEMORY = "memory"        # kernel loads and stores
    UNARY = "unary"
    BINARY = "binary"
    TERNARY = "ternary"
    COMPARE = "compare"      # elementwise, result bool
    CAST = "cast"
    REDUCE = "reduce"        # graph: reduce over axes; kernel: accumulate over the row
    SCAN = "scan"            # graph: running reduction along axes; kernel: along the row
    MOVEMENT = "movement"    # views: the same memory seen with other strides
    LIBRARY = "library"      # computed by a library routine (BLAS / cuBLAS), not a kernel
    CONTROL = "control"      # a loop region: its body is a graph of its own (``ir.region``)


class Op(enum.Enum):
    # leaves (graph) and memory (kernel)
    ARG = "arg"
    CONST = "const"
    LOAD = "load"
    LOAD_SCALAR = "load_scalar"
    STORE = "store"
    SIZE = "size"            # a product of size symbols, known at run time (element counts)
    FILL = "fill"            # an array of one value (np.zeros, np.full_like, ...)
    VIEW = "view"            # a view of an argument (slicing, transposes, reshapes)
    MATMUL = "matmul"        # np.matmul semantics, run by BLAS (CPU) or cuBLAS (GPU)
    INDEX = "index"          # graph: positions along one axis (arange); kernel: a loop index
    WRITE = "write"          # target[...] = value into an argument; the argument's next version
    REGION = "region"        # a loop traced once (``ir.region.Region``); read via CARRY
    CARRY = "carry"          # one value a REGION leaves (its ``index``-th carried value)
    REDUCE = "reduce"
    SCAN = "scan"            # cumsum / cumprod: the running value at each row position
    # kernel only: a recurrence along the row (``ir.kernel``, "Recurrences")
    RECUR = "recur"          # the value carried into this row iteration (args: its start)
    RECUR_SET = "recur_set"  # args (recur, next): the value the next iteration carries
    # arithmetic
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    REM = "rem"
    NEG = "neg"
    FLOOR_DIVIDE = "floor_divide"
    REMAINDER = "remainder"
    FMOD = "fmod"
    POWER = "power"
    SQUARE = "square"
    RECIPROCAL = "reciprocal"
    ABSOLUTE = "absolute"
    SIGN = "sign"
    POSITIVE = "positive"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    FMAX = "fmax"
    FMIN = "fmin"
    CLIP = "clip"
    # comparisons and logic
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"
    OR = "or"
    XOR = "xor"
    NOT = "not"
    LOGICAL_AND = "logical_and"
    LOGICAL_OR = "logical_or"
    LOGICAL_XOR = "logical_xor"
    LOGICAL_NOT = "logical_not"
    ISNAN = "isnan"
    ISINF = "isinf"
    ISFINITE = "isfinite"
    SELECT = "select"
    CAST = "cast"
    # float primitives
    FABS = "fabs"
    COPYSIGN = "copysign"
    FLOOR = "floor"
    CEIL = "ceil"
    TRUNC = "trunc"
    RINT = "rint"
    SQRT = "sqrt"
    CBRT = "cbrt"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    TANH = "tanh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    EXP = "exp"
    EXP2 = "exp2"
    EXPM1 = "expm1"
    LOG = "log"
    LOG2 = "log2"
    LOG10 = "log10"
    LOG1P = "log1p"
    ATAN2 = "atan2"
    HYPOT = "hypot"
    POW = "pow"


@dataclass(frozen=True)
class OpInfo:
    """One row of the op table."""

    group: OpGroup
    arity: int
    numpy_ref: Callable | None = None   # NumPy's definition (graph level)
    primitive_kinds: str = ""           # dtype kinds a renderer must handle; "" = not a primitive
    bool_result: bool = False           # primitive returns bool whatever its operand dtype
    math_name: str = ""                 # libm / CUDA math function name, for float calls
    #: weighted cost of one scalar instruction, in adds: what both the CPU's thread
    #: splitter (``lower_cpu/threads``) and the router's cost model weigh a kernel by
    cost: float = 1.0

    @property
    def is_primitive(self) -> bool:
        return bool(self.primitive_kinds)


_FLOAT = "f"
_INT = "iu"
_ALL = "biuf"
_NUMERIC = "iuf"
_BITS = "biu"


#: costs in adds: a transcendental costs what a vectorised libm call costs relative to an
#: add (~16); a divide or square root ~4; leaves and memory cost nothing (the cost model
#: counts bytes separately, the thread splitter adds its own memory term)
TRANSCENDENTAL_COST = 16.0
_SLOW_COST = 4.0
_FREE = 0.0


def _u(ref: Callable | None, kinds: str = "", math: str = "", cost: float | None = None
       ) -> OpInfo:
    return OpInfo(OpGroup.UNARY, 1, ref, kinds, math_name=math,
                  cost=_math_cost(math) if cost is None else cost)


def _b(ref: Callable | None, kinds: str = "", math: str = "", cost: float | None = None
       ) -> OpInfo:
    return OpInfo(OpGroup.BINARY, 2, ref, kinds, math_name=math,
                  cost=_math_cost(math) if cost is None else cost)


def _math_cost(math: str) -> float:
    return TRANSCENDENTAL_COST if math else 1.0


def _cmp(ref: Callable, kinds: str = _ALL) -> OpInfo:
    return OpInfo(OpGroup.COMPARE, 2, ref, kinds, bool_result=True)


def _math1(ref: Callable, name: str, cost: float | None = None) -> OpInfo:
    return _u(ref, _FLOAT, name, cost)


OP_TABLE: dict[Op, OpInfo] = {
    Op.ARG: OpInfo(OpGroup.LEAF, 0, cost=_FREE),
    Op.CONST: OpInfo(OpGroup.LEAF, 0, primitive_kinds=_ALL, cost=_FREE),
    Op.LOAD: OpInfo(OpGroup.MEMORY, 0, primitive_kinds=_ALL, cost=_FREE),
    Op.LOAD_SCALAR: OpInfo(OpGroup.MEMORY, 0, primitive_kinds=_ALL, cost=_FREE),
    Op.STORE: OpInfo(OpGroup.MEMORY, 1, primitive_kinds=_ALL, cost=_FREE),
    Op.SIZE: OpInfo(OpGroup.LEAF, 0, cost=_FREE),
    Op.FILL: OpInfo(OpGroup.LEAF, 0, cost=_FREE),
    Op.VIEW: OpInfo(OpGroup.MOVEMENT, 1),
    Op.MATMUL: OpInfo(OpGroup.LIBRARY, 2, np.matmul),
    Op.INDEX: OpInfo(OpGroup.LEAF, 0, primitive_kinds="i", cost=_FREE),
    Op.WRITE: OpInfo(OpGroup.MEMORY, 2, cost=_FREE),
    Op.REGION: OpInfo(OpGroup.CONTROL, 0, cost=_FREE),   # any number of operands
    Op.CARRY: OpInfo(OpGroup.CONTROL, 1, cost=_FREE),
    Op.REDUCE: OpInfo(OpGroup.REDUCE, 1),   # renderers handle it structurally, per REDUCE_KINDS
    Op.SCAN: OpInfo(OpGroup.SCAN, 1),       # likewise, per SCAN_KINDS
    Op.RECUR: OpInfo(OpGroup.SCAN, 1, cost=_FREE),       # structural, like SCAN
    Op.RECUR_SET: OpInfo(OpGroup.MEMORY, 2, cost=_FREE),
    # arithmetic; DIV and REM on integers are C's truncating forms and only ever see a
    # non-zero divisor that is not -1 against the minimum (decompositions guarantee it).
    Op.ADD: _b(np.add, _NUMERIC),
    Op.SUB: _b(np.subtract, _NUMERIC),
    Op.MUL: _b(np.multiply, _NUMERIC),
    Op.DIV: _b(np.true_divide, _NUMERIC, cost=_SLOW_COST),
    Op.REM: _b(np.fmod, _NUMERIC, cost=_SLOW_COST),
    Op.NEG: _u(np.negative, _NUMERIC),
    Op.FLOOR_DIVIDE: _b(np.floor_divide),
    Op.REMAINDER: _b(np.remainder),
    Op.FMOD: _b(np.fmod),
    Op.POWER: _b(np.power),
    Op.SQUARE: _u(np.square),
    Op.RECIPROCAL: _u(np.reciprocal),
    Op.ABSOLUTE: _u(np.absolute),
    Op.SIGN: _u(np.sign),
    Op.POSITIVE: _u(np.positive),
    Op.MAXIMUM: _b(np.maximum),
    Op.MINIMUM: _b(np.minimum),
    Op.FMAX: _b(np.fmax),
    Op.FMIN: _b(np.fmin),
    Op.CLIP: OpInfo(OpGroup.TERNARY, 3, np.clip),
    # comparisons (float: ordered, except NE which is true for NaN) and logic
    Op.EQ: _cmp(np.equal),
    Op.NE: _cmp(np.not_equal),
    Op.LT: _cmp(np.less),
    Op.LE: _cmp(np.less_equal),
    Op.GT: _cmp(np.greater),
    Op.GE: _cmp(np.greater_equal),
    Op.AND: _b(np.bitwise_and, _BITS),
    Op.OR: _b(np.bitwise_or, _BITS),
    Op.XOR: _b(np.bitwise_xor, _BITS),
    Op.NOT: _u(np.invert, _BITS),
    Op.LOGICAL_AND: _b(np.logical_and),
    Op.LOGICAL_OR: _b(np.logical_or),
    Op.LOGICAL_XOR: _b(np.logical_xor),
    Op.LOGICAL_NOT: _u(np.logical_not),
    Op.ISNAN: _u(np.isnan),
    Op.ISINF: _u(np.isinf),
    Op.ISFINITE: _u(np.isfinite),
    Op.SELECT: OpInfo(OpGroup.TERNARY, 3, np.where, _ALL),
    Op.CAST: OpInfo(OpGroup.CAST, 1, None, _ALL),
    # float primitives: rounding and sign
    Op.FABS: _u(np.fabs, _FLOAT, "fabs", cost=1.0),
    Op.COPYSIGN: _b(np.copysign, _FLOAT, "copysign", cost=1.0),
    Op.FLOOR: _math1(np.floor, "floor", 1.0),
    Op.CEIL: _math1(np.ceil, "ceil", 1.0),
    Op.TRUNC: _math1(np.trunc, "trunc", 1.0),
    Op.RINT: _math1(np.rint, "rint", 1.0),
    Op.SQRT: _math1(np.sqrt, "sqrt", _SLOW_COST),
    Op.CBRT: _math1(np.cbrt, "cbrt", _SLOW_COST),
    # transcendental functions (libm on the CPU, CUDA's math library on the GPU)
    Op.SIN: _math1(np.sin, "sin"),
    Op.COS: _math1(np.cos, "cos"),
    Op.TAN: _math1(np.tan, "tan"),
    Op.ASIN: _math1(np.arcsin, "asin"),
    Op.ACOS: _math1(np.arccos, "acos"),
    Op.ATAN: _math1(np.arctan, "atan"),
    Op.SINH: _math1(np.sinh, "sinh"),
    Op.COSH: _math1(np.cosh, "cosh"),
    Op.TANH: _math1(np.tanh, "tanh"),
    Op.ASINH: _math1(np.arcsinh, "asinh"),
    Op.ACOSH: _math1(np.arccosh, "acosh"),
    Op.ATANH: _math1(np.arctanh, "atanh"),
    Op.EXP: _math1(np.exp, "exp"),
    Op.EXP2: _math1(np.exp2, "exp2"),
    Op.EXPM1: _math1(np.expm1, "expm1"),
    Op.LOG: _math1(np.log, "log"),
    Op.LOG2: _math1(np.log2, "log2"),
    Op.LOG10: _math1(np.log10, "log10"),
    Op.LOG1P: _math1(np.log1p, "log1p"),
    Op.ATAN2: _b(np.arctan2, _FLOAT, "atan2"),
    Op.HYPOT: _b(np.hypot, _FLOAT, "hypot"),
    Op.POW: _b(np.power, _FLOAT, "pow"),
}


class Reduction(enum.StrEnum):
    """A reduction a kernel performs (``Instr.attr`` of a REDUCE); the values are the
    strings kernels, printed IR and cache keys have always carried."""

    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"
    FMAX = "fmax"
    FMIN = "fmin"
    OR = "or"
    AND = "and"
    ARGMAX = "argmax"
    ARGMIN = "argmin"


#: reductions whose result is the int64 position of the extreme, not a value
ARG_KINDS: frozenset[Reduction] = frozenset({Reduction.ARGMAX, Reduction.ARGMIN})
#: reductions whose result is one of the values reduced (NaN and tie rules matter)
EXTREMA: frozenset[Reduction] = frozenset({Reduction.MAX, Reduction.MIN, Reduction.FMAX,
                                           Reduction.FMIN})
#: reductions without an identity: NumPy raises for them over an empty axis
WITHOUT_IDENTITY: frozenset[Reduction] = EXTREMA | ARG_KINDS


class NanRule(enum.StrEnum):
    """What a float combine does with a NaN operand."""

    ARITHMETIC = "arithmetic"  # the IEEE operation's own: NaN in, NaN out (sums, products)
    WINS = "wins"              # np.maximum: a NaN wins, the accumulator's when both are
    SKIPPED = "skipped"        # np.fmax: the other operand wins, the accumulator if both NaN
    FIRST = "first"            # argmax: the first NaN's position wins over any number


class ZeroSign(enum.StrEnum):
    """Which zero a float combine gives when the result is a zero."""

    ARITHMETIC = "arithmetic"  # the IEEE operation's own: -0 + -0 is -0, 0 * -1 is -0
    LAST_ZERO = "last_zero"    # the sign of the row's last zero (np.maximum.reduce's loop)
    SECOND = "second"          # a tie of zeros gives the element combined in (np.fmax: the
    #                            tie is left open by IEEE 754; NumPy answers by layout)
    NONE = "none"              # the result is a position or a bool


@dataclass(frozen=True)
class Combine:
    """How a reduction or scan combines its accumulator ``a`` with an element ``b``: the
    one statement of NumPy's NaN, tie and zero-sign rules both renderers render through
    their own scalar tables (``lower_cpu/reduce.py``, ``lower_gpu/cuda_rules.py``).

    ``op``: arithmetic and logical combines, ``a op b`` (ADD/MUL wrap on integers);
    ``beats``: extrema, the comparison (GT: max, LT: min) under which ``a`` is kept over
    ``b`` (arg kinds: under which ``b``'s position replaces ``a``'s); ``bool_op``: the
    combine of bools for an extremum (OR: max, AND: min). ``indexed``: the accumulator
    carries a row position (argmax/argmin: the answer; float max/min: the last-zero code).
    """

    nan: NanRule
    zero_sign: ZeroSign
    op: Op | None = None
    beats: Op | None = None
    bool_op: Op | None = None
    position: bool = False     # the result is the int64 position of the extreme

    def indexed(self, dtype_kind: str) -> bool:
        """Whether the accumulator of this dtype kind carries a row position besides its
        value: the answer of argmax/argmin, the last-zero code of a float max/min."""
        return self.position or (self.zero_sign is ZeroSign.LAST_ZERO and dtype_kind == "f")


_SUM = Combine(NanRule.ARITHMETIC, ZeroSign.ARITHMETIC, op=Op.ADD)
_PRODUCT = Combine(NanRule.ARITHMETIC, ZeroSign.ARITHMETIC, op=Op.MUL)
_LOGICAL_OR = Combine(NanRule.ARITHMETIC, ZeroSign.NONE, op=Op.OR)
_LOGICAL_AND = Combine(NanRule.ARITHMETIC, ZeroSign.NONE, op=Op.AND)

#: Per reduction: NumPy's rule. MAX/MIN: ``(a > b || isnan(a)) ? a : b`` per element
#: (``decompose._extremum``), and a zero result takes the sign of the row's last zero,
#: which any grouping of the row reproduces with a position code (``lower_cpu/reduce.py``).
#: FMAX/FMIN: ``(a > b || isnan(b)) ? a : b``, ties to the element combined in (the
#: documented tie rule of ``decompose._extremum``). ARGMAX/ARGMIN: the first extreme, the
#: first NaN for floats.
COMBINES: dict[Reduction, Combine] = {
    Reduction.ADD: _SUM,
    Reduction.MUL: _PRODUCT,
    Reduction.MAX: Combine(NanRule.WINS, ZeroSign.LAST_ZERO, beats=Op.GT, bool_op=Op.OR),
    Reduction.MIN: Combine(NanRule.WINS, ZeroSign.LAST_ZERO, beats=Op.LT, bool_op=Op.AND),
    Reduction.FMAX: Combine(NanRule.SKIPPED, ZeroSign.SECOND, beats=Op.GT, bool_op=Op.OR),
    Reduction.FMIN: Combine(NanRule.SKIPPED, ZeroSign.SECOND, beats=Op.LT, bool_op=Op.AND),
    Reduction.OR: _LOGICAL_OR,
    Reduction.AND: _LOGICAL_AND,
    Reduction.ARGMAX: Combine(NanRule.FIRST, ZeroSign.NONE, beats=Op.GT, position=True),
    Reduction.ARGMIN: Combine(NanRule.FIRST, ZeroSign.NONE, beats=Op.LT, position=True),
}


@dataclass(frozen=True)
class ReduceKind:
    """One way to combine a row: NumPy's reducer, the dtype kinds it takes, its start value
    and its combine (``COMBINES``: NaN, tie and zero-sign rules).

    ``start`` maps a dtype to the accumulator's initial value (for argmax/argmin the value
    half; the index starts where the renderer's tie rule needs it).
    """

    numpy_ref: Callable
    kinds: str
    start: Callable[[np.dtype], Any]
    combine: Combine


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else (False if dtype.kind == "b" else np.iinfo(dtype).min)


def _highest(dtype: np.dtype) -> Any:
    return np.inf if dtype.kind == "f" else (True if dtype.kind == "b" else np.iinfo(dtype).max)


def _reduce(name: Reduction, ref: Callable, kinds: str,
            start: Callable[[np.dtype], Any]) -> ReduceKind:
    return ReduceKind(ref, kinds, start, COMBINES[name])


REDUCE_KINDS: dict[Reduction, ReduceKind] = {
    Reduction.ADD: _reduce(Reduction.ADD, np.add.reduce, _NUMERIC, lambda d: 0),
    Reduction.MUL: _reduce(Reduction.MUL, np.multiply.reduce, _NUMERIC, lambda d: 1),
    Reduction.MAX: _reduce(Reduction.MAX, np.maximum.reduce, _NUMERIC, _lowest),
    Reduction.MIN: _reduce(Reduction.MIN, np.minimum.reduce, _NUMERIC, _highest),
    Reduction.FMAX: _reduce(Reduction.FMAX, np.fmax.reduce, _FLOAT, lambda d: np.nan),
    Reduction.FMIN: _reduce(Reduction.FMIN, np.fmin.reduce, _FLOAT, lambda d: np.nan),
    Reduction.OR: _reduce(Reduction.OR, np.logical_or.reduce, "b", lambda d: False),
    Reduction.AND: _reduce(Reduction.AND, np.logical_and.reduce, "b", lambda d: True),
    Reduction.ARGMAX: _reduce(Reduction.ARGMAX, np.argmax, _NUMERIC, _lowest),
    Reduction.ARGMIN: _reduce(Reduction.ARGMIN, np.argmin, _NUMERIC, _highest),
}
"""Reductions a kernel performs (``Instr.attr`` of a REDUCE). argmax/argmin return the
int64 position of the first extreme (first NaN for floats) in C order over the row."""


def reduce_result_dtype(kind: str, source: np.dtype) -> np.dtype:
    """Return the dtype a reduction of ``source`` values gives: int64 positions for the
    arg kinds, the source's own otherwise."""
    return np.dtype(np.int64) if kind in ARG_KINDS else np.dtype(source)


def zero_coded(kind: str, source: np.dtype, sign_matters: bool = True) -> bool:
    """Whether a reduction keeps a last-zero code besides its value: a float max/min
    (``ZeroSign.LAST_ZERO``) whose result's zero sign some store can see. The code of an
    element at row position ``p`` is ``2p + 1`` for -0, ``2p + 2`` for +0 and 0 for any
    other value; codes merge by max in any grouping, so the largest is the row's last zero,
    and a zero result takes the sign of its low bit (odd: -0)."""
    spec = REDUCE_KINDS.get(kind)
    return (spec is not None and spec.combine.zero_sign is ZeroSign.LAST_ZERO
            and np.dtype(source).kind == "f" and sign_matters)


def sequential_reduction(kind: str, dtype: np.dtype) -> bool:
    """Whether a reduction must combine the row in order, one element after another, as
    NumPy's reduce loop does: float products (``np.multiply.reduce`` is a plain loop, and
    the order decides the rounding and whether an overflow to inf meets a zero: inf * 0 is
    NaN where the zero coming first keeps 0). No partial products per vector lane or
    thread chunk, no two-stage split."""
    return kind == Reduction.MUL and np.dtype(dtype).kind == "f"


def ordered_reduction(kind: str, dtype: np.dtype) -> bool:
    """Whether a reduction's value depends on the order NumPy combines the elements in:
    float sums and products. The CPU renderer adds them exactly as NumPy does (``fuse.plan``:
    pairwise along NumPy's inner loop, one after another across outer loops), so no
    two-stage split (``fuse.split_reduce``) may regroup them."""
    return kind in (Reduction.ADD, Reduction.MUL) and np.dtype(dtype).kind == "f"


#: elements NumPy's reduction iterator casts at a time (``np.getbufsize()``): a reduction
#: with a cast (``dtype=``, ints to a float mean) sums pairwise within each such chunk
NUMPY_BUFSIZE = 8192


class ScanName(enum.StrEnum):
    """A scan a kernel performs (``Instr.attr`` of a SCAN); the values are today's strings."""

    ADD = "add"
    MUL = "mul"
    OR = "or"
    AND = "and"


@dataclass(frozen=True)
class ScanKind:
    """One running combination along a row: NumPy's ufunc (its ``accumulate`` is the
    reference), the dtype kinds it takes, its start value (an exact identity: float
    sums start at -0.0, so ``cumsum([-0.0])`` keeps its sign as NumPy's does) and its
    combine, the reduction's of the same name."""

    ufunc: np.ufunc
    kinds: str
    start: Callable[[np.dtype], Any]
    combine: Combine


SCAN_KINDS: dict[ScanName, ScanKind] = {
    ScanName.ADD: ScanKind(np.add, _NUMERIC, lambda d: -0.0 if d.kind == "f" else 0, _SUM),
    ScanName.MUL: ScanKind(np.multiply, _NUMERIC, lambda d: 1, _PRODUCT),
    ScanName.OR: ScanKind(np.logical_or, "b", lambda d: False, _LOGICAL_OR),    # cumsum, bool
    ScanName.AND: ScanKind(np.logical_and, "b", lambda d: True, _LOGICAL_AND),  # cumprod, bool
}
"""Scans a kernel performs (``Instr.attr`` of a SCAN): element r of a row is the start
value combined, in row order, with elements 0..r — NumPy's sequential ``ufunc.accumulate``."""

PRIMITIVES: tuple[Op, ...] = tuple(op for op, info in OP_TABLE.items() if info.is_primitive)

#: NumPy ufunc -> graph op. The tracer records these; everything else is refused.
UFUNC_OPS: dict[np.ufunc, Op] = {
    np.add: Op.ADD, np.subtract: Op.SUB, np.multiply: Op.MUL, np.true_divide: Op.DIV,
    np.floor_divide: Op.FLOOR_DIVIDE, np.remainder: Op.REMAINDER, np.fmod: Op.FMOD,
    np.power: Op.POWER, np.float_power: Op.POWER, np.square: Op.SQUARE,
    np.reciprocal: Op.RECIPROCAL, np.absolute: Op.ABSOLUTE, np.fabs: Op.FABS,
    np.sign: Op.SIGN, np.negative: Op.NEG, np.positive: Op.POSITIVE,
    np.maximum: Op.MAXIMUM, np.minimum: Op.MINIMUM, np.fmax: Op.FMAX, np.fmin: Op.FMIN,
    np.equal: Op.EQ, np.not_equal: Op.NE, np.less: Op.LT, np.less_equal: Op.LE,
    np.greater: Op.GT, np.greater_equal: Op.GE,
    np.bitwise_and: Op.AND, np.bitwise_or: Op.OR, np.bitwise_xor: Op.XOR, np.invert: Op.NOT,
    np.logical_and: Op.LOGICAL_AND, np.logical_or: Op.LOGICAL_OR,
    np.logical_xor: Op.LOGICAL_XOR, np.logical_not: Op.LOGICAL_NOT,
    np.isnan: Op.ISNAN, np.isinf: Op.ISINF, np.isfinite: Op.ISFINITE,
    np.copysign: Op.COPYSIGN, np.floor: Op.FLOOR, np.ceil: Op.CEIL, np.trunc: Op.TRUNC,
    np.rint: Op.RINT, np.sqrt: Op.SQRT, np.cbrt: Op.CBRT,
    np.sin: Op.SIN, np.cos: Op.COS, np.tan: Op.TAN, np.arcsin: Op.ASIN, np.arccos: Op.ACOS,
    np.arctan: Op.ATAN, np.sinh: Op.SINH, np.cosh: Op.COSH, np.tanh: Op.TANH,
    np.arcsinh: Op.ASINH, np.arccosh: Op.ACOSH, np.arctanh: Op.ATANH,
    np.exp: Op.EXP, np.exp2: Op.EXP2, np.expm1: Op.EXPM1, np.log: Op.LOG, np.log2: Op.LOG2,
    np.log10: Op.LOG10, np.log1p: Op.LOG1P, np.arctan2: Op.ATAN2, np.hypot: Op.HYPOT,
    np._core.umath.clip: Op.CLIP,   # what np.clip(a, lo, hi) calls
}


#: ops whose rule (in each renderer's table) is chosen by the operand's dtype kind: the
#: comparisons (their result is always bool) and casts (the source kind; the target kind
#: then picks the conversion from ``CONVERSIONS``)
_RULE_BY_OPERAND = frozenset({Op.CAST, *(op for op, info in OP_TABLE.items() if info.bool_result)})


def rule_kind(op: Op, dtype: np.dtype, operand: np.dtype | None) -> str:
    """Return the dtype kind that selects ``op``'s rule in a renderer's table (LLVM and CUDA
    alike): the first operand's for comparisons and casts, the result's otherwise (an
    arithmetic op's operands and result share one dtype; SELECT's and STORE's value is the
    result's)."""
    use_operand = op in _RULE_BY_OPERAND and operand is not None
    return np.dtype(operand if use_operand else dtype).kind


class Conversion(enum.StrEnum):
    """NumPy's ``astype`` from one dtype kind to another, as both renderers implement it."""

    SAME = "same"            # bool -> bool: nothing to do
    WRAP = "wrap"            # to an integer from an integer or bool: the value modulo
    #                          2**bits (extended by the source's signedness)
    ROUND = "round"          # to a float: the nearest value, ties to even
    NONZERO = "nonzero"      # to bool: ``x != 0``, so NaN is True
    SATURATE = "saturate"    # float to integer: NaN -> 0, out of range clamped to the
    #                          range (LLVM's ``fptosi.sat``; in-range values truncate)


def _conversion(source: str, target: str) -> Conversion:
    if target == "b":
        return Conversion.SAME if source == "b" else Conversion.NONZERO
    if target == "f":
        return Conversion.ROUND
    return Conversion.SATURATE if source == "f" else Conversion.WRAP


#: (source kind, target kind) -> the conversion a CAST performs
CONVERSIONS: dict[tuple[str, str], Conversion] = {
    (source, target): _conversion(source, target) for source in _ALL for target in _ALL
}


def exact_constant(value: Any, dtype: np.dtype) -> Any:
    """Return the value a kernel constant of ``dtype`` holds, which both renderers spell
    exactly (LLVM constants, CUDA hex-float and bit-pattern literals): a bool is ``value !=
    0``; an integer wraps modulo 2**bits into the dtype's range (two's complement); a float
    is NumPy's ``astype``, rounded to nearest (a float32 or float64 scalar, NaN payloads
    and zero signs kept)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind == "f":
        return np.asarray(value).astype(dtype)[()]
    bits = 8 * dtype.itemsize
    wrapped = int(value) & ((1 << bits) - 1)
    return wrapped - (1 << bits) if dtype.kind == "i" and wrapped >> (bits - 1) else wrapped


def op_info(op: Op) -> OpInfo:
    """Return the table row of ``op``."""
    return OP_TABLE[op]
