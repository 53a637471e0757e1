"""What routing costs a warm call: the cached decision (``Router.choose``) against the
v0 ``choose_route`` rule chain it replaced, side by side in one run.

Run:  .venv/bin/python -m pytest benchmarks/bench_routing.py
or    .venv/bin/python benchmarks/bench_routing.py    (timeit medians, no pytest)
Compare rows of one run only; these machines are noisy.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable

import numpy as np
import pytest

from autojit import autoroute
from autojit.config import current_settings
from autojit.routing.route import call_elements, current_router
from autojit.runtime.arrays import is_cupy_array
from autojit.runtime.devices import gpu_usable


def v0_choose_route(settings, args) -> tuple[str, str]:
    """The v0 rule chain (forced, CuPy, floor, probe), kept here as the baseline."""
    if settings.force:
        return settings.force, f"forced {settings.force}"
    if any(is_cupy_array(a) for a in args):
        return "gpu", "CuPy arguments live on the GPU"
    elements = call_elements(args)
    if "gpu" not in settings.backends or elements < settings.gpu_min_elems:
        return "cpu", f"{elements} elements < AUTOJIT_GPU_MIN_ELEMS={settings.gpu_min_elems}"
    if not gpu_usable():
        return "cpu", "no usable GPU"
    return "gpu", "elements >= floor"


def _warm_decision() -> dict[str, Callable[[], object]]:
    """Return name -> zero-argument callable for each way of deciding one warm call."""
    f = autoroute(lambda a, b: a * b + 1.0)
    x = np.ones(1_000_000)
    f(x, x)
    settings = current_settings()
    entry, sizes = f._entry_for((x, x), settings)
    router = current_router()
    return {"router.choose": lambda: router.choose(entry, sizes, settings),
            "v0 choose_route": lambda: v0_choose_route(settings, (x, x))}


@pytest.fixture(scope="module")
def decisions() -> dict[str, Callable[[], object]]:
    return _warm_decision()


@pytest.mark.parametrize("name", ["router.choose", "v0 choose_route"])
def test_decision_cost(benchmark, decisions, name):
    benchmark.group = "routing decision of a warm call"
    benchmark(decisions[name])


def medians(repeats: int = 15, number: int = 20_000) -> dict[str, float]:
    """Return each decision's median cost in nanoseconds (median over timeit repeats)."""
    result = {}
    for name, call in _warm_decision().items():
        runs = timeit.repeat(call, number=number, repeat=repeats)
        result[name] = statistics.median(runs) / number * 1e9
    return result


if __name__ == "__main__":
    for name, ns in medians().items():
        print(f"{name:16} {ns:8.0f} ns (median)")
