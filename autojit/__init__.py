"""autojit: trace NumPy functions, fuse them into kernels, compile for CPU and GPU, route calls.

    from autojit import autoroute

    @autoroute
    def chain(x):
        return np.tanh(np.cos(np.exp(np.sin(x))))
"""

from __future__ import annotations

import atexit
import logging
import sys
from collections.abc import Callable
from typing import Any, TextIO

from autojit._version import __version__ as __version__
from autojit.config import current_settings, reload_environment
from autojit.dispatch.dispatcher import Dispatcher
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
from autojit.observe import registry
from autojit.observe.report import format_prometheus, summary_text
from autojit.routing.route import installed_router

# last: ``autojit.config`` is the config() context manager, not the module autojit/config.py
# (``from autojit.config import ...`` still reads the module)
from autojit.config import config  # noqa: E402,I001  isort: skip



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
    formats = {"dict": lambda s: s, "prometheus": format_prometheus, "text": summary_text}
    if format not in formats:
        raise ValueError(f"format must be one of {sorted(formats)}, not {format!r}")
    return formats[format](process_stats())


def process_stats() -> dict[str, Any]:
    """Return ``stats()``'s dict: every registered function and the installed router."""
    return registry.process_stats(installed_router())


def print_summary_at_exit(out: TextIO | None = None) -> None:
    """Print the summary to stderr when ``AUTOJIT_STATS=1`` (registered with atexit)."""
    if not current_settings().stats_at_exit:
        return
    try:
        (out or sys.stderr).write(summary_text(process_stats()))
    except Exception as exc:  # never fail an interpreter exit over statistics
        logging.getLogger("autojit").debug("stats summary failed: %s", exc)


atexit.register(print_summary_at_exit)


__all__ = [
    "AutojitError", "AutojitWarning", "CacheWarning", "CompileError", "ConfigError",
    "ConfigWarning", "Dispatcher",
    "FallbackWarning", "InternalError", "TraceError", "UnsupportedError", "autoroute", "config",
    "reload_environment", "stats",
]
