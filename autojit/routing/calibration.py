"""Calibration: measure each device's cost-model parameters with four probe plans.

Each probe is an ordinary autojit plan, compiled into a real
:class:`~autojit.runtime.executable.Executable` and run through ``Device.run`` — the same
path real calls take — so the real CPU, the real GPU and the simulated device are calibrated alike:

* ``x + 1.0`` on 8 elements: per-call overhead plus one launch;
* the same chain split into 4 kernels: the per-launch cost;
* ``x + 1.0`` on millions of elements (resident): device memory bandwidth;
* 16 nested ``sin`` (resident): the weighted flop rate;
* for the GPU, the bandwidth probe again from and back to the host: transfer bandwidth.

The result is stored per machine under ``<cache_dir>/calibration/<machine key>.json``,
loaded on first need, and redone by ``autojit calibrate``. It takes well under 2 s.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

import numpy as np

from autojit.config import Settings
from autojit.fuse.plan import plan_kernels
from autojit.routing.costmodel import INFINITE, DeviceParams, cost_plan
from autojit.routing.decisions import Decision, Route
from autojit.runtime.arrays import ArrayKey
from autojit.runtime.binding import bind_sizes
from autojit.runtime.devices import Device, machine_key
from autojit.runtime.executable import Executable
from autojit.tracer import trace_function

_LOGGER = logging.getLogger("autojit")
FORMAT_VERSION = 1
TARGET_S = 4e-3             # grow the big probes until one run takes this long
MAX_ELEMENTS = 1 << 24


def _add(x: np.ndarray) -> np.ndarray:
    return x + 1.0


def _chain(x: np.ndarray) -> np.ndarray:
    return ((x + 1.0) * 0.5 - 0.25) * 2.0


def _sines(x: np.ndarray) -> np.ndarray:
    # 16 sines fused into one kernel: a loop over a list unrolls into the trace (one over
    # range would be a loop region, a host loop of 16 one-sine kernels)
    for _ in [None] * 16:
        x = np.sin(x)
    return x


class Calibrated(Protocol):
    """The router as calibration sees it: its devices, and where a new calibration goes."""

    devices: dict[str, Device]

    def set_params(self, params: dict[str, DeviceParams], source: str) -> None: ...


def _probe(fn: Callable, max_ops: int = 128) -> Executable:
    graph = trace_function(fn, (np.ones(4),), fn.__name__)
    signature = (ArrayKey("a", "d", 1, (False,), True, False),)
    return Executable(signature, plan_kernels(graph, [True], max_ops))


class _Bench:
    """Times probes on one device: median seconds as the device reports them."""

    def __init__(self, device: Device, settings: Settings) -> None:
        self.device, self.settings = device, settings

    def time(self, probe: Executable, n: int, resident: bool, repeats: int) -> float:
        host = np.linspace(0.0, 1.0, n)
        arg = self.device.to_device(host) if resident else host
        assert probe.plan is not None
        sizes = dict(bind_sizes(probe.plan, (arg,)) or {})
        decision = Decision(Route(self.device.name), "calibration", to_host=not resident)
        run = self.device.run
        run(probe, (arg,), sizes, decision, self.settings)   # compile, warm up
        return statistics.median(run(probe, (arg,), sizes, decision, self.settings)[1]
                                 for _ in range(repeats))

    def grown(self, probe: Executable, resident: bool, fixed: float) -> tuple[int, float]:
        """Return (n, seconds beyond ``fixed``) for a size that runs about TARGET_S."""
        n = 1 << 16
        seconds = self.time(probe, n, resident, 3)
        if seconds < TARGET_S:
            scale = TARGET_S / max(seconds - fixed, 1e-9)
            limit = getattr(self.device, "probe_limit", MAX_ELEMENTS)
            n = int(min(limit, max(n, n * scale)))
            seconds = self.time(probe, n, resident, 3)
        return n, max(seconds - fixed, 1e-9)


def calibrate_device(device: Device, settings: Settings | None = None) -> DeviceParams:
    """Return ``device``'s measured DeviceParams (runs the probes; well under a second)
    under ``settings`` (the CPU's thread split; default: the defaults)."""
    bench = _Bench(device, settings or Settings())
    add, chain, sines = _probe(_add), _probe(_chain, max_ops=1), _probe(_sines)
    one = bench.time(add, 8, True, 25)
    four = bench.time(chain, 8, True, 25)
    launch = max((four - one) / 3, 0.0)
    overhead = max(one - launch, 1e-7)
    n, seconds = bench.grown(add, True, one)
    bandwidth = 16.0 * n / seconds
    assert sines.plan is not None
    flops = sum(kernel.flops for kernel in cost_plan(sines.plan).kernels)
    n_c, seconds_c = bench.grown(sines, True, one)
    flop_rate = flops * n_c / seconds_c
    transfer = INFINITE
    if device.name == "gpu":
        hosted = bench.time(add, n, False, 3)
        transfer = 16.0 * n / max(hosted - one - 16.0 * n / bandwidth, 1e-9)
    return DeviceParams(overhead, launch, bandwidth, flop_rate, transfer)


#: used for a device whose probes fail (a broken GPU is then caught by its breaker)
DEFAULTS: dict[str, DeviceParams] = {
    "cpu": DeviceParams(),
    "gpu": DeviceParams(overhead_s=20e-6, launch_s=5e-6, bandwidth=1e12, flop_rate=1e13,
                        transfer=12e9),
}


def calibrate(devices: Sequence[Device], failures: list[str] | None = None,
              settings: Settings | None = None) -> dict[str, DeviceParams]:
    """Return measured params of every usable device in ``devices``, by route name; a
    device whose probes raise gets :data:`DEFAULTS` (and a line in ``failures``)."""
    started = time.perf_counter()
    params = {}
    for device in (d for d in devices if d.usable()):
        try:
            params[device.name] = calibrate_device(device, settings)
        except Exception as exc:  # calibration must never fail a call
            _LOGGER.debug("calibrating %s failed: %s", device.name, exc)
            params[device.name] = DEFAULTS.get(device.name, DeviceParams())
            if failures is not None:
                failures.append(f"{device.name}: {type(exc).__name__}: {exc}")
    _LOGGER.debug("calibrated %s in %.2f s", ", ".join(params), time.perf_counter() - started)
    return params


def calibration_path(cache_dir: str, devices: Sequence[Device]) -> Path:
    """Return the file holding this machine's calibration."""
    usable = [d for d in devices if d.usable()]
    return Path(cache_dir) / "calibration" / f"{machine_key(usable)}.json"


def _read(path: Path, names: set[str]) -> dict[str, DeviceParams] | None:
    try:
        data = json.loads(path.read_text())
        if data.get("version") != FORMAT_VERSION or set(data["devices"]) != names:
            return None
        return {name: DeviceParams(**values) for name, values in data["devices"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(path: Path, params: dict[str, DeviceParams], seconds: float) -> None:
    """Write ``params`` to ``path`` atomically (parallel processes never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": FORMAT_VERSION, "created": time.time(), "seconds": seconds,
            "devices": {name: asdict(p) for name, p in params.items()}}
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=2, default=str))
    os.replace(partial, path)


def load_or_calibrate(router: Calibrated, cache_dir: str, force: bool = False,
                      settings: Settings | None = None
                      ) -> tuple[dict[str, DeviceParams], str]:
    """Return (params by route, where they came from): the stored calibration of this
    machine, or a fresh one (stored when every device is persistent)."""
    devices = [d for d in router.devices.values() if d.usable()]
    persistent = all(d.persistent for d in devices)
    path = calibration_path(cache_dir, devices) if persistent else None
    if path is not None and not force:
        found = _read(path, {d.name for d in devices})
        if found is not None:
            return found, f"loaded {path}"
    started = time.perf_counter()
    failures: list[str] = []
    params = calibrate(devices, failures, settings)
    seconds = time.perf_counter() - started
    if failures:
        return params, f"defaults after failed calibration ({'; '.join(failures)})"
    if path is None:
        return params, f"calibrated in {seconds:.2f} s (not stored: simulated device)"
    try:
        store(path, params, seconds)
    except OSError as exc:  # a read-only cache directory only costs a recalibration
        _LOGGER.debug("cannot store calibration in %s: %s", path, exc)
    return params, f"calibrated in {seconds:.2f} s, stored {path}"


def recalibrate(router: Calibrated, cache_dir: str, settings: Settings | None = None
                ) -> tuple[dict[str, DeviceParams], str]:
    """Calibrate now (``autojit calibrate``), store it and make ``router`` use it."""
    params, source = load_or_calibrate(router, cache_dir, force=True, settings=settings)
    router.set_params(params, source)
    return params, source
