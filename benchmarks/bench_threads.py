"""1 thread vs N threads on the issue-5 workloads, side by side in one process.

Run:  python benchmarks/bench_threads.py [threads]     (default: the usable cores)
      python benchmarks/bench_threads.py --threshold    (where splitting starts to pay)

Each row: the median of 7 warm calls with ``num_threads=1`` and with ``num_threads=N``
(interleaved, so machine load hits both alike), and their ratio. Results are checked
against NumPy first. This machine is shared and noisy: quote ratios from one run.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import autojit
from autojit import autoroute
from autojit.config import current_settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import load_workloads  # noqa: E402  (this folder, then taken off the path)

_programs = load_workloads()
chain, layer_norm, softmax = _programs.chain, _programs.layer_norm, _programs.softmax
mean_of_squares = _programs.mean_of_squares


def image_norm(x):
    mean = x.mean(axis=(1, 2), keepdims=True)
    return (x - mean) / (x.std(axis=(1, 2), keepdims=True) + 1e-5)


def add(x):
    return x + 1.0


def _workloads() -> list[tuple[str, Callable, tuple]]:
    rng = np.random.default_rng(0)
    return [
        ("tanh(cos(exp(sin x)))  10M f64", chain, (rng.random(10_000_000),)),
        ("mean((x-y)**2)         10M f64", mean_of_squares,
         (rng.random(10_000_000), rng.random(10_000_000))),
        ("softmax (256,128,128)  f32", softmax, (rng.random((256, 128, 128), np.float32),)),
        ("layer norm (16384,1024) f32", layer_norm,
         (rng.random((16384, 1024), np.float32),)),
        ("image norm (2,2160,3840) f32", image_norm,
         (rng.random((2, 2160, 3840), np.float32),)),
        ("x + 1.0                10M f64", add, (rng.random(10_000_000),)),
    ]


def _time(fn: Callable, args: tuple, threads: int, min_work: int | None = None) -> float:
    options = {"num_threads": threads}
    if min_work is not None:
        options["thread_min_work"] = min_work
    with autojit.config(**options):
        start = time.perf_counter()
        fn(*args)
        return time.perf_counter() - start


def compare(threads: int, repeats: int = 7) -> None:
    """Print the 1-thread and ``threads``-thread medians of each workload."""
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.2f} before the run (a load near the "
          "CPU count leaves no core for a second thread)")
    print(f"{'workload':32s} {'1 thread':>10s} {f'{threads} threads':>11s} {'speedup':>8s}")
    for name, fn, args in _workloads():
        jitted = autoroute(fn, force="cpu")
        expected = fn(*args)
        for t in (1, threads):
            with autojit.config(num_threads=t):
                assert np.allclose(jitted(*args), expected, rtol=1e-4, atol=1e-6), name
        one, many = [], []
        for _ in range(repeats):
            one.append(_time(jitted, args, 1))
            many.append(_time(jitted, args, threads))
        a, b = statistics.median(one), statistics.median(many)
        print(f"{name:32s} {a * 1e3:8.2f}ms {b * 1e3:9.2f}ms {a / b:7.2f}x")


def _per_call(fn: Callable, args: tuple, threads: int, min_work: int, repeats: int) -> float:
    """Return the median seconds per call, all calls inside one ``config`` block (entering
    one per call would re-arm the fast path each time and swamp small calls)."""
    times = []
    with autojit.config(num_threads=threads, thread_min_work=min_work):
        fn(*args)
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def threshold(threads: int, repeats: int = 201) -> None:
    """Print ``x + 1.0`` and ``sin(x)`` per-call medians, on 1 thread and forced onto
    ``threads``, by size: where the split starts to pay is where ``thread_min_work``
    belongs (work = elements × cost: 3 for ``x + 1.0``, 14 for ``sin``)."""
    rng = np.random.default_rng(0)
    for label, fn in (("x + 1.0", add), ("sin(x)", np.sin)):
        jitted = autoroute(fn, force="cpu")
        print(f"{label:8s} {'elements':>9s} {'1 thread':>10s} {f'{threads} forced':>10s}")
        for n in (4_000, 16_000, 64_000, 256_000, 1_000_000):
            x = rng.random(n)
            # the same path both ways: min_work 0 (no fast path), 1 thread or forced
            one = _per_call(jitted, (x,), 1, 0, repeats)
            many = _per_call(jitted, (x,), threads, 0, repeats)
            print(f"{'':8s} {n:9d} {one * 1e6:8.1f}us {many * 1e6:8.1f}us")


if __name__ == "__main__":
    count = next((int(a) for a in sys.argv[1:] if a.isdigit()), 0)
    count = count or max(current_settings().num_threads, 2)
    if "--threshold" in sys.argv:
        threshold(count)
    else:
        compare(count)
