"""The one helper every numeric test goes through: run under autojit and under NumPy, compare.

NumPy is the oracle (DESIGN.md contract 1): same exception type, same result kind (array
or NumPy scalar), dtype, shape, and values — exact (NaN positions and signs of zeros
included) unless the caller allows a ULP bound for transcendental functions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from autojit import autoroute

#: ULP bound for transcendental functions (documented in README; measured in tests).
TRANSCENDENTAL_ULPS = 4


def _copies(args: Sequence[Any]) -> list[Any]:
    """Copies of writeable array arguments with the same strides (a strided or reversed view
    stays one, over a copied base), so each run may write into its own; read-only arrays
    (broadcast views) cannot be written and are shared."""
    copied = []
    for a in args:
        if not isinstance(a, np.ndarray) or not a.flags.writeable or a.size == 0:
            copied.append(a)
            continue
        base = a.base if isinstance(a.base, np.ndarray) else None
        if base is None or not base.flags.c_contiguous:
            copied.append(np.array(a, copy=True, order="K"))
            continue
        fresh = np.array(base, copy=True)
        offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        copied.append(np.ndarray(a.shape, a.dtype, buffer=fresh.reshape(-1).view(np.uint8),
                                 offset=offset, strides=a.strides))
    return copied


def call_numpy(fn: Callable, args: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """Return (result, None) or (None, exception) of plain NumPy."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as exc:  # the oracle's exception is part of the answer
            return None, exc


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Return elementwise distance in units in the last place (0 where both are NaN)."""
    int_type = {4: np.int32, 8: np.int64}[actual.dtype.itemsize]
    a = actual.view(int_type).astype(np.int64)
    e = expected.view(int_type).astype(np.int64)
    # map sign-magnitude floats onto a monotonic integer line
    smallest = np.iinfo(int_type).min
    a = np.where(a < 0, smallest - a, a)
    e = np.where(e < 0, smallest - e, e)
    distance = np.abs(a - e).astype(np.float64)
    both_nan = np.isnan(actual) & np.isnan(expected)
    return np.where(both_nan, 0.0, distance)


def assert_same_value(actual: Any, expected: Any, ulps: int = 0, label: str = "",
                      rtol: float = 0.0, atol: float = 0.0) -> None:
    """Assert kind, dtype, shape and values agree: floats exactly, within ``ulps`` (one
    transcendental op), or within ``rtol``/``atol`` (compositions, where errors compound)."""
    where = f" ({label})" if label else ""
    assert isinstance(actual, np.ndarray) == isinstance(expected, np.ndarray), (
        f"result kind{where}: got {type(actual).__name__}, NumPy {type(expected).__name__}")
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype, f"dtype{where}: got {a.dtype}, NumPy {e.dtype}"
    assert a.shape == e.shape, f"shape{where}: got {a.shape}, NumPy {e.shape}"
    if a.dtype.kind != "f":
        bad = a != e
    elif rtol or atol:
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        bad = ~close | (np.isnan(a) != np.isnan(e))
    elif ulps == 0:
        same = (a == e) & (np.signbit(a) == np.signbit(e))
        bad = ~(same | (np.isnan(a) & np.isnan(e)))
    else:
        with np.errstate(invalid="ignore"):
            bad = (ulp_distance(a, e) > ulps) | (np.isnan(a) != np.isnan(e))
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"values differ{where} at {np.count_nonzero(bad)} of {a.size} positions; first at "
            f"{index}: got {a[index]!r}, NumPy {e[index]!r}")


def compare_results(actual: Any, expected: Any, ulps: int | Sequence[int] = 0,
                    labels: Sequence[str] = (), rtol: float = 0.0, atol: float = 0.0) -> None:
    """Compare single results or tuples of results, output by output."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), "tuple structure"
        bounds = list(ulps) if isinstance(ulps, list | tuple) else [ulps] * len(expected)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            label = labels[i] if i < len(labels) else f"output {i}"
            assert_same_value(a, e, bounds[i], label, rtol, atol)
    else:
        bound = ulps if isinstance(ulps, int) else ulps[0]
        assert_same_value(actual, expected, bound, rtol=rtol, atol=atol)


def assert_matches_numpy(fn: Callable, *args: Any, ulps: int | Sequence[int] = 0,
                         compiled: bool = True,
                         labels: Sequence[str] = (), rtol: float = 0.0,
                         atol: float = 0.0, allowed_fallbacks: Sequence[str] = ()) -> Any:
    """Run ``fn`` under autojit (compiled for the CPU) and under NumPy; compare.

    ``compiled=True`` also asserts no call fell back to plain Python, except for reasons
    containing one of ``allowed_fallbacks``. Returns the dispatcher, so callers can inspect
    kernels and stats.
    """
    numpy_args, autojit_args = _copies(args), _copies(args)
    expected, error = call_numpy(fn, numpy_args)
    jitted = autoroute(fn, force="cpu")
    if error is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(type(error)):
                jitted(*autojit_args)
        return jitted
    with np.errstate(all="ignore"):
        actual = jitted(*autojit_args)
    compare_results(actual, expected, ulps, labels, rtol, atol)
    assert_same_ownership(actual, expected, "result")
    for index, (want, got) in enumerate(zip(numpy_args, autojit_args)):
        if isinstance(want, np.ndarray):   # writes into arguments must match too
            assert_same_value(got, want, label=f"argument {index} after the call", rtol=rtol,
                              atol=atol)
    if compiled:
        unexpected = [reason for reason in jitted.stats()["fallbacks"]
                      if not any(allowed in reason for allowed in allowed_fallbacks)]
        assert not unexpected, f"fell back: {unexpected}"
    return jitted


def assert_same_ownership(actual: Any, expected: Any, label: str = "") -> None:
    """Assert an array result owns its memory exactly when NumPy's does (``flags.owndata``,
    ``base is None``), through tuples: a fresh result is no view of hidden memory."""
    if isinstance(expected, tuple) and isinstance(actual, tuple):
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_ownership(a, e, f"{label} output {i}")
        return
    if type(expected) is np.ndarray and type(actual) is np.ndarray:
        got = (actual.flags.owndata, actual.base is None)
        want = (expected.flags.owndata, expected.base is None)
        assert got == want, (f"{label}: (owndata, base is None) {got}, NumPy {want} "
                             f"(base {type(actual.base).__name__})")


def assert_same_types(actual: Any, expected: Any, label: str = "") -> None:
    """Assert the result's Python type is NumPy's, through tuples: a Python ``bool`` is not
    ``np.bool_``, a 0-d array is not a NumPy scalar, ``np.matrix`` is not ``ndarray``."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), f"{label}: tuple"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_types(a, e, f"{label} output {i}")
        return
    assert type(actual) is type(expected), (
        f"{label}: result type {type(actual).__name__}, NumPy {type(expected).__name__}")


Call = Sequence[Any] | Callable[[], Sequence[Any]]


def assert_calls_match_numpy(fn: Callable, calls: Sequence[Call],
                             ulps: int | Sequence[int] = 0, force: str | None = "cpu",
                             options: dict[str, Any] | None = None, rtol: float = 0.0,
                             atol: float = 0.0) -> Any:
    """Call one compiled ``fn`` once per entry of ``calls`` (each an argument tuple, or a
    callable making one, so aliased arguments can be built fresh) and compare every call
    with plain NumPy on identical inputs: result, exception type, and the arguments after
    the call. Sizes and layouts may change between calls: that is what it is for (a compiled
    version must not answer for arguments it was not traced for). ``rtol``/``atol``: for
    values that went through sums or products whose order NumPy does not fix (matmul, a
    reduction inside a loop). Returns the dispatcher."""
    jitted = autoroute(fn, **({"force": force} if force else {}), **(options or {}))
    for number, call in enumerate(calls, 1):
        make = call if callable(call) else (lambda call=call: _copies(call))
        numpy_args, autojit_args = list(make()), list(make())
        expected, error = call_numpy(fn, numpy_args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                if error is not None:
                    with pytest.raises(type(error)):
                        jitted(*autojit_args)
                else:
                    actual = jitted(*autojit_args)
        if error is None:
            assert_same_types(actual, expected, f"call {number}")
            compare_results(actual, expected, ulps, labels=[f"call {number} output {i}"
                                                            for i in range(len(expected))]
                            if isinstance(expected, tuple) else (), rtol=rtol, atol=atol)
            assert_same_ownership(actual, expected, f"call {number}")
        # the arguments after the call, also after one that raised (Python's partial writes)
        for index, (want, got) in enumerate(zip(numpy_args, autojit_args)):
            if isinstance(want, np.ndarray):
                assert_same_value(got, want, label=f"call {number}: argument {index} after",
                                  rtol=rtol, atol=atol)
    return jitted
