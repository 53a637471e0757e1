"""The loop region's host loop (``runtime/regions.py``) and its body's kernels: the heat
body is two kernels (the update computed into a temporary, then copied into ``u``: it
reads shifted views of the array it writes), a one-element write (LU's ``A[i, j] = ...``)
is stored by the kernel computing it, and iterations reuse the buffers of the ones before
(carried values and temporaries) without changing any answer."""

from __future__ import annotations

import numpy as np

from tests.cpu.control.test_regions_loops import heat
from tests.support.loop_programs import lu_inplace
from tests.support.oracle import assert_calls_match_numpy

from autojit.tracer import control
from autojit.tracer.control import Names


def _compiled_once(jitted) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == 1, stats


def _grid(size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((size, size))


def _diagonally_dominant(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, n)) + n * np.eye(n)


def test_heat_body_is_two_kernels_evaluated_then_written():
    calls = [(_grid(10), 3, 0.1), (_grid(6, 1), 1, 0.2), (_grid(12, 2), 0, 0.1),
             (_grid(33, 3), 40, 0.05)]
    jitted = assert_calls_match_numpy(heat, calls)
    _compiled_once(jitted)
    body = jitted.inspect(np.ones((8, 8)), 3, 0.1).plan.regions[0].body
    assert body.steps == (("kernel", 0), ("kernel", 1))
    assert len(body.own_kernels) == 2


def test_one_element_write_is_stored_by_the_kernel_computing_it():
    calls = [(_diagonally_dominant(6),), (_diagonally_dominant(2, 1),),
             (_diagonally_dominant(3),), (_diagonally_dominant(17, 2),)]
    jitted = assert_calls_match_numpy(lu_inplace, calls)
    _compiled_once(jitted)
    inner = jitted.inspect(_diagonally_dominant(6)).plan.regions[0].body.regions
    assert [r.body.steps for r in inner] == [(("library", 0), ("kernel", 0))] * 2


def decay_rows(x, steps):
    # y = x * 1.0; for _ in range(steps): y = y * 0.5 + y[::-1] (reads y at other places)
    y = x * 1.0

    def body(_, carried, captured):
        (y,) = carried
        return (y * 0.5 + y[::-1],)
    (y,) = control.for_range((steps,), body, (y,), (), Names(("y",), (), __file__, 60))
    return y


def test_carried_array_read_at_other_places_is_not_overwritten_by_reuse():
    calls = [(np.arange(7.0), 0), (np.arange(7.0), 1), (np.arange(5.0), 2),
             (np.linspace(-1, 1, 9), 25)]
    _compiled_once(assert_calls_match_numpy(decay_rows, calls))


def two_carried(a, steps):
    # p, q = a * 1, a * 2; for i in range(steps): p, q = q + 1.0, p * q - i
    p, q = a * 1.0, a * 2.0

    def body(i, carried, captured):
        (p, q) = carried
        return (q + 1.0, p * q - i)
    (p, q) = control.for_range((steps,), body, (p, q), (), Names(("p", "q"), (), __file__, 75))
    return p, q


def test_swapped_carried_arrays_keep_their_values_across_iterations():
    calls = [(np.linspace(0, 1, 6), 0), (np.linspace(0, 1, 6), 1),
             (np.linspace(0, 1, 4), 3), (np.linspace(-0.5, 0.5, 11), 30)]
    _compiled_once(assert_calls_match_numpy(two_carried, calls))


def passthrough(a, steps):
    # q = a * 1.0; b = a; for _ in range(steps): b, q = q, b + q (a carried value passed on)
    q, b = a * 1.0, a

    def body(_, carried, captured):
        (b, q) = carried
        return (q, b + q)
    (b, q) = control.for_range((steps,), body, (b, q), (), Names(("b", "q"), (), __file__, 90))
    return b, q


def test_a_carried_value_passed_on_unchanged_is_not_reused_while_live():
    calls = [(np.arange(5.0), 0), (np.arange(5.0), 1), (np.arange(3.0), 2),
             (np.arange(8.0), 17)]
    _compiled_once(assert_calls_match_numpy(passthrough, calls))


def reversed_halves(x, steps):
    # a carried value that is a view of the body's own buffer
    # (returned as a new array: a carried view itself comes back as a copy of it)
    y = x * 1.0
    for _ in range(steps):
        y = (y * 0.5 + 1.0)[::-1]
    return y * 1.0


def test_a_carried_view_of_the_bodys_buffer_keeps_its_memory():
    calls = [(np.arange(6.0), 0), (np.arange(6.0), 1), (np.arange(4.0), 2),
             (np.linspace(0, 3, 9), 13)]
    _compiled_once(assert_calls_match_numpy(reversed_halves, calls))




def relax_in_place(u, tol):
    err = tol + 1.0
    while err > tol:
        new = 0.5 * (u[:-2] + u[2:])
        err = np.max(np.abs(new - u[1:-1]))
        u[1:-1] = new
    return u


def test_while_loop_with_temporaries_per_iteration():
    calls = [(np.linspace(0, 1, 8) ** 2, 1e-2), (np.linspace(0, 1, 5) ** 3, 1e-3),
             (np.linspace(-1, 1, 12) ** 2, 10.0)]
    _compiled_once(assert_calls_match_numpy(relax_in_place, calls))


def nested_rows(a, outer, inner):
    acc = a * 0.0
    for i in range(outer):
        row = a * 1.0
        for _ in range(inner):
            row = row * 0.5 + i
        acc = acc + row
    return acc


def test_nested_loops_reuse_their_buffers_per_call_of_the_inner_loop():
    calls = [(np.arange(5.0), 0, 3), (np.arange(5.0), 3, 0), (np.arange(3.0), 2, 4),
             (np.linspace(0, 1, 7), 6, 9)]
    _compiled_once(assert_calls_match_numpy(nested_rows, calls))


def test_heat_with_many_steps_matches_after_buffers_are_reused():
    calls = [(_grid(9), 2, 0.1), (_grid(9, 4), 200, 0.2), (_grid(40, 5), 7, 0.1)]
    _compiled_once(assert_calls_match_numpy(heat, calls))


def test_views_of_a_contiguous_array_load_with_a_unit_inner_stride():
    jitted = assert_calls_match_numpy(heat, [(_grid(9), 4, 0.1)])
    text = jitted.inspect(np.ones((8, 8)), 3, 0.1).kernels_text
    assert "strides (?,?)" not in text
    f_ordered = np.asfortranarray(_grid(9, 3))   # another layout: strides read at run time
    calls = [(f_ordered, 4, 0.1), (_grid(11, 4)[:, ::2], 3, 0.1), (_grid(10, 5), 2, 0.3)]
    assert_calls_match_numpy(heat, calls)
