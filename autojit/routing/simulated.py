"""A simulated device: a real :class:`~autojit.runtime.devices.Device` whose kernels run on
the CPU (so results stay checkable against NumPy) while it reports the time a device with
the given launch latency, bandwidths, flop rate, utilisation and memory would have taken.

It also injects failures (compile, launch, out of memory; now, for the next k calls, or
part-way through a plan) and latency spikes. Time runs on a :class:`SimulatedClock` that
advances by each simulated call, so breaker cool-downs are deterministic too.

    router = simulated_router()             # simulated CPU + GPU, calibrated by probing
    with use_router(router):
        f(x)                                # routed, run, timed in simulation
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from autojit.config import Settings
from autojit.routing.costmodel import (
    INFINITE,
    DeviceParams,
    PlanCost,
    Work,
    cost_plan,
    estimate,
    measure_work,
)
from autojit.routing.route import Router
from autojit.runtime.arrays import register_array_type
from autojit.runtime.devices import Load, Placement, map_results
from autojit.runtime.executable import Executable
from autojit.runtime.targets import CpuTarget, cpu_target

SIM_CPU = DeviceParams(overhead_s=4e-6, launch_s=1e-6, bandwidth=8e9, flop_rate=3e9)
SIM_GPU = DeviceParams(overhead_s=20e-6, launch_s=6e-6, bandwidth=4e11, flop_rate=2e12,
                       transfer=12e9)


class SimulatedCompileError(RuntimeError):
    """Injected: the simulated GPU compiler rejected a kernel."""


class SimulatedLaunchError(RuntimeError):
    """Injected: a kernel launch failed on the simulated GPU."""


class SimulatedOutOfMemory(MemoryError):
    """The simulated GPU has less free memory than the call's working set."""


FAILURES: dict[str, type[Exception]] = {"compile": SimulatedCompileError,
                                        "launch": SimulatedLaunchError,
                                        "oom": SimulatedOutOfMemory}


class SimulatedClock:
    """Monotonic time that advances only by simulated work (and ``advance``)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        self.now += seconds


@register_array_type
class DeviceArray(np.ndarray):
    """A NumPy array standing for data in the simulated GPU's memory (it overrides nothing:
    safe to compile as a plain array)."""


class _FailingTarget(CpuTarget):
    """The CPU target, raising on its ``after``-th launch (a failure part-way through)."""

    def __init__(self, after: int, error: Exception, like: CpuTarget) -> None:
        super().__init__(like.threads, like.entries)
        self.after, self.error, self.launched = after, error, 0

    def launch(self, *args: Any) -> None:
        if self.launched >= self.after:
            raise self.error
        self.launched += 1
        super().launch(*args)


class SimulatedDevice:
    """A Device with given (true) params; see the module docstring. ``cache_bytes`` and
    ``cache_speedup`` model a cache the cost model does not know about; ``jitter`` (0..1)
    scales each time by a seeded random factor in [1 - jitter, 1 + jitter]."""

    persistent = False
    probe_limit = 1 << 18       # calibration probes stay small: time is simulated anyway

    def __init__(self, name: str, params: DeviceParams, *, clock: SimulatedClock,
                 total_bytes: int = 1 << 34, used_bytes: int = 0, utilisation: float = 0.0,
                 cache_bytes: int = 0, cache_speedup: float = 1.0, jitter: float = 0.0,
                 seed: int = 0) -> None:
        self.name, self.params, self.clock = name, params, clock
        self.total_bytes, self.used_bytes, self.utilisation = total_bytes, used_bytes, utilisation
        self.cache_bytes, self.cache_speedup, self.jitter = cache_bytes, cache_speedup, jitter
        self.available = True
        self.slow_factor = 1.0          # multiplies every time (a slowed-down device)
        self.spike_every = 0            # every k-th run is ``spike_factor`` times slower
        self.spike_factor = 1.0
        self.runs = self.failures = self.out_of_memory = self.load_samples = 0
        self.busy_s = 0.0
        self._random = random.Random(seed)
        self._fail: tuple[str, int | None, int] | None = None
        self._costs: dict[int, tuple[Any, PlanCost]] = {}

    # -- failure injection -------------------------------------------------------------------
    def fail(self, kind: str = "launch", times: int | None = 1, after_kernels: int = 0) -> None:
        """Make the next ``times`` runs (None: every run) fail with ``kind`` ("compile",
        "launch", "oom"), after running ``after_kernels`` kernels of the plan."""
        if kind not in FAILURES:
            raise ValueError(f"failure kind must be one of {sorted(FAILURES)}, not {kind!r}")
        self._fail = (kind, times, after_kernels)

    def heal(self) -> None:
        """Stop injecting failures."""
        self._fail = None

    def _take_failure(self) -> tuple[Exception, int] | None:
        if self._fail is None:
            return None
        kind, times, after = self._fail
        if times is not None:
            self._fail = (kind, times - 1, after) if times > 1 else None
        return FAILURES[kind](f"injected {kind} failure on the simulated {self.name}"), after

    # -- the Device protocol -----------------------------------------------------------------
    def usable(self) -> bool:
        return self.available

    def fingerprint(self) -> str:
        return f"simulated-{self.name}"

    def holds(self, value: Any) -> bool:
        return isinstance(value, DeviceArray) if self.name == "gpu" else True

    def sample_load(self) -> Load:
        """Return the load the test set: utilisation and total minus used memory."""
        self.load_samples += 1
        return Load(self.utilisation, self.total_bytes - self.used_bytes, self.total_bytes)

    def to_host(self, value: Any) -> Any:
        return map_results(lambda v: np.asarray(v) if isinstance(v, DeviceArray) else v, value)

    def to_device(self, value: Any) -> Any:
        if self.name != "gpu":
            return value
        return map_results(lambda v: v.view(DeviceArray) if isinstance(v, np.ndarray) else v,
                           value)

    def run(self, executable: Executable, args: Sequence[Any], sizes: dict[str, int],
            placement: Placement, settings: Settings) -> tuple[Any, float]:
        """Run the plan on the CPU; return (result, simulated seconds). Raises the injected
        failure, or SimulatedOutOfMemory when the working set exceeds free memory."""
        self.runs += 1
        work = self.work(executable, args, sizes)
        injected = self._take_failure()
        if self.name == "gpu" and work.working_set > self.total_bytes - self.used_bytes:
            self.out_of_memory += 1
            injected = (SimulatedOutOfMemory(
                f"working set {work.working_set} B > free {self.total_bytes - self.used_bytes} B"
            ), 0)
        programs = executable.programs("cpu")
        host_args = tuple(np.asarray(a) if isinstance(a, DeviceArray) else a for a in args)
        target = cpu_target(settings)
        if injected is not None:
            self.failures += 1
            error, after = injected
            executable.run(_FailingTarget(after, error, target), programs, host_args,
                           sizes)
        result = executable.run(target, programs, host_args, sizes)
        seconds = self.seconds(work, placement.to_host) * self._noise()
        if self.spike_every and self.runs % self.spike_every == 0:
            seconds *= self.spike_factor
        self.clock.advance(seconds)
        self.busy_s += seconds
        if self.name == "gpu" and not placement.to_host:
            result = self.to_device(result)
        return result, seconds

    # -- the simulated truth -----------------------------------------------------------------
    def work(self, executable: Executable, args: Sequence[Any], sizes: dict[str, int]) -> Work:
        """Return the Work of this call, with inputs this device holds counted as resident."""
        plan = executable.plan
        cached = self._costs.get(id(plan))
        if cached is None or cached[0] is not plan:
            cached = self._costs[id(plan)] = (plan, cost_plan(plan))
        on_device = frozenset(i for i, a in enumerate(args)
                              if self.name == "gpu" and isinstance(a, DeviceArray))
        return measure_work(cached[1], sizes, on_device)

    def seconds(self, work: Work, to_host: bool = True) -> float:
        """Return the true time of ``work`` here at the current load (no jitter)."""
        params = self.params
        if self.cache_bytes and work.working_set <= self.cache_bytes:
            params = DeviceParams(params.overhead_s, params.launch_s,
                                  params.bandwidth * self.cache_speedup, params.flop_rate,
                                  params.transfer)
        moved = 0
        if self.name == "gpu":
            moved = work.host_input_bytes + (work.output_bytes if to_host else 0)
        fixed, per_element = estimate(params, work, moved, params.transfer, self.slowdown())
        return (fixed + per_element * max(work.n, 1)) * self.slow_factor

    def slowdown(self) -> float:
        """Return how much the current utilisation slows this device's own work."""
        if self.name == "gpu":
            return 1.0 / (1.0 - min(self.utilisation, 0.95))
        return max(1.0, self.utilisation)

    def _noise(self) -> float:
        return 1.0 + self.jitter * (2.0 * self._random.random() - 1.0) if self.jitter else 1.0


def simulated_router(cpu: DeviceParams = SIM_CPU, gpu: DeviceParams = SIM_GPU, *,
                     calibrate: bool = True, gpu_memory: int = 1 << 34,
                     cpu_options: dict[str, Any] | None = None,
                     gpu_options: dict[str, Any] | None = None) -> Router:
    """Return a Router over a simulated CPU and GPU sharing one SimulatedClock.

    With ``calibrate`` the router measures them by probing, as it would real devices;
    otherwise it starts from the true params. Load sampling is manual (``sample_now``).
    """
    clock = SimulatedClock()
    devices = {
        "cpu": SimulatedDevice("cpu", cpu, clock=clock, **(cpu_options or {})),
        "gpu": SimulatedDevice("gpu", gpu, clock=clock, total_bytes=gpu_memory,
                               **(gpu_options or {})),
    }
    params = None if calibrate else {"cpu": cpu, "gpu": gpu}
    return Router(devices, clock=clock, sampler=False, params=params)


__all__ = ["INFINITE", "SIM_CPU", "SIM_GPU", "DeviceArray", "SimulatedClock",
           "SimulatedDevice", "simulated_router"]
