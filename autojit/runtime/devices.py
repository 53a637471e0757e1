"""The ``Device`` protocol the router uses, and the two real devices: the host CPU (LLVM
programs called in-process) and the CUDA GPU (NVRTC programs launched through CuPy), with
the transfers between them.

A device runs an :class:`~autojit.runtime.executable.Executable` (never a dispatcher) under
the call's settings, resolved once by the dispatcher. A simulated device
(``routing/simulated.py``) implements the same protocol, so every routing rule is tested
on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from autojit.config import Settings
from autojit.runtime.arrays import is_cupy_array
from autojit.runtime.executable import Executable
from autojit.runtime.targets import TARGETS, cpu_target

_LOGGER = logging.getLogger("autojit")


def _driver_loadable() -> bool:
    """Return True when the CUDA driver library loads (a dlopen: far cheaper than
    ``ctypes.util.find_library``, which runs ldconfig and gcc)."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


@functools.cache
def gpu_usable() -> bool:
    """Return True when a CUDA device can run kernels; probed once per process.

    Without a CUDA driver library CuPy is not even imported (it would only fail later).
    """
    if not _driver_loadable():
        _LOGGER.debug("no CUDA driver library: GPU route disabled")
        return False
    try:
        from autojit.lower_gpu import gpu_available
        return gpu_available()
    except Exception as exc:  # a broken CUDA install must not break CPU users
        _LOGGER.debug("GPU probe failed: %s", exc)
        return False


class Placement(Protocol):
    """Where a call's data goes (``routing.decisions.Decision`` has these): ``fetch_inputs``,
    copy GPU arguments to the host first (a CPU run of device data); ``to_host``, copy GPU
    results back (None: when the inputs came from the host)."""

    fetch_inputs: bool
    to_host: bool | None


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
    def run(self, executable: Executable, args: Sequence[Any], sizes: dict[str, int],
            placement: Placement, settings: Settings) -> tuple[Any, float]: ...
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

    def run(self, executable: Executable, args: Sequence[Any], sizes: dict[str, int],
            placement: Placement, settings: Settings) -> tuple[Any, float]:
        """Run the executable on the CPU, split over threads as ``settings`` say; return
        (result, seconds)."""
        programs = executable.programs("cpu")      # compiling is not running: untimed
        started = time.perf_counter()
        if placement.fetch_inputs:
            args = tuple(fetch(a) for a in args)
        result = executable.run(cpu_target(settings), programs, args, sizes)
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

    def run(self, executable: Executable, args: Sequence[Any], sizes: dict[str, int],
            placement: Placement, settings: Settings) -> tuple[Any, float]:
        """Run the executable on the GPU (synchronised); return (result, seconds)."""
        executable.programs("gpu")                # compiling is not running: untimed
        started = time.perf_counter()
        result = run_on_gpu(executable, tuple(args), sizes, to_host=placement.to_host)
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


def run_on_gpu(executable: Executable, args: tuple, sizes: dict[str, int],
               to_host: bool | None = None) -> Any:
    """Run ``executable`` through CuPy; return its results, copied to the host when
    ``to_host`` (None: when the inputs came from the host). Inputs are copied to the device,
    so a failure part-way never changes a host argument."""
    import cupy

    from_host = not any(is_cupy_array(a) for a in args) if to_host is None else to_host
    device_args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    programs = executable.programs("gpu")
    result = executable.run(TARGETS["gpu"], programs, device_args, sizes)
    cupy.cuda.get_current_stream().synchronize()
    if not from_host:
        return result
    return map_results(fetch, result)


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or is_cupy_array(value)


def _nbytes(value: Any) -> int:
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return int(value.nbytes) if _is_array(value) else 0


def transfer_counts(args: Sequence[Any], result: Any, route: str, decision: Any,
                    gpu: Device) -> tuple[int, int, int, int]:
    """Return (bytes to the GPU, bytes to the host, GPU input bytes already there, all GPU
    input bytes) for a call that ran on ``route`` with arguments ``args``."""
    arrays = [a for a in args if _is_array(a)]
    on_gpu = sum(int(a.nbytes) for a in arrays if gpu.holds(a))
    on_host = sum(int(a.nbytes) for a in arrays) - on_gpu
    if route == "gpu":
        back = _nbytes(result) if decision.to_host else 0
        return on_host, back, on_gpu, on_host + on_gpu
    fetched = on_gpu if decision.fetch_inputs else 0
    placed = _nbytes(result) if decision.to_device else 0
    return placed, fetched, 0, 0
