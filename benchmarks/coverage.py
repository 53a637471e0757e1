"""Side-by-side timings of the coverage workloads: NumPy vs autojit in one process.

Run:  python benchmarks/coverage.py

Each row: median of 5 warm calls (the 100-element add: of 2000-call batches), the first
(compiling) call, and how many kernels and library steps autojit's plan has. Results are
checked against NumPy before timing. Quote ratios from one run: this machine is noisy.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from autojit import autoroute


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def add(x):
    return x + 1.0


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def mean_of_squares(x, y):
    return np.mean((x - y) ** 2)


def dense_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


def _median(fn, args, batch=1):
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            fn(*args)
        times.append((time.perf_counter() - start) / batch)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    rows = [
        ("chain 10M f64", chain, (rng.random(10_000_000),), 1),
        ("x + 1.0, 100 elements (us)", add, (rng.random(100),), 2000),
        ("softmax (256,128,128) f32", softmax, (rng.random((256, 128, 128), np.float32),), 1),
        ("layer norm (16384,1024) f32", layer_norm, (rng.random((16384, 1024), np.float32),), 1),
        ("mean((x-y)**2) 10M f64", mean_of_squares, (rng.random(10**7), rng.random(10**7)), 1),
        ("relu(x@w+b) (4096,1024)@(1024,1024) f32", dense_relu,
         (rng.random((4096, 1024), np.float32), rng.random((1024, 1024), np.float32),
          rng.random(1024, np.float32)), 1),
    ]
    print(f"{'workload':42s} {'NumPy':>10s} {'autojit':>10s} {'ratio':>7s} {'first call':>11s}"
          "  steps")
    for name, fn, args, batch in rows:
        jitted = autoroute(fn)
        start = time.perf_counter()
        result = jitted(*args)
        first = time.perf_counter() - start
        assert np.allclose(result, fn(*args), rtol=1e-4, atol=1e-6), name
        scale = 1e6 if batch > 1 else 1e3
        numpy_time, autojit_time = _median(fn, args, batch), _median(jitted, args, batch)
        plan = jitted.inspect(*args).plan
        print(f"{name:42s} {numpy_time * scale:10.2f} {autojit_time * scale:10.2f} "
              f"{numpy_time / autojit_time:6.2f}x {first * 1e3:9.1f}ms  "
              f"{len(plan.kernels)} kernel(s), {len(plan.libraries)} library")


if __name__ == "__main__":
    main()
