"""A loop body whose sizes change with the loop index (``a[:i]``, ``out[i, :i]``) binds
them at every iteration; an iteration NumPy refuses midway (``a[i]`` past the end) puts
back what the loop wrote and runs the call as Python, which raises where NumPy does."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def prefix_sums(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = np.sum(a[:i] * 2.0)
    return out


def lower_rows(a, n):
    out = np.zeros((n, n))
    for i in range(n):
        out[i, :i] = a[:i] + 1.0
    return out


def triangular_nest(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(i):
            out[i, j] = np.max(a[i, :j + 1]) - a[j, i]
    return out


def doubles_in_place(a, n):
    a[0] = -1.0                     # a write before the loop: put back too
    for i in range(n):
        a[i] = a[i] * 2.0           # IndexError once i reaches len(a)
    return a


def _compiled(jitted, python_calls: int = 0) -> dict:
    stats = jitted.stats()
    assert stats["routes"]["python"] == python_calls, stats["fallbacks"]
    assert stats["compiles"] == 1, stats
    return stats


def test_sizes_from_the_loop_index_are_bound_at_every_iteration() -> None:
    rng = np.random.default_rng(0)
    _compiled(assert_calls_match_numpy(prefix_sums, [(rng.random(6),), (rng.random(13),),
                                                     (rng.random(2),)], rtol=1e-12))
    _compiled(assert_calls_match_numpy(lower_rows, [(rng.random(9), 5), (rng.random(9), 8),
                                                    (rng.random(3), 0)]))  # a zero-trip loop too


def test_nested_loops_with_index_dependent_slices() -> None:
    rng = np.random.default_rng(1)
    _compiled(assert_calls_match_numpy(triangular_nest, [(rng.random((5, 5)),),
                                                         (rng.random((9, 9)),)]))


def test_an_iteration_numpy_refuses_midway_runs_the_call_as_python() -> None:
    rng = np.random.default_rng(2)
    jitted = assert_calls_match_numpy(doubles_in_place, [
        (rng.random(9), 5),
        (rng.random(4), 6),          # NumPy raises IndexError at i == 4, a[:4] doubled
        (rng.random(9), 9),
    ])
    stats = _compiled(jitted, python_calls=1)
    assert any("NumPy refuses at this iteration" in f for f in stats["fallbacks"])
