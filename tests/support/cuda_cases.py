"""Test kernels for the CUDA backend: every primitive x kind, NumPy-level ops, casts and
memory layouts, each with edge-value inputs and a reference (``evaluate_kernel``).

Many ops share one kernel (one output buffer per op) so that NVRTC and g++ run a few dozen
times, not hundreds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.fuse.builder import KernelBuilder
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.kernel import Kernel
from autojit.ir.ops import OP_TABLE, PRIMITIVES, Op, OpGroup
from autojit.ir.types import SUPPORTED_DTYPES

BOOL = np.dtype(bool)
FLOATS = tuple(np.dtype(t) for t in ("float32", "float64"))
INTS = tuple(d for d in SUPPORTED_DTYPES if d.kind in "iu")

#: Primitives compared within ``ULP_BOUND`` units in the last place, not exactly.
TRANSCENDENTAL = frozenset({
    Op.CBRT, Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.SINH, Op.COSH, Op.TANH,
    Op.ASINH, Op.ACOSH, Op.ATANH, Op.EXP, Op.EXP2, Op.EXPM1, Op.LOG, Op.LOG2, Op.LOG10,
    Op.LOG1P, Op.ATAN2, Op.HYPOT, Op.POW,
})
ULP_BOUND = 4
# INDEX reads a loop position: covered by the corpus (arange, linspace, eye), not here.
_SKIP_IN_PRIMS = frozenset({Op.CONST, Op.LOAD, Op.LOAD_SCALAR, Op.STORE, Op.CAST, Op.INDEX})

OutputFactory = Callable[[], tuple[np.ndarray, np.ndarray]]


@dataclass
class Case:
    """A kernel with its inputs. ``outputs`` maps an output buffer index to a factory of
    (base array, view the kernel writes); ``ulp`` maps output names to a ULP bound."""

    kernel: Kernel
    sizes: dict[str, int]
    inputs: dict[int, np.ndarray]
    scalars: tuple[Any, ...] = ()
    outputs: dict[int, OutputFactory] = field(default_factory=dict)
    ulp: dict[str, int] = field(default_factory=dict)
    fixup: Callable[[Case, list[np.ndarray]], None] | None = None

    @property
    def name(self) -> str:
        return self.kernel.name

    def fresh_outputs(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        shape = tuple(int(np.prod([self.sizes[s] for s in p])) for p in self.kernel.loop_sizes)
        made = {}
        for b, buf in enumerate(self.kernel.buffers):
            if buf.is_output:
                factory = self.outputs.get(b)
                made[b] = factory() if factory else (np.zeros(shape, buf.dtype),) * 2
        return made

    def arrays(self, outputs: dict[int, tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        return [outputs[b][1] if b in outputs else self.inputs[b]
                for b in range(len(self.kernel.buffers))]

    def reference(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Return the outputs as ``evaluate_kernel`` (plus ``fixup``) computes them."""
        outputs = self.fresh_outputs()
        arrays = self.arrays(outputs)
        evaluate_kernel(self.kernel, arrays, self.scalars)
        if self.fixup:
            self.fixup(self, arrays)
        return outputs


# -- inputs -----------------------------------------------------------------------------
def edge_values(dtype: np.dtype) -> np.ndarray:
    """Return the values every op is tried on: NaN, infinities, signed zeros, subnormals,
    extremes, halves (for rounding), and a few ordinary numbers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind == "f":
        fi = np.finfo(dtype)
        values = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5,
                  3.0, -7.25, 0.1, 0.75, 100.0, -1e10, 2.0, fi.max, -fi.max, fi.tiny,
                  fi.smallest_subnormal, -fi.smallest_subnormal, 1e-3, 20.0]
        return np.array(values).astype(dtype)
    ii = np.iinfo(dtype)
    values = [ii.min, ii.min + 1, ii.max, ii.max - 1, 0, 1, 2, 3, 7, 100, ii.max // 3]
    if dtype.kind == "i":
        values += [-1, -2, -3, -7, -100]
    return np.array([int(v) for v in values], dtype=dtype)


def _pairs(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    values = edge_values(dtype)
    return np.repeat(values, values.size), np.tile(values, values.size)


def _safe_divisor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return ``b`` with the divisors C leaves undefined (0, and -1 against MIN) set to 1."""
    d = b.copy()
    d[d == 0] = 1
    if d.dtype.kind == "i":
        d[(a == np.iinfo(d.dtype).min) & (d == -1)] = 1
    return d


def _special_consts(dtype: np.dtype) -> list[Any]:
    if dtype.kind == "b":
        return [True, False]
    if dtype.kind == "f":
        fi = np.finfo(dtype)
        return [np.nan, np.inf, -np.inf, -0.0, float(fi.smallest_subnormal), float(fi.max),
                0.1, -1.5]
    ii = np.iinfo(dtype)
    return [int(ii.min), int(ii.max), int(ii.max) // 3] + ([-1] if dtype.kind == "i" else [])


def _short(dtype: np.dtype) -> str:
    return np.dtype(dtype).name


# -- primitive cases ----------------------------------------------------------------------
def _prim_operands(op: Op, a: int, b: int, d: int, c: int) -> tuple[int, ...]:
    arity = OP_TABLE[op].arity
    if op in (Op.DIV, Op.REM):
        return (a, d)
    return {1: (a,), 2: (a, b), 3: (c, a, b)}[arity]


def primitive_case(dtype: np.dtype) -> Case:
    """Every primitive the op table allows on ``dtype``'s kind, one output each, plus every
    special constant and a runtime scalar parameter."""
    dtype = np.dtype(dtype)
    kb = KernelBuilder(f"prims_{_short(dtype)}", (("n",),))
    a, b, d = (kb.load(kb.add_buffer(name, dtype, (1,))) for name in ("a", "b", "d"))
    c = kb.load(kb.add_buffer("c", BOOL, (1,)))
    ulp = {}
    for op in PRIMITIVES:
        info = OP_TABLE[op]
        if op in _SKIP_IN_PRIMS or dtype.kind not in info.primitive_kinds:
            continue
        out = BOOL if info.bool_result else dtype
        value = kb.emit(op, _prim_operands(op, a, b, d, c), out)
        kb.store(kb.add_buffer(f"o_{op.value}", out, (1,), is_output=True), value)
        if op in TRANSCENDENTAL:
            ulp[f"o_{op.value}"] = ULP_BOUND
    for j, value in enumerate(_special_consts(dtype)):
        kb.store(kb.add_buffer(f"k{j}", dtype, (1,), is_output=True), kb.const(value, dtype))
    s = kb.load_scalar(kb.add_scalar("s", dtype))
    kb.store(kb.add_buffer("o_scalar", dtype, (1,), is_output=True), s)
    av, bv = _pairs(dtype)
    cv = (np.arange(av.size) % 3 == 0)
    inputs = {0: av, 1: bv, 2: _safe_divisor(av, bv), 3: cv}
    scalar = _special_consts(dtype)[0]
    return Case(kb.finish(), {"n": av.size}, inputs, (scalar,), ulp=ulp)


# -- NumPy-level (graph) ops ---------------------------------------------------------------
_GRAPH_BINARY = {
    Op.FLOOR_DIVIDE: "iuf", Op.REMAINDER: "iuf", Op.FMOD: "iuf", Op.MAXIMUM: "biuf",
    Op.MINIMUM: "biuf", Op.FMAX: "biuf", Op.FMIN: "biuf", Op.LOGICAL_AND: "biuf",
    Op.LOGICAL_OR: "biuf", Op.LOGICAL_XOR: "biuf", Op.ADD: "b", Op.MUL: "b",
}
_GRAPH_UNARY = {
    Op.SIGN: "iuf", Op.ABSOLUTE: "iuf", Op.ISNAN: "iuf", Op.ISINF: "iuf", Op.ISFINITE: "iuf",
    Op.LOGICAL_NOT: "biuf", Op.SQUARE: "biuf", Op.RECIPROCAL: "f", Op.POSITIVE: "iuf",
}
_BOOL_RESULT = frozenset({Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.LOGICAL_AND, Op.LOGICAL_OR,
                          Op.LOGICAL_XOR, Op.LOGICAL_NOT})
_POWER_EXPONENTS = {"f": (2.0, 0.5, -1.0, 3.0, -2.5), "i": (0, 1, 2, 3, 7), "u": (0, 1, 3, 7)}


def graph_case(dtype: np.dtype) -> Case:
    """floor_divide, remainder, fmod, maximum/minimum/fmax/fmin, sign, absolute, power with
    constant exponents, isnan/isinf/isfinite, logical ops and clip through ``graph_op``."""
    dtype = np.dtype(dtype)
    kind = dtype.kind
    kb = KernelBuilder(f"graph_{_short(dtype)}", (("n",),))
    a, b = (kb.load(kb.add_buffer(name, dtype, (1,))) for name in ("a", "b"))
    ulp: dict[str, int] = {}

    def store(name: str, value: int) -> None:
        kb.store(kb.add_buffer(name, kb.dtype_of(value), (1,), is_output=True), value)

    for op, kinds in _GRAPH_BINARY.items():
        if kind in kinds:
            store(op.value, kb.graph_op(op, (a, b), BOOL if op in _BOOL_RESULT else dtype))
    for op, kinds in _GRAPH_UNARY.items():
        if kind in kinds:
            store(op.value, kb.graph_op(op, (a,), BOOL if op in _BOOL_RESULT else dtype))
    for j, exponent in enumerate(_POWER_EXPONENTS.get(kind, ())):
        store(f"power{j}", kb.graph_op(Op.POWER, (a, kb.const(exponent, dtype)), dtype))
        if kind == "f" and exponent not in (2.0, 0.5, -1.0):
            ulp[f"power{j}"] = ULP_BOUND
    if kind == "f":
        store("power_runtime", kb.graph_op(Op.POWER, (a, b), dtype))
        ulp["power_runtime"] = ULP_BOUND
    scalars: tuple[Any, ...] = ()
    if kind != "b":
        lo, hi = (kb.load_scalar(kb.add_scalar(n, dtype)) for n in ("lo", "hi"))
        store("clip", kb.graph_op(Op.CLIP, (a, lo, hi), dtype))
        scalars = tuple(np.array([v]).astype(dtype)[0] for v in (2, 100))
    av, bv = _pairs(dtype)
    return Case(kb.finish(), {"n": av.size}, {0: av, 1: bv}, scalars, ulp=ulp)


# -- casts ----------------------------------------------------------------------------------
def _cast_inputs(dtype: np.dtype) -> np.ndarray:
    """Edge values plus every integer range boundary, so saturation is exercised."""
    extra: list[float] = []
    if dtype.kind == "f":
        for bits in (8, 16, 32, 64):
            for edge in (2.0 ** (bits - 1), 2.0**bits):
                extra += [edge, -edge, edge - 1, edge + 1, edge * 0.75, -edge - 1]
        extra += [-0.7, 0.7, 1e30, -1e30, 127.5, -128.5, 255.5]
    return np.concatenate([edge_values(dtype), np.array(extra).astype(dtype)])


def saturating_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float -> int with LLVM's fptosi.sat / fptoui.sat semantics: NaN -> 0, clamp."""
    ii = np.iinfo(dtype)
    low, high = (-(2.0 ** (ii.bits - 1)), 2.0 ** (ii.bits - 1)) if dtype.kind == "i" else (
        0.0, 2.0**ii.bits)
    wide = x.astype(np.float64)
    inside = (wide > low) & (wide < high)
    result = np.where(inside, np.trunc(np.where(inside, wide, 0.0)), 0.0).astype(dtype)
    result[wide <= low] = ii.min
    result[wide >= high] = ii.max
    return result


def _fix_float_to_int(case: Case, arrays: list[np.ndarray]) -> None:
    source = arrays[0]
    for b, buf in enumerate(case.kernel.buffers):
        if buf.is_output and buf.dtype.kind in "iu":
            arrays[b][...] = saturating_cast(source, buf.dtype)


def cast_case(dtype: np.dtype) -> Case:
    """``dtype`` cast to every other supported dtype (float -> int saturating)."""
    dtype = np.dtype(dtype)
    kb = KernelBuilder(f"casts_{_short(dtype)}", (("n",),))
    x = kb.load(kb.add_buffer("x", dtype, (1,)))
    for target in SUPPORTED_DTYPES:
        if target != dtype:
            value = kb.emit(Op.CAST, (x,), target)
            kb.store(kb.add_buffer(f"to_{_short(target)}", target, (1,), is_output=True), value)
    values = _cast_inputs(dtype)
    fixup = _fix_float_to_int if dtype.kind == "f" else None
    return Case(kb.finish(), {"n": values.size}, {0: values}, fixup=fixup)


def operation_cases() -> list[Case]:
    """Return the op-coverage cases: primitives, graph ops and casts for every dtype."""
    return ([primitive_case(d) for d in SUPPORTED_DTYPES]
            + [graph_case(d) for d in SUPPORTED_DTYPES]
            + [cast_case(d) for d in SUPPORTED_DTYPES])


def assert_group_covered(cases: list[Case]) -> None:
    """Fail when some (primitive, kind) pair appears in no case's kernel."""
    seen: set[tuple[Op, str]] = set()
    for case in cases:
        dtypes = {ins.id: ins.dtype for ins in case.kernel.body}
        for ins in case.kernel.body:
            use_operand = OP_TABLE[ins.op].group is OpGroup.COMPARE and ins.args
            kind = (dtypes[ins.args[0]] if use_operand else ins.dtype).kind
            seen.add((ins.op, kind))
    wanted = {(op, k) for op in PRIMITIVES for k in OP_TABLE[op].primitive_kinds
              if op is not Op.INDEX}
    assert not wanted - seen, f"not covered: {sorted((o.value, k) for o, k in wanted - seen)}"


# -- comparison -----------------------------------------------------------------------------
def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Return how many representable floats lie between ``got`` and ``want`` (capped at
    2**41 across zero, where the exact count does not matter)."""
    bits = got.dtype.itemsize * 8
    mask = np.int64(2 ** (bits - 1) - 1)

    def ordered(x: np.ndarray) -> np.ndarray:
        raw = x.view(f"i{x.dtype.itemsize}").astype(np.int64)
        return np.where(raw < 0, -(raw & mask), raw)

    a, b = ordered(got), ordered(want)
    same_side = (a >= 0) == (b >= 0)
    cap = 2**40
    across = np.minimum(np.abs(a), cap) + np.minimum(np.abs(b), cap)
    return np.where(same_side, np.abs(a - b), across)


def mismatches(got: np.ndarray, want: np.ndarray, ulp: int = 0) -> np.ndarray:
    """Return a mask of elements that differ: exact (NaN equals NaN, 0.0 differs from -0.0)
    or, for ``ulp`` > 0, more than ``ulp`` units in the last place apart."""
    if got.dtype.kind != "f":
        return got != want
    both_nan = np.isnan(got) & np.isnan(want)
    if ulp:
        close = ulp_distance(got, want) <= ulp
    else:
        close = (got == want) & (np.signbit(got) == np.signbit(want))
    return ~(close | both_nan)


def assert_outputs_match(case: Case, got: dict[int, tuple[np.ndarray, np.ndarray]],
                         want: dict[int, tuple[np.ndarray, np.ndarray]], scale: int = 1) -> None:
    """Compare every output's base array (so stray writes show); ``scale`` widens ULP bounds."""
    problems = []
    for b, (base, _) in got.items():
        buf = case.kernel.buffers[b]
        bound = case.ulp.get(buf.name, 0) * scale
        bad = mismatches(base, want[b][0], bound)
        if bad.any():
            where = np.argwhere(bad)[:5].tolist()
            problems.append(f"{buf.name} ({buf.dtype}, ulp<={bound}): {int(bad.sum())} differ, "
                            f"at {where}: got {base[bad][:5]} want {want[b][0][bad][:5]}")
    assert not problems, f"{case.name}:\n  " + "\n  ".join(problems)
