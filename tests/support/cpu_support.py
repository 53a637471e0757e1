"""Shared helpers of the CPU backend tests: edge values, running a kernel two ways, comparing."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from autojit.fuse.builder import KernelBuilder
from autojit.ir.abi import pack_meta
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.kernel import Kernel
from autojit.lower_cpu import compile_kernel

DTYPES_BY_KIND: dict[str, list[np.dtype]] = {
    "b": [np.dtype(bool)],
    "i": [np.dtype(t) for t in ("int8", "int16", "int32", "int64")],
    "u": [np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64")],
    "f": [np.dtype(t) for t in ("float32", "float64")],
}
ALL_DTYPES = [d for kind in "biuf" for d in DTYPES_BY_KIND[kind]]
BOOL = np.dtype(bool)


def edge_values(dtype: np.dtype) -> np.ndarray:
    """Return the interesting values of ``dtype``: extremes, zeros, signs, NaN, inf, …"""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        small = [0, 1, 2, 3, 7, 100, -1, -2, -3, -7, -100]
        picks = [info.min, info.min + 1, info.max - 1, info.max, info.max // 2, info.max // 2 + 1]
        values = {int(v) for v in small + picks if info.min <= v <= info.max}
        return np.array(sorted(values), dtype=dtype)
    info = np.finfo(dtype)
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
              3.0, -7.25, 0.1, -0.1, 123.456, 1e300, -1e300, 1e-310, 5e-324, -5e-324,
              float(info.max), float(info.min), float(info.tiny), 2.0 ** 53 + 2, 33.5]
    with np.errstate(over="ignore"):
        return np.array(values, dtype=np.float64).astype(dtype)


def domain_grid(dtype: np.dtype, n: int = 241) -> np.ndarray:
    """Return ordinary arguments for math functions: a grid over [-12, 12] plus magnitudes."""
    extra = [1e-8, -1e-8, 1e-3, 0.999, -0.999, 1.001, 40.0, -40.0, 700.0, 1e3, -1e3, 1e6]
    return np.concatenate([np.linspace(-12.0, 12.0, n), extra]).astype(dtype)


def pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return every (a[i], b[j]) pair as two flat arrays."""
    left, right = zip(*itertools.product(a.tolist(), b.tolist()), strict=True)
    return np.array(left, dtype=a.dtype), np.array(right, dtype=b.dtype)


def elementwise_kernel(name: str, in_dtypes: Sequence[np.dtype], out_dtype: np.dtype,
                       emit: Any) -> Kernel:
    """Return a contiguous rank-1 kernel ``out0 = emit(kb, *loads)``."""
    kb = KernelBuilder(name, loop_sizes=(("n0",),))
    loads = [kb.load(kb.add_buffer(f"in{i}", d, (1,))) for i, d in enumerate(in_dtypes)]
    result = emit(kb, *loads)
    kb.store(kb.add_buffer("out0", out_dtype, (1,), is_output=True), result)
    return kb.finish()


def run_both(kernel: Kernel, inputs: Sequence[np.ndarray], shape: tuple[int, ...],
             scalars: Sequence[Any] = (), outputs: Sequence[np.ndarray] | None = None,
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run ``kernel`` compiled and under ``evaluate_kernel``; return both output lists.

    ``inputs`` follow the kernel's input buffers (any strides); ``outputs``, when given, are
    the arrays the compiled kernel writes into (views with their own strides)."""
    compiled = list(outputs) if outputs is not None else None
    if compiled is None:
        compiled = [np.full(shape, 0, b.dtype) for b in kernel.outputs]
    outs = iter(compiled)
    buffers = [next(outs) if b.is_output else None for b in kernel.buffers]
    ins = iter(inputs)
    buffers = [b if b is not None else next(ins) for b in buffers]
    scalar_arrays = [np.array(v, dtype=p.dtype) for v, p in zip(scalars, kernel.scalars,
                                                                 strict=True)]
    meta = pack_meta(kernel, {f"n{d}": n for d, n in enumerate(shape)}, buffers)
    program = compile_kernel(kernel)
    program.run([b.ctypes.data for b in buffers] + [s.ctypes.data for s in scalar_arrays], meta)
    given = iter(inputs)
    expected = [np.zeros(shape, b.dtype) if b.is_output else next(given)
                for b in kernel.buffers]
    evaluate_kernel(kernel, expected, list(scalars))
    return compiled, [b for b, info in zip(expected, kernel.buffers, strict=True)
                      if info.is_output]


def assert_same(actual: np.ndarray, expected: np.ndarray, context: str = "") -> None:
    """Assert equal dtype, shape and values; NaN equals NaN and the sign of zero counts."""
    assert actual.dtype == expected.dtype, context
    assert actual.shape == expected.shape, context
    if actual.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=context)
        return
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=context)
    np.testing.assert_array_equal(actual, expected, err_msg=context)
    np.testing.assert_array_equal(np.signbit(actual) | np.isnan(actual),
                                  np.signbit(expected) | np.isnan(expected),
                                  err_msg=f"sign of zero differs; {context}")


def wide_reference(ref: Any, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Return ``ref(*inputs)`` evaluated in a wider type (float32 in float64, float64 in
    long double) and rounded back: nearly the correctly rounded result."""
    dtype = inputs[0].dtype
    wide = np.float64 if dtype.itemsize == 4 else np.longdouble
    with np.errstate(all="ignore"):
        return np.asarray(ref(*(x.astype(wide) for x in inputs))).astype(dtype)


def assert_within_ulp(actual: np.ndarray, expected: np.ndarray, maxulp: int,
                      context: str = "") -> None:
    """Assert NaN and infinities match exactly and finite values lie within ``maxulp``."""
    assert actual.dtype == expected.dtype, context
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=f"NaN positions; {context}")
    inf = np.isinf(expected)
    np.testing.assert_array_equal(actual[inf], expected[inf], err_msg=f"infinities; {context}")
    finite = ~nan & ~inf
    try:
        np.testing.assert_array_max_ulp(actual[finite], expected[finite], maxulp=maxulp)
    except AssertionError as exc:
        raise AssertionError(f"{context}: {exc}") from None


def ids(values: Sequence[Any]) -> list[str]:
    """Return readable pytest ids for (op, dtype)-like parameters."""
    return [getattr(v, "value", None) or str(v) for v in values]
