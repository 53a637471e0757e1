"""A size a loop body was traced with, merged later with another by the trace (``x += z``
after the loop makes ``x``'s size ``z``'s), is bound under both names: gemver of the loop
corpus raised KeyError from the loop runner."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    n = A.shape[0]
    for i in range(n):
        A[i, :] += u1[i] * v1 + u2[i] * v2
    for i in range(n):
        x[i] += beta * (A[:, i] @ y)
    x += z
    for i in range(n):
        w[i] += alpha * (A[i, :] @ x)
    return A, x, w


def test_sizes_merged_after_a_loop_are_bound_for_its_body() -> None:
    rng = np.random.default_rng(0)

    def call(n: int) -> tuple:
        return (1.5, 1.2, rng.random((n, n)), *[rng.random(n) for _ in range(8)])

    jitted = assert_calls_match_numpy(gemver, [call(8), call(13), call(8)], rtol=1e-12)
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]
