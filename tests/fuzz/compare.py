"""Compare one autojit answer with NumPy's, bit for bit except where an op is inexact.

Checked: the result's Python type (``float`` is not ``np.float64``, a 0-d array is not a
NumPy scalar, ``bool`` is not ``np.bool_``), tuple structure, dtype, shape, values (NaN
positions and zero signs included), and the same for every argument after the call.
Tolerance only for values tainted by an inexact op (see ``program.py``):

* elementwise transcendentals: ``|a - e| <= k * eps * (|e| + scale)``, k = the summed ULP
  bounds of the ops on the path (+2 for the exact ops between them);
* float reductions (summation order): ``n * eps * n * scale`` more, where n bounds the number
  of terms (the largest array of the call) and ``n * scale`` bounds ``sum|x|``;
* a non-finite value against a finite one is allowed only where the finite one is within
  that tolerance of overflow; NaN against a number never; zero signs are not compared.

Values are not compared at all (``values=False``) in a call where NumPy's float -> uint32
cast answered by position, or whose NumPy answer depends on how np.fmax/np.fmin break a tie
of two zeros (``runner._position_dependent`` and ``runner._tie_dependent`` give the rules).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.fuzz.program import Taint


def _kind(v: Any) -> str:
    return type(v).__module__.replace("builtins", "").replace("numpy", "np") + \
        ("." if type(v).__module__ != "builtins" else "") + type(v).__name__


def magnitude(values: list[Any]) -> float:
    """Largest finite |x| over the numeric contents of ``values`` (0 when none): integer
    inputs count too (``np.var(np.sqrt(int_array))`` rounds at their scale)."""
    best = 0.0
    for v in values:
        if isinstance(v, tuple):
            best = max(best, magnitude(list(v)))
            continue
        if isinstance(v, (np.ndarray, np.generic, float, int)):
            try:
                a = np.asarray(v, dtype=np.float64)
            except (OverflowError, TypeError, ValueError):
                continue
            if a.size:
                with np.errstate(all="ignore"):
                    finite = np.abs(a[np.isfinite(a)])
                if finite.size:
                    best = max(best, float(finite.max()))
    return best


def _eps(dtype: np.dtype, floor: float) -> float:
    return max(float(np.finfo(dtype).eps), floor)


def values_differ(a: np.ndarray, e: np.ndarray, taint: Taint | None, scale: float,
                  n: int, eps_floor: float) -> str | None:
    """A description of the first differing element, or None."""
    if a.dtype.kind not in "fc":
        bad = a != e
    elif taint is None or taint.exact:
        same = ((a == e) & (np.signbit(a) == np.signbit(e))) | (np.isnan(a) & np.isnan(e))
        bad = ~same
    else:
        eps = _eps(a.dtype, eps_floor)
        k = taint.ulps + 2.0 + (n if taint.reduced else 0.0)
        atol = k * eps * scale * (n if taint.reduced else 1.0)
        with np.errstate(all="ignore"):
            a64, e64 = a.astype(np.float64), e.astype(np.float64)
            finite = np.isfinite(a64) & np.isfinite(e64)
            close = np.abs(a64 - e64) <= atol + k * eps * np.abs(e64)
            near_max = float(np.finfo(a.dtype).max) * (1.0 - min(0.5, k * eps))
            overflow = (~np.isnan(a64) & ~np.isnan(e64) &
                        (np.maximum(np.abs(a64), np.abs(e64)) >= near_max) &
                        (np.sign(a64) == np.sign(e64)))
            same_special = (np.isnan(a64) & np.isnan(e64)) | (a64 == e64)
            bad = ~((finite & close) | same_special | overflow)
    if not np.any(bad):
        return None
    where = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0])
    got = np.atleast_1d(a)[where]
    want = np.atleast_1d(e)[where]
    return (f"{int(np.count_nonzero(bad))} of {a.size} values differ; first at {where}: "
            f"got {got!r}, NumPy {want!r}")


def compare(actual: Any, expected: Any, taint: Taint | None, scale: float, n: int,
            eps_floor: float = 0.0, values: bool = True) -> tuple[str, str] | None:
    """(kind, detail) of the first difference between autojit's ``actual`` and NumPy's
    ``expected``, or None when they agree (``values`` False: all but the values)."""
    if type(actual) is not type(expected):
        return "result-type", f"got {_kind(actual)}, NumPy {_kind(expected)}"
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return "result-type", f"got {len(actual)} outputs, NumPy {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            found = compare(a, e, taint, scale, n, eps_floor, values)
            if found:
                return found[0], f"output {i}: {found[1]}"
        return None
    if isinstance(expected, (np.ndarray, np.generic)):
        a, e = np.asarray(actual), np.asarray(expected)
        if a.dtype != e.dtype:
            return "dtype", f"got {a.dtype}, NumPy {e.dtype}"
        if a.shape != e.shape:
            return "shape", f"got {a.shape}, NumPy {e.shape}"
        found = values_differ(a, e, taint, scale, n, eps_floor) if values else None
        return ("values", found) if found else None
    if not values:
        return None
    if isinstance(expected, float):
        found = values_differ(np.asarray(actual), np.asarray(expected), taint, scale, n,
                              eps_floor)
        return ("values", found) if found else None
    if expected is None or isinstance(expected, (bool, int, complex, str)):
        return None if actual == expected else ("values", f"got {actual!r}, NumPy "
                                                          f"{expected!r}")
    try:
        same = bool(actual == expected)
    except Exception:  # noqa: BLE001 - an odd object: compare its text
        same = repr(actual) == repr(expected)
    return None if same else ("values", f"got {actual!r:.200}, NumPy {expected!r:.200}")
