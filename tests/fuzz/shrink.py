"""Shrink a failing program while the failure (its kind) persists: delta debugging over the
calls, the statements, the returned values, the shapes, layouts, dtypes and values."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import numpy as np

from tests.fuzz.gen import retaint
from tests.fuzz.program import Program
from tests.fuzz.runner import Failure, run_program
from tests.fuzz.values import ArgSpec

_ASSIGNED = re.compile(r"^(v\d+) = ")


def well_formed(program: Program) -> bool:
    """Every ``vN`` a statement or the return reads is assigned by an earlier statement."""
    defined: set[str] = set()
    for line in program.body:
        target = _ASSIGNED.match(line)
        rhs = line[target.end():] if target else line
        if any(name not in defined for name in re.findall(r"\bv\d+\b", rhs)):
            return False
        if target:
            defined.add(target.group(1))
    return all(name in defined or name in program.params for name in program.ret or [])


def _call_sets(p: Program) -> Iterator[Program]:
    for i in range(len(p.calls)):
        if len(p.calls) > 1:
            yield p.with_(calls=p.calls[:i] + p.calls[i + 1:])


def _statements(p: Program) -> Iterator[Program]:
    for i in reversed(range(len(p.body))):
        yield p.with_(body=p.body[:i] + p.body[i + 1:])
    if p.ret is not None:
        if len(p.ret) > 1:
            for i in range(len(p.ret)):
                yield p.with_(ret=p.ret[:i] + p.ret[i + 1:])
        if p.ret_tuple and len(p.ret) == 1:
            yield p.with_(ret_tuple=False)
        yield p.with_(ret=None, ret_tuple=False)


def _returns(p: Program) -> Iterator[Program]:
    """Return an earlier value instead (so the statements after it can go)."""
    defined = [m.group(1) for line in p.body if (m := _ASSIGNED.match(line))]
    for i, name in enumerate(p.ret or []):
        for other in defined:
            if other != name and defined.index(other) < defined.index(name) \
                    if name in defined else other != name:
                yield p.with_(ret=p.ret[:i] + [other] + p.ret[i + 1:])


def _substitutions(p: Program) -> Iterator[Program]:
    """Read an argument or the literal 1 where a statement reads a computed value (so the
    statement computing it can go)."""
    for i, line in enumerate(p.body):
        target = _ASSIGNED.match(line)
        head, rhs = (line[:target.end()], line[target.end():]) if target else ("", line)
        for name in sorted(set(re.findall(r"\bv\d+\b", rhs))):
            for other in p.params + ["1"]:
                new = head + re.sub(rf"\b{name}\b", other, rhs)
                yield p.with_(body=p.body[:i] + [new] + p.body[i + 1:])


def _params(p: Program) -> Iterator[Program]:
    """Drop an argument the program does not read (nor an alias of it)."""
    text = "\n".join(p.body) + " " + " ".join(p.ret or [])
    for i, name in enumerate(p.params):
        if re.search(rf"\b{name}\b", text) or any(
                spec.kind == "alias" and spec.alias_of == i for spec in p.calls[0]):
            continue
        calls = []
        for call in p.calls:
            kept = call[:i] + call[i + 1:]
            calls.append([s.with_(alias_of=s.alias_of - (s.alias_of > i))
                          if s.kind == "alias" else s for s in kept])
        yield p.with_(params=p.params[:i] + p.params[i + 1:], calls=calls)


_NUMBER = re.compile(r"(?<![\w.'])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w(])")


def _literals(p: Program) -> Iterator[Program]:
    """Replace a number in a statement by 0, 1 or 2 (``np.eye(11)`` -> ``np.eye(2)``)."""
    for i, line in enumerate(p.body):
        for match in _NUMBER.finditer(line):
            if match.start() > 0 and line[match.start() - 1] == "v":
                continue
            for simple in ("0", "1", "2"):
                if match.group() not in (simple, simple + ".0"):
                    new = line[:match.start()] + simple + line[match.end():]
                    yield p.with_(body=p.body[:i] + [new] + p.body[i + 1:])


_KEYWORD = re.compile(r",\s*\w+=(?:np\.\w+|[^,()\[\]]+|\([^()]*\))(?=\s*[,)])")


def _keywords(p: Program) -> Iterator[Program]:
    """Drop one keyword argument (``keepdims=True``, ``dtype=np.int8``, ``axis=(0, 1)``)."""
    for i, line in enumerate(p.body):
        for match in _KEYWORD.finditer(line):
            new = line[:match.start()] + line[match.end():]
            yield p.with_(body=p.body[:i] + [new] + p.body[i + 1:])


def _with_arg(p: Program, call: int, index: int, spec: ArgSpec) -> Program:
    calls = [list(c) for c in p.calls]
    calls[call][index] = spec
    return p.with_(calls=calls)


def _resized(spec: ArgSpec, axis: int, size: int) -> ArgSpec:
    logical = np.array(list(spec.values), dtype=spec.dtype).reshape(spec.shape)
    if size > spec.shape[axis]:
        return spec
    cut = np.take(logical, range(size), axis=axis)
    return spec.with_(shape=cut.shape, values=tuple(cut.ravel().tolist()))


def _arrays(p: Program) -> Iterator[Program]:
    for c, call in enumerate(p.calls):
        for i, spec in enumerate(call):
            if spec.kind == "array":
                if spec.layout != "C":
                    yield _with_arg(p, c, i, spec.with_(layout="C"))
                for axis, n in enumerate(spec.shape):
                    for size in sorted({0, 1, n // 2, n - 1} - {n}):
                        if 0 <= size < n:
                            yield _with_arg(p, c, i, _resized(spec, axis, size))


def _simple(dtype: str) -> list[object]:
    return [False, True] if dtype == "bool" else [0, 1] if np.dtype(dtype).kind in "iu" \
        else [0.0, 1.0]


def _values(p: Program) -> Iterator[Program]:
    for c, call in enumerate(p.calls):
        for i, spec in enumerate(call):
            if spec.kind == "scalar":
                current = spec.values[0]
                for v in (0, 1):
                    simple = type(current)(v)
                    if simple != current or repr(simple) != repr(current):
                        yield _with_arg(p, c, i, spec.with_(values=(simple,)))
            if spec.kind != "array" or not spec.values or spec.layout == "bcast":
                continue
            values = list(spec.values)
            chunk = max(1, len(values) // 2)
            while chunk >= 1:
                for start in range(0, len(values), chunk):
                    for v in _simple(spec.dtype):
                        new = values[:start] + [v] * len(values[start:start + chunk]) + \
                            values[start + chunk:]
                        if new != values:
                            yield _with_arg(p, c, i, spec.with_(values=tuple(new)))
                chunk //= 2


def _dtypes(p: Program) -> Iterator[Program]:
    count = len(p.params)
    for i in range(count):
        specs = [call[i] for call in p.calls]
        if specs[0].kind != "array":
            continue
        for dtype in ("float64", "int64", "bool"):
            if specs[0].dtype == dtype:
                continue
            calls = [list(c) for c in p.calls]
            ok = True
            for c, spec in enumerate(specs):
                with np.errstate(all="ignore"):
                    old = np.array(list(spec.values), dtype=spec.dtype)
                    if dtype != "float64" and old.dtype.kind == "f" and \
                            not np.all(np.isfinite(old)):
                        ok = False
                        break
                    new = old.astype(dtype)
                calls[c][i] = spec.with_(dtype=dtype, values=tuple(new.tolist()),
                                         filler=(new.flat[0].item(),) if new.size else (0,))
                for j in range(count):       # aliases follow their array's dtype
                    if calls[c][j].kind == "alias" and calls[c][j].alias_of == i:
                        calls[c][j] = calls[c][j].with_(dtype=dtype)
            if ok:
                yield p.with_(calls=calls)


PASSES: tuple[Callable[[Program], Iterator[Program]], ...] = (
    _call_sets, _statements, _returns, _substitutions, _params, _keywords, _arrays, _dtypes,
    _values, _literals)


def shrink(program: Program, failure: Failure, seconds: float = 60.0,
           max_runs: int = 400) -> tuple[Program, Failure, int]:
    """The smallest program found in ``seconds`` that still fails with ``failure.key``;
    returns it, its failure and the number of candidate runs."""
    deadline = time.monotonic() + seconds
    runs = 0
    best, best_failure = program, failure
    progress = True
    while progress and time.monotonic() < deadline and runs < max_runs:
        progress = False
        for make in PASSES:
            for candidate in make(best):
                if time.monotonic() > deadline or runs >= max_runs:
                    break
                if not well_formed(candidate):
                    continue
                candidate = candidate.with_(taint=retaint(candidate))
                runs += 1
                try:
                    outcome = run_program(candidate)
                except Exception:  # noqa: BLE001 - a candidate the harness cannot build
                    continue
                if outcome.failure is not None and outcome.failure.key == failure.key:
                    best, best_failure = candidate, outcome.failure
                    progress = True
                    break
            if progress:
                break
    return best, best_failure, runs
