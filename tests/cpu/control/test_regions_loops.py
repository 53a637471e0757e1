"""Loops traced once as regions (issue 15): ``for`` over ``range`` with traced or constant
bounds and ``while`` on a traced condition compile once for every trip count and size, and
match NumPy. The functions are written as the AST converter (``tracer/convert.py``) writes
them: the statement becomes a call of ``control.for_range`` / ``control.while_loop`` with
the body as a function of the carried and captured values."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.tracer import control
from autojit.tracer.control import Names


def heat(u, steps, alpha):
    # for _ in range(steps):
    #     u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
    #                               + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    def body(_, carried, captured):
        (u, alpha) = captured
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                  + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
        return ()
    () = control.for_range((steps,), body, (), (u, alpha), Names((), ("u", "alpha"), __file__, 20))
    return u


def trace_sum(a, n):
    # acc = 0.0
    # for i in range(n):
    #     acc += np.sum(a) * 0.5
    # return a + acc
    acc = 0.0

    def body(i, carried, captured):
        (acc,) = carried
        (a,) = captured
        acc += np.sum(a) * 0.5
        return (acc,)
    (acc,) = control.for_range((n,), body, (acc,), (a,), Names(("acc",), ("a",), __file__, 35))
    return a + acc


def relax(u, tol):
    # err = tol + 1.0
    # while err > tol:
    #     new = 0.5 * (u[:-2] + u[2:])
    #     err = np.max(np.abs(new - u[1:-1]))
    #     u[1:-1] = new
    # return u
    err = tol + 1.0

    def cond(carried, captured):
        (err,) = carried
        (u, tol) = captured
        return err > tol

    def body(carried, captured):
        (err,) = carried
        (u, tol) = captured
        new = 0.5 * (u[:-2] + u[2:])
        err = np.max(np.abs(new - u[1:-1]))
        u[1:-1] = new
        return (err,)
    (err,) = control.while_loop(cond, body, (err,), (u, tol),
                                Names(("err",), ("u", "tol"), __file__, 56))
    return u


def decay(x, steps):
    # y = x * 1.0
    # for _ in range(3, steps, 2):
    #     y = y * 0.5 + x
    # return y
    y = x * 1.0

    def body(_, carried, captured):
        (y,) = carried
        (x,) = captured
        y = y * 0.5 + x
        return (y,)
    (y,) = control.for_range((3, steps, 2), body, (y,), (x,), Names(("y",), ("x",), __file__, 81))
    return y


def nested(u, outer, inner):
    # for _ in range(outer):
    #     for _ in range(inner):
    #         u[1:] += 0.5 * u[:-1]
    #     u[...] *= 0.75
    def outer_body(_, carried, captured):
        (u, inner) = captured

        def inner_body(_, carried, captured):
            (u,) = captured
            u[1:] += 0.5 * u[:-1]
            return ()
        () = control.for_range((inner,), inner_body, (), (u,), Names((), ("u",), __file__, 99))
        u[...] *= 0.75
        return ()
    () = control.for_range((outer,), outer_body, (), (u, inner),
                           Names((), ("u", "inner"), __file__, 97))
    return u


def clipped_growth(x, steps):
    # s = np.sum(x)
    # for _ in range(steps):
    #     if s > 100.0:
    #         s = s * 0.5
    #     else:
    #         s = s * 3.0
    # return x * s
    s = np.sum(x)

    def body(_, carried, captured):
        (s,) = carried

        def then(carried, captured):
            (s,) = carried
            return (s * 0.5,)

        def orelse(carried, captured):
            (s,) = carried
            return (s * 3.0,)
        (s,) = control.if_else(s > 100.0, then, orelse, (s,), (), Names(("s",), (), __file__, 118))
        return (s,)
    (s,) = control.for_range((steps,), body, (s,), (), Names(("s",), (), __file__, 117))
    return x * s


def fill_scratch(b, n):
    # x = np.zeros_like(b)
    # for _ in range(n):
    #     x[...] = x * 0.5 + b
    # return x
    x = np.zeros_like(b)

    def body(_, carried, captured):
        (x, b) = captured
        x[...] = x * 0.5 + b
        return ()
    () = control.for_range((n,), body, (), (x, b), Names((), ("x", "b"), __file__, 140))
    return x


def _grid(size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((size, size))


def _compiled_once(jitted) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == 1, stats


def test_heat_stencil_compiles_once_for_every_step_count_and_size():
    calls = [(_grid(10), 3, 0.1), (_grid(10, 1), 50, 0.1), (_grid(10, 2), 1000, 0.2),
             (_grid(500), 3, 0.1), (_grid(12), 0, 0.1)]
    _compiled_once(assert_calls_match_numpy(heat, calls))


def test_heat_writes_the_callers_array():
    u = _grid(8)
    expected = heat(u.copy(), 5, 0.1)
    jitted = autoroute(heat, force="cpu")
    result = jitted(u, 5, 0.1)
    assert result is u
    np.testing.assert_array_equal(u, expected)


def test_carried_scalar_changes_type_after_the_first_iteration():
    # Python float, then NumPy float64: 0 iterations keep the Python float (a float32 sum
    # stays float32), so the zero-trip call takes the other path and traces once more
    a32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    calls = [(np.arange(6.0).reshape(2, 3), 3), (np.ones((4, 5)), 7), (a32, 2), (a32, 0),
             (np.arange(6.0).reshape(2, 3), 1), (np.arange(6.0).reshape(2, 3), 0)]
    jitted = assert_calls_match_numpy(trace_sum, calls)
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] <= 4   # per dtype, ran / did not run


def test_while_loop_on_a_traced_condition():
    rng = np.random.default_rng(3)
    calls = [(rng.random(10), 1e-3), (rng.random(16), 1e-3), (rng.random(10), 0.5),
             (rng.random(12), 1e-4)]
    jitted = assert_calls_match_numpy(relax, calls)
    _compiled_once(jitted)


def test_while_loop_whose_first_condition_is_false_traces_that_path():
    calls = [(np.arange(5.0), 1e-3), (np.arange(5.0), np.inf), (np.arange(7.0), 1e-2)]
    jitted = assert_calls_match_numpy(relax, calls)
    assert jitted.stats()["routes"]["python"] == 0


def test_range_with_start_and_step_and_carried_array():
    x = np.linspace(0, 1, 7)
    calls = [(x, 10), (x, 3), (x, 2), (np.arange(4.0), 11), (np.ones(3), 4)]
    _compiled_once(assert_calls_match_numpy(decay, calls))


def test_loop_inside_a_loop_body():
    calls = [(np.linspace(0, 1, 6), 2, 3), (np.linspace(0, 1, 9), 4, 0),
             (np.linspace(-1, 1, 5), 0, 5), (np.linspace(0, 1, 6), 3, 2)]
    _compiled_once(assert_calls_match_numpy(nested, calls))


def test_if_on_an_array_scalar_inside_a_loop():
    calls = [(np.arange(4.0), 5), (np.arange(10.0), 12), (np.ones(3), 0), (np.ones(2), 30)]
    _compiled_once(assert_calls_match_numpy(clipped_growth, calls))


def test_loop_writes_a_computed_scratch_array():
    calls = [(np.arange(5.0), 3), (np.arange(8.0), 0), (np.ones(3), 20)]
    _compiled_once(assert_calls_match_numpy(fill_scratch, calls))


def test_shape_changing_carried_value_runs_as_python():
    def shrink(x, n):
        def body(_, carried, captured):
            (x,) = carried
            return (x[1:],)
        (x,) = control.for_range((n,), body, (x,), (), Names(("x",), (), __file__, 1))
        return x * 2.0
    calls = [(np.arange(6.0), 2), (np.arange(9.0), 4)]
    jitted = assert_calls_match_numpy(shrink, calls)
    assert jitted.stats()["routes"]["python"] == 2


def test_exception_in_the_body_is_raised():
    def bad(a, n):
        def body(_, carried, captured):
            (acc,) = carried
            (a,) = captured
            return (acc + a.reshape(-1, 4).sum(),)
        (acc,) = control.for_range((n,), body, (np.float64(0.0),), (a,),
                                   Names(("acc",), ("a",), __file__, 1))
        return acc
    calls = [(np.arange(6.0), 2), (np.arange(8.0), 3)]
    assert_calls_match_numpy(bad, calls)


def test_region_graph_text_shows_the_loop():
    text = autoroute(trace_sum, force="cpu").inspect(np.ones(3), 4).graph_text
    assert "loop i in [1, n) carried (acc)" in text   # the first iteration: peeled
    assert "trace for_body(i: i64[]" in text   # the index by the name the user gave it
