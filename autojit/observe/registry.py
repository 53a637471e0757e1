"""Every live decorated function, for process-wide statistics (``autojit.stats()``)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from autojit.observe.report import Observed, Snapshotted, aggregate

_DISPATCHERS: weakref.WeakSet = weakref.WeakSet()
_LOCK = threading.Lock()
_LISTENERS: list[Callable[[Observed], None]] = []


def register(dispatcher: Observed) -> None:
    """Remember ``dispatcher`` (weakly: a function that is garbage-collected drops out)."""
    with _LOCK:
        _DISPATCHERS.add(dispatcher)
        listeners = tuple(_LISTENERS)
    for listener in listeners:
        listener(dispatcher)


def add_listener(listener: Callable[[Observed], None]) -> None:
    """Call ``listener(dispatcher)`` for every dispatcher registered from now on (the pytest
    plugin counts a session's functions, including ones garbage-collected before its end)."""
    with _LOCK:
        _LISTENERS.append(listener)


def remove_listener(listener: Callable[[Observed], None]) -> None:
    """Stop calling ``listener``; a listener that was never added is ignored."""
    with _LOCK:
        if listener in _LISTENERS:
            _LISTENERS.remove(listener)


def dispatchers() -> list[Observed]:
    """Return the live dispatchers, ordered by name for stable reports."""
    with _LOCK:
        live = list(_DISPATCHERS)
    return sorted(live, key=lambda d: d.__qualname__)


def process_stats(router: Snapshotted | None = None) -> dict[str, Any]:
    """Return totals over every decorated function plus each one's own ``stats()``, the last
    128 decisions across functions and ``router``'s state (see ``report.aggregate``); the
    caller passes the router (``autojit.stats`` passes the installed one, if any)."""
    return aggregate(dispatchers(), router)
