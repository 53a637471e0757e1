"""Failure handling on the simulated GPU: every injected failure reruns on the CPU with the
NumPy result, inputs are never half-written, the circuit breaker opens after repeated
failures or a slow p99 and probes again after its cool-down; 8 threads compile once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from autojit import autoroute
from autojit.routing.breaker import COOLDOWN_S, Breaker
from autojit.routing.route import current_router, use_router
from autojit.routing.simulated import simulated_router

N = 50_000          # big enough that the simulated GPU wins by far


@pytest.fixture
def router():
    router = simulated_router(calibrate=False)
    with use_router(router):
        yield router


def _chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def _ran(f) -> str:
    return f.stats()["decisions"][-1]["ran_on"]


@pytest.mark.parametrize("kind", ["compile", "launch", "oom"])
def test_an_injected_gpu_failure_reruns_on_the_cpu_with_the_numpy_result(router, kind):
    f = autoroute(_chain, gpu_min_elems=0)
    x = np.linspace(-3, 3, N)
    np.testing.assert_allclose(f(x), _chain(x), rtol=1e-10, atol=1e-15)
    assert _ran(f) == "gpu"
    router.devices["gpu"].fail(kind)
    np.testing.assert_allclose(f(x), _chain(x), rtol=1e-10, atol=1e-15)
    stats = f.stats()
    assert _ran(f) == "cpu" and stats["gpu_failure_count"] == 1
    assert "GPU failed; rerun on the CPU" in stats["decisions"][-1]["reason"]
    assert stats["gpu_failures"][0].startswith("Simulated")
    f(x)
    assert _ran(f) == "gpu"          # one failure does not turn the GPU off


def test_a_failure_part_way_through_a_plan_leaves_the_inputs_untouched(router):
    f = autoroute(lambda a, b: np.sqrt(a * b + 1.0) - a, gpu_min_elems=0, fusion_max_ops=1)
    a, b = np.linspace(0, 1, N), np.linspace(1, 2, N)
    before = a.copy(), b.copy()
    router.devices["gpu"].fail("launch", after_kernels=2)     # 2 of 4 kernels have run
    np.testing.assert_allclose(f(a, b), np.sqrt(a * b + 1.0) - a, rtol=1e-15)
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])
    assert f.stats()["gpu_failure_count"] == 1 and _ran(f) == "cpu"


def test_breaker_opens_after_repeated_failures_and_probes_after_the_cooldown(router):
    gpu, clock = router.devices["gpu"], router.clock
    f = autoroute(_chain, gpu_min_elems=0)
    x = np.linspace(-3, 3, N)
    gpu.fail("launch", times=None)
    for _ in range(3):
        np.testing.assert_allclose(f(x), _chain(x), rtol=1e-10, atol=1e-15)
    assert router.breaker.state == "open" and gpu.failures == 3
    runs = gpu.runs
    for _ in range(5):                           # open: the GPU is not even tried
        f(x)
    assert gpu.runs == runs and "circuit breaker open" in f.stats()["decisions"][-1]["reason"]
    clock.advance(COOLDOWN_S)
    router.tick()                                # the sampler's beat wakes the breaker
    f(x)                                         # the half-open probe fails: open again
    assert gpu.runs == runs + 1 and router.breaker.state == "open"
    gpu.heal()
    clock.advance(COOLDOWN_S)
    router.tick()
    f(x)
    assert "breaker probe" in f.stats()["decisions"][-1]["reason"] and _ran(f) == "gpu"
    assert router.breaker.state == "closed"
    f(x)
    assert _ran(f) == "gpu" and f.stats()["gpu_failure_count"] == 4


def test_latency_breaker_opens_when_gpu_p99_exceeds_the_cpu_estimate(router):
    gpu, clock = router.devices["gpu"], router.clock
    f = autoroute(_chain, gpu_min_elems=0)
    x = np.linspace(-3, 3, N)
    gpu.spike_every, gpu.spike_factor = 20, 200.0      # rare, huge stalls
    for _ in range(64):
        f(x)
    assert _ran(f) == "gpu"                     # the median-based model still prefers it
    f(x)                                         # refresh: p99 is checked
    reason = f.stats()["decisions"][-1]["reason"]
    assert _ran(f) == "cpu" and "latency breaker open" in reason and "p99" in reason
    gpu.spike_every = 0
    clock.advance(COOLDOWN_S)
    router.tick()
    f(x)
    assert "breaker probe" in f.stats()["decisions"][-1]["reason"] and _ran(f) == "gpu"
    f(x)
    assert _ran(f) == "gpu"


def test_breaker_state_machine_with_a_fake_clock():
    now = [0.0]
    changes = []
    breaker = Breaker(threshold=2, cooldown_s=0.1, clock=lambda: now[0],
                      on_change=lambda: changes.append(breaker.state))
    breaker.failure("a")
    assert breaker.state == "closed" and breaker.allow()
    breaker.failure("b")
    assert breaker.state == "open" and not breaker.allow()
    now[0] = 0.1
    assert breaker.allow() and not breaker.allow()      # one probe at a time
    breaker.failure("c")
    assert breaker.state == "open" and breaker.reason == "c"
    now[0] = 0.2
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and changes == ["open", "half-open", "open",
                                                     "half-open", "closed"]


def _hammer(f, args, threads=8, calls=10):
    barrier = threading.Barrier(threads)
    results, errors = [], []

    def work():
        try:
            barrier.wait()
            results.extend(f(*args) for _ in range(calls))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return results, errors


@pytest.mark.parametrize("simulated", [False, True], ids=["cpu", "simulated-gpu"])
def test_eight_threads_calling_a_new_function_compile_it_once(simulated):
    router = simulated_router(calibrate=False) if simulated else current_router()
    with use_router(router):
        shift = 2.0 if simulated else 1.0    # two functions: the disk cache shares neither
        f = autoroute(lambda a, b: np.exp(a) * b - shift, gpu_min_elems=0)
        a, b = np.linspace(0, 1, N), np.linspace(1, 2, N)
        results, errors = _hammer(f, (a, b))
    assert errors == []
    want = np.exp(a) * b - shift
    assert len(results) == 80 and all(np.allclose(r, want, rtol=1e-14) for r in results)
    stats = f.stats()
    assert stats["compiles"] == 1 and stats["cache_misses"] == 1 and stats["calls"] == 80
    assert stats["routes"]["gpu" if simulated else "cpu"] == 80


def test_a_gpu_failing_its_calibration_gets_defaults_and_calls_still_succeed():
    router = simulated_router()
    router.devices["gpu"].fail("launch", times=None)
    with use_router(router):
        f = autoroute(_chain, gpu_min_elems=0)
        x = np.linspace(-3, 3, N)
        for _ in range(4):
            np.testing.assert_allclose(f(x), _chain(x), rtol=1e-10, atol=1e-15)
    assert router.calibration_source.startswith("defaults after failed calibration")
    assert router.breaker.state == "open" and _ran(f) == "cpu"


def test_a_broken_cost_model_routes_to_the_cpu_instead_of_failing_the_call(router):
    router.set_params({"cpu": router.params["cpu"]}, "the GPU entry is missing")
    f = autoroute(_chain, gpu_min_elems=0)
    x = np.linspace(-3, 3, N)
    np.testing.assert_allclose(f(x), _chain(x), rtol=1e-10, atol=1e-15)
    assert _ran(f) == "cpu" and f.stats()["decisions"][-1]["reason"] == "no GPU estimate"
