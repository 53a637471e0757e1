"""A Python decision on a Python scalar argument itself (``bool(flag)``, ``if flag:``, no
arithmetic before it, so no host prologue step) is checked on every call: a call that
decides otherwise traces again (a fuzz-found wrong answer: ``-bool(a)`` stayed 0)."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def negated_truth(a0):
    v3 = -bool(a0)
    return np.floor_divide(v3, a0)


def branch_on_flag(x, flag):
    if flag:
        return x * 2.0
    return x - 1.0


def test_a_decision_on_an_argument_is_checked_per_call() -> None:
    jitted = assert_calls_match_numpy(negated_truth, [(False,), (True,), (False,), (True,)])
    # bool(a0) is a host value replayed per call (the converter's control.convert), not a
    # decision: one compile answers both values
    assert jitted.stats()["compiles"] == 1, jitted.stats()
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]
    jitted = assert_calls_match_numpy(branch_on_flag, [(np.ones(3), True), (np.ones(3), False),
                                                       (np.ones(4), 1), (np.ones(4), 0)])
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]


def mean_loop_then_decide(x, steps):
    s = 0.0
    for _ in range(1, steps):   # a Python float, then float32: the loop's first iteration
        s += np.mean(x)         # peels, guarded on "it ran" through a prologue type
    if steps > 3:
        pass
    return s


def test_a_miss_on_the_prologue_types_of_a_deciding_plan_is_no_internal_error() -> None:
    """A call whose prologue values have other types (the loop ran zero times) misses the
    version that decided: explaining that miss read the decisions of no values (TypeError
    to the caller, a loopgen finding)."""
    x = np.array([5.0, 0.0, 3.0, 0.0], dtype=np.float32)[::2]
    assert_calls_match_numpy(mean_loop_then_decide, [(x, 31), (x, 0), (x, 31)])
