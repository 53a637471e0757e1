"""An ``if`` on a traced scalar whose branches only compute is a select of both branches,
each traced on the values as they were before the ``if``: an augmented assignment in the
first (``acc += 1``) rebinds the Proxy object itself and must not leak into the second (a
loopgen wrong answer: the else branch saw the then branch's increment)."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def select_after_update(x, n):
    acc = 0.0
    for i in range(x.shape[0]):
        if acc > 0.5:            # a traced predicate: both branches traced, one selected
            acc += i // 2
        elif n > 3:
            acc = acc + x[i]
    return acc


def scalar_updated_in_one_branch(x):
    s = np.sum(x)
    if s > 1.0:
        s += 10.0
    else:
        s = s * 2.0
    return x + s


def test_a_branch_update_does_not_leak_into_the_other_branch() -> None:
    rng = np.random.default_rng(4)
    assert_calls_match_numpy(select_after_update, [(rng.random(4), 6), (rng.random(7), 2),
                                                   (np.zeros(3), 6)])
    jitted = assert_calls_match_numpy(scalar_updated_in_one_branch, [
        (np.full(3, 0.1),), (np.full(3, 1.0),)])
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]
