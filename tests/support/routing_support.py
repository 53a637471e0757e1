"""Helpers for the routing tests: the three demo workloads at any size, and a size sweep on
the simulated devices that prices every call on both devices (the oracle)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.config import current_settings
from autojit.demo import chain, gbm_step, normalise
from autojit.routing.costmodel import Work, cost_plan, measure_work
from autojit.routing.route import Router

#: name -> (function, make_arguments(n, rng))
WORKLOADS: dict[str, tuple[Callable, Callable[[int, np.random.Generator], tuple]]] = {
    "chain": (chain, lambda n, rng: (rng.uniform(-3.0, 3.0, n),)),
    "normalise": (normalise, lambda n, rng: (
        (rng.random(n, dtype=np.float32) * 255.0).astype(np.float32), 120.0, 0.02)),
    "gbm": (gbm_step, lambda n, rng: (100.0 * np.exp(rng.normal(0.0, 0.2, n)),
                                      rng.standard_normal(n), 1e-4, 0.0126)),
}


def work_of(dispatcher: Any, args: tuple) -> Work:
    """Return the cost model's Work of ``dispatcher(*args)`` (compiling it if needed)."""
    entry, sizes = dispatcher._entry_for(args, current_settings(dispatcher.options))
    return measure_work(cost_plan(entry.plan), sizes)


@dataclass
class SweepResult:
    """Totals of a sweep: simulated time the router spent, the oracle's, and the calls."""

    router_s: float = 0.0
    oracle_s: float = 0.0
    calls: int = 0
    unsafe: list[str] = field(default_factory=list)   # GPU picked although it did not fit
    wrong: list[str] = field(default_factory=list)    # results unlike NumPy


def sweep(router: Router, functions: dict[str, Any], sizes: Sequence[int],
          calls: int = 4, seed: int = 0) -> SweepResult:
    """Call every function at every size ``calls`` times through ``router`` (installed by
    the caller) and add up the simulated time against the best device per call."""
    cpu, gpu = router.devices["cpu"], router.devices["gpu"]
    rng = np.random.default_rng(seed)
    result = SweepResult()
    for name, dispatcher in functions.items():
        make = WORKLOADS[name][1]
        for n in sizes:
            args = make(n, rng)
            work = work_of(dispatcher, args)
            fits = work.working_set <= gpu.total_bytes - gpu.used_bytes
            best = min(cpu.seconds(work), gpu.seconds(work) if fits else math.inf)
            for _ in range(calls):
                _one_call(dispatcher, args, name, n, fits, result)
                result.oracle_s += best
    return result


def _one_call(dispatcher: Any, args: tuple, name: str, n: int, fits: bool,
              result: SweepResult) -> None:
    devices = dispatcher_router_devices()
    before = sum(d.busy_s for d in devices)
    got = dispatcher(*args)
    result.router_s += sum(d.busy_s for d in devices) - before
    result.calls += 1
    ran = dispatcher._stats.decision_log()[-1][1]["ran_on"]
    if ran == "gpu" and not fits:
        result.unsafe.append(f"{name} n={n}")
    want = dispatcher.fn(*args)
    if not np.allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6, equal_nan=True):
        result.wrong.append(f"{name} n={n}")


def dispatcher_router_devices() -> list[Any]:
    """Return the devices of the router in use."""
    from autojit.routing.route import current_router
    return list(current_router().devices.values())


def geometric_sizes(first_log2: float, last_log2: float, count: int) -> list[int]:
    """Return ``count`` sizes spaced evenly in log2 from 2**first to 2**last."""
    step = (last_log2 - first_log2) / (count - 1)
    return [round(2 ** (first_log2 + i * step)) for i in range(count)]
