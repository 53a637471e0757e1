"""All configuration in one place: ``AUTOJIT_*`` variables < decorator options < ``config()``.

The environment is read once (at import, or again by :func:`reload_environment`): reading
it on every call would cost more than the call itself. Every setting is one row of
``KNOBS`` (variable, field, kind of value, what it does): each variable and each option is
parsed there, so a value that is not allowed is always the same error, naming the variable
or option, the value and what is allowed (``ConfigError``; at import a ``ConfigWarning``:
``reload_environment`` says why).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import math
import numbers
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.errors import ConfigError, ConfigWarning

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
    checks: bool = False                     # verify every graph and kernel (ir/verify.py):
                                             # process-wide, from the environment only


# -- reading settings: one table, one parser per kind -----------------------------------------
#: the spellings of a boolean (case-insensitive; the environment's, and an option's as text)
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
#: the cost-model parameters ``AUTOJIT_COST`` may override (``costmodel.DeviceParams``):
#: times may be 0, speeds must be above 0 (``inf`` allowed)
COST_TIMES = ("overhead_s", "launch_s")
COST_SPEEDS = ("bandwidth", "flop_rate", "transfer")
COST_DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class Kind:
    """How one setting's values are read. ``text`` parses an environment value (stripped,
    not empty) or an option given as a string; ``value`` checks any other option value.
    Both return the setting's value, or raise ValueError or TypeError, whose message (if
    any) says more than ``allowed``: what the error message says may be given."""

    allowed: str
    text: Callable[[str], Any]
    value: Callable[[Any], Any]


def _flag_text(text: str) -> bool:
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError()


def _flag_value(value: Any) -> bool:
    if isinstance(value, bool | np.bool_) or (
            isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise TypeError()


FLAG = Kind(f"a boolean: {'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)} (any case)",
            _flag_text, _flag_value)


def integer(minimum: int) -> Kind:
    """Return the kind of whole numbers of at least ``minimum``."""
    def checked(number: int) -> int:
        if number < minimum:
            raise ValueError()
        return number

    def value(given: Any) -> int:
        if isinstance(given, bool | np.bool_) or not isinstance(given, numbers.Integral):
            raise TypeError()
        return checked(int(given))

    return Kind(f"an integer >= {minimum}", lambda text: checked(int(text.strip())), value)


def number(minimum: float, maximum: float = math.inf, above: bool = False) -> Kind:
    """Return the kind of finite real numbers from ``minimum`` (excluded when ``above``) to
    ``maximum``: never NaN or infinite (they break the arithmetic these settings feed)."""
    low = f"> {minimum:g}" if above else f">= {minimum:g}"
    allowed = (f"a finite number {low}" if maximum == math.inf
               else f"a number from {minimum:g} to {maximum:g}")

    def checked(found: float) -> float:
        if not (math.isfinite(found) and minimum <= found <= maximum) or (
                above and found == minimum):
            raise ValueError()
        return found

    def value(given: Any) -> float:
        if isinstance(given, bool | np.bool_) or not isinstance(given, numbers.Real):
            raise TypeError()
        return checked(float(given))

    return Kind(allowed, lambda text: checked(float(text.strip())), value)


def choice(*words: str, none: str | None = None, aliases: dict[str, str] | None = None
           ) -> Kind:
    """Return the kind of one of ``words`` (any case). ``none``: the word that means None
    (an option may also be None then); ``aliases``: other words and what they mean."""
    table: dict[str, Any] = {w: w for w in words} | (aliases or {})
    if none is not None:
        table[none] = None
    listed = list(table)
    allowed = f"{', '.join(listed[:-1])} or {listed[-1]}" if len(listed) > 1 else listed[0]

    def text(given: str) -> Any:
        word = given.strip().lower()
        if word not in table:
            raise ValueError()
        return table[word]

    def value(given: Any) -> Any:
        if given is None and none is not None:
            return None
        raise TypeError()

    return Kind(allowed, text, value)


def _backends_text(text: str) -> tuple[str, ...]:
    return _backends_value([part for part in text.split(",") if part.strip()])


def _backends_value(given: Any) -> tuple[str, ...]:
    if isinstance(given, str) or not isinstance(given, list | tuple):
        raise TypeError()
    found: list[str] = []
    for name in given:
        word = name.strip().lower() if isinstance(name, str) else None
        if word not in ("cpu", "gpu"):
            raise ValueError(f"{name!r} is not a backend")
        if word not in found:
            found.append(word)
    if not found:
        raise ValueError("no backend named")
    return tuple(found)


BACKENDS = Kind("a comma-separated list of cpu and gpu", _backends_text, _backends_value)


def _path_value(given: Any) -> str:
    if isinstance(given, str | os.PathLike) and isinstance(os.fspath(given), str):
        return os.fspath(given)
    raise TypeError()


PATH = Kind("a folder path", lambda text: text, _path_value)


def _cost_pair(name: Any, given: Any) -> tuple[str, float]:
    """Return one checked ``device.param`` override; ValueError saying what is wrong."""
    key = name.strip().lower() if isinstance(name, str) else ""
    device, _, param = key.partition(".")
    if device not in COST_DEVICES or param not in COST_TIMES + COST_SPEEDS:
        raise ValueError(f"{name!r} is not a cost parameter")
    try:
        found = float(given.strip() if isinstance(given, str) else given)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: {given!r} is not a number") from None
    if isinstance(given, bool) or math.isnan(found) or (
            found < 0 if param in COST_TIMES else found <= 0) or (
            param in COST_TIMES and math.isinf(found)):
        bound = "a finite number >= 0" if param in COST_TIMES else "a number > 0"
        raise ValueError(f"{key} must be {bound}")
    return key, found


def _cost_text(text: str) -> tuple[tuple[str, float], ...]:
    items = [item for item in text.split(",") if item.strip()]
    pairs = [item.split("=", 1) for item in items]
    for item, pair in zip(items, pairs):
        if len(pair) != 2:
            raise ValueError(f"{item.strip()!r} has no '='")
    return tuple(_cost_pair(name, value) for name, value in pairs)


def _cost_value(given: Any) -> tuple[tuple[str, float], ...]:
    pairs = tuple(given.items()) if isinstance(given, dict) else given
    if not isinstance(pairs, list | tuple) or not all(
            isinstance(pair, list | tuple) and len(pair) == 2 for pair in pairs):
        raise TypeError()
    return tuple(_cost_pair(name, value) for name, value in pairs)


COST = Kind("comma-separated device.param=number (device cpu or gpu; param "
            f"{', '.join(COST_TIMES)} (>= 0), {', '.join(COST_SPEEDS)} (> 0))",
            _cost_text, _cost_value)


@dataclass(frozen=True)
class Knob:
    """One setting: its ``AUTOJIT_*`` variable, its ``Settings`` field (the option's name),
    how its values are read, and what it does (the README's knobs table says the same)."""

    variable: str
    field: str
    kind: Kind
    doc: str

    def parse(self, text: str, name: str | None = None) -> Any:
        """Return the value of environment ``text`` (or of option ``name`` given as a
        string). Raises ConfigError naming the variable, the value and what is allowed."""
        try:
            return self.kind.text(text)
        except (TypeError, ValueError) as exc:
            raise ConfigError(name or self.variable, text, self.kind.allowed,
                              _detail(exc)) from None

    def check(self, value: Any) -> Any:
        """Return an option's value, checked and normalised (a list of backends becomes a
        tuple, a dict of costs pairs). Raises ConfigError."""
        name = f"option {self.field}"
        if isinstance(value, str):
            return self.parse(value, name)
        try:
            return self.kind.value(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(name, value, self.kind.allowed, _detail(exc)) from None


def _detail(exc: Exception) -> str:
    """Return what a parser said beyond "not allowed" (Python's own words are dropped:
    "could not convert string to float" says less than the allowed values do)."""
    return str(exc) if type(exc) is ValueError and exc.args and exc.__cause__ is None \
        and not str(exc).startswith(("could not convert", "invalid literal")) else ""


#: every setting, in the README's order; the only place ``AUTOJIT_*`` variables are named
KNOBS: tuple[Knob, ...] = (
    Knob("AUTOJIT_FORCE", "force", choice("cpu", "gpu", "python", none="auto"),
         "route every call to one place (auto: the router decides)"),
    Knob("AUTOJIT_DISABLE", "disable", FLAG, "run everything as plain Python"),
    Knob("AUTOJIT_FUSION_MAX_OPS", "fusion_max_ops", integer(1),
         "most ops fused into one kernel"),
    Knob("AUTOJIT_GPU_MIN_ELEMS", "gpu_min_elems", integer(0),
         "smaller calls never go to the GPU"),
    Knob("AUTOJIT_GPU_UTIL_THRESH", "gpu_util_thresh", number(0.0),
         "GPU busier than this fraction: its estimate doubles again (above 1: never)"),
    Knob("AUTOJIT_BACKENDS", "backends", BACKENDS, "the backends calls may use"),
    Knob("AUTOJIT_LOG", "log", choice("debug", aliases={"off": ""}),
         "log each routing decision and its reason"),
    Knob("AUTOJIT_STATS", "stats_at_exit", FLAG, "print a summary at exit"),
    Knob("AUTOJIT_CACHE_DIR", "cache_dir", PATH, "the persistent compile cache"),
    Knob("AUTOJIT_CACHE_MAX_MB", "cache_max_mb", number(0.0),
         "the disk cache's size bound; 0 turns it off"),
    Knob("AUTOJIT_NUM_THREADS", "num_threads", integer(1), "threads for one big CPU call"),
    Knob("AUTOJIT_THREAD_MIN_WORK", "thread_min_work", integer(0),
         "split a CPU call from this much work"),
    Knob("AUTOJIT_THREAD_SPIN_US", "thread_spin_us", number(0.0),
         "how long idle workers spin for the next call"),
    Knob("AUTOJIT_OUTPUT_POOL_MB", "output_pool_mb", number(0.0),
         "idle pages of dropped big results kept for reuse; 0 turns it off"),
    Knob("AUTOJIT_STRICT", "strict", FLAG, "a fallback to Python raises StrictFallbackError"),
    Knob("AUTOJIT_RESIDENCY", "residency", choice("host", "device", "auto"),
         "where results live"),
    Knob("AUTOJIT_EXPLORE", "explore", number(0.0, 1.0),
         "most calls per size bucket that try the other device"),
    Knob("AUTOJIT_COST", "cost", COST, "cost-model overrides"),
    Knob("AUTOJIT_CHECKS", "checks", FLAG,
         "verify every graph and kernel the pipeline builds (process-wide: a malformed one "
         "is an InternalError, the call runs as Python)"),
)
_BY_FIELD = {knob.field: knob for knob in KNOBS}
#: settings of the process, not of a call (no option sets them): the checks hold for every
#: kernel, and one compiled kernel serves calls of any options
PROCESS_WIDE = frozenset({"checks"})

_FIELDS = {f.name for f in dataclasses.fields(Settings)}
_environment_settings = Settings()
_MEMO: dict[tuple, Settings] = {}
_overrides: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "autojit_config", default=())

#: The settings generation: one number, bumped whenever something a warm call's route was
#: decided under changes process-wide (the environment is re-read, the router is swapped,
#: the ``autojit`` logger's level may have changed). The native fast path
#: (``dispatch/fastpath.py``) compares it, and the identity of this context's ``config()``
#: overrides (``OVERRIDES``: context-local, so a number shared by all threads cannot stand
#: for it), on every call; a change sends calls to the full path, which re-arms. An int64
#: cell the extension reads directly: no module global is looked up by name from C.
GENERATION = np.zeros(1, np.int64)
#: the context variable holding this context's ``config()`` overrides (read by identity)
OVERRIDES = _overrides
_GENERATION_LOCK = threading.Lock()


def bump_generation() -> int:
    """Invalidate every armed fast path (they re-arm on their next full call); return the
    new generation."""
    with _GENERATION_LOCK:
        GENERATION[0] += 1
        return int(GENERATION[0])


def generation() -> int:
    """Return the current settings generation."""
    return int(GENERATION[0])


class _BumpingCache(dict):
    """The ``autojit`` logger's level cache: ``logging`` clears every logger's cache when
    any level changes (``setLevel``, ``logging.disable``), and clearing this one bumps the
    generation, so the fast path sees a change of the log level without reading it."""

    def clear(self) -> None:
        super().clear()
        bump_generation()


def _watch_log_level() -> bool:
    """Make level changes of the ``autojit`` logger bump the generation; False when this
    Python's ``logging`` keeps no per-logger cache to watch (then there is no fast path)."""
    cache = getattr(_LOGGER, "_cache", None)
    if type(cache) is _BumpingCache:
        return True
    if type(cache) is not dict:
        return False
    _LOGGER._cache = _BumpingCache(cache)   # type: ignore[attr-defined]
    return True


LOG_LEVEL_WATCHED = _watch_log_level()


def _read_environment() -> tuple[dict[str, Any], list[ConfigError]]:
    """Return the fields the ``AUTOJIT_*`` variables set (an empty value sets nothing) and
    the errors of those whose value is not allowed."""
    values: dict[str, Any] = {}
    errors: list[ConfigError] = []
    for knob in KNOBS:
        text = os.environ.get(knob.variable)
        if text is None or not text.strip():
            continue
        try:
            values[knob.field] = knob.parse(text)
        except ConfigError as exc:
            errors.append(exc)
    return values, errors


def reload_environment() -> Settings:
    """Re-read ``AUTOJIT_*`` variables; return the environment-level settings.

    A value that is not allowed raises ``ConfigError`` (a ValueError) naming the variable,
    its value and what is allowed (other bad variables are added as notes), and the
    settings stay as they were. At import, instead, each bad variable gives a
    ``ConfigWarning`` with the same words and that setting keeps its default: importing
    autojit must not break a program that only imports it (a library that uses autojit,
    a test collector), nor should a typo in the shell stop a program that would run
    without autojit at all; whoever wants the error calls this function, as the pytest
    plugin does at the start of a session."""
    values, errors = _read_environment()
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(str(other))
        raise first
    return _install(values)


def _load_environment_at_import() -> Settings:
    """Read the environment at import: warn about bad variables (``reload_environment``)."""
    values, errors = _read_environment()
    for exc in errors:
        warnings.warn(f"{exc}; it keeps its default", ConfigWarning, stacklevel=2)
    return _install(values)


#: called with the environment's settings at each install: process-wide switches below the
#: dispatcher (``AUTOJIT_CHECKS`` -> ``ir.verify.set_checks``) follow the environment this
#: way, with config importing nothing of the pipeline
_ENVIRONMENT_LISTENERS: list[Callable[[Settings], None]] = []


def on_environment(listener: Callable[[Settings], None]) -> None:
    """Call ``listener`` with the environment's settings now and after each reload."""
    _ENVIRONMENT_LISTENERS.append(listener)
    listener(_environment_settings)


def _install(values: dict[str, Any]) -> Settings:
    global _environment_settings
    _environment_settings = Settings(**values)
    _MEMO.clear()
    for listener in _ENVIRONMENT_LISTENERS:
        listener(_environment_settings)
    if _environment_settings.log == "debug":
        _enable_debug_log()
    bump_generation()
    return _environment_settings


def _enable_debug_log() -> None:
    _LOGGER.setLevel(logging.DEBUG)
    if not _LOGGER.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("autojit: %(message)s"))
        _LOGGER.addHandler(handler)


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Return the options, their values checked and normalised (``Knob.check``). Raises
    TypeError for an unknown name or a process-wide setting (``PROCESS_WIDE``), ConfigError
    (a ValueError) for a value not allowed."""
    unknown = set(options) - _FIELDS
    if unknown:
        raise TypeError(f"unknown autojit option(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_FIELDS - PROCESS_WIDE))}")
    wide = sorted(set(options) & PROCESS_WIDE)
    if wide:
        variables = " / ".join(_BY_FIELD[name].variable for name in wide)
        raise TypeError(f"{', '.join(wide)} is process-wide, not an option: set {variables} "
                        "and call autojit.reload_environment()")
    return {name: _BY_FIELD[name].check(value) for name, value in options.items()}


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
    options = check_options(options)
    if options.get("log") == "debug":
        _enable_debug_log()
    token = _overrides.set(_overrides.get() + tuple(options.items()))
    try:
        yield current_settings()
    finally:
        _overrides.reset(token)


_load_environment_at_import()
