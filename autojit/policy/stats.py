"""Per-function counters behind ``f.stats()``; thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FunctionStats:
    """Counts calls, routes, compiles and fallbacks of one decorated function."""

    calls: int = 0
    routes: dict[str, int] = field(default_factory=lambda: {"cpu": 0, "gpu": 0, "python": 0})
    compiles: int = 0
    compile_seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    fallbacks: list[str] = field(default_factory=list)
    recompiles: list[str] = field(default_factory=list)
    gpu_failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_call(self, route: str) -> None:
        with self.lock:
            self.calls += 1
            self.routes[route] += 1

    def add(self, name: str, value: Any) -> None:
        """Append to a list counter or add to a numeric one."""
        with self.lock:
            current = getattr(self, name)
            if isinstance(current, list):
                if value not in current:
                    current.append(value)
            else:
                setattr(self, name, current + value)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "calls": self.calls,
                "routes": dict(self.routes),
                "compiles": self.compiles,
                "compile_seconds": self.compile_seconds,
                "cache_hits": self.cache_hits,
                "cache_misses": self.cache_misses,
                "fallbacks": list(self.fallbacks),
                "recompiles": list(self.recompiles),
                "gpu_failures": list(self.gpu_failures),
            }
