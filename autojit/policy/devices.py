"""The ``Device`` protocol the router uses, and the two real devices: the host CPU (LLVM
programs called in-process) and the CUDA GPU (NVRTC programs launched through CuPy).

A simulated device (``simulated.py``) implements the same protocol, so every routing rule
is tested on machines without a GPU.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from autojit.policy.backends import CpuBackend, run_plan
from autojit.policy.rules import Decision
from autojit.policy.signature import is_cupy_array

_LOGGER = logging.getLogger("autojit")
_CPU = CpuBackend()


@dataclass(frozen=True)
class Load:
    """One sample of a device's load: utilisation 0..1 and memory free / total in bytes."""

    utilisation: float = 0.0
    free_bytes: int = 1 << 62
    total_bytes: int = 1 << 62


class Device(Protocol):
    """What the router needs from a device. ``name`` is the route it serves ("cpu"/"gpu");
    ``persistent`` says whether its calibration may be stored on disk."""

    name: str
    persistent: bool

    def usable(self) -> bool: ...
    def fingerprint(self) -> str: ...
    def holds(self, value: Any) -> bool: ...
    def sample_load(self) -> Load: ...
    def run(self, dispatcher: Any, entry: Any, args: Sequence[Any], sizes: dict[str, int],
            decision: Decision) -> tuple[Any, float]: ...
    def to_host(self, value: Any) -> Any: ...
    def to_device(self, value: Any) -> Any: ...


def fetch(value: Any) -> Any:
    """Return ``value`` on the host: CuPy arrays are copied back, anything else is kept."""
    if is_cupy_array(value):
        host = value.get()
        return host[()] if host.ndim == 0 else host
    return value


def map_results(function: Any, result: Any) -> Any:
    """Return ``result`` (one value or a tuple of them) with ``function`` applied to each."""
    if isinstance(result, tuple):
        return tuple(function(r) for r in result)
    return function(result)


@functools.cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class HostDevice:
    """The CPU: LLVM programs called in this process (one thread per call)."""

    name = "cpu"
    persistent = True

    def usable(self) -> bool:
        return True

    def fingerprint(self) -> str:
        """Return host name, CPU model and CPU count: calibration is per machine."""
        return f"{platform.node()}|{_cpu_model()}|{os.cpu_count()}"

    def holds(self, value: Any) -> bool:
        return not is_cupy_array(value)

    def sample_load(self) -> Load:
        """Return the 1-minute load average per CPU and the available memory."""
        cpus = os.cpu_count() or 1
        try:
            utilisation = os.getloadavg()[0] / cpus
        except OSError:
            utilisation = 0.0
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            free = os.sysconf("SC_AVPHYS_PAGES") * page
            total = os.sysconf("SC_PHYS_PAGES") * page
        except (ValueError, OSError):
            free = total = 1 << 62
        return Load(utilisation, free, total)

    def run(self, dispatcher: Any, entry: Any, args: Sequence[Any], sizes: dict[str, int],
            decision: Decision) -> tuple[Any, float]:
        """Run the entry's plan on the CPU; return (result, seconds)."""
        programs = dispatcher.programs(entry, "cpu")      # compiling is not running: untimed
        started = time.perf_counter()
        if decision.fetch_inputs:
            args = tuple(fetch(a) for a in args)
        options = getattr(dispatcher, "options", ())    # the decorator's, e.g. num_threads
        backend = CpuBackend(options) if options else _CPU
        result = run_plan(entry.plan, programs, backend, args, sizes)
        return result, time.perf_counter() - started

    def to_host(self, value: Any) -> Any:
        return value

    def to_device(self, value: Any) -> Any:
        return value


class CudaDevice:
    """The CUDA GPU through CuPy; load through NVML (nvidia-ml-py) when it is installed."""

    name = "gpu"
    persistent = True

    def __init__(self) -> None:
        self._nvml: Any = None

    def usable(self) -> bool:
        from autojit.policy.route import gpu_usable
        return gpu_usable()

    def fingerprint(self) -> str:
        """Return the device's name, PCI bus id and the driver version."""
        import cupy
        device = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(device.id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        return f"{name}|{device.pci_bus_id}|{cupy.cuda.runtime.driverGetVersion()}"

    def holds(self, value: Any) -> bool:
        return is_cupy_array(value)

    def _handle(self) -> Any:
        """Return the NVML handle of the current device, or False when NVML is missing."""
        if self._nvml is None:
            try:
                import cupy
                import pynvml
                pynvml.nvmlInit()
                bus = cupy.cuda.Device().pci_bus_id
                self._nvml = pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            except Exception as exc:  # no NVML: memory from CUDA, utilisation unknown
                _LOGGER.debug("NVML unavailable (%s); GPU utilisation reads as 0", exc)
                self._nvml = False
        return self._nvml

    def sample_load(self) -> Load:
        """Return utilisation (NVML) and free memory, counting CuPy's cached free blocks."""
        import cupy
        pooled = cupy.get_default_memory_pool().free_bytes()
        handle = self._handle()
        if handle:
            import pynvml
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
            return Load(rates.gpu / 100.0, int(memory.free) + pooled, int(memory.total))
        free, total = cupy.cuda.runtime.memGetInfo()
        return Load(0.0, int(free) + pooled, int(total))

    def run(self, dispatcher: Any, entry: Any, args: Sequence[Any], sizes: dict[str, int],
            decision: Decision) -> tuple[Any, float]:
        """Run the entry's plan on the GPU (synchronised); return (result, seconds)."""
        from autojit.policy.gpu_route import run_on_gpu
        dispatcher.programs(entry, "gpu")                # compiling is not running: untimed
        started = time.perf_counter()
        result = run_on_gpu(dispatcher, entry, tuple(args), sizes, to_host=decision.to_host)
        return result, time.perf_counter() - started

    def to_host(self, value: Any) -> Any:
        return map_results(fetch, value)

    def to_device(self, value: Any) -> Any:
        import cupy
        return map_results(cupy.asarray, value)


def machine_key(devices: Sequence[Device]) -> str:
    """Return a short stable key of the machine's devices (the calibration file name)."""
    text = ";".join(f"{d.name}={d.fingerprint()}" for d in devices)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
