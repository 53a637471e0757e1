"""``python -m autojit.selftest --gpu``: check routing on a GPU machine in under 5 minutes.

1. runs the ``gpu``-marked tests (``tests/gpu``, when the source tree is at hand);
2. calibrates the CPU and the GPU (``autojit calibrate``);
3. sweeps sizes for three workloads (the demo's chain, normalise and gbm step), recording
   the route the router chose and the measured time of the same call forced to each device;
4. writes a JSON report (``--out``, default ``autojit-selftest.json``).

The command line (and its printing) lives in ``__main__.py``.

Without a usable GPU it says so and exits 3. ``--simulated`` runs steps 2-4 on the
simulated CPU and GPU instead (any machine; times are the simulated ones).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autojit.dispatch.dispatcher import Dispatcher

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3
REPEATS = 3


def _workloads() -> dict[str, tuple[Callable, Callable[[int, np.random.Generator], tuple]]]:
    """Return name -> (function, make_arguments(n, rng)) for the three demo workloads."""
    from autojit.demo import chain, gbm_step, normalise
    return {
        "chain": (chain, lambda n, rng: (rng.uniform(-3.0, 3.0, n),)),
        "normalise": (normalise, lambda n, rng: (
            (rng.random(n, dtype=np.float32) * 255.0).astype(np.float32), 120.0, 0.02)),
        "gbm": (gbm_step, lambda n, rng: (100.0 * np.exp(rng.normal(0.0, 0.2, n)),
                                          rng.standard_normal(n), 1e-4, 0.0126)),
    }


def no_gpu_reason() -> str | None:
    """Return why no GPU is usable, or None when one is."""
    from autojit.runtime.devices import gpu_usable
    if gpu_usable():
        return None
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
        return f"CuPy sees {count} CUDA device(s) but none is usable"
    except Exception as exc:  # ImportError, cudaErrorInsufficientDriver, ...
        return f"{type(exc).__name__}: {exc}".splitlines()[0]


def run_gpu_tests(budget_s: float) -> dict[str, Any]:
    """Run ``pytest -m gpu tests/gpu``; return its exit code and the last lines of output."""
    tests = Path(__file__).resolve().parents[2] / "tests" / "gpu"   # the source tree
    if not tests.is_dir():
        return {"ran": False, "reason": f"{tests} not found (installed package)"}
    command = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", str(tests)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=budget_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"ran": True, "passed": False, "reason": f"timed out after {budget_s:.0f} s"}
    tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
    return {"ran": True, "passed": done.returncode == 0, "returncode": done.returncode,
            "tail": tail}


def _last_seconds(dispatcher: Dispatcher, route: str) -> float:
    """Return the device time of ``dispatcher``'s last call on ``route``."""
    return dispatcher._stats.latencies[route][-1]


def _measure(dispatcher: Dispatcher, args: tuple, force: str | None) -> tuple[float, dict, str]:
    """Return (median device seconds, last decision, route run) of REPEATS calls."""
    import autojit
    options = {"force": force} if force else {}
    times, decision, ran = [], {}, ""
    with autojit.config(**options):
        dispatcher(*args)   # warm: compile, first transfer
        for _ in range(REPEATS):
            dispatcher(*args)
            decision = dispatcher._stats.decision_log()[-1][1]
            ran = decision["ran_on"]
            times.append(_last_seconds(dispatcher, ran))
    return statistics.median(times), decision, ran


def sweep(sizes: Sequence[int], deadline: float, seed: int = 0) -> list[dict[str, Any]]:
    """Return one row per (workload, size): the routed call's route, reason and time, and
    the same call's time forced to the CPU and to the GPU (seconds, device-measured)."""
    from autojit import autoroute
    rows = []
    rng = np.random.default_rng(seed)
    for name, (function, make) in _workloads().items():
        routed = autoroute(function)
        for n in sizes:
            if time.monotonic() > deadline:
                return rows
            args = make(n, rng)
            cpu_s, _, _ = _measure(routed, args, "cpu")
            gpu_s, _, ran_gpu = _measure(routed, args, "gpu")
            routed_s, decision, ran = _measure(routed, args, None)
            best = "cpu" if ran_gpu != "gpu" or cpu_s <= gpu_s else "gpu"
            rows.append({"workload": name, "n": n, "route": ran, "reason": decision["reason"],
                         "cpu_s": cpu_s, "gpu_s": gpu_s if ran_gpu == "gpu" else None,
                         "routed_s": routed_s, "best": best, "agrees": ran == best,
                         "cpu_estimate_s": decision["cpu_estimate_s"],
                         "gpu_estimate_s": decision["gpu_estimate_s"]})
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    routed = sum(r["routed_s"] for r in rows)
    oracle = sum(min(r["cpu_s"], r["gpu_s"] or r["cpu_s"]) for r in rows)
    return {"rows": len(rows), "agreement": sum(r["agrees"] for r in rows) / max(len(rows), 1),
            "routed_total_s": routed, "oracle_total_s": oracle,
            "routed_over_oracle": routed / oracle if oracle else None}


def _calibrate(router: Any) -> dict[str, Any]:
    from autojit.config import current_settings
    from autojit.routing.calibration import recalibrate
    started = time.perf_counter()
    settings = current_settings()
    params, source = recalibrate(router, settings.cache_dir, settings)
    return {"seconds": time.perf_counter() - started, "source": source,
            "params": {name: vars(p) for name, p in params.items()}}


def run_selftest(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Run the checks chosen by ``args``; return (report, exit code)."""
    from autojit.routing.route import current_router, use_router
    from autojit.routing.simulated import simulated_router
    deadline = time.monotonic() + args.budget
    report: dict[str, Any] = {"mode": "simulated" if args.simulated else "gpu"}
    if args.simulated:
        router, sizes = simulated_router(), [1 << k for k in range(6, 19, 2)]
    else:
        router, sizes = current_router(), [1 << k for k in range(10, 27, 2)]
        report["gpu_tests"] = (run_gpu_tests(min(150.0, args.budget / 2))
                               if not args.skip_tests else {"ran": False, "reason": "skipped"})
    with use_router(router) if args.simulated else contextlib.nullcontext():
        report["calibration"] = _calibrate(router)
        rows = sweep(sizes, deadline)
    report["sweep"], report["summary"] = rows, _summary(rows)
    tests_ok = report.get("gpu_tests", {}).get("passed", True) is not False
    return report, EXIT_OK if tests_ok and rows else EXIT_FAILED
