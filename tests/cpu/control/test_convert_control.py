"""The control calls ask the region tracer while a trace records a traced value, run the
statement as Python where it declines, and reach functions called with static values or
keyword arguments too."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from autojit import autoroute
from autojit.tracer import control, convert, regions, trace_function


def stencil(u, steps, alpha):
    for _ in range(steps):
        u[1:-1] += alpha * (u[2:] + u[:-2] - 2 * u[1:-1])
    return u


def mixed(a, n):
    acc = a * 0.0
    for i in range(3):
        acc = acc + a * i
    k = 0
    while k < n:
        k += 1
    if n > 1:
        acc = acc * 2.0
    return acc


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, control.Names]]:
    """Record what the region tracer is asked; decline every time (as today)."""
    calls: list[tuple[str, control.Names]] = []
    for kind in ("for", "while", "if"):
        def record(*args: Any, _kind: str = kind) -> Any:
            calls.append((_kind, args[-1]))
            return NotImplemented
        monkeypatch.setattr(regions, f"trace_{kind}", record)
    return calls


def test_regions_are_asked_for_statements_on_traced_values(asked: list) -> None:
    # `while k < n`: n is a traced Python int; declined here, the Python while then runs,
    # its test a decision on the call's values (guarded as such since the scalars work)
    trace_function(mixed, (np.ones(3), 2))
    kinds = [(k, n.carried, n.captured) for k, n in asked]
    assert kinds == [("for", ("acc",), ("a",)), ("while", ("k",), ("n",)), ("if", ("acc",), ())]
    assert all(n.file == __file__ for _, n in asked)


def test_no_trace_no_question(asked: list) -> None:
    converted = convert.convert_function(mixed)
    np.testing.assert_array_equal(converted(np.ones(3), 2), mixed(np.ones(3), 2))
    assert asked == []


def test_a_shadowed_range_is_only_python(asked: list) -> None:
    bounds: list = []
    result = control.for_range((3,), lambda i, c, p: (c[0] + i,), (0,), (), control.Names(
        ("x",), ()), range_fn=lambda n: bounds.append(n) or [10, 20])
    assert result == (30,) and bounds == [3] and asked == []


def test_the_region_tracers_answer_is_the_statements(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    unrolled = len(trace_function(_no_while, (np.ones(3),)).nodes)
    monkeypatch.setattr(regions, "trace_for", lambda bounds, body, carried, captured, names:
                        carried)   # "the loop leaves every carried value as it was"
    assert len(trace_function(_no_while, (np.ones(3),)).nodes) < unrolled


def _no_while(a):
    acc = a * 1.0
    for i in range(3):
        acc = acc + i
    return acc


def test_static_and_keyword_calls_are_converted_too(asked: list) -> None:
    f = autoroute(stencil, static_argnames=("steps",))
    u = np.linspace(0.0, 1.0, 8) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = f(u.copy(), steps=3, alpha=0.1)
    np.testing.assert_array_equal(result, stencil(u.copy(), 3, 0.1))
    assert [k for k, _ in asked] == ["for"]
