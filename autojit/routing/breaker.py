"""A circuit breaker: turn a route off after repeated failures, retry after a cool-down.

States: ``closed`` (route allowed) → ``open`` (refused until the cool-down passes) →
``half-open`` (exactly one probe call allowed) → ``closed`` on success, ``open`` again on
failure. RunMat retries a failed GPU every 100 ms; so does the default cool-down here.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable


class BreakerState(enum.StrEnum):
    """A breaker's state; the values are the strings snapshots and reasons have always shown."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


FAILURE_THRESHOLD = 3        # consecutive failures that open the breaker
COOLDOWN_S = 0.1             # RunMat: retry the GPU every 100 ms
PROBE_TIMEOUT_S = 1.0        # a probe that never reported back frees the slot after this


class Breaker:
    """One route's breaker; thread-safe. ``on_change`` is called after every state change."""

    def __init__(self, threshold: int = FAILURE_THRESHOLD, cooldown_s: float = COOLDOWN_S,
                 clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[], None] | None = None) -> None:
        self.threshold, self.cooldown_s, self.clock = threshold, cooldown_s, clock
        self.on_change = on_change
        self.state = BreakerState.CLOSED
        self.failures = 0
        self.opened_at = 0.0
        self.reason = ""
        self.trips = 0
        self._probing = False
        self._probe_started = 0.0
        self._lock = threading.Lock()

    def _set(self, state: BreakerState) -> None:
        changed = state != self.state
        self.state = state
        if changed and self.on_change is not None:
            self.on_change()

    def allow(self) -> bool:
        """Return True when the route may be taken now; after the cool-down, True once
        (the half-open probe) until that probe reports success or failure."""
        if self.state == BreakerState.CLOSED:
            return True
        with self._lock:
            if self.state == BreakerState.OPEN and self.clock() - self.opened_at >= self.cooldown_s:
                self._set(BreakerState.HALF_OPEN)
            now = self.clock()
            stale = now - self._probe_started >= PROBE_TIMEOUT_S
            if self.state == BreakerState.HALF_OPEN and (not self._probing or stale):
                self._probing, self._probe_started = True, now
                return True
            return False

    def release(self) -> None:
        """Give back a probe slot that ``allow`` granted but the caller did not use."""
        self._probing = False

    def cooled_down(self) -> bool:
        """Return True when an open breaker's cool-down has passed (a probe is due)."""
        return self.state == BreakerState.OPEN and self.clock() - self.opened_at >= self.cooldown_s

    def success(self) -> None:
        """Record a successful call: closes a half-open breaker, clears the failure count."""
        self.failures = 0
        if self.state != BreakerState.CLOSED:
            with self._lock:
                self._probing = False
                self._set(BreakerState.CLOSED)

    def failure(self, reason: str) -> None:
        """Record a failed call; opens after ``threshold`` in a row, or at once when probing."""
        with self._lock:
            self.failures += 1
            if self.state == BreakerState.HALF_OPEN or self.failures >= self.threshold:
                self._open(reason)

    def trip(self, reason: str) -> None:
        """Open the breaker now, whatever the failure count (e.g. latency too high)."""
        with self._lock:
            self._open(reason)

    def _open(self, reason: str) -> None:
        self.reason, self.opened_at, self._probing = reason, self.clock(), False
        self.trips += 1
        self._set(BreakerState.OPEN)

    def snapshot(self) -> dict[str, object]:
        """Return the state, consecutive failures, times opened and the last reason."""
        return {"state": str(self.state), "failures": self.failures, "trips": self.trips,
                "reason": self.reason}
