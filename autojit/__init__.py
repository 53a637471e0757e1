"""autojit: trace NumPy functions, fuse them into kernels, compile for CPU and GPU, route calls.

    from autojit import autoroute

    @autoroute
    def chain(x):
        return np.tanh(np.cos(np.exp(np.sin(x))))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autojit.errors import (
    AutojitError,
    AutojitWarning,
    CacheWarning,
    CompileError,
    ConfigError,
    ConfigWarning,
    FallbackWarning,
    InternalError,
    TraceError,
    UnsupportedError,
)
from autojit.policy import Dispatcher, config, reload_environment
from autojit.policy.registry import process_stats

__version__ = "0.1.0"


def autoroute(fn: Callable | None = None, **options: Any) -> Any:
    """Decorate ``fn`` (bare, or with options such as ``force="cpu"``, ``fusion_max_ops=64``).

    Returns a Dispatcher: call it like ``fn``; ``.inspect(*args)`` and ``.stats()`` explain it.
    """
    if fn is None:
        return lambda f: Dispatcher(f, options)
    return Dispatcher(fn, options)


def stats(format: str = "dict") -> Any:
    """Return process-wide statistics: totals over every decorated function, each one's own
    ``stats()``, the last 128 routing ``decisions`` and the router's state.

    ``format="dict"`` (default) returns a dict; ``"prometheus"`` the Prometheus text
    exposition format; ``"text"`` the human summary ``AUTOJIT_STATS=1`` prints at exit.
    """
    from autojit.policy.observe import format_prometheus, summary_text
    formats = {"dict": lambda s: s, "prometheus": format_prometheus, "text": summary_text}
    if format not in formats:
        raise ValueError(f"format must be one of {sorted(formats)}, not {format!r}")
    return formats[format](process_stats())


__all__ = [
    "AutojitError", "AutojitWarning", "CacheWarning", "CompileError", "ConfigError",
    "ConfigWarning", "Dispatcher",
    "FallbackWarning", "InternalError", "TraceError", "UnsupportedError", "autoroute", "config",
    "reload_environment", "stats",
]
