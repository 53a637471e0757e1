"""The elementwise test corpus: every listed op × dtype family × layout, as traced programs.

Each case is (id, function, args, labels, ulps). One function applies *all* applicable ops
of a family to its inputs and returns a tuple, so one compile covers many ops; the labels
name each output, so a mismatch names its op. Shared by the LLVM tests (tests/cpu) and the
CUDA tests (tests/cuda_compile: NVRTC compile + CPU emulation of the CUDA source).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.support.oracle import TRANSCENDENTAL_ULPS, call_numpy

from autojit.ir.types import is_supported

DTYPES = [np.dtype(n) for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64", "float32", "float64")]

TRANSCENDENTAL = {
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt",
    "power", "arctan2", "hypot", "float_power",
}

UNARY: dict[str, Callable[[Any], Any]] = {
    name: getattr(np, name) for name in (
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
        "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10",
        "log1p", "sqrt", "cbrt", "square", "reciprocal", "absolute", "sign", "floor", "ceil",
        "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not", "negative", "positive",
        "invert", "fabs")
}
UNARY.update({"op_neg": lambda x: -x, "op_abs": abs, "op_invert": lambda x: ~x})

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    name: getattr(np, name) for name in (
        "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod",
        "arctan2", "hypot", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
        "less", "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or",
        "bitwise_xor", "logical_and", "logical_or", "logical_xor", "copysign")
}
BINARY.update({
    "power": np.power, "op_add": lambda x, y: x + y, "op_sub": lambda x, y: x - y,
    "op_mul": lambda x, y: x * y, "op_div": lambda x, y: x / y, "op_floordiv": lambda x, y: x // y,
    "op_mod": lambda x, y: x % y, "op_lt": lambda x, y: x < y, "op_ge": lambda x, y: x >= y,
    "op_eq": lambda x, y: x == y, "op_ne": lambda x, y: x != y, "op_and": lambda x, y: x & y,
    "op_or": lambda x, y: x | y, "op_xor": lambda x, y: x ^ y,
})


def edge_values(dtype: np.dtype, count: int = 24, seed: int = 0) -> np.ndarray:
    """Return edge values of ``dtype`` followed by random ones, ``count`` in all."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(count) < 0.5
    if dtype.kind == "f":
        info = np.finfo(dtype)
        edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.25,
                 info.tiny / 4, float(info.max), 1e-3, 0.9]
        extra = rng.normal(0, 10, count) * rng.choice([1, 0.01], count)
    else:
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, 2, 3, 7, info.max - 1]
        if dtype.kind == "i":
            edges += [-1, -2, -7, info.min + 1]
        extra = rng.integers(max(info.min, -100), min(info.max, 100), count, endpoint=True)
    values = np.concatenate([np.array(edges, dtype=dtype), extra.astype(dtype)])
    return values[:max(count, len(edges))]


@dataclass(frozen=True)
class Case:
    id: str
    fn: Callable
    args: tuple
    labels: tuple[str, ...]
    ulps: tuple[int, ...]


def _applicable(ops: dict[str, Callable], probe: tuple) -> list[str]:
    """Return ops NumPy accepts for these operand dtypes with a supported result dtype."""
    names = []
    for name, op in ops.items():
        result, error = call_numpy(op, probe)
        if error is None and is_supported(np.asarray(result).dtype):
            names.append(name)
    return names


def _program(ops: dict[str, Callable], names: list[str]) -> Callable:
    chosen = [ops[n] for n in names]

    def program(*xs: Any) -> tuple:
        return tuple(op(*xs) for op in chosen)

    return program


def _case(case_id: str, ops: dict[str, Callable], args: tuple, probe: tuple) -> Case | None:
    names = _applicable(ops, probe)
    if not names:
        return None
    ulps = tuple(TRANSCENDENTAL_ULPS if n in TRANSCENDENTAL else 0 for n in names)
    return Case(case_id, _program(ops, names), args, tuple(names), ulps)


def unary_layouts(dtype: np.dtype) -> dict[str, Any]:
    """Return the unary input layouts: contiguous, strided, negative, broadcast, 0-d, …"""
    v = edge_values(dtype, 30)
    grid = np.resize(v, (12, 10))
    return {
        "contiguous": v,
        "strided": np.resize(v, (24, 30))[::2, ::3],
        "negative": grid[::-1, ::-2],
        "broadcast": np.broadcast_to(v[:10], (4, 10)),
        "zero_d": np.array(v[1]),
        "empty": np.empty((0, 3), dtype),
        "numpy_scalar": v[2],
    }


def binary_layouts(dtype: np.dtype) -> dict[str, tuple]:
    """Return binary operand layouts, including every pair of edge values (outer broadcast)."""
    v = edge_values(dtype, 20)
    w = edge_values(dtype, 20, seed=1)
    python_scalar = {"b": True, "i": 3, "u": 3, "f": 2.5}[dtype.kind]
    return {
        "contiguous": (v, w),
        "all_pairs": (v[:, None], v[None, :]),
        "mixed_rank": (np.resize(v, (8, 40))[:, ::2], w[::-1]),
        "python_scalar": (v, python_scalar),
        "scalar_left": (python_scalar, v),
        "zero_d": (np.array(v[3]), w[5]),
        "empty": (np.empty((0, 4), dtype), np.empty(4, dtype)),
    }


def unary_cases() -> list[Case]:
    cases = []
    for dtype in DTYPES:
        probe = (np.ones(2, dtype),)
        for layout, x in unary_layouts(dtype).items():
            case = _case(f"unary-{dtype.name}-{layout}", UNARY, (x,), probe)
            if case:
                cases.append(case)
    return cases


def binary_cases() -> list[Case]:
    cases = []
    for dtype in DTYPES:
        probe = (np.ones(2, dtype), np.ones(2, dtype))
        ops = dict(BINARY)
        if dtype.kind in "iub":
            ops.pop("power")  # integer powers need a constant exponent: tested apart
        for layout, args in binary_layouts(dtype).items():
            case = _case(f"binary-{dtype.name}-{layout}", ops, args, probe)
            if case:
                cases.append(case)
    return cases


def cast_cases() -> list[Case]:
    """astype between every pair of dtypes (float→int only from in-range values: NumPy
    leaves NaN and out-of-range conversions undefined)."""
    cases = []
    for source in DTYPES:
        x = edge_values(source, 30)
        if source.kind == "f":
            x = np.where(np.isfinite(x) & (np.abs(x) < 100), x, 1.5).astype(source)
        ops = {f"astype_{t.name}": _astype(t) for t in DTYPES}
        probe = (np.ones(2, source),)
        for layout, arg in (("contiguous", x), ("negative", x[::-1])):
            case = _case(f"astype-{source.name}-{layout}", ops, (arg,), probe)
            if case:
                cases.append(case)
    return cases


def _astype(dtype: np.dtype) -> Callable:
    return lambda a: a.astype(dtype)


def _ternary_ops(lo: Any, hi: Any) -> dict[str, Callable]:
    return {
        "where": lambda c, x, y: np.where(c, x, y),
        "where_scalar": lambda c, x, y: np.where(c > 0, x, 0),
        "clip_scalars": lambda c, x, y: np.clip(x, lo, hi),
        "clip_arrays": lambda c, x, y: np.clip(x, np.minimum(x, y), y),
        "clip_low_only": lambda c, x, y: np.clip(x, y, None),
    }


def ternary_cases() -> list[Case]:
    cases = []
    for dtype in DTYPES:
        v = edge_values(dtype, 24)
        w = edge_values(dtype, 24, seed=2)
        lo, hi = (v.min(), v.max()) if dtype.kind != "f" else (-1.0, 2.0)
        ops = _ternary_ops(lo, hi)
        probe = (np.ones(2, dtype), np.ones(2, dtype), np.ones(2, dtype))
        layouts = {"contiguous": (v, v, w), "broadcast": (v[:, None], v, w[:, None])}
        for layout, args in layouts.items():
            case = _case(f"ternary-{dtype.name}-{layout}", ops, args, probe)
            if case:
                cases.append(case)
    return cases


def creation_cases() -> list[Case]:
    """Arrays made from loop positions (arange, linspace, eye) mixed with an argument."""
    x = edge_values(np.dtype(np.float64), 30).reshape(5, 6)
    x = np.where(np.isfinite(x), x, 0.5)
    ops = {
        "arange": lambda a: np.arange(6) * a, "arange_float": lambda a: np.arange(0.5, 3.5, 0.5),
        "linspace": lambda a: np.linspace(-1, 1, 6) + a, "eye": lambda a: np.eye(5, 6, k=-1) - a,
    }
    return [Case("creation-float64", _program(ops, list(ops)), (x,), tuple(ops), (0,) * len(ops))]


def view_cases() -> list[Case]:
    """Views of arguments and of computed values, and a product with a fused epilogue."""
    x = edge_values(np.dtype(np.float32), 30).reshape(5, 6)
    x = np.where(np.isfinite(x) & (np.abs(x) < 1e3), x, np.float32(0.5)).astype(np.float32)
    ops = {
        "stencil": lambda a: a[1:-1, 1:] - 0.5 * (a[:-2, :-1] + a[2:, :-1]),
        "transpose": lambda a: a.T * 2, "reversed_computed": lambda a: (a + 1)[::-1, ::2],
        "dense_relu": lambda a: np.maximum(a @ a.T + 1, 0),
    }
    return [Case("views-float32", _program(ops, list(ops)), (x,), tuple(ops), (0,) * len(ops))]


def all_cases() -> list[Case]:
    """Return the whole corpus."""
    return (unary_cases() + binary_cases() + cast_cases() + ternary_cases() + creation_cases()
            + view_cases())
