"""What a warm call costs: ``autoroute(lambda x: x + 1.0)`` on 100 float64 elements through
the native fast path and through the full Python path, against NumPy's ``x + 1.0`` and a
Numba ``@njit`` function, side by side in one run (issue 5: the fast path <= 2 us median).

``--mechanisms`` adds the ways of calling the same compiled kernel that were measured to
choose the fast path's mechanism: ctypes (what the full path uses), a Numba trampoline
that calls the kernel's function pointer, and the native ``Table`` alone.

Run:  .venv/bin/python benchmarks/bench_call_overhead.py [--mechanisms]   (medians, µs)
or    .venv/bin/python -m pytest benchmarks/bench_call_overhead.py
Compare rows of one run only; these machines are noisy.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from autojit import autoroute
from autojit.dispatch import fastpath

SIZE = 100


def _numba_njit() -> Callable:
    """Return ``numba.njit``, imported without this folder on ``sys.path``: its
    ``coverage.py`` would shadow the coverage package that Numba imports."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        from numba import njit
    finally:
        sys.path[:] = saved
    return njit


def _slow_path(f: Any) -> Any:
    """Return ``f`` with its fast path switched off (every call takes the full path)."""
    f._fastpath.after_cpu_call = lambda *args, **kwargs: None
    f._fast = None
    return f


def candidates() -> dict[str, Callable[[], object]]:
    """Return name -> zero-argument callable for each way of computing ``x + 1.0``."""
    x = np.arange(float(SIZE))
    fast = autoroute(lambda a: a + 1.0)
    slow = _slow_path(autoroute(lambda a: a + 1.0))
    numba_add = _numba_njit()(lambda a: a + 1.0)
    for warm in (fast, slow, numba_add):
        warm(x)
        warm(x)
    if fastpath.available():
        assert fast._fast is not None, "the fast path did not arm"
    return {"autojit": lambda: fast(x), "autojit full path": lambda: slow(x),
            "numpy": lambda: x + 1.0, "numba @njit": lambda: numba_add(x)}


def mechanisms() -> dict[str, Callable[[], object]]:
    """Return name -> callable for each way of calling one compiled kernel (out = x + 1)."""
    x = np.arange(float(SIZE))
    f = autoroute(lambda a: a + 1.0)
    f(x)
    entry = next(iter(f._cache.values()))[0]
    program = entry.programs("cpu")[0]
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(program.address)

    def by_ctypes() -> np.ndarray:
        out = np.empty_like(x)
        program.call([x.ctypes.data, out.ctypes.data], [x.size])
        return out

    @_numba_njit()
    def trampoline(a: np.ndarray) -> np.ndarray:
        out = np.empty_like(a)
        data = np.empty(2, np.intp)
        meta = np.empty(1, np.int64)
        data[0], data[1], meta[0] = a.ctypes.data, out.ctypes.data, a.size
        kernel(data.ctypes.data, meta.ctypes.data)
        return out

    trampoline(x)
    table = f._fast
    args = (x,)
    rows = {"ctypes call": by_ctypes, "numba trampoline": lambda: trampoline(x)}
    if table is not None:
        rows["native Table"] = lambda: table(args)
    return rows


def timings(rows: dict[str, Callable[[], object]], number: int = 5000,
            repeats: int = 15) -> dict[str, list[float]]:
    """Return each row's times per call in µs, one per repeat; rows are interleaved per
    repeat, so machine noise hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeats):
        for name, call in rows.items():
            samples[name].append(timeit.timeit(call, number=number) / number * 1e6)
    return samples


@pytest.fixture(scope="module")
def calls() -> dict[str, Callable[[], object]]:
    return candidates()


@pytest.mark.parametrize("name", ["autojit", "autojit full path", "numpy", "numba @njit"])
def test_call_overhead(benchmark: Any, calls: dict[str, Callable[[], object]],
                       name: str) -> None:
    benchmark.group = f"warm call, x + 1.0 on {SIZE} float64"
    benchmark(calls[name])


def main() -> None:
    rows = candidates()
    if "--mechanisms" in sys.argv:
        rows.update(mechanisms())
    print(f"warm call, x + 1.0 on {SIZE} float64 (µs per call, one run)")
    print(f"  {'':20s} {'median':>8s} {'min':>8s}")
    for name, times in timings(rows).items():
        print(f"  {name:20s} {statistics.median(times):8.3f} {min(times):8.3f}")


if __name__ == "__main__":
    main()
