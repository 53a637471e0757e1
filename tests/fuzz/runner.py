"""Run one generated program: every call through plain NumPy and through autojit, compared.

Each program is called several times (first inputs; same shapes, new values; new sizes and
layouts; the first shapes again) on ONE ``autoroute(f)`` dispatcher and on one
``autoroute(f, force="cpu")``, and on a fresh ``autoroute(f)`` per call over the same (warm)
disk cache, each call on fresh, identical inputs built by the program's ``call_i()`` source.
A fallback to plain Python (FallbackWarning) is correct, and counted.
One class of values is unspecified: those of a call in which NumPy's own float -> uint32
cast answered by the element's position (``_position_dependent``: NumPy warned 'invalid
value' and uint32 is involved), or in which NumPy's answer depends on how np.fmax/np.fmin
break a tie of two zeros (``_tie_dependent``); their types, dtypes, shapes and exceptions
still count.
"""

from __future__ import annotations

import linecache
import re
import shutil
import tempfile
import traceback
import types
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.fuzz.compare import compare, magnitude
from tests.fuzz.program import EXACT, Program, Taint

VARIANTS: dict[str, dict[str, Any]] = {"auto": {}, "cpu": {"force": "cpu"}}
#: a fresh dispatcher made for each call over the program's (warm) disk cache: what a new
#: process calling the same function sees after the earlier calls compiled it
WARM = "warm"


@dataclass
class Failure:
    """One disagreement with NumPy: ``kind`` (what differs), where, and the message."""

    kind: str
    detail: str
    call: int
    variant: str
    where: str = ""

    @property
    def key(self) -> str:
        """What the shrinker keeps constant: the kind (exception types included) and, for
        an internal error, the autojit function it came from (another bug may raise the
        same type elsewhere)."""
        return f"{self.kind} {self.where}"

    def text(self) -> str:
        at = f" [{self.where}]" if self.where else ""
        return f"{self.kind}{at} at call {self.call} ({self.variant}): {self.detail}"


@dataclass
class Outcome:
    """What one program's run found."""

    calls: int = 0
    numpy_raised: int = 0
    fallback_calls: int = 0
    reasons: Counter = field(default_factory=Counter)
    failure: Failure | None = None


def _autojit_frame(exc: BaseException) -> str:
    """``file.py:function`` of the innermost autojit frame of ``exc``'s traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/autojit/" in f.filename]
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename.split('/autojit/')[-1]}:{last.name}"


def reason_key(reason: str) -> str:
    """A fallback reason without locations and numbers, so like reasons count together."""
    text = re.sub(r"\S*<fuzz[^>]*>:\d+|\S+\.py:\d+|line \d+", "", reason)
    text = re.sub(r"\d+", "N", text).lstrip(":N ")
    return re.sub(r"\s+", " ", text).strip()[:110]


#: NumPy's warning for an invalid FP operation, among them a cast of NaN or an out-of-range
#: float to an integer (reported as "... in cast", or as the ufunc's or reduction's own name
#: where the cast is the loop's: "... in reduce" for ``np.sum(x, dtype=np.uint32)``)
INVALID_CAST = "invalid value encountered in"


def _call(fn: Any, args: list[Any], warn: bool,
          seen: set[str] | None = None) -> tuple[str, Any, set[str]]:
    """("ok", result) or ("exc", exception), and the warning categories raised; ``seen``
    (NumPy's run) collects whether it warned INVALID_CAST (asked for even when ``warn`` is
    off: the 'invalid' class then warns, which changes no value)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if warn:
                result = fn(*args)
            else:
                with np.errstate(all="ignore", invalid="ignore" if seen is None else "warn"):
                    result = fn(*args)
            out = ("ok", result)
        except Exception as exc:  # noqa: BLE001 - NumPy's answer, or autojit's
            out = ("exc", exc)
    from autojit import AutojitWarning
    if seen is not None:
        seen.update(INVALID_CAST for w in caught if INVALID_CAST in str(w.message))
    cats = {w.category.__name__ for w in caught if not issubclass(w.category, AutojitWarning)}
    return out[0], out[1], cats


def _position_dependent(seen: set[str], text: str, args: list[Any]) -> bool:
    """True when NumPy's values may not be one answer: it reported an invalid operation and
    uint32 is involved. The rule (measured on NumPy 2.4, x86 AVX-512/AVX2; the harness test
    checks its premise): every float -> integer cast of NaN, ±inf or an out-of-range value
    is one answer in NumPy, whatever the length, position or layout, except to uint32.
    There NumPy's scalar loop (every element of a strided or short cast, the last n % 4 of
    a contiguous one, a reduction's or a write's small blocks) keeps the low 32 bits of an
    int64 truncation (NaN -> 0, -2**31 - 1 -> 2**31 - 1, 2**32 + 5 -> 5) and its SIMD loop
    gives 2**31 or 0 for NaN, below -2**31 and from 2**32: by position, in one call. autojit
    gives the scalar loop's answer everywhere, so it can differ from NumPy only where that
    SIMD loop ran on such a value, and that loop then always raises the FP 'invalid' flag:
    NumPy warns "invalid value encountered in cast" (in ``reduce`` or the ufunc's name when
    the cast is a ufunc's ``dtype=``/``out=``). Such a call's values are unspecified (its
    result types, dtypes, shapes and exceptions are still compared); a call without that
    warning, or without uint32, is compared value for value (all other targets, and uint32
    where NumPy's loops agree, e.g. -0.5, 3e9 or a strided -3e9)."""
    return INVALID_CAST in seen and ("uint32" in text or any(
        getattr(a, "dtype", None) == np.uint32 for a in args))


def _tie_rule(ufunc: np.ufunc, pick: int) -> Any:
    """``ufunc`` (np.fmax or np.fmin) answering a tie of two zeros with operand ``pick``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        result = ufunc(*args, **kwargs)
        kind = np.asarray(result).dtype.kind
        if len(args) < 2 or kind not in "fc":
            return result
        with np.errstate(all="ignore"):
            first, second = np.asarray(args[0]), np.asarray(args[1])
            tie = np.broadcast_to((first == 0) & (second == 0), np.shape(result))
            if not tie.any():
                return result
            chosen = np.broadcast_to(args[pick], np.shape(result)).astype(
                np.asarray(result).dtype)
            fixed = np.where(tie, chosen, result)
        if isinstance(result, np.ndarray):
            result[...] = fixed        # an out= keeps its identity
            return result
        return type(result)(fixed[()])
    return call


def _tie_reduction(reduction: Callable, pick: int) -> Any:
    """np.nanmax / np.nanmin (``np.fmax.reduce``) with a result of zero, where both zero
    signs are among the values reduced, set to one fixed sign (+0 for ``pick`` 0, -0 for
    1): NumPy's own sign there depends on its loop (``nanmax([-0.0, 0.0])`` is -0.0,
    the same pair read with a stride 0.0)."""
    def call(a: Any, axis: Any = None, *args: Any, **kwargs: Any) -> Any:
        result = reduction(a, axis, *args, **kwargs)
        values = np.asarray(a)
        if values.dtype.kind != "f" or np.asarray(result).dtype.kind != "f":
            return result
        keep = bool(kwargs.get("keepdims", False))
        with np.errstate(all="ignore"):
            signs = [np.any((values == 0) & (np.signbit(values) == negative), axis=axis,
                            keepdims=keep) for negative in (False, True)]
            tie = (np.asarray(result) == 0) & signs[0] & signs[1]
            if not np.any(tie):
                return result
            fixed = np.where(tie, -0.0 if pick else 0.0, result).astype(
                np.asarray(result).dtype)
        if isinstance(result, np.ndarray):
            result[...] = fixed
            return result
        return type(result)(fixed[()])
    return call


class _TieNumPy:
    """The numpy module with np.fmax/np.fmin (and the np.nanmax/np.nanmin reductions made
    of them) answering zero ties by one fixed rule."""

    def __init__(self, pick: int) -> None:
        self.fmax, self.fmin = _tie_rule(np.fmax, pick), _tie_rule(np.fmin, pick)
        self.nanmax = _tie_reduction(np.nanmax, pick)
        self.nanmin = _tie_reduction(np.nanmin, pick)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


def _tie_dependent(fn: Any, make: Any, text: str) -> bool:
    """True when the call's NumPy answer depends on how np.fmax/np.fmin (np.nanmax,
    np.nanmin) break a tie of 0.0 and -0.0: IEEE 754 and C leave it open, and NumPy
    answers by position (its vector loop the second operand, its scalar remainder loop the
    first, for some of the last n % 8 elements: ``ir/decompose._extremum``; its reductions
    by layout). autojit gives the second everywhere. So the call runs twice more in NumPy,
    once with each rule fixed; when the two differ (in values or zero signs), the values
    are unspecified, as for the uint32 casts."""
    if not any(f"np.{name}(" in text for name in ("fmax", "fmin", "nanmax", "nanmin")):
        return False
    answers = []
    for pick in (0, 1):
        variant = types.FunctionType(fn.__code__, {**fn.__globals__, "np": _TieNumPy(pick)},
                                     fn.__name__, fn.__defaults__, fn.__closure__)
        args = list(make())
        status, value, _ = _call(variant, args, False, set())
        answers.append((status, value, args))
    (s0, v0, a0), (s1, v1, a1) = answers
    if s0 != s1:
        return True
    return s0 == "ok" and (compare(v0, v1, EXACT, 1.0, 1) is not None or any(
        compare(x, y, EXACT, 1.0, 1) is not None for x, y in zip(a0, a1)))


def compile_function(source: str, name: str = "f", tag: str = "fuzz") -> Any:
    """``exec`` the program's source under a file name linecache knows (for tracebacks and
    the tracer's locations)."""
    filename = f"<{tag}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict[str, Any] = {"np": np}
    exec(compile(source, filename, "exec"), ns)
    return ns[name]


def builders(program: Program) -> list[Any]:
    ns: dict[str, Any] = {"np": np}
    exec(program.calls_source(), ns)
    return [ns[f"call_{i + 1}"] for i in range(len(program.calls))]


def _eps_floor(program_text: str, args: list[Any]) -> float:
    """The coarsest float precision an inexact value may have passed through."""
    floor = 0.0
    kinds = {np.asarray(a).dtype.name for a in args if isinstance(a, (np.ndarray, np.generic))}
    if "float32" in kinds or "float32" in program_text:
        floor = float(np.finfo(np.float32).eps)
    if "float16" in program_text or kinds & {"int8", "uint8", "bool", "int16", "uint16"}:
        floor = float(np.finfo(np.float16).eps)
    return floor


def run_calls(fn: Any, calls: list[Any], returns: list[str] | None, taint: dict[str, Taint],
              params: list[str], text: str = "", warn: bool = False) -> Outcome:
    """Call ``fn`` through NumPy and through each variant's one dispatcher, call by call."""
    from autojit import autoroute
    outcome = Outcome()
    # a disk cache of its own: a program that happens to have another's source (a shrinker
    # candidate) must not inherit that one's compiled entries, or its repro would not
    # reproduce in a fresh process
    cache_dir = tempfile.mkdtemp(prefix="autojit-fuzz-")
    try:
        dispatchers = {name: autoroute(fn, cache_dir=cache_dir, **options)
                       for name, options in VARIANTS.items()}

        def warm() -> Any:
            return autoroute(fn, cache_dir=cache_dir)
        _run(fn, calls, returns, taint, params, text, warn, dispatchers, warm, outcome)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return outcome


def _run(fn: Any, calls: list[Any], returns: list[str] | None, taint: dict[str, Taint],
         params: list[str], text: str, warn: bool, dispatchers: dict[str, Any],
         warm: Any, outcome: Outcome) -> None:
    seen_reasons = {name: 0 for name in list(VARIANTS) + [WARM]}
    ret_taints = [taint.get(n, EXACT) for n in (returns or [])]
    for number, make in enumerate(calls, 1):
        numpy_args = list(make())
        seen: set[str] = set()
        status, expected, np_warnings = _call(fn, numpy_args, warn, seen)
        values = not (_position_dependent(seen, text, numpy_args)
                      or _tie_dependent(fn, make, text))
        outcome.numpy_raised += status == "exc"
        n = max([np.size(a) for a in numpy_args] + [16])
        fresh = warm()
        seen_reasons[WARM] = 0
        for variant, jitted in list(dispatchers.items()) + [(WARM, fresh)]:
            args = list(make())
            before = jitted.stats()["routes"]["python"]
            got_status, got, aj_warnings = _call(jitted, args, warn)
            outcome.calls += 1
            stats = jitted.stats()
            if stats["routes"]["python"] > before:
                outcome.fallback_calls += 1
            reasons = stats["fallbacks"]
            for reason in reasons[seen_reasons[variant]:]:
                outcome.reasons[reason_key(reason)] += 1
            seen_reasons[variant] = len(reasons)
            failure = _judge(status, expected, got_status, got, numpy_args, args, ret_taints,
                             taint, params, n, text, values)
            if failure is None and warn and np_warnings != aj_warnings:
                failure = ("warnings", f"got {sorted(aj_warnings)}, NumPy {sorted(np_warnings)}",
                           "")
            if failure is not None:
                kind, detail, where = failure
                outcome.failure = Failure(kind, detail, number, variant, where)
                return


def _judge(status: str, expected: Any, got_status: str, got: Any, numpy_args: list[Any],
           args: list[Any], ret_taints: list[Taint], taint: dict[str, Taint],
           params: list[str], n: int, text: str,
           values: bool = True) -> tuple[str, str, str] | None:
    """(kind, detail, autojit frame) of the disagreement of one call, or None (``values``
    False: NumPy's values are not one answer; types, dtypes and shapes are compared)."""
    if status == "exc":
        if got_status == "ok":
            return f"missing-exception:{type(expected).__name__}", \
                f"NumPy raised {type(expected).__name__}: {expected}"[:300], ""
        if not isinstance(got, type(expected)):
            return (f"wrong-exception:{type(expected).__name__}->{type(got).__name__}",
                    f"NumPy {type(expected).__name__}: {str(expected)[:120]} | autojit "
                    f"{type(got).__name__}: {str(got)[:200]}", _autojit_frame(got))
        return None
    if got_status == "exc":
        return (f"internal-error:{type(got).__name__}", f"{type(got).__name__}: {got}"[:400],
                _autojit_frame(got))
    scale = magnitude(numpy_args + [expected])
    floor = _eps_floor(text, numpy_args)
    if isinstance(expected, tuple) and len(ret_taints) == len(expected) and \
            isinstance(got, tuple) and len(got) == len(expected):
        for i, (a, e) in enumerate(zip(got, expected)):
            found = compare(a, e, ret_taints[i], scale, n, floor, values)
            if found:
                return found[0], f"output {i}: {found[1]}", ""
    else:
        t = ret_taints[0] if len(ret_taints) == 1 else _join(ret_taints)
        found = compare(got, expected, t, scale, n, floor, values)
        if found:
            return found[0], found[1], ""
    for i, (want, have) in enumerate(zip(numpy_args, args)):
        if isinstance(want, np.ndarray):
            t = taint.get(params[i], EXACT) if i < len(params) else EXACT
            found = compare(have, want, t, scale, n, floor, values)
            if found:
                return "arg-" + found[0], f"argument {i} after the call: {found[1]}", ""
    return None


def _join(taints: list[Taint]) -> Taint:
    out = EXACT
    for t in taints:
        out = out.join(t)
    return out


def run_program(program: Program, warn: bool = False) -> Outcome:
    """Run ``program``'s calls; its first failure (if any) is in ``outcome.failure``."""
    fn = compile_function(program.source(), tag=f"fuzz {program.seed}")
    return run_calls(fn, builders(program), program.ret, program.taint, program.params,
                     program.source(), warn)


def check_repro(fn: Any, calls: list[Any], returns: list[str] | None = None,
                taint: dict[str, tuple[float, bool]] | None = None) -> bool:
    """What a repro script runs: print the first failure (or ``OK``); True when none."""
    import inspect
    params = list(inspect.signature(fn).parameters)
    table = {n: Taint(u, r) for n, (u, r) in (taint or {}).items()}
    try:
        text = inspect.getsource(fn)
    except OSError:
        text = ""
    outcome = run_calls(fn, calls, returns, table, params, text)
    print("OK: autojit agrees with NumPy" if outcome.failure is None
          else "FAIL " + outcome.failure.text())
    return outcome.failure is None
