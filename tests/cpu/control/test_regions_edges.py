"""Loop regions at their edges: traced and constant trip counts, the index in host
arithmetic, reads of a written argument after the loop, aliased arguments, a body that
cannot be a region (it runs as Python: never a wrong answer)."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy

from autojit.tracer import control
from autojit.tracer.control import Names


def halve_positive_count(a):
    # y = a * 1.0
    # for _ in range(np.sum(a > 0)):
    #     y = y * 0.5
    # return y
    y = a * 1.0

    def body(_, carried, captured):
        (y,) = carried
        return (y * 0.5,)
    (y,) = control.for_range((np.sum(a > 0),), body, (y,), (), Names(("y",), (), __file__, 1))
    return y


def five_steps(u):
    # for _ in range(5): u[1:] = u[1:] + u[:-1]
    def body(_, carried, captured):
        (u,) = captured
        u[1:] = u[1:] + u[:-1]
        return ()
    () = control.for_range((5,), body, (), (u,), Names((), ("u",), __file__, 1))
    return u.sum()


def ramp(y, n):
    # for i in range(n): y = y + i * 0.5
    def body(i, carried, captured):
        (y,) = carried
        return (y + i * 0.5,)
    (y,) = control.for_range((n,), body, (y,), (), Names(("y",), (), __file__, 1))
    return y


def add_into(a, b, n):
    # for _ in range(n): a += b
    def body(_, carried, captured):
        (a, b) = captured
        a += b
        return ()
    () = control.for_range((n,), body, (), (a, b), Names((), ("a", "b"), __file__, 1))
    return a


def test_trip_count_from_a_traced_array_value():
    calls = [(np.array([1.0, -2.0, 3.0]),), (np.array([-1.0, -2.0]),),
             (np.arange(-3.0, 9.0),)]
    jitted = assert_calls_match_numpy(halve_positive_count, calls)
    assert jitted.stats()["routes"]["python"] == 0
    assert jitted.stats()["compiles"] == 1


def test_constant_trip_count_is_a_region_not_unrolled():
    calls = [(np.arange(6.0),), (np.ones(40),)]
    jitted = assert_calls_match_numpy(five_steps, calls)
    assert jitted.stats()["routes"]["python"] == 0
    plan = jitted.inspect(np.ones(4)).plan
    assert plan.regions and len(plan.graph.nodes) < 12


def test_loop_index_in_python_arithmetic():
    calls = [(np.arange(3.0), 4), (np.ones(5), 0), (np.zeros(2, np.float32), 7)]
    jitted = assert_calls_match_numpy(ramp, calls)
    assert jitted.stats()["routes"]["python"] == 0


def test_aliased_arguments_of_a_loop_that_writes_run_as_python():
    base = np.arange(6.0)
    calls = [(base.copy(), np.ones(6), 3), lambda: ((x := np.arange(6.0)), x, 3),
             lambda: ((x := np.arange(7.0))[1:], x[:-1], 2)]
    jitted = assert_calls_match_numpy(add_into, calls)
    assert jitted.stats()["routes"]["cpu"] >= 1


def add_fourth(y, u, n):
    # for _ in range(n): y = y + u[3]
    def body(_, carried, captured):
        (y,) = carried
        (u,) = captured
        return (y + u[3],)
    (y,) = control.for_range((n,), body, (y,), (u,), Names(("y",), ("u",), __file__, 1))
    return y


def test_a_body_view_numpy_refuses_at_this_call_raises_as_numpy_does():
    calls = [(np.ones(3), np.arange(5.0), 2), (np.ones(3), np.arange(2.0), 2),
             (np.ones(3), np.arange(2.0), 0), (np.ones(2), np.arange(6.0), 3)]
    jitted = assert_calls_match_numpy(add_fourth, calls)
    assert jitted.stats()["compiles"] == 1


def triangle(y, n):
    # for i in range(n):
    #     for j in range(i):
    #         y = y * 0.5 + j
    #     y = y + i
    def outer(i, carried, captured):
        (y,) = carried

        def inner(j, carried, captured):
            (y,) = carried
            return (y * 0.5 + j,)
        (y,) = control.for_range((i,), inner, (y,), (), Names(("y",), (), __file__, 2))
        return (y + i,)
    (y,) = control.for_range((n,), outer, (y,), (), Names(("y",), (), __file__, 1))
    return y


def test_inner_bound_from_the_outer_index():
    calls = [(np.ones(3), 4), (np.arange(5.0), 0), (np.arange(2.0), 9)]
    jitted = assert_calls_match_numpy(triangle, calls)
    assert jitted.stats()["compiles"] == 1
    assert jitted.stats()["routes"]["python"] == 0


def _bump_interior(u, v):
    u[1:-1] += v[1:-1] * 2.0
    return u


def test_augmented_store_into_a_slice_writes_once():
    # Python stores x[k] back after x[k] += v: that store changes nothing and needs no copy
    # kernel (it was one per statement, per loop iteration)
    jitted = assert_calls_match_numpy(_bump_interior, [(np.arange(6.0), np.ones(6)),
                                                        (np.arange(9.0), np.arange(9.0))])
    plan = jitted.inspect(np.arange(6.0), np.ones(6)).plan
    assert sum(n.op.value == "write" for n in plan.graph.nodes) == 1
    readonly = np.arange(6.0)
    readonly.flags.writeable = False
    assert_calls_match_numpy(_bump_interior, [(np.arange(6.0), np.ones(6)),
                                              lambda: (readonly, np.ones(6))])


def normalise_or_double(x):
    # if np.max(x) > 1.0:
    #     y = x / np.max(x)
    # else:
    #     y = x * 2.0
    def then(carried, captured):
        (x,) = captured
        return (x / np.max(x),)

    def orelse(carried, captured):
        (x,) = captured
        return (x * 2.0,)
    (y,) = control.if_else(np.max(x) > 1.0, then, orelse, (control.UNDEFINED,), (x,),
                           Names(("y",), ("x",), __file__, 1))
    return y


def halve_until_small(x):
    # while np.sum(x) > 1.0:
    #     x = x * 0.5
    def cond(carried, captured):
        (x,) = carried
        return np.sum(x) > 1.0

    def body(carried, captured):
        (x,) = carried
        return (x * 0.5,)
    (x,) = control.while_loop(cond, body, (x,), (), Names(("x",), (), __file__, 1))
    return x


def test_if_with_array_branches_is_a_select():
    calls = [(np.arange(4.0),), (np.array([0.25, 0.5]),), (np.array([np.nan, 3.0]),),
             (np.array([-0.0, 0.5]),)]
    jitted = assert_calls_match_numpy(normalise_or_double, calls)
    assert jitted.stats()["compiles"] == 1 and jitted.stats()["routes"]["python"] == 0


def test_while_with_a_carried_array():
    calls = [(np.arange(4.0),), (np.array([0.25, 0.5]),), (np.full(7, 3.0),)]
    jitted = assert_calls_match_numpy(halve_until_small, calls)
    assert jitted.stats()["compiles"] == 1 and jitted.stats()["routes"]["python"] == 0


def sums_around_a_loop(u, n):
    # before = u.sum(); head = u[:2]
    # for _ in range(n): u[1:] = u[1:] * 0.5 + u[:-1]
    # return before, u.sum(), head * 1.0
    before = u.sum()
    head = u[:2]

    def body(_, carried, captured):
        (u,) = captured
        u[1:] = u[1:] * 0.5 + u[:-1]
        return ()
    () = control.for_range((n,), body, (), (u,), Names((), ("u",), __file__, 1))
    return before, u.sum(), head * 1.0


def test_reads_before_and_after_a_writing_loop_see_numpys_order():
    calls = [(np.arange(5.0), 3), (np.arange(8.0), 0), (np.ones(3), 6)]
    jitted = assert_calls_match_numpy(sums_around_a_loop, calls)
    assert jitted.stats()["compiles"] == 1 and jitted.stats()["routes"]["python"] == 0


def int_then_float32(a, n):
    # acc = 0
    # for _ in range(n): acc += np.max(a)
    # return acc
    acc = 0

    def body(_, carried, captured):
        (acc,) = carried
        (a,) = captured
        acc += np.max(a)
        return (acc,)
    (acc,) = control.for_range((n,), body, (acc,), (a,), Names(("acc",), ("a",), __file__, 1))
    return acc


def test_python_int_then_float32_keeps_numpys_types():
    a = np.array([1.5, -2.0, 0.25], dtype=np.float32)
    calls = [(a, 4), (a * 3, 1), (a, 0), (a, 2)]   # 0 iterations: the Python int 0
    jitted = assert_calls_match_numpy(int_then_float32, calls)
    # the call without an iteration returns the Python int 0: a returned Python constant
    # is a host value of the trace, the Python object itself (it compiles too)
    assert jitted.stats()["routes"]["python"] == 0 and jitted.stats()["routes"]["cpu"] == 4
