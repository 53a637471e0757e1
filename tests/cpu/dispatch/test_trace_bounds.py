"""Traces never blow up (issue 15): long unrolled loops, deep view chains and deeply nested
globals compile or fall back with the reason, never an internal exception to the caller.

Speed is not asserted here (the machine is shared): the figures are in the commit that
chose ``MAX_TRACE_NODES`` (under it a trace compiles, over it or over
``MAX_TRACE_OPERATIONS`` it falls back).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

import autojit
from autojit import FallbackWarning, autoroute
from autojit.cache import disk_cache
from autojit.dispatch import dispatcher as dispatcher_module
from autojit.errors import StrictFallbackError
from autojit.tracer.state import MAX_TRACE_OPERATIONS


def go_fast(a):
    """The Numba five-minute guide's example: a scalar accumulated over the diagonal."""
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def fixed_loop(x):
    """50,000 iterations whatever the argument: far over the trace bound, unrolled (a loop
    over a list is Python's: the converter makes regions of loops over ``range`` only)."""
    acc = 0.0
    for i in list(range(50_000)):
        acc += x[i % 7] * 0.5
    return x + acc


def fixed_region(x):
    """The same loop over ``range``: a region, traced once whatever its trip count."""
    acc = 0.0
    for i in range(50_000):
        acc += x[i % 7] * 0.5
    return x + acc


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        return fn(*args)


@pytest.mark.parametrize("n", [100, 1000, 3000])
def test_the_five_minute_guide_loop_matches_numpy(n):
    a = np.arange(float(n * n)).reshape(n, n) / (n * n)
    # unrolled, it compiles below the trace bound and falls back over it (with the reason)
    assert_matches_numpy(go_fast, a, ulps=4, allowed_fallbacks=("the trace exceeds",))


def test_a_loop_over_the_trace_bound_falls_back_with_the_reason_and_the_line():
    f = autoroute(fixed_loop)
    x = np.linspace(0.0, 1.0, 7)
    with pytest.warns(FallbackWarning, match=r"the trace exceeds \d+ operations"):
        result = f(x.copy())
    np.testing.assert_array_equal(result, fixed_loop(x.copy()))
    (reason,) = f.stats()["fallbacks"]
    assert f"{os.path.basename(__file__)}:" in reason      # the user's file:line
    assert f.stats()["routes"]["python"] == 1
    assert_matches_numpy(fixed_loop, x, compiled=False)


def test_the_same_loop_over_range_is_a_region_under_any_bound():
    f = assert_matches_numpy(fixed_region, np.linspace(0.0, 1.0, 7), ulps=0)
    assert f.stats()["routes"]["python"] == 0, f.stats()["fallbacks"]


def test_a_loop_reusing_its_nodes_is_bounded_by_the_operations_it_records():
    """Every iteration's ``x * 2.0`` is the node before (one node, 200,000 operations):
    the trace stops at MAX_TRACE_OPERATIONS instead of tracing every iteration."""
    def same_each_time(x):
        for _ in list(range(200_000)):   # (a list: unrolled, not a region)
            y = x * 2.0
        return y

    f = autoroute(same_each_time)
    x = np.arange(3.0)
    np.testing.assert_array_equal(_quiet(f, x), x * 2.0)
    (reason,) = f.stats()["fallbacks"]
    assert f"exceeds {MAX_TRACE_OPERATIONS} operations recorded (" in reason
    assert f"{os.path.basename(__file__)}:" in reason


def test_a_loop_of_python_scalar_arithmetic_is_bounded_too():
    """Python-scalar steps (the host prologue) count as operations: 50,000 of them would be
    replayed on every call."""
    def count_up(x, n):
        for _ in list(range(50_000)):    # (a list: unrolled, not a region)
            n = n + 1
        return x * n

    f = autoroute(count_up)
    np.testing.assert_array_equal(_quiet(f, np.ones(2), 3), np.ones(2) * 50_003)
    assert f.stats()["routes"]["python"] == 1
    assert "operations" in f.stats()["fallbacks"][0]   # (the host steps' bound or all ops')


def test_a_loop_over_the_trace_bound_in_strict_mode_raises_strict_fallback_error():
    with autojit.config(strict=True), pytest.raises(StrictFallbackError,
                                                     match="exceeds .* operations"):
        autoroute(fixed_loop)(np.ones(7))


def test_a_view_chain_deeper_than_the_recursion_limit_read_after_a_write_compiles():
    """Reading a view taken before a write sees the write (the stale view is rebased
    through every step of its chain: 3000 here, three times Python's recursion limit)."""
    def peel_then_write(a):
        x = a
        for _ in range(3000):
            x = x[1:]
        a[0] = 5.0
        a[-1] = 7.0
        return x + 1

    assert_matches_numpy(peel_then_write, np.arange(4000.0))
    f = autoroute(peel_then_write)
    f(np.arange(4000.0))
    assert f.stats()["routes"]["cpu"] == 1, f.stats()["fallbacks"]


_NESTED_LIST: list = []
for _ in range(5000):
    _NESTED_LIST = [_NESTED_LIST]
_NESTED_TUPLE: tuple = ()
for _ in range(5000):
    _NESTED_TUPLE = (_NESTED_TUPLE,)
_LONG_LIST = [0] * 5000 + [_NESTED_TUPLE]


def test_a_global_nested_thousands_deep_is_guarded_and_keyed_without_recursion():
    """The guard walk and the disk cache's key walk read globals from an explicit stack
    (the cache key's walk raised RecursionError to the caller)."""
    def reads_a_long_list(x):
        return x + len(_LONG_LIST)

    f = autoroute(reads_a_long_list)
    np.testing.assert_array_equal(f(np.ones(3)), np.ones(3) + 5001)
    assert f.stats()["routes"]["cpu"] == 1, f.stats()["fallbacks"]
    # each level of a nested list is two checks: past MAX_GUARDS that is a fallback, by design
    g = autoroute(lambda x: x * len(_NESTED_LIST))
    np.testing.assert_array_equal(_quiet(g, np.ones(3)), np.ones(3))
    assert "more than" in g.stats()["fallbacks"][0]


def test_an_exception_while_fingerprinting_only_skips_the_disk_cache(monkeypatch):
    def deep(fn):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(disk_cache, "function_fingerprint", deep)
    f = autoroute(lambda a: np.sqrt(a) + 2.0)
    np.testing.assert_array_equal(f(np.arange(5.0)), np.sqrt(np.arange(5.0)) + 2.0)
    assert f.stats()["routes"]["cpu"] == 1


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"),
                                   KeyError("n3"), IndexError("tuple index out of range")])
def test_an_internal_exception_while_planning_is_a_fallback_and_strict_says_so(monkeypatch,
                                                                                error):
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(dispatcher_module, "plan_kernels", broken)
    f = autoroute(lambda a: np.sin(a) * 2.0)
    np.testing.assert_array_equal(_quiet(f, np.ones(3)), np.sin(np.ones(3)) * 2.0)
    assert f"internal error while planning ({type(error).__name__}" in f.stats()["fallbacks"][0]
    with autojit.config(strict=True), pytest.raises(StrictFallbackError,
                                                     match="internal error while planning"):
        autoroute(lambda a: np.sin(a) * 3.0)(np.ones(3))
