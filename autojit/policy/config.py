"""All configuration in one place: ``AUTOJIT_*`` variables < decorator options < ``config()``.

The environment is read once (at import, or again by :func:`reload_environment`): reading
it on every call would cost more than the call itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_LOGGER = logging.getLogger("autojit")


#: a container's CPU quota: cgroup v2's ``cpu.max``, else v1's quota and period files
CGROUP_CPU_FILES = ("/sys/fs/cgroup/cpu.max",
                    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def _read_first_line(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.readline().strip()
    except OSError:
        return None


def cgroup_cpu_limit() -> float | None:
    """Return the CPUs a CFS quota allows this process (2.5 for "250000 100000"), or None
    when there is none or it cannot be read."""
    v2, (v1_quota, v1_period) = CGROUP_CPU_FILES
    line = _read_first_line(v2)
    fields = line.split() if line else [_read_first_line(v1_quota), _read_first_line(v1_period)]
    try:
        quota, period = float(fields[0]), float(fields[1])
    except (TypeError, ValueError, IndexError):   # "max", "-1" or missing: no quota
        return None
    return quota / period if quota > 0 and period > 0 else None


def _default_threads() -> int:
    """The usable cores: the CPUs this process may run on, fewer under a container's CPU
    quota (threads beyond it only queue, and idle workers spinning would burn the quota)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    return max(1, min(cores, math.ceil(limit))) if limit else cores


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "autojit")


@dataclass(frozen=True)
class Settings:
    """Effective settings for one call; field names are the option names."""

    force: str | None = None                 # "cpu" | "gpu" | "python"
    disable: bool = False
    fusion_max_ops: int = 128
    gpu_min_elems: int = 1 << 12             # floor: smaller calls never go to the GPU
    gpu_util_thresh: float = 0.8
    backends: tuple[str, ...] = ("gpu", "cpu")
    log: str = ""
    stats_at_exit: bool = False
    cache_dir: str = field(default_factory=_default_cache_dir)
    cache_max_mb: float = 1024.0             # disk cache bound, LRU-evicted; 0 turns it off
    num_threads: int = field(default_factory=_default_threads)   # 1: every call on the caller
    thread_min_work: int = 1 << 22           # split a kernel call across threads from this much
                                             # work (iterations × op cost, ~0.5 ms on one core:
                                             # measured break-even 3-4M on a 2-vCPU VM; see
                                             # benchmarks/bench_threads.py); 0 splits every call
    thread_spin_us: float = 2000.0           # how long idle workers wait for the next call
                                             # before they sleep (lower_cpu/team.py)
    output_pool_mb: float = 512.0            # idle pages of dropped big results kept for
                                             # reuse (output_pool.py); 0 turns it off
    strict: bool = False                     # a fallback to Python raises StrictFallbackError
    residency: str = "auto"                  # where results live: host | device | auto
    explore: float = 0.03                    # most calls per size bucket that try the other
                                             # device to correct the cost model (0: never)
    cost: tuple[tuple[str, float], ...] = ()  # cost-model overrides, e.g. gpu.launch_s=5e-6


def _flag(text: str) -> bool:
    return text.strip().lower() not in ("", "0", "false", "no", "off")


def _residency(text: str) -> str:
    value = text.strip().lower()
    if value not in ("host", "device", "auto"):
        raise ValueError(f"residency must be host, device or auto, not {text!r}")
    return value


def _cost(text: str) -> tuple[tuple[str, float], ...]:
    """Parse ``"gpu.bandwidth=2e12, cpu.launch_s=1e-6"`` into ((name, value), ...)."""
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"AUTOJIT_COST must be device.param=value,..., not {text!r}")
    return tuple((name.strip(), float(value)) for name, value in pairs)


def _force(text: str) -> str | None:
    value = text.strip().lower() or None
    if value not in (None, "cpu", "gpu", "python"):
        raise ValueError(f"AUTOJIT_FORCE must be cpu, gpu or python, not {text!r}")
    return value


#: environment variable -> (field, parser)
ENVIRONMENT: dict[str, tuple[str, Callable[[str], Any]]] = {
    "AUTOJIT_FORCE": ("force", _force),
    "AUTOJIT_DISABLE": ("disable", _flag),
    "AUTOJIT_FUSION_MAX_OPS": ("fusion_max_ops", int),
    "AUTOJIT_GPU_MIN_ELEMS": ("gpu_min_elems", int),
    "AUTOJIT_GPU_UTIL_THRESH": ("gpu_util_thresh", float),
    "AUTOJIT_BACKENDS": ("backends", lambda t: tuple(s.strip() for s in t.split(",") if s)),
    "AUTOJIT_LOG": ("log", str.lower),
    "AUTOJIT_STATS": ("stats_at_exit", _flag),
    "AUTOJIT_CACHE_DIR": ("cache_dir", str),
    "AUTOJIT_CACHE_MAX_MB": ("cache_max_mb", float),
    "AUTOJIT_NUM_THREADS": ("num_threads", int),
    "AUTOJIT_THREAD_MIN_WORK": ("thread_min_work", int),
    "AUTOJIT_THREAD_SPIN_US": ("thread_spin_us", float),
    "AUTOJIT_OUTPUT_POOL_MB": ("output_pool_mb", float),
    "AUTOJIT_STRICT": ("strict", _flag),
    "AUTOJIT_RESIDENCY": ("residency", _residency),
    "AUTOJIT_EXPLORE": ("explore", float),
    "AUTOJIT_COST": ("cost", _cost),
}

_FIELDS = {f.name for f in dataclasses.fields(Settings)}
_environment_settings = Settings()
_MEMO: dict[tuple, Settings] = {}
_overrides: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "autojit_config", default=())


def reload_environment() -> Settings:
    """Re-read ``AUTOJIT_*`` variables; return the environment-level settings."""
    global _environment_settings
    values = {}
    for variable, (name, parse) in ENVIRONMENT.items():
        text = os.environ.get(variable)
        if text is not None and text != "":
            values[name] = parse(text)
    _environment_settings = Settings(**values)
    _MEMO.clear()
    if _environment_settings.log == "debug":
        _enable_debug_log()
    return _environment_settings


def _enable_debug_log() -> None:
    _LOGGER.setLevel(logging.DEBUG)
    if not _LOGGER.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("autojit: %(message)s"))
        _LOGGER.addHandler(handler)


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate option names and values; return them. Raises TypeError or ValueError."""
    unknown = set(options) - _FIELDS
    if unknown:
        raise TypeError(f"unknown autojit option(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_FIELDS))}")
    if "force" in options and options["force"] is not None:
        _force(str(options["force"]))
    if "residency" in options:
        _residency(str(options["residency"]))
    return options


def current_settings(options: tuple[tuple[str, Any], ...] = ()) -> Settings:
    """Return settings for a call: environment, then decorator ``options``, then config()."""
    overrides = _overrides.get()
    if not options and not overrides:
        return _environment_settings
    key = (options, overrides)
    try:
        found = _MEMO.get(key)
    except TypeError:  # an unhashable option value: build it every time
        return dataclasses.replace(_environment_settings, **dict(options + overrides))
    if found is None:
        # One object per combination: the router caches decisions per Settings identity.
        if len(_MEMO) > 256:
            _MEMO.clear()
        found = _MEMO[key] = dataclasses.replace(_environment_settings,
                                                 **dict(options + overrides))
    return found


@contextlib.contextmanager
def config(**options: Any) -> Iterator[Settings]:
    """``with autojit.config(force="cpu"): ...`` — overrides for the block (innermost wins)."""
    check_options(options)
    if options.get("log") == "debug":
        _enable_debug_log()
    token = _overrides.set(_overrides.get() + tuple(options.items()))
    try:
        yield current_settings()
    finally:
        _overrides.reset(token)


reload_environment()
