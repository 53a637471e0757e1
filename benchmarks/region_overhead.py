"""Per-iteration cost of a loop region (issue 15) against plain NumPy: (t(N) - t(0)) / N,
in one process, the two interleaved, 9 rounds, medians. The functions are written as the
AST converter writes loops (``control.for_range``); run from the repository root:

    PYTHONPATH=$PWD python benchmarks/region_overhead.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cpu.control.test_regions_loops import heat  # noqa: E402

from autojit import autoroute  # noqa: E402
from autojit.tracer import control  # noqa: E402


def scalar_loop(a, n):
    # acc = np.sum(a); for i in range(n): acc = acc * 0.5 + 1.0
    acc = np.sum(a)

    def body(i, carried, captured):
        (acc,) = carried
        return (acc * 0.5 + 1.0,)
    (acc,) = control.for_range((n,), body, (acc,), (), control.Names(("acc",), (), __file__, 1))
    return acc


CASES = [("scalar body acc*0.5+1 (1 kernel)", scalar_loop, lambda n: (np.ones(8), n), 5000),
         ("heat 32x32", heat, lambda n: (np.ones((32, 32)), n, 0.1), 1000),
         ("heat 150x150", heat, lambda n: (np.ones((150, 150)), n, 0.1), 300)]


def main() -> None:
    for name, fn, args, count in CASES:
        jitted = autoroute(fn, force="cpu")
        jitted(*args(3))
        rows: dict[str, list[float]] = {"autojit": [], "numpy": []}
        for _ in range(9):
            for label, f in (("autojit", jitted), ("numpy", fn)):
                many, none = args(count), args(0)
                t0 = time.perf_counter()
                f(*many)
                t1 = time.perf_counter()
                f(*none)
                t2 = time.perf_counter()
                rows[label].append(((t1 - t0) - (t2 - t1)) / count * 1e6)
        stats = jitted.stats()
        print(f"{name}: " + ", ".join(f"{k} {statistics.median(v):.2f} us/iteration"
                                      for k, v in rows.items())
              + f"; python routes {stats['routes']['python']}")


if __name__ == "__main__":
    main()
