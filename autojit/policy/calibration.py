"""Calibration: measure each device's cost-model parameters with four probe plans.

Each probe is an ordinary autojit plan run through ``Device.run`` — the same path real
calls take — so the real CPU, the real GPU and the simulated device are calibrated alike:

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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autojit.fuse.plan import Plan, plan_kernels
from autojit.policy.backends import bind_sizes
from autojit.policy.costmodel import INFINITE, DeviceParams, cost_plan
from autojit.policy.devices import Device, machine_key
from autojit.policy.rules import Decision
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
    for _ in range(16):
        x = np.sin(x)
    return x


@dataclass
class _ProbeEntry:
    """What ``Device.run`` reads from a dispatcher's cache entry."""

    plan: Plan
    signature: tuple = ()
    programs: dict[str, list[Any]] = field(default_factory=dict)
    routing: Any = None


class _ProbeCompiler:
    """Stands in for the Dispatcher: compiles a probe's programs once per backend."""

    def programs(self, entry: _ProbeEntry, backend: str) -> list[Any]:
        from autojit.policy.dispatcher import BACKENDS
        if backend not in entry.programs:
            entry.programs[backend] = [BACKENDS[backend].compile(k) for k in entry.plan.kernels]
        return entry.programs[backend]


def _probe(fn: Callable, max_ops: int = 128) -> _ProbeEntry:
    graph = trace_function(fn, (np.ones(4),), fn.__name__)
    signature = (("a", "d", 1, (False,), True, False),)
    return _ProbeEntry(plan_kernels(graph, [True], max_ops), signature)


class _Bench:
    """Times probes on one device: median seconds as the device reports them."""

    def __init__(self, device: Device) -> None:
        self.device, self.compiler = device, _ProbeCompiler()

    def time(self, entry: _ProbeEntry, n: int, resident: bool, repeats: int) -> float:
        host = np.linspace(0.0, 1.0, n)
        arg = self.device.to_device(host) if resident else host
        sizes = bind_sizes(entry.plan, (arg,)) or {}
        decision = Decision(self.device.name, "calibration", to_host=not resident)
        self.device.run(self.compiler, entry, (arg,), sizes, decision)   # compile, warm up
        return statistics.median(
            self.device.run(self.compiler, entry, (arg,), sizes, decision)[1]
            for _ in range(repeats))

    def grown(self, entry: _ProbeEntry, resident: bool, fixed: float) -> tuple[int, float]:
        """Return (n, seconds beyond ``fixed``) for a size that runs about TARGET_S."""
        n = 1 << 16
        seconds = self.time(entry, n, resident, 3)
        if seconds < TARGET_S:
            scale = TARGET_S / max(seconds - fixed, 1e-9)
            limit = getattr(self.device, "probe_limit", MAX_ELEMENTS)
            n = int(min(limit, max(n, n * scale)))
            seconds = self.time(entry, n, resident, 3)
        return n, max(seconds - fixed, 1e-9)


def calibrate_device(device: Device) -> DeviceParams:
    """Return ``device``'s measured DeviceParams (runs the probes; well under a second)."""
    bench = _Bench(device)
    add, chain, sines = _probe(_add), _probe(_chain, max_ops=1), _probe(_sines)
    one = bench.time(add, 8, True, 25)
    four = bench.time(chain, 8, True, 25)
    launch = max((four - one) / 3, 0.0)
    overhead = max(one - launch, 1e-7)
    n, seconds = bench.grown(add, True, one)
    bandwidth = 16.0 * n / seconds
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


def calibrate(devices: Sequence[Device], failures: list[str] | None = None
              ) -> dict[str, DeviceParams]:
    """Return measured params of every usable device in ``devices``, by route name; a
    device whose probes raise gets :data:`DEFAULTS` (and a line in ``failures``)."""
    started = time.perf_counter()
    params = {}
    for device in (d for d in devices if d.usable()):
        try:
            params[device.name] = calibrate_device(device)
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


def load_or_calibrate(router: Any, cache_dir: str,
                      force: bool = False) -> tuple[dict[str, DeviceParams], str]:
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
    params = calibrate(devices, failures)
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


def recalibrate(router: Any, cache_dir: str) -> tuple[dict[str, DeviceParams], str]:
    """Calibrate now (``autojit calibrate``), store it and make ``router`` use it."""
    params, source = load_or_calibrate(router, cache_dir, force=True)
    router.set_params(params, source)
    return params, source
