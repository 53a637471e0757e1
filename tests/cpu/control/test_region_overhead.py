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


def prefix_fill(a, n):
    for i in range(n):
        a[i] = np.sum(a[:i]) + 1.0   # IndexError once i reaches len(a)
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
    jitted = assert_calls_match_numpy(prefix_fill, [
        (rng.random(8), 5),
        (rng.random(4), 7),   # NumPy raises IndexError at i == 4, a[:4] written before
        (rng.random(8), 8),
    ])
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
    given = a.copy()
    with pytest.raises(IndexError):
        jitted(given, 9)   # the host loop, copied first; Python raises as NumPy does
    assert schedule.GUARD_COPIES[0] == before + 1
    expected = a.copy()
    with pytest.raises(IndexError):
        prefix_fill(expected, 9)
    np.testing.assert_array_equal(given, expected)
