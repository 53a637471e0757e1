"""An ``if`` that cannot be a select leaves nothing of its attempt in the graph.

An ``if`` on a traced scalar (``n > 3`` inside a loop body: a graph bool there) is first
traced as a select, its writes predicated into the enclosing graph. Where the branches then
turn out to leave values of different types (a Python float in one, a NumPy float in the
other), the statement runs as Python — and the predicated writes of the attempt must not
stay behind: they made every write of the peeled first iteration happen twice (loopgen
seeds 44:57 and 44:257, wrong on main too).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy


def accumulate_and_write(y, n):
    acc1 = 1.5
    for t in range(y.shape[0]):
        if n > 3:
            acc1 = acc1 + y[t]
            y[t] += 0.5
    return y


def write_then_accumulate(y, n):
    acc1 = 1.5
    for t in range(y.shape[0]):
        if n > 3:
            y[t::2] += 0.5
            acc1 = acc1 + y[t]
    return y, acc1


def stencil_under_a_decision(x, y, steps):
    s4 = 0.0
    for _ in range(steps):
        if steps > 0:
            s4 += np.sum(x)
            y[1:-1] = y[1:-1] + 0.25 * (y[2:] - 2 * y[1:-1] + y[:-2])
    return y, s4


def wrapped_reads_and_strided_writes(x, y, n):
    acc1 = 1.5
    for t in range(y.shape[0]):
        if n > 3:
            acc1 = acc1 * 0.5 + y[t] - y[t - 1]
            y[t::2] -= -0.5
    e3 = np.empty((n, x.shape[0]))
    for i in range(n):
        e3[i] = x * i
    return y


@pytest.mark.parametrize("fn", [accumulate_and_write, write_then_accumulate])
def test_each_write_of_the_first_iteration_happens_once(fn) -> None:
    assert_calls_match_numpy(fn, [(np.arange(float(k)), n) for k, n in
                                  ((2, 4), (3, 4), (5, 2), (1, 9), (0, 4))])


def test_the_seeds_that_found_it() -> None:
    assert_calls_match_numpy(wrapped_reads_and_strided_writes, [
        (np.array([]), np.array([1.0, 968616.4384235005]), 4),
        (np.array([1.0, 2.0]), np.array([1.0, 2.0, -4.0]), 3),
        (np.array([1.0]), np.arange(6.0), 5)])
    assert_calls_match_numpy(stencil_under_a_decision, [
        (np.array([]), np.array([1.0, 2.0, -4.0]), 3), (np.ones(2), np.arange(5.0), 0),
        (np.ones(3), np.arange(7.0), 4)])
