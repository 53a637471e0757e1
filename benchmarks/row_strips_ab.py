"""A/B of the native driver's row strips (``autojit/runtime/row_strips.py``) on heat.

Run:  python benchmarks/row_strips_ab.py [--size N] [--steps T] [--rows 4,8]
                                          [--repeat R]

One process, one compiled ``heat`` (``benchmarks/loops.py``): its loop with the strip
schedule turned off, with the automatic strip height and with each height given, and
Numba's explicit-loop ``heat_loops`` where Numba is installed; the samples taken in turns
(the order reversed every other round), each result checked (autojit's bit for bit against
NumPy's). Prints each median and minimum and the ratio to the schedule without strips.
A shared machine is noisy: compare only within one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# this folder's coverage.py would shadow the package numba imports (compare.py's note)
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))
import autojit  # noqa: E402
from autojit.runtime import row_strips  # noqa: E402
from benchmarks.loops import heat, heat_loops  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=150)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rows", default="", help="strip heights to time besides auto")
    parser.add_argument("--repeat", type=int, default=30)
    opts = parser.parse_args()
    u0 = np.random.default_rng(20).random((opts.size, opts.size))
    u0[0, :] = 1.0
    expected = heat(u0.copy(), opts.steps, 0.1)
    jitted = autojit.autoroute(heat)
    configs: list[tuple[str, Any]] = [("no strips", (False, 0)), ("strips auto", (True, 0))]
    configs += [(f"strips {h} rows", (True, int(h))) for h in opts.rows.split(",") if h]
    try:
        from numba import njit
        numba_heat = njit(fastmath=False, cache=False)(heat_loops)
        configs.append(("numba-loops", None))
    except ImportError:
        numba_heat = None

    def run(setting: Any) -> float:
        u = u0.copy()
        if setting is None:
            start = time.perf_counter()
            result = numba_heat(u, opts.steps, 0.1)
            elapsed = time.perf_counter() - start
            assert np.allclose(result, expected, rtol=1e-9, atol=1e-12)
            return elapsed
        row_strips.SETTINGS["enabled"], row_strips.SETTINGS["rows"] = setting
        start = time.perf_counter()
        result = jitted(u, opts.steps, 0.1)
        elapsed = time.perf_counter() - start
        assert np.array_equal(result, expected)
        return elapsed

    for _, setting in configs:   # compile and warm
        run(setting)
    times: dict[str, list[float]] = {name: [] for name, _ in configs}
    for round_ in range(opts.repeat):
        for name, setting in (configs if round_ % 2 else configs[::-1]):
            times[name].append(run(setting))
    base = statistics.median(times["no strips"])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:16s} median {median * 1e3:8.2f} ms  min {min(samples) * 1e3:8.2f} ms  "
              f"per step {median / opts.steps * 1e6:7.2f} us  / no strips {median / base:.3f}")
    print(f"heat {opts.size}x{opts.size} f64, T={opts.steps}, {opts.repeat} rounds in turns")


if __name__ == "__main__":
    main()
