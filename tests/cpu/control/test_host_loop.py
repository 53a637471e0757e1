"""The host loop (``runtime.regions.run_region``: the body's plan per iteration) for bodies
the native driver declines: what an iteration repeats of the one before it is cached in
the loop's ``LoopState`` (sizes bound once where only an index moves, launches saved per
operand layout), and an iteration NumPy refuses midway still leaves the arguments as
plain Python leaves them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.support.oracle import _copies, assert_calls_match_numpy, call_numpy

from autojit import autoroute
from autojit.runtime import binding, native_region, regions


def ping_pong(u, steps):
    buf = np.zeros((2, u.shape[0]))
    buf[0] = u
    for t in range(steps):
        a = buf[t % 2]
        b = buf[(t + 1) % 2]
        b[1:-1] = 0.25 * a[:-2] + 0.5 * a[1:-1] + 0.25 * a[2:]
    return buf[steps % 2]


def rotate_rows(a, n):
    for t in range(n):
        a[t % 3] = a[(t + 1) % 3] * 0.5 + 1.0
    return a


def hop(x, y, n):
    for t in range(n):
        x[(t * 3) % 11] += y[t % 2]
    return x


@pytest.fixture
def binds(monkeypatch):
    """The body size bindings of host loops (``regions.bind_sizes``) and the loops the
    driver ran, counted."""
    count = [0]
    real = binding.bind_sizes

    def counted(plan, args):
        count[0] += 1
        return real(plan, args)

    monkeypatch.setattr(regions, "bind_sizes", counted)
    return count


def test_an_index_moving_through_its_array_binds_the_body_once(binds) -> None:
    # u[t % 2] is no affine view: the driver declines, the host loop binds the body's
    # sizes at its first iteration only (its views keep their shapes)
    u = np.linspace(0.0, 1.0, 16)
    runs = native_region.RUNS[0]
    jitted = assert_calls_match_numpy(ping_pong, [(u, 0), (u, 1), (u, 7), (u[:9], 40)])
    assert native_region.RUNS[0] == runs, "the driver ran it: not a host loop test"
    assert binds[0] <= 3, binds[0]   # one per call that ran an iteration
    assert jitted.stats()["routes"]["python"] == 0
    a = np.arange(24.0).reshape(3, 8)
    assert_calls_match_numpy(rotate_rows, [(a, 0), (a, 5), (a[:, ::2], 100)])


def test_an_index_numpy_refuses_midway_leaves_what_python_leaves() -> None:
    # (t * 3) % 11 leaves an array of 8 at t = 3: NumPy's IndexError after three writes
    jitted = autoroute(hop, force="cpu")
    for x in (np.zeros(11), np.zeros(8), np.zeros(12)[::-1]):
        y = np.array([1.0, 2.0])
        expected_args, got_args = _copies([x, y, 9]), _copies([x, y, 9])
        expected, error = call_numpy(hop, expected_args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if error is not None:
                with pytest.raises(type(error)):
                    jitted(*got_args)
            else:
                np.testing.assert_array_equal(jitted(*got_args), expected)
        np.testing.assert_array_equal(got_args[0], expected_args[0])
        np.testing.assert_array_equal(got_args[1], expected_args[1])


def test_launches_saved_per_layout_follow_a_view_through_its_array() -> None:
    # the saved launch of b[1:-1] = ... is kept for the layout of its operands; each
    # iteration gives it that iteration's arrays (the rows alternate)
    u = np.sin(np.linspace(0.0, 3.0, 33))
    assert_calls_match_numpy(ping_pong, [(u, 2), (u, 3), (u[::2], 5), (u[1:], 6)])


def test_a_thread_split_kernel_in_the_host_loop_reads_this_iterations_arrays() -> None:
    options = {"num_threads": 2, "thread_min_work": 1000}
    u = np.cos(np.linspace(0.0, 5.0, 40000))
    assert_calls_match_numpy(ping_pong, [(u, 3), (u[::2], 4)], options=options)


def nested_rotation(a, n):
    for t in range(n):
        for j in range(3):
            a[(t + j) % 3] += a[(t + 2 * j) % 3] * 0.5
    return a


def test_an_inner_host_loop_keeps_its_state_across_the_outer_iterations() -> None:
    # the inner loop's launches and spare buffers are kept from one outer iteration to
    # the next (LoopState.for_inner); each run reads that iteration's rows
    a = np.arange(12.0).reshape(3, 4)
    assert_calls_match_numpy(nested_rotation, [(a, 0), (a, 1), (a, 9), (a[:, 1:], 4)])


def inner_temporaries(x, n):
    out = np.zeros((n, x.shape[0]))
    for i in range(n):
        y = x * 1.0
        for j in range(3):
            y = y * 0.5 + x[(i + j) % x.shape[0]]
        out[i] = y
    return out


def test_an_inner_loops_results_are_not_recycled_by_its_next_run() -> None:
    # the inner loop's last result is the outer body's (written into out[i]): the next
    # outer iteration's inner run must not reuse its buffer while it is still read
    x = np.linspace(-1.0, 1.0, 5)
    assert_calls_match_numpy(inner_temporaries, [(x, 1), (x, 6), (x[::2], 7)])


def count_into(x, n):
    for i in range(n):
        x[i % 4] += 1.0
    return x


def test_a_host_loop_far_slower_than_python_runs_as_python_after_measuring() -> None:
    # ~4 us per host iteration against ~0.1 us of Python's: the second call of the same
    # arguments runs as Python, timed, and the later calls as Python, with the reason
    calls = [(np.zeros(4), 3000)] * 3 + [(np.zeros(4), 7), (np.zeros(400), 7)]
    jitted = assert_calls_match_numpy(count_into, calls, force=None)
    stats = jitted.stats()
    # (the call of arrays 100x bigger is not the measured one's: compiled)
    assert stats["routes"]["python"] == 3 and stats["routes"]["cpu"] == 2, stats["routes"]
    reason = stats["decisions"][-2]["reason"]
    assert reason.startswith("plain Python ran a call") and "host loop" in reason, reason
    assert not stats["fallbacks"]


def test_a_forced_route_keeps_the_host_loop() -> None:
    calls = [(np.zeros(4), 3000)] * 3
    jitted = assert_calls_match_numpy(count_into, calls, force="cpu")
    assert jitted.stats()["routes"]["python"] == 0


def test_the_rule_keeps_the_compiled_loop_where_python_is_not_much_faster() -> None:
    from autojit.routing.host_loop import MIN_ITERATIONS, PREFER_RATIO, HostLoopRule
    rule = HostLoopRule()
    args = (np.zeros(3), 5)
    rule.after_compiled(args, 1.0, MIN_ITERATIONS - 1)   # too few iterations to compare
    assert not rule.wants_probe(args)
    rule.after_compiled(args, 1.0, MIN_ITERATIONS)
    assert not rule.wants_probe((np.zeros(4), 5)) and not rule.wants_probe((args[0], 6))
    assert rule.wants_probe((np.ones(3), 5))   # the same layout and trip count
    assert rule.after_python(1.0 / PREFER_RATIO * 1.5) is None and rule.python is None
    rule.after_compiled(args, 1.0, MIN_ITERATIONS)   # measured once: never again
    assert not rule.wants_probe(args)
