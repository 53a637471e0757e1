"""The per-call cost of a plan holding a loop region (issue 15, wave 4 "overhead"): a loop
the native driver runs whole copies none of the arguments it writes (its views are proven
before anything runs, so no ``RegionMiss`` can follow), while a loop that meets an
iteration NumPy refuses midway still leaves every argument as it was given."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.loop_programs import lu_inplace
from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.runtime import schedule


def _raises_as_numpy(jitted, fn, a: np.ndarray, n: int) -> None:
    """``jitted(a, n)`` raises NumPy's IndexError, and leaves ``a`` as Python leaves it
    (the compiled loop's writes put back first: the Python run starts from ``a`` as given;
    the oracle helper does not compare arguments after an exception)."""
    given, expected = a.copy(), a.copy()
    with pytest.raises(IndexError):
        fn(expected, n)
    with pytest.raises(IndexError):
        jitted(given, n)
    np.testing.assert_array_equal(given, expected)


def prefix_fill(a, n):
    for i in range(n):
        a[i] = a[i] * 2.0 + np.sum(a[:i])   # IndexError once i reaches len(a)
    return a


def test_a_loop_the_driver_runs_whole_copies_no_argument(driver_runs) -> None:
    rng = np.random.default_rng(0)
    a = rng.random((12, 12)) + 12 * np.eye(12)
    jitted = assert_calls_match_numpy(lu_inplace, [(a,), (a,)], rtol=1e-12, atol=1e-12)
    before = schedule.GUARD_COPIES[0]
    runs = driver_runs()
    given = a.copy()
    assert jitted(given) is None
    assert driver_runs() == runs + 1
    assert schedule.GUARD_COPIES[0] == before
    expected = a.copy()
    lu_inplace(expected)
    np.testing.assert_array_equal(given, expected)
    assert jitted.stats()["routes"]["python"] == 0


def test_an_iteration_numpy_refuses_after_the_driver_declined_keeps_the_arguments(
        driver_runs) -> None:
    rng = np.random.default_rng(1)
    jitted = assert_calls_match_numpy(prefix_fill, [(rng.random(8), 5), (rng.random(8), 8)])
    _raises_as_numpy(jitted, prefix_fill, rng.random(4), 7)   # i == 4: a[:4] written before
    stats = jitted.stats()
    assert stats["routes"]["python"] == 1, stats
    assert stats["compiles"] == 1, stats
    assert any("NumPy refuses at this iteration" in f for f in stats["fallbacks"])


def test_the_arguments_are_copied_only_for_the_host_loop(driver_runs) -> None:
    jitted = autoroute(prefix_fill)
    a = np.ones(6)
    jitted(a.copy(), 6)   # the driver: no copy
    before, runs = schedule.GUARD_COPIES[0], driver_runs()
    jitted(a.copy(), 6)
    assert (schedule.GUARD_COPIES[0], driver_runs()) == (before, runs + 1)
    _raises_as_numpy(jitted, prefix_fill, a, 9)   # the host loop, copied first
    assert schedule.GUARD_COPIES[0] == before + 1


def two_loops(a, n):
    for i in range(a.shape[0]):      # the driver runs it whole
        a[i] = a[i] * 2.0 + np.sum(a[:i])
    for i in range(n):               # IndexError once i reaches len(a)
        a[i] = a[i] * 0.5 - np.sum(a[:i])
    return a


def test_a_loop_before_one_that_misses_midway_is_put_back_too(driver_runs) -> None:
    rng = np.random.default_rng(2)
    runs = driver_runs()
    jitted = assert_calls_match_numpy(two_loops, [(rng.random(6), 4), (rng.random(7), 7)])
    assert driver_runs() > runs
    _raises_as_numpy(jitted, two_loops, rng.random(5), 8)   # the second loop meets i == 5
    stats = jitted.stats()
    assert stats["routes"]["python"] == 1, stats
    assert stats["compiles"] == 1, stats


def dots_of_rows(a, c):
    out = np.ones(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = a[i, :i + 1] @ c[:i + 1]
    return out


def test_a_dot_of_negative_zeros_in_the_tight_inner_loop_is_numpys_positive_zero(
        driver_runs) -> None:
    runs = driver_runs()
    a, c = -np.zeros((5, 5)), np.ones(5)
    jitted = assert_calls_match_numpy(dots_of_rows, [(a, c), (a, c)])
    assert driver_runs() == runs + 2
    assert not np.signbit(jitted(a, c)).any()   # NumPy's 0. + (-0.)


def test_the_native_bind_sees_overlaps_as_np_may_share_memory_does() -> None:
    from autojit.runtime import native_region
    if native_region._native_bind is None:
        pytest.skip("autojit._native.loops is not built with bind")
    a = np.arange(24.0).reshape(4, 6)
    pairs = [(a[1:1], a), (a[::-1], a), (a[:2], a[2:]), (a[:3], a[2:]), (a[:, ::2], a[:, 1::2]),
             (a.T, a), (a[0], a[1]), (np.zeros(3), a), (a[:, 5], a[3, :1])]
    for x, y in pairs:
        apart = native_region._native_bind((x, y), ((0, 1),), ())
        assert apart is (not np.may_share_memory(x, y)), (x.strides, y.strides)
