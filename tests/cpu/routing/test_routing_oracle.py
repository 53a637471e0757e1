"""The router against the oracle on the simulated devices: 20 sizes x 3 workloads x 3 load
levels, within 10% of the best device per call, never a GPU that cannot hold the data;
and the online correction fixing a wrong model, by observation and by exploration."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.routing_support import WORKLOADS, geometric_sizes, sweep

import autojit
from autojit import autoroute
from autojit.config import current_settings
from autojit.routing.costmodel import DeviceParams
from autojit.routing.route import use_router
from autojit.routing.simulated import SIM_CPU, SIM_GPU, simulated_router

SIZES = geometric_sizes(6, 20, 20)
#: (GPU utilisation, CPU load per core): idle, busy, GPU saturated past the 0.8 threshold
LOADS = [(0.0, 0.0), (0.5, 1.0), (0.9, 2.0)]


@pytest.fixture(scope="module")
def sweep_results() -> dict[tuple[float, float], object]:
    router = simulated_router(
        gpu_memory=20 << 20,   # the largest gbm calls (3 x 8 MiB) do not fit
        cpu_options={"cache_bytes": 1 << 18, "cache_speedup": 2.0, "jitter": 0.05},
        gpu_options={"jitter": 0.05, "seed": 1})
    results = {}
    with use_router(router), autojit.config(gpu_min_elems=0):
        router.params_for("cpu", current_settings())      # calibrate before timing
        functions = {name: autoroute(fn) for name, (fn, _) in WORKLOADS.items()}
        for gpu_load, cpu_load in LOADS:
            router.devices["gpu"].utilisation = gpu_load
            router.devices["cpu"].utilisation = cpu_load
            router.sample_now()
            results[gpu_load, cpu_load] = sweep(router, functions, SIZES)
        results["out_of_memory"] = router.devices["gpu"].out_of_memory
        results["routes"] = autojit.stats()["routes"]
    return results


@pytest.mark.parametrize("load", LOADS, ids=["idle", "busy", "saturated"])
def test_router_total_time_is_within_10_percent_of_the_oracle(sweep_results, load):
    result = sweep_results[load]
    assert result.calls == 20 * 3 * 4
    assert result.wrong == []
    assert result.router_s <= 1.10 * result.oracle_s, (result.router_s, result.oracle_s)


def test_the_router_never_picks_a_gpu_that_cannot_hold_the_working_set(sweep_results):
    for load in LOADS:
        assert sweep_results[load].unsafe == []
    assert sweep_results["out_of_memory"] == 0
    assert sweep_results["routes"]["gpu"] > 0 and sweep_results["routes"]["cpu"] > 0


def _calls(f, args, count):
    for _ in range(count):
        f(*args)
    return f.stats()


def test_observations_correct_a_model_that_overrates_the_gpu():
    optimistic = DeviceParams(SIM_GPU.overhead_s / 4, SIM_GPU.launch_s / 4,
                              SIM_GPU.bandwidth, SIM_GPU.flop_rate, SIM_GPU.transfer * 20)
    router = simulated_router(calibrate=False)
    router.set_params({"cpu": SIM_CPU, "gpu": optimistic}, "wrong on purpose")
    with use_router(router):
        f = autoroute(WORKLOADS["gbm"][0], gpu_min_elems=0, explore=0.0)
        args = WORKLOADS["gbm"][1](3000, np.random.default_rng(0))
        stats = _calls(f, args, 70)      # one refresh interval on the GPU, then corrected
    assert stats["decisions"][0]["ran_on"] == "gpu"
    assert stats["decisions"][-1]["ran_on"] == "cpu"
    assert stats["explorations"] == 0


def test_exploration_corrects_a_model_that_underrates_the_gpu():
    pessimistic = DeviceParams(SIM_GPU.overhead_s, SIM_GPU.launch_s, SIM_GPU.bandwidth,
                               SIM_GPU.flop_rate, transfer=SIM_GPU.transfer / 4)
    for explore, expect in ((0.0, "cpu"), (0.03, "gpu")):
        router = simulated_router(calibrate=False)
        router.set_params({"cpu": SIM_CPU, "gpu": pessimistic}, "wrong on purpose")
        with use_router(router):
            f = autoroute(WORKLOADS["gbm"][0], gpu_min_elems=0, explore=explore)
            args = WORKLOADS["gbm"][1](6000, np.random.default_rng(0))
            stats = _calls(f, args, 300)
        assert stats["decisions"][-1]["ran_on"] == expect, explore
        assert stats["explorations"] <= 300 * explore + 1


def test_exploration_rate_is_bounded_when_the_model_is_right():
    router = simulated_router(calibrate=False)
    with use_router(router):
        f = autoroute(WORKLOADS["chain"][0], gpu_min_elems=0, explore=0.03)
        args = WORKLOADS["chain"][1](1200, np.random.default_rng(0))   # near the crossover
        stats = _calls(f, args, 3000)
    assert 1 <= stats["explorations"] <= 3000 * 0.03 / 4
