"""Native loops (``fuse.native_loop``) against the host loop they replace, in one process:
each case runs with the native kernel and with it switched off (the host loop running the
body's plan per iteration), interleaved, 7 rounds, medians; ns per iteration is
(t(N) - t(0)) / N. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/native_loops.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import autojit.runtime.regions as regions  # noqa: E402
from autojit import autoroute  # noqa: E402


def scalar_update(a, n):
    acc = np.sum(a)
    for _ in range(n):
        acc = acc * 0.5 + 1.0
    return acc


def diagonal_tanh(a):   # trace_tanh's loop (without its n*n ``a + acc``)
    acc = 0.0
    for i in range(a.shape[0]):
        acc += np.tanh(a[i, i])
    return acc


def axpy_rows(x, y, a):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]
    return y


#: name, function, arguments for n iterations, n for the native kernel, n for the host loop
CASES: list[tuple[str, Callable, Callable[[int], tuple], int, int]] = [
    ("scalar_update", scalar_update, lambda n: (np.ones(4), n), 100_000, 3000),
    ("diagonal_tanh", diagonal_tanh, lambda n: (np.ones((n, n)),), 2000, 300),
    ("axpy_rows", axpy_rows, lambda n: (np.ones(n), np.ones(n), 2.0), 100_000, 3000),
]


def _per_iteration(fn: Callable, args: Callable[[int], tuple], n: int) -> float:
    many, none = args(n), args(1)   # (one iteration: peeled into the trace)
    t0 = time.perf_counter()
    fn(*many)
    t1 = time.perf_counter()
    fn(*none)
    t2 = time.perf_counter()
    return ((t1 - t0) - (t2 - t1)) / n * 1e9


def main() -> None:
    native = regions._run_native
    off: Any = lambda *args: None   # noqa: E731 (the host loop)
    for name, fn, args, n_native, n_host in CASES:
        jitted = autoroute(fn, force="cpu")
        jitted(*args(3))
        rows: dict[str, list[float]] = {"native": [], "host loop": [], "numpy": []}
        for _ in range(7):
            for label, run, n in (("native", native, n_native), ("host loop", off, n_host)):
                regions._run_native = run
                rows[label].append(_per_iteration(jitted, args, n))
            rows["numpy"].append(_per_iteration(fn, args, n_host))
        regions._run_native = native
        print(f"{name}: " + ", ".join(f"{k} {statistics.median(v):.1f} ns/iteration"
                                      for k, v in rows.items()))


if __name__ == "__main__":
    main()
