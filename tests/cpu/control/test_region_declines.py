"""A loop regions decline runs as Python once, never twice: a Python ``if`` on the loop
index in the body declines (its answer holds for one iteration), and so does a decision
met after the first iteration was peeled into the trace (carried types that change)."""

from __future__ import annotations

import warnings

import numpy as np

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute


def skip_every_third(x):
    for i in range(1, x.shape[0]):
        if i % 3 == 0:
            continue
        x[i] = x[i] * 0.5 + x[i - 1]
    return x


def decided_after_peel(x, g, n, c):
    acc = 1.5                      # a Python float, then float32: the first iteration peels
    for t in range(1, len(x) - 1):
        g[1:-1, 1:-1] += c * (g[2:, 1:-1] + g[:-2, 1:-1] + g[1:-1, 2:] + g[1:-1, :-2]
                              - 4 * g[1:-1, 1:-1])
        acc = acc + np.max(g[t]) if n > 2 else acc - 1
    return acc


def test_an_if_on_the_loop_index_is_decided_per_iteration() -> None:
    rng = np.random.default_rng(0)
    assert_calls_match_numpy(skip_every_third, [(rng.random(10),), (rng.random(17),)])


def test_a_loop_declined_after_its_first_iteration_runs_it_once() -> None:
    rng = np.random.default_rng(1)
    grid = [rng.standard_normal(shape).astype(np.float32) for shape in ((7, 2), (8, 6))]
    assert_calls_match_numpy(decided_after_peel, [
        (np.ones(7, np.int64), grid[0], 8, 1.5),
        (np.ones(8, np.int64), grid[1][::-1], 8, 0.125),
        (np.ones(8, np.int64), grid[1].copy(), 1, 0.125),
    ])


def test_the_fallback_reason_says_why_the_loop_was_no_region() -> None:
    """What stops the trace after a declined loop (``range(steps)`` then needs the value)
    is not the loop's reason: the fallback names both."""
    def carried_local(x, steps):
        y = x * 1.0
        for _ in range(steps):
            y += 1.0             # a computed array written, then rebound to a new
            y = y * 0.5          # array: declined (one updated in place compiles)
        return y

    f = autoroute(carried_local)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(np.ones(3), 2)
    (reason,) = f.stats()["fallbacks"]
    assert "is not a region: the body writes into a carried value" in reason, reason


def nbody_like(pos, vel, steps, dt):
    for _ in range(steps):
        vel += dt * pos          # an argument rebound (+=) to itself: written in place
        pos += dt * vel
    return pos, vel


def test_an_argument_updated_in_place_in_the_loop_is_written_in_place() -> None:
    rng = np.random.default_rng(3)
    jitted = assert_calls_match_numpy(nbody_like, [
        (rng.random(3), rng.random(3), 2, 0.5),
        (rng.random(5), rng.random(5), 0, 0.5),
        (rng.random(4), rng.random(4), 7, 0.25),
    ])
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0 and stats["compiles"] == 1, stats
