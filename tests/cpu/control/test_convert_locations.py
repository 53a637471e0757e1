"""Errors and fallback reasons from inside converted loops and branches name the user's
``file:line:col``, the same place as without the converter."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import pytest

from autojit import autoroute
from autojit.errors import TraceError
from autojit.tracer import convert, trace_function


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
