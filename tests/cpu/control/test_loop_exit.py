"""A ``break`` in a ``for`` over ``range`` whose condition is traced: the loop region stops
after the iteration that sets its break flag (``Region.exit``), in the host loop and the
native driver alike, so ``for it in range(max_iter): ...; if err < tol: break`` over a
Python int argument compiles (issue 15 scope 1). The values after the loop are Python's:
the carried values as of the breaking iteration."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

import autojit.runtime.native_region as native_region
from autojit import autoroute


@pytest.fixture
def driver_runs():
    """The number of loops the native driver ran since the test began (a callable)."""
    if native_region._native_run is None:
        pytest.skip("autojit._native.loops is not built (python setup.py build_ext --inplace)")
    start = native_region.RUNS[0]
    return lambda: native_region.RUNS[0] - start


def newton_sqrt(x, max_iter, tol):
    err = 1.0
    for it in range(max_iter):
        y = 0.5 * (x + 2.0 / x)
        err = np.max(np.abs(y - x))
        x = y
        if err < tol:
            break
    return x, err


def jacobi(a, b, max_iter, tol):
    x = np.zeros_like(b)
    d = np.diag(a)
    r = a - np.diag(d)
    for _ in range(max_iter):
        new = (b - r @ x) / d
        delta = np.max(np.abs(new - x))
        x = new
        if delta < tol:
            break
    return x


def _start(n=8, dtype=np.float64):
    return np.linspace(1.0, 9.0, n).astype(dtype)


@pytest.mark.parametrize("max_iter", [0, 1, 2, 3, 5, 100, 10**12])
def test_converge_until_tol_stops_at_the_break(max_iter):
    # (10**12: a region that ran its whole range would not return)
    assert_matches_numpy(newton_sqrt, _start(), max_iter, 1e-12)


@pytest.mark.parametrize("tol", [1e9, 0.5, 1e-3, 0.0])
def test_break_taken_first_later_or_never(tol):
    assert_matches_numpy(newton_sqrt, _start(), 40, tol)


def test_one_compiled_loop_for_many_trip_counts():
    assert_calls_match_numpy(newton_sqrt, [(_start(), 10**9, 1e-12), (_start(5), 3, 1e-12),
                                           (_start(), 0, 1e-12), (_start(3), 50, 10.0),
                                           (_start(), 7, 0.0)])


def test_float32_converge():
    assert_matches_numpy(newton_sqrt, _start(dtype=np.float32), 10**6, np.float32(1e-6))


def test_jacobi_until_tol():
    rng = np.random.default_rng(1)
    a = rng.random((6, 6)) + np.eye(6) * 6
    b = rng.random(6)
    assert_calls_match_numpy(jacobi, [(a, b, 10**6, 1e-13), (a, b, 4, 1e-13),
                                      (a, b, 10**6, 1.0)])


def test_native_driver_stops_at_the_break(driver_runs):
    jitted = assert_matches_numpy(newton_sqrt, _start(), 10**12, 1e-12)
    assert driver_runs() >= 1, native_region.DECLINED[0]
    jitted(_start(), 10**12, 1e-12)
    assert driver_runs() >= 2, native_region.DECLINED[0]


def with_continue(x, max_iter, tol):
    total = 0.0
    for k in range(max_iter):
        x = x * 0.5
        if np.sum(x) > 4.0:
            continue
        total = total + np.sum(x)
        if total > tol:
            break
    return x, total


@pytest.mark.parametrize("max_iter,tol", [(10**9, 5.0), (3, 5.0), (30, 1e9), (0, 1.0)])
def test_break_and_continue(max_iter, tol):
    assert_matches_numpy(with_continue, _start(), max_iter, tol)


def inner_break(x, n, limit):
    total = np.zeros(())
    for j in range(n):
        for i in range(n):
            total = total + x[i]
            if total > limit:
                break
        total = total * 0.5
    return total


@pytest.mark.parametrize("n,limit", [(5, 3.0), (5, 1e9), (0, 1.0), (7, 0.0)])
def test_break_in_an_inner_loop_leaves_only_it(n, limit):
    assert_calls_match_numpy(inner_break, [(np.arange(8.0), n, limit)])


def outer_break(x, n, tol):
    for j in range(n):
        for i in range(3):
            x = x * 0.5 + i
        if np.max(x) < tol:
            break
    return x


@pytest.mark.parametrize("n,tol", [(10**9, 4.5), (2, 4.5), (6, -1.0)])
def test_break_in_an_outer_loop_around_an_inner_one(n, tol):
    assert_matches_numpy(outer_break, _start(), n, tol)


def while_break(x, tol):
    steps = 0
    while steps < 1000:
        x = x * 0.5
        if np.max(x) < tol:
            break
        steps += 1
    return x, steps


@pytest.mark.parametrize("tol", [1.0, 1e-6, 1e9, -1.0])
def test_break_in_a_while(tol):
    assert_matches_numpy(while_break, _start(), tol)


def index_after(x, max_iter, tol):
    it = -1
    for it in range(max_iter):
        x = x * 0.5
        if np.max(x) < tol:
            break
    return x, it


@pytest.mark.parametrize("max_iter,tol", [(50, 1.0), (3, 1.0), (0, 1.0)])
def test_index_read_after_the_loop(max_iter, tol):
    # the index read after a loop is a Python int the region does not carry yet: this
    # compiles or falls back (Python's answer either way), never a wrong one
    assert_matches_numpy(index_after, _start(), max_iter, tol, compiled=False)


def _generated(seed: int):
    """A converge loop of a random shape: an update, an error, a break on it."""
    rng = np.random.default_rng(seed)
    factor, shift = float(rng.uniform(0.2, 0.9)), float(rng.uniform(-1, 1))
    reduce = [np.max, np.sum, np.min][seed % 3]

    def f(x, max_iter, tol):
        err = np.zeros(())
        for _ in range(max_iter):
            new = x * factor + shift
            err = reduce(np.abs(new - x))
            x = new
            if err < tol:
                break
        return x, err
    return f


@pytest.mark.parametrize("seed", range(6))
def test_generated_converge_loops(seed):
    fn = _generated(seed)
    assert_calls_match_numpy(fn, [(_start(), 10**9, 1e-9), (_start(4), 2, 1e-9),
                                  (_start(), 5, 1e9), (_start(), 0, 1.0)])


def test_compiles_without_fallback():
    jitted = autoroute(newton_sqrt, force="cpu")
    jitted(_start(), 10**9, 1e-12)
    assert not jitted.stats()["fallbacks"]
