"""The router: CPU, GPU or plain Python for each call, from the cost model, where the data
lives and how busy each device is — with the reason.

A warm call costs one dict lookup: each compiled entry keeps a :class:`RouteTable` of size
buckets (powers of two of the element count), and each bucket caches its Decision until the
router's ``epoch`` changes (new load sample, breaker change, calibration) or it has served
``REFRESH_CALLS`` calls, when observed times are folded in and exploration may run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import operator
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from autojit import config
from autojit.config import Settings
from autojit.routing.breaker import Breaker, BreakerState
from autojit.routing.calibration import load_or_calibrate
from autojit.routing.costmodel import (
    DeviceParams,
    PlanCost,
    cost_plan,
    estimate,
    gpu_slowdown_for,
    measure_work,
)
from autojit.routing.decisions import (
    ROUTE_GPU,
    BucketState,
    Context,
    Decision,
    decide,
)
from autojit.routing.load import LoadSampler, load_changed
from autojit.runtime.arrays import GPU_ARRAY, is_cupy_array
from autojit.runtime.devices import CudaDevice, Device, HostDevice, Load
from autojit.runtime.executable import Executable

_LOGGER = logging.getLogger("autojit")

RATIO_RANGE = (0.05, 20.0)  # a correction never moves an estimate further than this
LATENCY_MARGIN = 2.0        # GPU p99 above 2x the CPU estimate opens the latency breaker
LATENCY_MIN_SAMPLES = 16
SAMPLE_INTERVAL_S = 0.1     # load is sampled at most every 100 ms, by a background thread


def call_elements(args: Sequence[Any]) -> int:
    """Return the largest argument's element count (the work size of an elementwise call)."""
    return max((getattr(a, "size", 1) for a in args), default=1)


def _element_counter(symbols: Sequence[str]) -> Callable[[dict[str, int]], int]:
    """Return a function of a call's sizes giving its element count n (product of sizes)."""
    if not symbols:
        return lambda sizes: 1
    if len(symbols) == 1:
        return operator.itemgetter(symbols[0])
    return lambda sizes: math.prod(sizes.values())


class RouteTable:
    """Per compiled entry: its plan's cost, which arguments live on the GPU, and one
    BucketState per size bucket (``n.bit_length()``)."""

    __slots__ = ("router", "cost", "on_device", "resident", "count", "symbol", "buckets",
                 "bucket", "host_writes")

    def __init__(self, router: Router, entry: Executable) -> None:
        self.router = router
        self.cost: PlanCost = cost_plan(entry.plan)
        self.on_device = frozenset(i for i, key in enumerate(entry.signature)
                                   if key.kind == GPU_ARRAY)
        self.resident = bool(self.on_device)
        # writes into NumPy arguments must land in host memory: such calls stay on the CPU
        self.host_writes = not self.resident and any(
            node.op.value == "write" for node in entry.plan.graph.nodes)
        symbols = [symbol for symbol, _ in entry.plan.graph.dims]
        self.count = _element_counter(symbols)
        self.symbol = symbols[0] if len(symbols) == 1 else None   # the common case, inlined
        self.buckets: dict[int, BucketState] = {}
        self.bucket = self.buckets.get

    def state_for(self, n: int) -> BucketState:
        """Return n's bucket, new ones seeded with the nearest bucket's corrections."""
        bucket = n.bit_length()
        state = self.buckets.get(bucket)
        if state is None:
            state = BucketState(1 << (bucket - 1) if bucket else 0, (1 << bucket) - 1)
            for route in ("cpu", "gpu"):
                seen = [b for b, s in self.buckets.items() if s.seen[route]]
                if seen:
                    nearest = min(seen, key=lambda b: abs(b - bucket))
                    state.ratio[route] = self.buckets[nearest].ratio[route]
            self.buckets[bucket] = state
        return state


class Router:
    """Chooses a device per call. ``devices`` maps "cpu"/"gpu" to Device implementations;
    ``clock`` drives breaker cool-downs; ``sampler`` starts the background load sampler."""

    def __init__(self, devices: dict[str, Device] | None = None,
                 clock: Callable[[], float] = time.monotonic, sampler: bool = True,
                 params: dict[str, DeviceParams] | None = None) -> None:
        self.devices: dict[str, Device] = devices or {"cpu": HostDevice(), "gpu": CudaDevice()}
        self.clock = clock
        self.epoch = object()
        self.breaker = Breaker(clock=clock, on_change=self.bump)
        self.loads: dict[str, Load] = {}
        self.params: dict[str, DeviceParams] | None = params
        self.calibration_source = "given" if params else "none"
        self.explorations = 0
        self._lock = threading.RLock()
        self._want_sampler = sampler
        self._sampler: LoadSampler | None = None
        self._overridden: dict[tuple, DeviceParams] = {}
        self._latency_breakers: list[Breaker] = []

    # -- the hot path ------------------------------------------------------------------------
    def choose(self, entry: Executable, sizes: dict[str, int],
               settings: Settings) -> tuple[Decision, BucketState, int]:
        """Return (decision, bucket state, element count) for a call of ``entry``."""
        table = entry.routing
        if table is not None:
            symbol = table.symbol
            n = sizes[symbol] if symbol is not None else table.count(sizes)
            state = table.bucket(n.bit_length())
            if (state is not None and state.epoch is self.epoch and state.settings is settings
                    and state.low <= n <= state.high):
                state.countdown -= 1
                if state.countdown > 0:
                    return state.decision, state, n
        return self._refresh(entry, sizes, settings)

    # -- the slow path -----------------------------------------------------------------------
    def _refresh(self, entry: Executable, sizes: dict[str, int],
                 settings: Settings) -> tuple[Decision, BucketState, int]:
        with self._lock:
            table = entry.routing
            if table is None or table.router is not self:
                table = entry.routing = RouteTable(self, entry)
            n = table.count(sizes)
            state = table.state_for(n)
            if (state.epoch is not self.epoch or state.settings is not settings
                    or not state.first <= n <= state.last or not state.model
                    and self._wants_model(settings)):
                self._model(table, state, n, sizes, settings)
            state.settle()
            self._check_latency(state, n)
            state.calls += max(1, state.issued - max(state.countdown, 0))   # calls served
            decision, keep = decide(Context(self, table, state, n, settings))
            state.decision, state.countdown, state.issued = decision, keep, keep
            self.explorations += decision.explore
            return decision, state, n

    def preview(self, entry: Executable, sizes: dict[str, int], settings: Settings) -> Decision:
        """Return the decision a call would get, changing no routing state (for inspect)."""
        with self._lock:
            table = entry.routing if getattr(entry, "routing", None) is not None else \
                RouteTable(self, entry)
            n = table.count(sizes)
            state = BucketState(n, n)
            self._model(table, state, n, sizes, settings)
            return decide(Context(self, table, state, n, settings, preview=True))[0]

    def _wants_model(self, settings: Settings) -> bool:
        return settings.force is None and self.gpu_ready(settings)

    def _model(self, table: RouteTable, state: BucketState, n: int, sizes: dict[str, int],
               settings: Settings) -> None:
        """Fill ``state`` with the model's estimates for this epoch, settings and size."""
        wanted = self._wants_model(settings)
        if wanted:
            self._ensure_load()          # a first sample starts a new epoch: take it first
        state.epoch, state.settings, state.model = self.epoch, settings, {}
        state.working_set, state.gpu_limit, state.note = 0, -1, ""
        if not wanted:
            return
        try:
            self._estimate(table, state, sizes, settings)
        except Exception as exc:  # a broken GPU must not break calls: no model, CPU
            _LOGGER.debug("cost model failed (%s: %s); routing to the CPU",
                          type(exc).__name__, exc)
            state.model = {}

    def _estimate(self, table: RouteTable, state: BucketState, sizes: dict[str, int],
                  settings: Settings) -> None:
        work = measure_work(table.cost, sizes, table.on_device)
        gpu_load = self.loads["gpu"]
        state.working_set, state.free_bytes = work.working_set, gpu_load.free_bytes
        state.gpu_limit = int(gpu_load.free_bytes * 0.9) // max(table.cost.bytes_per_element, 1)
        cpu, gpu = self.params_for("cpu", settings), self.params_for("gpu", settings)
        on_device = self.results_on_device(table, settings)
        to_cpu = work.device_input_bytes + (work.output_bytes if on_device else 0)
        to_gpu = work.host_input_bytes + (0 if on_device else work.output_bytes)
        cpu_slowdown = max(1.0, self.loads["cpu"].utilisation)
        gpu_slowdown, state.note = gpu_slowdown_for(gpu_load.utilisation,
                                                    settings.gpu_util_thresh)
        state.model["cpu"] = estimate(cpu, work, to_cpu, gpu.transfer, cpu_slowdown)
        state.model["gpu"] = estimate(gpu, work, to_gpu, gpu.transfer, gpu_slowdown)

    # -- observations and failures -----------------------------------------------------------
    def observe(self, state: BucketState, route: str, n: int, seconds: float) -> None:
        """Fold one measured call into the bucket's correction of ``route``'s estimate."""
        model = state.model.get(route)
        if model is None:
            return
        expected = model[0] + model[1] * n
        state.observed[route].append(min(max(seconds / expected, RATIO_RANGE[0]),
                                         RATIO_RANGE[1]))
        state.seen[route] += 1
        if route == ROUTE_GPU:
            cpu = state.corrected("cpu", n) or math.inf
            state.samples["gpu"].append(seconds / cpu)
            latency = state.latency
            if latency is not None and latency.state != BreakerState.CLOSED:
                self._judge_probe(latency, seconds, cpu)

    def _judge_probe(self, breaker: Breaker, seconds: float, cpu: float) -> None:
        if seconds <= LATENCY_MARGIN * cpu:
            breaker.success()
        else:
            breaker.trip(f"probe took {seconds * 1e3:.3g} ms > {LATENCY_MARGIN:g}x CPU "
                         f"estimate {cpu * 1e3:.3g} ms")

    def _check_latency(self, state: BucketState, n: int) -> None:
        """Open the bucket's latency breaker when the GPU's p99 exceeds the CPU estimate."""
        samples = state.samples["gpu"]
        if len(samples) < LATENCY_MIN_SAMPLES:
            return
        ordered = sorted(samples)
        p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
        if p99 <= LATENCY_MARGIN:
            return
        if state.latency is None:
            state.latency = Breaker(clock=self.clock, on_change=self.bump)
            self._latency_breakers.append(state.latency)
        samples.clear()
        state.latency.trip(f"GPU p99 {p99:.3g}x the CPU estimate > {LATENCY_MARGIN:g}x")

    def gpu_done(self, state: BucketState | None, error: BaseException | None) -> None:
        """Record the outcome of a GPU call for the device's circuit breaker."""
        if error is None:
            self.breaker.success()
        else:
            self.breaker.failure(f"{type(error).__name__}: {error}")

    # -- devices, load, calibration ----------------------------------------------------------
    def gpu_ready(self, settings: Settings) -> bool:
        """Return True when the GPU is allowed by the settings and usable."""
        return "gpu" in settings.backends and self.devices["gpu"].usable()

    def results_on_device(self, table: RouteTable | _ArgsOnly, settings: Settings) -> bool:
        """Return True when this call's results should live on the GPU."""
        if settings.residency == "host":
            return False
        if settings.residency == "device":
            return self.gpu_ready(settings)
        return bool(table.resident)

    def params_for(self, name: str, settings: Settings) -> DeviceParams:
        """Return ``name``'s calibrated parameters (calibrating on first need), with the
        ``AUTOJIT_COST`` overrides applied."""
        if self.params is None:
            self.params, self.calibration_source = load_or_calibrate(
                self, settings.cache_dir, settings=settings)
        key = (name, settings.cost)
        found = self._overridden.get(key)
        if found is None:
            found = self._overridden[key] = self.params[name].with_overrides(name, settings.cost)
        return found

    def set_params(self, params: dict[str, DeviceParams], source: str) -> None:
        """Replace the calibration (``autojit calibrate``, tests); decisions are redone."""
        with self._lock:
            self.params, self.calibration_source = params, source
            self._overridden.clear()
            self.bump()

    def _ensure_load(self) -> None:
        if "gpu" not in self.loads:
            self.sample_now()
        if self._want_sampler and self._sampler is None:
            self._sampler = LoadSampler(self, SAMPLE_INTERVAL_S)
            self._sampler.start()

    def sample_now(self) -> None:
        """Sample every device's load; a material change invalidates cached decisions."""
        changed = False
        for name, device in self.devices.items():
            try:
                load = device.sample_load() if device.usable() else Load()
            except Exception as exc:  # a failing probe must not break routing
                _LOGGER.debug("load sample of %s failed: %s", name, exc)
                load = self.loads.get(name, Load())
            changed |= load_changed(self.loads.get(name), load)
            self.loads[name] = load
        if changed:
            self.bump()

    def tick(self) -> None:
        """Re-sample load and wake breakers whose cool-down has passed (the sampler's beat)."""
        self.sample_now()
        breakers = [self.breaker, *self._latency_breakers]
        if any(b.cooled_down() for b in breakers):
            self.bump()

    def bump(self) -> None:
        """Invalidate every cached decision (they are redone on their next call)."""
        self.epoch = object()

    def close(self) -> None:
        """Stop the background sampler, if any."""
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler = None

    def snapshot(self) -> dict[str, Any]:
        """Return the router's state: breaker, loads, calibration, explorations."""
        return {"breaker": self.breaker.snapshot(),
                "load": {k: dataclasses.asdict(v) for k, v in self.loads.items()},
                "calibration": self.calibration_source,
                "params": {k: dataclasses.asdict(v) for k, v in (self.params or {}).items()},
                "explorations": self.explorations}


_ROUTER: Router | None = None
_ROUTER_LOCK = threading.Lock()


def current_router() -> Router:
    """Return the process's router (the real CPU and GPU unless ``use_router`` swapped it)."""
    router = _ROUTER
    if router is None:
        with _ROUTER_LOCK:
            router = _ROUTER or _install(Router())
    return router


def installed_router() -> Router | None:
    """Return the process's router if one is installed (None before the first call)."""
    return _ROUTER


def _install(router: Router | None) -> Router | None:
    """Make ``router`` the process's router; calls armed under another one miss the fast
    path's gate from now on (``config.bump_generation``)."""
    global _ROUTER
    _ROUTER = router
    config.bump_generation()
    return router


@contextlib.contextmanager
def use_router(router: Router) -> Iterator[Router]:
    """Route every call through ``router`` inside the block (process-wide, all threads)."""
    previous = _ROUTER
    _install(router)
    try:
        yield router
    finally:
        router.close()
        _install(previous)


def choose_route(settings: Settings, args: Sequence[Any], entry: Executable | None = None,
                 sizes: dict[str, int] | None = None) -> tuple[str, str]:
    """Return (route, reason) for a call with ``args`` (of ``entry`` when given), changing
    no routing state."""
    router = current_router()
    if entry is not None and entry.plan is not None and sizes is not None:
        decision = router.preview(entry, sizes, settings)
        return str(decision.route), decision.reason
    fake = _ArgsOnly(frozenset(i for i, a in enumerate(args) if is_cupy_array(a)))
    n = call_elements(args)
    decision = decide(Context(router, fake, BucketState(n, n), n, settings, preview=True))[0]
    return str(decision.route), decision.reason


class _ArgsOnly:
    """A RouteTable stand-in for a call known only by its arguments (no plan, no model)."""

    def __init__(self, on_device: frozenset[int]) -> None:
        self.on_device, self.resident = on_device, bool(on_device)
