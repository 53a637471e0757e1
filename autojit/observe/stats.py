"""Per-function counters behind ``f.stats()``; thread-safe.

Besides calls, compiles and cache counters it keeps the last 128 routing decisions, a
window of latencies per route (for p50/p99), bytes moved between host and GPU and how much
of the GPU's input was already there (the residency ratio).
"""

from __future__ import annotations

import collections
import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DECISIONS_KEPT = 128
LATENCIES_KEPT = 2048
ROUTES = ("cpu", "gpu", "python")
_SEQUENCE = itertools.count()   # orders decisions across functions (next() is atomic)


def percentile(samples: Sequence[float], q: float) -> float | None:
    """Return the ``q`` quantile (0..1, nearest rank) of ``samples``; None when empty."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def _windows() -> dict[str, collections.deque]:
    return {route: collections.deque(maxlen=LATENCIES_KEPT) for route in ROUTES}


@dataclass
class FunctionStats:
    """Counts calls, routes, compiles, fallbacks, decisions, latencies and transfers of one
    decorated function."""

    calls: int = 0
    routes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))
    compiles: int = 0
    compile_seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    disk_hits: int = 0      # memory misses answered by the disk cache (no trace, no compile)
    disk_misses: int = 0    # memory misses the disk cache could not answer either
    fallbacks: list[str] = field(default_factory=list)
    recompiles: list[str] = field(default_factory=list)
    gpu_failures: list[str] = field(default_factory=list)
    gpu_failure_count: int = 0
    explorations: int = 0
    bytes_to_device: int = 0
    bytes_to_host: int = 0
    resident_bytes: int = 0
    gpu_input_bytes: int = 0
    decisions: collections.deque = field(
        default_factory=lambda: collections.deque(maxlen=DECISIONS_KEPT))
    latencies: dict[str, collections.deque] = field(default_factory=_windows)
    latency_sum: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0.0))
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # what the native fast path (dispatch/fastpath.py) counts: [0] calls, [1] latencies
    # recorded, [2] their sum in ns, [3:] a ring of the latest latencies in ns
    fast: np.ndarray = field(default_factory=lambda: np.zeros(3 + LATENCIES_KEPT, np.int64),
                             repr=False)
    fast_folded: int = 0    # fast latencies already moved into ``latencies["cpu"]``

    def count_call(self, route: str) -> None:
        with self.lock:
            self.calls += 1
            self.routes[route] += 1

    def record(self, route: str, decision: Any, n: int, seconds: float) -> None:
        """Count one compiled call that ran on ``route`` under ``decision``."""
        with self.lock:
            self.calls += 1
            self.routes[route] += 1
            self.decisions.append((next(_SEQUENCE), n, route, decision))
            self.latencies[route].append(seconds)
            self.latency_sum[route] += seconds
            self.explorations += decision.explore

    def note_decision(self, decision: Any, n: int) -> None:
        """Keep a decision whose call is counted elsewhere (plain Python runs)."""
        self.decisions.append((next(_SEQUENCE), n, str(decision.route), decision))

    def gpu_failed(self, error: BaseException) -> None:
        """Count a GPU failure (the call reran on the CPU) and keep its message."""
        self.add("gpu_failures", f"{type(error).__name__}: {error}")
        with self.lock:
            self.gpu_failure_count += 1

    def add_transfers(self, to_device: int, to_host: int, resident: int, gpu_inputs: int) -> None:
        """Count bytes moved each way and the GPU inputs' bytes (all, and already there)."""
        with self.lock:
            self.bytes_to_device += to_device
            self.bytes_to_host += to_host
            self.resident_bytes += resident
            self.gpu_input_bytes += gpu_inputs

    def hit(self) -> None:
        """Count a memory-cache hit (``add("cache_hits", 1)`` without the lookups: the full
        call path counts one per call)."""
        with self.lock:
            self.cache_hits += 1

    def add(self, name: str, value: Any) -> None:
        """Append to a list counter or add to a numeric one."""
        with self.lock:
            current = getattr(self, name)
            if isinstance(current, list):
                if value not in current:
                    current.append(value)
            else:
                setattr(self, name, current + value)

    def _fold_fast(self) -> None:
        """Move the fast path's new latencies into the CPU window (caller holds the lock)."""
        recorded = int(self.fast[1])
        start = max(self.fast_folded, recorded - LATENCIES_KEPT)
        if start < recorded:
            ring = self.fast[3:]
            self.latencies["cpu"].extend(
                (ring[np.arange(start, recorded) % len(ring)] * 1e-9).tolist())
        self.fast_folded = recorded

    def decision_log(self) -> list[tuple[int, dict[str, Any]]]:
        """Return (sequence, decision as dict) for the kept decisions, oldest first (and
        fold the fast path's latencies, so ``latencies`` is current after this call)."""
        with self.lock:
            self._fold_fast()
            kept = list(self.decisions)
        return [(seq, {**d.as_dict(), "n": n, "ran_on": route}) for seq, n, route, d in kept]

    def latency_windows(self) -> dict[str, list[float]]:
        """Return the kept latencies (seconds) per route."""
        with self.lock:
            self._fold_fast()
            return {route: list(window) for route, window in self.latencies.items()}

    def snapshot(self) -> dict[str, Any]:
        """Return every counter as plain data (see the module docstring for the keys)."""
        fast = int(self.fast[0])
        with self.lock:
            routes = {**self.routes, "cpu": self.routes["cpu"] + fast}
            compiled = routes["cpu"] + routes["gpu"]
            data = {
                "calls": self.calls + fast, "routes": routes, "fast_calls": fast,
                "compiles": self.compiles, "compile_seconds": self.compile_seconds,
                "cache_hits": self.cache_hits + fast, "cache_misses": self.cache_misses,
                "disk_hits": self.disk_hits, "disk_misses": self.disk_misses,
                "fallbacks": list(self.fallbacks), "recompiles": list(self.recompiles),
                "gpu_failures": list(self.gpu_failures),
                "gpu_failure_count": self.gpu_failure_count,
                "explorations": self.explorations,
                "gpu_hit_rate": routes["gpu"] / compiled if compiled else None,
                "residency_ratio": (self.resident_bytes / self.gpu_input_bytes
                                    if self.gpu_input_bytes else None),
                "resident_bytes": self.resident_bytes,
                "gpu_input_bytes": self.gpu_input_bytes,
                "bytes_moved": {"host_to_device": self.bytes_to_device,
                                "device_to_host": self.bytes_to_host},
                "latency_sum_s": {**self.latency_sum,
                                  "cpu": self.latency_sum["cpu"] + int(self.fast[2]) * 1e-9},
            }
        data["latency"] = latency_summary(self.latency_windows())
        data["decisions"] = [d for _, d in self.decision_log()]
        return data


def latency_summary(windows: dict[str, list[float]]) -> dict[str, dict[str, float | None]]:
    """Return p50 and p99 (seconds) per route that has samples."""
    return {route: {"p50": percentile(s, 0.5), "p99": percentile(s, 0.99), "samples": len(s)}
            for route, s in windows.items() if s}
