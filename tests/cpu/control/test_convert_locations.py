"""Errors and fallback reasons from inside converted loops and branches name the user's
``file:line:col``, the same place as without the converter. The comparisons with the
converter off run with regions declined (``regions_declined``): the converter alone must
change nothing; what regions then make of a loop is tested in test_regions_*.py."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import pytest

from tests.support.loop_programs import (
    distances,
    heat,
    lower_solve,
    lu_inplace,
    relax,
    step,
    trace_tanh,
)

from autojit import autoroute
from autojit.errors import TraceError
from autojit.tracer import convert, regions, trace_function


@pytest.fixture(autouse=True)
def regions_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every statement runs as Python, as it did before regions: the converter's own
    effect, compared with the converter off."""
    for name in ("trace_for", "trace_while", "trace_if"):
        monkeypatch.setattr(regions, name, lambda *args: NotImplemented)


def branch_on_element(a):
    out = a * 1.0
    for i in range(a.shape[0]):
        for _j in range(2):
            if a[i] > 0:          # truth-testing a traced value: falls back here
                out[i] = -a[i]
    return out


def loop_over_scalar(a, n):
    acc = a * 0
    for i in range(n):           # a Python int argument as the bound
        acc = acc + i
    return acc


def while_on_value(a):
    err = a.sum()
    while err > 1.0:             # a traced condition
        err = err / 2
    return a * err


def elif_on_value(a):
    k = 0
    if a.shape[0] > 5:
        k = 1
    elif a.sum() > 0:            # the elif's test
        k = 2
    return a + k


def _line(fn: Any, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _reason(fn: Any, args: tuple) -> str:
    with pytest.raises(TraceError) as info:
        trace_function(fn, args)
    return str(info.value)


CASES = [
    (branch_on_element, (np.ones(3),), "if a[i] > 0"),
    (loop_over_scalar, (np.ones(3), 4), "for i in range(n)"),
    (while_on_value, (np.ones(3),), "while err > 1.0"),
    (elif_on_value, (np.ones(3),), "elif a.sum() > 0"),
]


@pytest.mark.parametrize("fn, args, marker", CASES, ids=[c[0].__name__ for c in CASES])
def test_reason_names_the_users_line_as_without_the_converter(fn: Any, args: tuple,
                                                             marker: str) -> None:
    assert convert.convert_function(fn) is not fn
    where = f"{__file__.rsplit('/', 1)[-1]}:{_line(fn, marker)}:"
    converted = _reason(fn, args)
    assert where in converted, converted
    convert.ENABLED = False
    try:
        assert _reason(fn, args) == converted
    finally:
        convert.ENABLED = True


def test_fallback_reason_from_a_converted_loop_names_the_line() -> None:
    f = autoroute(branch_on_element)
    a = np.array([1.0, -2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = f(a)
    np.testing.assert_array_equal(result, branch_on_element(a))
    stats = f.stats()
    assert stats["routes"]["python"] == 1
    where = f"test_convert_locations.py:{_line(branch_on_element, 'if a[i] > 0')}:"
    assert any(where in reason for reason in stats["fallbacks"]), stats["fallbacks"]


def test_traced_nodes_keep_the_users_lines() -> None:
    def scaled(a):
        acc = a * 0
        for i in range(3):
            acc = acc + a * i          # the node's line
        return acc

    graph = trace_function(scaled, (np.ones(4),))
    line = _line(scaled, "the node's line")
    assert any(node.loc is not None and node.loc.line == line
               and node.loc.file == __file__ for node in graph.nodes)


# -- the issue's programs trace as they did without the converter -----------------------------
PROGRAMS = [
    (heat, lambda: (np.ones((6, 6)), 3, 0.1)),
    (lower_solve, lambda: (np.tril(np.ones((4, 4))) + np.eye(4), np.ones(4))),
    (trace_tanh, lambda: (np.ones((4, 4)),)),
    (distances, lambda: (3, np.arange(5.0))),
    (relax, lambda: (np.linspace(0.0, 1.0, 8) ** 2, 0.1)),
    (step, lambda: (np.ones(3), 5)),
    (lu_inplace, lambda: (np.eye(4) * 4 + 1,)),
]


def _traced(fn: Any, args: tuple) -> str:
    try:
        graph = trace_function(fn, args)
    except TraceError as exc:
        return f"TraceError: {exc}"
    return f"{len(graph.nodes)} nodes, {[(n.op, n.loc) for n in graph.nodes]}"


@pytest.mark.parametrize("fn, make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_issue_programs_trace_as_without_the_converter(fn: Any, make: Any) -> None:
    assert convert.convert_function(fn) is not fn
    converted = _traced(fn, make())
    convert.ENABLED = False
    try:
        assert _traced(fn, make()) == converted
    finally:
        convert.ENABLED = True
