"""Routing decisions: one ordered table of rules; the first that answers decides, with a reason.

Hard constraints come first (forced route, no GPU, GPU breaker open, data already on the
GPU, the ``AUTOJIT_GPU_MIN_ELEMS`` floor, free GPU memory, the latency breaker); the cost
model decides what is left. A model decision may be swapped, rarely, for an exploration
call on the other device so a wrong model corrects itself (see :func:`decide`).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autojit.config import Settings
from autojit.errors import DeviceUnavailableError
from autojit.routing.breaker import Breaker, BreakerState

REFRESH_CALLS = 64          # a model decision is re-checked against observations this often
STABLE_CALLS = 1 << 20      # decisions that only a new epoch or new settings change
EXPLORE_WITHIN = 2.0        # explore only a device the model puts within 2x of the best
EXPLORE_MAX_GAP = 64        # exploration interval grows (doubling) to 64x the first one
MEMORY_HEADROOM = 0.9       # use at most 90% of the GPU's free memory
SAMPLES = 64                # latencies kept per (bucket, route) for the p99 check
RATIOS = 9                  # observed/estimated ratios kept per (bucket, route); median used


class Route(enum.StrEnum):
    """Where a call runs. The values are the strings stats, logs, reasons and
    ``AUTOJIT_FORCE`` have always used, so a route prints, compares and hashes as before."""

    CPU = "cpu"
    GPU = "gpu"
    PYTHON = "python"


#: the members as module constants, for the per-call path: on Python 3.11 every attribute
#: of an enum class (``Route.CPU``) goes through ``EnumType.__getattr__``'s slot (~60 ns,
#: measured), a module global ~10 ns; they are the same objects
ROUTE_CPU, ROUTE_GPU, ROUTE_PYTHON = Route.CPU, Route.GPU, Route.PYTHON

@dataclass(frozen=True, slots=True)
class Decision:
    """Where one call runs and why, with both corrected estimates (seconds; None: unknown).

    ``to_host``: a GPU call copies its results back; ``to_device``: a CPU call places its
    results on the GPU; ``fetch_inputs``: a CPU call first copies GPU inputs to the host.
    """

    route: Route
    reason: str
    cpu_s: float | None = None
    gpu_s: float | None = None
    n: int = 0
    to_host: bool = True
    to_device: bool = False
    fetch_inputs: bool = False
    explore: bool = False
    probe: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Return the decision as plain data (for stats and logs)."""
        return {"route": str(self.route), "reason": self.reason, "n": self.n,
                "cpu_estimate_s": self.cpu_s, "gpu_estimate_s": self.gpu_s,
                "explore": self.explore}


@dataclass(eq=False, slots=True)
class BucketState:
    """Routing state of one (entry, size bucket): the cached decision, the model's linear
    estimates per route, online corrections, recent latencies and the latency breaker."""

    first: int                  # the bucket's sizes: first..last elements
    last: int
    low: int = 0                # sizes the cached decision holds for
    high: int = -1
    epoch: object = None
    settings: Any = None
    countdown: int = 0
    issued: int = 0
    decision: Decision | None = None
    model: dict[str, tuple[float, float]] = field(default_factory=dict)
    ratio: dict[str, float] = field(default_factory=lambda: {"cpu": 1.0, "gpu": 1.0})
    seen: dict[str, int] = field(default_factory=lambda: {"cpu": 0, "gpu": 0})
    observed: dict[str, collections.deque] = field(default_factory=lambda: {
        "cpu": collections.deque(maxlen=RATIOS), "gpu": collections.deque(maxlen=RATIOS)})
    samples: dict[str, collections.deque] = field(default_factory=lambda: {
        "cpu": collections.deque(maxlen=SAMPLES), "gpu": collections.deque(maxlen=SAMPLES)})
    calls: int = 0
    next_explore: int = 0
    explore_gap: int = 0
    working_set: int = 0
    gpu_limit: int = 0          # largest n whose working-set bound fits free GPU memory
    free_bytes: int = 0
    note: str = ""              # load remarks for reasons
    latency: Breaker | None = None

    def settle(self) -> None:
        """Set each route's correction to the median of its recent observed/estimated
        ratios (a median: one slow outlier is the latency breaker's business)."""
        for route, ratios in self.observed.items():
            if ratios:
                ordered = sorted(ratios)
                self.ratio[route] = ordered[len(ordered) // 2]

    def corrected(self, route: str, n: int) -> float | None:
        """Return the model's estimate for ``route`` at ``n`` elements times its correction."""
        model = self.model.get(route)
        if model is None:
            return None
        return (model[0] + model[1] * n) * self.ratio[route]


@dataclass(frozen=True)
class Context:
    """What the rules read: the router, the entry's table, the bucket, n and the settings."""

    router: Any
    table: Any
    state: BucketState
    n: int
    settings: Settings
    preview: bool = False       # inspect: take no probe slot


def _host_writes(c: Context) -> tuple[Route, str] | None:
    if getattr(c.table, "host_writes", False):
        return Route.CPU, "the function writes into NumPy arguments, which live on the host"
    return None


def _forced(c: Context) -> tuple[Route, str] | None:
    force = c.settings.force
    if force is None:
        return None
    if force == Route.GPU and not c.router.gpu_ready(c.settings):
        raise DeviceUnavailableError(
            "AUTOJIT_FORCE/force='gpu' but no usable CUDA device was found; "
            "use force='cpu' or unset it")
    return Route(force), f"forced {force}"


def _no_gpu(c: Context) -> tuple[Route, str] | None:
    if Route.GPU not in c.settings.backends:
        return Route.CPU, "GPU not in AUTOJIT_BACKENDS"
    return None if c.router.gpu_ready(c.settings) else (Route.CPU, "no usable GPU")


def _gpu_breaker(c: Context) -> tuple[Route, str] | None:
    breaker = c.router.breaker
    if breaker.state == BreakerState.CLOSED or breaker.cooled_down():
        return None
    return Route.CPU, f"GPU circuit breaker {breaker.state}: {breaker.reason}"


def _resident(c: Context) -> tuple[Route, str] | None:
    return (Route.GPU, "CuPy arguments live on the GPU") if c.table.resident else None


def _floor(c: Context) -> tuple[Route, str] | None:
    floor = c.settings.gpu_min_elems
    if c.n >= floor:
        return None
    return Route.CPU, f"{c.n} elements < AUTOJIT_GPU_MIN_ELEMS={floor}"


def _memory(c: Context) -> tuple[Route, str] | None:
    usable = int(c.state.free_bytes * MEMORY_HEADROOM)
    if c.state.working_set <= usable:
        return None
    return Route.CPU, (f"working set {_mb(c.state.working_set)} > {MEMORY_HEADROOM:.0%} of free "
                   f"GPU memory {_mb(c.state.free_bytes)}")


def _latency(c: Context) -> tuple[Route, str] | None:
    breaker = c.state.latency
    if breaker is None or breaker.state == BreakerState.CLOSED or breaker.cooled_down():
        return None
    return Route.CPU, f"GPU latency breaker open: {breaker.reason}"


def _model(c: Context) -> tuple[Route, str]:
    cpu, gpu = c.state.corrected(Route.CPU, c.n), c.state.corrected(Route.GPU, c.n)
    if gpu is None or cpu is None:
        return Route.CPU, "no GPU estimate"
    route = Route.GPU if gpu < cpu else Route.CPU
    other = Route.CPU if route == Route.GPU else Route.GPU
    best, worse = sorted((cpu, gpu))
    note = f"; {c.state.note}" if c.state.note else ""
    return route, f"model: {route} {_ms(best)} < {other} {_ms(worse)}{note}"


#: The rules in order; each returns (route, reason) or None to pass.
RULES: tuple[tuple[str, Callable[[Context], tuple[Route, str] | None]], ...] = (
    ("host-writes", _host_writes), ("forced", _forced), ("no-gpu", _no_gpu),
    ("gpu-breaker", _gpu_breaker),
    ("resident", _resident), ("floor", _floor), ("memory", _memory),
    ("latency", _latency), ("model", _model),
)
_SIZE_FREE = frozenset({"host-writes", "forced", "no-gpu", "gpu-breaker", "resident"})
#: how many calls a cached decision from each rule serves before it is re-checked
_REUSE = {"host-writes": STABLE_CALLS, "forced": STABLE_CALLS, "no-gpu": STABLE_CALLS,
          "gpu-breaker": REFRESH_CALLS,
          "resident": STABLE_CALLS, "floor": STABLE_CALLS, "memory": REFRESH_CALLS,
          "latency": REFRESH_CALLS, "model": REFRESH_CALLS}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _valid_range(c: Context, rule: str, route: str) -> tuple[int, int, bool]:
    """Return (low, high, cacheable): the sizes in this bucket the decision also holds for."""
    low, high = c.state.first, c.state.last
    if rule in _SIZE_FREE:
        return low, high, True
    floor = c.settings.gpu_min_elems
    low, high = (low, min(high, floor - 1)) if c.n < floor else (max(low, floor), high)
    if rule == "memory":
        low = max(low, c.n)
    if rule == "model":
        low, high = _model_side(c.state, c.n, low, high)
    if route == Route.GPU:
        high = min(high, c.state.gpu_limit)
    return low, high, low <= c.n <= high


def _model_side(state: BucketState, n: int, low: int, high: int) -> tuple[int, int]:
    """Return ``low..high`` clipped to the side of the CPU/GPU crossover that ``n`` is on.

    Both corrected estimates are linear in n, so their difference changes sign once, at
    n* = -A/B; a bucket that straddles n* reuses its decision only on n's side of it.
    """
    if len(state.model) < 2:
        return low, high
    (cpu_a, cpu_b), (gpu_a, gpu_b) = state.model[Route.CPU], state.model[Route.GPU]
    r_cpu, r_gpu = state.ratio[Route.CPU], state.ratio[Route.GPU]
    slope = cpu_b * r_cpu - gpu_b * r_gpu
    if slope == 0:
        return low, high
    crossing = -(cpu_a * r_cpu - gpu_a * r_gpu) / slope
    if crossing <= n:
        return max(low, math.floor(crossing) + 1), high
    return low, min(high, math.ceil(crossing) - 1)


def _explore(c: Context, route: str, estimates: dict[str, float | None]) -> str | None:
    """Return the other route when an exploration call is due and affordable, else None."""
    state, rate = c.state, c.settings.explore
    if rate <= 0:
        return None
    if state.explore_gap == 0:
        state.explore_gap = max(1, round(1 / rate))
        state.next_explore = state.explore_gap
    other = Route.CPU if route == Route.GPU else Route.GPU
    mine, theirs = estimates[route], estimates[other]
    if state.calls < state.next_explore or mine is None or theirs is None:
        return None
    if theirs > EXPLORE_WITHIN * mine:
        return None
    first = max(1, round(1 / rate))
    state.explore_gap = min(state.explore_gap * 2, first * EXPLORE_MAX_GAP)
    state.next_explore = state.calls + state.explore_gap
    return other


def _breakers(c: Context) -> list[Breaker]:
    return [b for b in (c.router.breaker, c.state.latency) if b is not None]


def _probe_allowed(c: Context) -> bool:
    """Return True unless a breaker is half-open and another call already holds its probe
    (slots granted here are given back when another breaker refuses)."""
    granted: list[Breaker] = []
    if c.preview:
        return True
    for breaker in _breakers(c):
        if breaker.state == BreakerState.CLOSED:
            continue
        if not breaker.allow():
            for held in granted:
                held.release()
            return False
        granted.append(breaker)
    return True


def _refusal(c: Context) -> str:
    """Return why a breaker refused the GPU (open, or half-open with a probe running)."""
    for breaker in _breakers(c):
        if breaker.state == BreakerState.OPEN:
            return f"GPU circuit breaker open: {breaker.reason}"
    return "GPU breaker half-open: another call is probing"


def _probing(c: Context) -> bool:
    return any(b.state != BreakerState.CLOSED for b in _breakers(c))


def _placement(c: Context, route: str) -> dict[str, bool]:
    """Return the Decision flags that say where inputs come from and results go."""
    on_device = c.router.results_on_device(c.table, c.settings)
    if route == Route.GPU:
        return {"to_host": not on_device}
    return {"to_host": True, "to_device": on_device, "fetch_inputs": c.table.resident}


def _first_answer(c: Context) -> tuple[str, str, str]:
    """Return (rule, route, reason) of the first rule that answers (the model always does)."""
    for rule, check in RULES:
        answer = check(c)
        if answer is not None:
            return rule, *answer
    raise AssertionError("the model rule always answers")


def decide(c: Context) -> tuple[Decision, int]:
    """Return this call's Decision and how many calls may reuse it (0: this call only)."""
    rule, route, reason = _first_answer(c)
    estimates = {route: c.state.corrected(route, c.n) for route in (Route.CPU, Route.GPU)}
    low, high, cacheable = _valid_range(c, rule, route)
    extra: dict[str, bool] = {}
    if rule == "model":
        explored = _explore(c, route, estimates)
        if explored is not None:
            route, reason, cacheable = explored, f"explore {explored} ({reason})", False
            extra["explore"] = True
    if route == Route.GPU and not _probe_allowed(c):
        return _make(c, Route.CPU, _refusal(c), estimates, {}), 0
    if route == Route.GPU and _probing(c):
        reason, cacheable, extra["probe"] = f"breaker probe ({reason})", False, True
    c.state.low, c.state.high = low, high
    return _make(c, route, reason, estimates, extra), _REUSE[rule] if cacheable else 0


def _make(c: Context, route: str, reason: str, estimates: dict[str, float | None],
          extra: dict[str, bool]) -> Decision:
    flags = _placement(c, route) if route in (Route.CPU, Route.GPU) else {}
    return Decision(route, reason, estimates[Route.CPU], estimates[Route.GPU], c.n,
                    **flags, **extra)


def cpu_rerun(decision: Decision, resident: bool) -> Decision:
    """Return the CPU decision that reruns a failed GPU call: same inputs, same placement."""
    return dataclasses.replace(
        decision, route=Route.CPU, reason=f"GPU failed; rerun on the CPU ({decision.reason})",
        to_host=True, to_device=not decision.to_host, fetch_inputs=resident, probe=False)
