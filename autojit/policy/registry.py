"""Every live decorated function, for process-wide statistics (``autojit.stats()``)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

_DISPATCHERS: weakref.WeakSet = weakref.WeakSet()
_LOCK = threading.Lock()


def register(dispatcher: Any) -> None:
    """Remember ``dispatcher`` (weakly: a function that is garbage-collected drops out)."""
    with _LOCK:
        _DISPATCHERS.add(dispatcher)


def dispatchers() -> list[Any]:
    """Return the live dispatchers, ordered by name for stable reports."""
    with _LOCK:
        live = list(_DISPATCHERS)
    return sorted(live, key=lambda d: d.__qualname__)


def process_stats() -> dict[str, Any]:
    """Return totals over every decorated function plus each one's own ``stats()``."""
    functions = {d.__qualname__: d.stats() for d in dispatchers()}
    totals: dict[str, Any] = {"functions": len(functions), "calls": 0,
                              "routes": {"cpu": 0, "gpu": 0, "python": 0},
                              "compiles": 0, "cache_hits": 0, "cache_misses": 0,
                              "fallbacks": []}
    for name, stats in functions.items():
        totals["calls"] += stats["calls"]
        totals["compiles"] += stats["compiles"]
        totals["cache_hits"] += stats["cache_hits"]
        totals["cache_misses"] += stats["cache_misses"]
        for route, count in stats["routes"].items():
            totals["routes"][route] += count
        totals["fallbacks"] += [f"{name}: {reason}" for reason in stats["fallbacks"]]
    totals["per_function"] = functions
    return totals
