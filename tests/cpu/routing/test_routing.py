"""Routing: the cost model, calibration, knobs, residency, device load, the hot path, the
CPU-only machine and observability — deterministic, on the simulated devices where a GPU
is needed (the GPU execution path itself is tested in tests/gpu)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import autojit
from autojit import autoroute
from autojit.config import current_settings
from autojit.fuse.plan import plan_kernels
from autojit.routing.calibration import calibrate, load_or_calibrate
from autojit.routing.costmodel import DeviceParams, cost_plan, estimate, measure_work
from autojit.routing.load import LoadSampler
from autojit.routing.route import Router, use_router
from autojit.routing.simulated import SIM_CPU, SIM_GPU, DeviceArray, simulated_router
from autojit.runtime.arrays import ArrayKey
from autojit.runtime.binding import bind_sizes
from autojit.runtime.devices import HostDevice, gpu_usable
from autojit.runtime.executable import Executable
from autojit.tracer import trace_function

BIG = 200_000       # the simulated GPU wins by far
SMALL = 100         # the simulated CPU wins by far


@pytest.fixture
def router():
    router = simulated_router(calibrate=False)
    with use_router(router):
        yield router


def _plan(fn, *args, max_ops=128):
    plan = plan_kernels(trace_function(fn, args, "f"), [True] * len(args), max_ops)
    return plan, bind_sizes(plan, args)


def _last(f) -> dict:
    return f.stats()["decisions"][-1]


# -- cost model ----------------------------------------------------------------------------
def test_cost_model_counts_bytes_flops_launches_and_the_working_set():
    a = np.ones(1000)
    plan, sizes = _plan(lambda a, b: a * b + 1.0, a, a)
    work = measure_work(cost_plan(plan), sizes)
    assert work.kernels == ((24_000.0, 2_000.0),) and work.launches == 1
    assert (work.host_input_bytes, work.output_bytes, work.working_set) == (16_000, 8_000,
                                                                          24_000)
    split, sizes = _plan(lambda a, b: a * b + 1.0, a, a, max_ops=1)
    assert measure_work(cost_plan(split), sizes).launches == 2
    plan, sizes = _plan(lambda a, b: np.sin(a) + b, np.ones((3, 4)), np.ones(4))
    work = measure_work(cost_plan(plan), sizes, on_device=frozenset({1}))
    assert work.kernels == ((96.0 + 32.0 + 96.0, 12 * 17.0),)   # b is broadcast: 4 reads
    assert (work.host_input_bytes, work.device_input_bytes) == (96, 32)


def test_estimate_is_overhead_launches_transfers_and_the_slower_of_memory_and_math():
    params = DeviceParams(overhead_s=1e-5, launch_s=2e-6, bandwidth=1e9, flop_rate=1e8,
                          transfer=1e8)
    plan, sizes = _plan(lambda a: a + 1.0, np.ones(1000))
    work = measure_work(cost_plan(plan), sizes)
    fixed, per_element = estimate(params, work, moved=8000, transfer=params.transfer,
                                  slowdown=2.0)
    assert fixed == pytest.approx(1e-5 + 2 * 2e-6)
    memory, math_, transfer = 16_000 / 1e9, 1000 / 1e8, 8000 / 1e8
    assert per_element * 1000 == pytest.approx(2 * max(memory, math_) + transfer)


# -- calibration ---------------------------------------------------------------------------
def test_calibration_probes_recover_the_simulated_devices():
    router = simulated_router()
    measured = calibrate(list(router.devices.values()))
    for name, truth in (("cpu", SIM_CPU), ("gpu", SIM_GPU)):
        for field in ("overhead_s", "launch_s", "bandwidth", "flop_rate", "transfer"):
            assert getattr(measured[name], field) == pytest.approx(getattr(truth, field),
                                                                   rel=0.02), (name, field)


def test_calibration_runs_on_first_need_only():
    router = simulated_router()
    with use_router(router):
        f = autoroute(lambda a: a * 3.0, force="cpu")
        f(np.ones(BIG))
        assert router.params is None                # forced: no model, no calibration
        g = autoroute(lambda a: a * 4.0, gpu_min_elems=0)
        g(np.ones(BIG))
    assert router.calibration_source.startswith("calibrated")
    assert _last(g)["cpu_estimate_s"] > _last(g)["gpu_estimate_s"]


def test_autojit_calibrate_stores_per_machine_and_is_loaded_later(tmp_path, capsys):
    from autojit.explain.cli import main
    assert main(["calibrate", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^cpu: overhead .* GB/s", out, re.M) and "stored" in out
    if not gpu_usable():
        assert "no usable GPU: only the CPU was calibrated" in out
    files = list((tmp_path / "calibration").glob("*.json"))
    assert len(files) == 1 and "cpu" in json.loads(files[0].read_text())["devices"]
    params, source = load_or_calibrate(Router({"cpu": HostDevice(), "gpu": _NoGpu()}),
                                       str(tmp_path))
    assert source.startswith("loaded") and params["cpu"].bandwidth > 0


class _NoGpu:
    name, persistent = "gpu", True

    def usable(self) -> bool:
        return False


def test_env_cost_overrides_win_and_the_min_elems_floor_holds(router, monkeypatch):
    f = autoroute(lambda a: np.exp(a) * 2.0)
    x = np.ones(BIG)
    with autojit.config(gpu_min_elems=0):
        f(x)
        assert _last(f)["ran_on"] == "gpu"
    monkeypatch.setenv("AUTOJIT_COST", "gpu.transfer=1e6")
    monkeypatch.setenv("AUTOJIT_GPU_MIN_ELEMS", "0")
    autojit.reload_environment()
    try:
        f(x)
        assert _last(f)["ran_on"] == "cpu" and _last(f)["reason"].startswith("model: cpu")
        monkeypatch.setenv("AUTOJIT_COST", "")
        monkeypatch.setenv("AUTOJIT_GPU_MIN_ELEMS", str(BIG + 1))
        autojit.reload_environment()
        f(x)
        assert _last(f)["ran_on"] == "cpu"
        assert _last(f)["reason"] == f"{BIG} elements < AUTOJIT_GPU_MIN_ELEMS={BIG + 1}"
    finally:
        monkeypatch.delenv("AUTOJIT_COST")
        monkeypatch.delenv("AUTOJIT_GPU_MIN_ELEMS")
        autojit.reload_environment()


def test_options_are_checked():
    with pytest.raises(ValueError, match="residency must be host, device or auto"):
        autoroute(lambda a: a, residency="gpu")
    with pytest.raises(TypeError, match="unknown autojit option"):
        autoroute(lambda a: a, residenc="host")


# -- residency -----------------------------------------------------------------------------
def test_numpy_inputs_pay_their_transfers_and_are_counted(router):
    f = autoroute(lambda a, b: a * b, gpu_min_elems=0)
    a = np.ones(BIG)
    f(a, a)
    stats = f.stats()
    assert stats["routes"]["gpu"] == 1
    assert stats["bytes_moved"] == {"host_to_device": 2 * a.nbytes, "device_to_host": a.nbytes}
    assert stats["residency_ratio"] == 0.0 and stats["gpu_hit_rate"] == 1.0
    transfers = 3 * a.nbytes / router.params["gpu"].transfer     # 2 arrays in, 1 back
    assert stats["decisions"][0]["gpu_estimate_s"] > transfers


def test_residency_option_decides_where_results_live(router):
    host = autoroute(lambda a: a * 2.0, gpu_min_elems=0, residency="host")
    device = autoroute(lambda a: a * 2.0, gpu_min_elems=0, residency="device")
    x = np.arange(BIG, dtype=np.float64)
    on_host, on_device = host(x), device(x)
    assert type(on_host) is np.ndarray and isinstance(on_device, DeviceArray)
    np.testing.assert_array_equal(np.asarray(on_device), x * 2.0)
    assert device.stats()["bytes_moved"]["device_to_host"] == 0
    assert _last(device)["gpu_estimate_s"] < _last(host)["gpu_estimate_s"]
    device(on_device)                     # the simulated GPU already holds this input
    assert device.stats()["residency_ratio"] == pytest.approx(0.5)
    small = device(np.ones(SMALL))        # a CPU result is placed on the GPU
    assert _last(device)["ran_on"] == "cpu" and isinstance(small, DeviceArray)
    assert device.stats()["bytes_moved"]["host_to_device"] == x.nbytes + SMALL * 8


def test_cupy_arguments_run_on_the_gpu(router):
    plan, sizes = _plan(lambda a: a + 1.0, np.ones(10))
    entry = Executable((ArrayKey("g", "d", 1, (False,), True, False),), plan)
    decision, _, _ = router.choose(entry, sizes, current_settings())
    assert (decision.route, decision.reason) == ("gpu", "CuPy arguments live on the GPU")
    assert decision.to_host is False          # auto residency: results stay on the GPU


# -- device load ---------------------------------------------------------------------------
def test_gpu_above_the_utilisation_threshold_is_penalised(router):
    f = autoroute(lambda a: np.exp(a) + 1.0, gpu_min_elems=0)
    x = np.ones(BIG)
    f(x)
    idle = _last(f)["gpu_estimate_s"]
    router.devices["gpu"].utilisation = 0.9
    router.sample_now()
    f(x)
    busy = _last(f)
    assert busy["gpu_estimate_s"] > idle
    assert "GPU 90% busy >= AUTOJIT_GPU_UTIL_THRESH=0.8: estimate x20" in busy["reason"]


def test_a_working_set_larger_than_free_gpu_memory_stays_on_the_cpu():
    router = simulated_router(calibrate=False, gpu_memory=1 << 30)
    with use_router(router):
        f = autoroute(lambda a, b: a + b, gpu_min_elems=0)
        x = np.ones(BIG)
        f(x, x)
        assert _last(f)["ran_on"] == "gpu"
        router.devices["gpu"].used_bytes = (1 << 30) - 2 * x.nbytes   # 3 arrays do not fit
        router.sample_now()
        f(x, x)
    assert _last(f)["ran_on"] == "cpu" and "free GPU memory" in _last(f)["reason"]
    assert router.devices["gpu"].out_of_memory == 0


def test_load_is_sampled_off_the_hot_path_and_small_changes_keep_decisions(router):
    f = autoroute(lambda a: a * 5.0, gpu_min_elems=0)
    x = np.ones(BIG)
    f(x)
    gpu = router.devices["gpu"]
    samples, epoch = gpu.load_samples, router.epoch
    for _ in range(50):
        f(x)
    assert gpu.load_samples == samples                     # calls never sample
    gpu.utilisation = 0.01
    router.sample_now()
    assert router.epoch is epoch                           # below the 5% step
    gpu.utilisation = 0.3
    router.sample_now()
    assert router.epoch is not epoch


def test_the_sampler_thread_samples_at_most_every_100_ms():
    ticks = []

    class Counting:
        def tick(self) -> None:
            ticks.append(time.monotonic())

    sampler = LoadSampler(Counting(), interval=0.01)      # asks for 10 ms, gets 100 ms
    sampler.start()
    time.sleep(0.35)
    sampler.stop()
    assert 1 <= len(ticks) <= 4
    assert all(b - a >= 0.09 for a, b in zip(ticks, ticks[1:]))


# -- the hot path and the CPU-only machine -------------------------------------------------
def test_warm_calls_reuse_one_cached_decision(router):
    f = autoroute(lambda a: a - 1.0, gpu_min_elems=0)
    x = np.ones(BIG)
    for _ in range(5):
        f(x)
    kept = [d for _, _, _, d in f._stats.decisions]
    assert all(d is kept[1] for d in kept[1:])


def test_a_machine_where_cupy_imports_but_no_driver_exists_routes_to_the_cpu():
    pytest.importorskip("cupy")
    if gpu_usable():
        pytest.skip("this machine has a usable GPU")
    router = Router()                       # the real CPU and GPU devices
    with use_router(router):
        f = autoroute(lambda a: a + 7.0, gpu_min_elems=0)
        for _ in range(3):
            f(np.ones(BIG))
    assert f.stats()["routes"] == {"cpu": 3, "gpu": 0, "python": 0}
    assert _last(f)["reason"] == "no usable GPU" and _last(f)["gpu_estimate_s"] is None
    assert router.params is None and router._sampler is None   # no calibration, no thread


# -- observability -------------------------------------------------------------------------
def test_stats_report_routes_decisions_rates_bytes_compiles_cache_and_latency(router):
    f = autoroute(lambda a: a * 9.0, gpu_min_elems=0, explore=0.0)
    for n in [SMALL] * 100 + [BIG] * 100:
        f(np.ones(n))
    stats = f.stats()
    assert stats["calls"] == 200 and stats["routes"] == {"cpu": 100, "gpu": 100, "python": 0}
    assert len(stats["decisions"]) == 128
    assert set(stats["decisions"][-1]) >= {"route", "reason", "cpu_estimate_s",
                                           "gpu_estimate_s", "n", "ran_on"}
    assert stats["gpu_hit_rate"] == 0.5 and stats["compiles"] == 1
    assert stats["cache_misses"] == 1 and stats["cache_hits"] == 199
    assert stats["latency"]["cpu"]["p50"] <= stats["latency"]["cpu"]["p99"]
    assert stats["latency"]["gpu"]["samples"] == 100
    totals = autojit.stats()
    assert totals["decisions"][-1]["function"] == f.__qualname__
    assert totals["router"]["breaker"]["state"] == "closed"


_SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? \S+$')


def test_prometheus_text_exposition_format(router):
    f = autoroute(lambda a: a * 11.0, gpu_min_elems=0)
    f(np.ones(BIG))
    text = autojit.stats(format="prometheus")
    for line in text.splitlines():
        assert line.startswith(("# HELP ", "# TYPE ")) or _SAMPLE.match(line), line
    name = f.__qualname__
    assert f'autojit_calls_total{{function="{name}",route="gpu"}} 1' in text
    assert "# TYPE autojit_call_latency_seconds summary" in text
    assert 'quantile="0.99"' in text and "autojit_bytes_moved_total" in text
    with pytest.raises(ValueError, match="format must be one of"):
        autojit.stats(format="xml")


def test_debug_log_names_function_route_device_and_reason(router, caplog):
    def scaled(a):
        return a * 13.0

    f = autoroute(scaled, gpu_min_elems=0)
    with caplog.at_level(logging.DEBUG, logger="autojit"):
        f(np.ones(BIG))
        f(np.ones(SMALL))
    lines = [r.getMessage() for r in caplog.records if " route " in r.getMessage()]
    assert re.match(r"^.*scaled route gpu: model: gpu .* < cpu .*\(n=200000, cpu .*\)$",
                    lines[0])
    assert re.match(r"^.*scaled route cpu: model: cpu .* < gpu .*", lines[1])


def test_env_log_and_stats_at_exit_in_a_fresh_process(tmp_path):
    script = ("import numpy as np, autojit\n"
              "@autojit.autoroute\ndef triple(a):\n    return a * 3.0\n"
              "triple(np.ones(10))\n")
    env = {**os.environ, "AUTOJIT_LOG": "debug", "AUTOJIT_STATS": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert re.search(r"autojit: triple route cpu: \S", done.stderr)
    assert re.search(r"^autojit: 1 functions, 1 calls \(cpu 1, gpu 0, python 0\)",
                     done.stderr, re.M)


def test_selftest_without_a_gpu_says_so_and_fails(tmp_path):
    if gpu_usable():
        pytest.skip("this machine has a usable GPU")
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "autojit.selftest", "--gpu", "--out",
                           str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert "no usable GPU" in done.stderr and "GPU checks did not run" in done.stderr
    assert json.loads(out.read_text())["gpu"] is False


def test_selftest_sweep_runs_on_the_simulated_devices(tmp_path, capsys):
    from autojit.selftest.__main__ import main
    out = tmp_path / "sim.json"
    assert main(["--simulated", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert {r["workload"] for r in report["sweep"]} == {"chain", "normalise", "gbm"}
    assert report["summary"]["routed_over_oracle"] <= 1.10
    assert "chain" in capsys.readouterr().out
