"""Issue 15, wave 4 (pyscalar): loops that carry a Python int, float or bool from one
iteration to the next are regions, with Python's answers: an int stays ``int`` (never
leaving int64 unnoticed: its magnitude is bounded and guarded, else the call runs as
Python), one that becomes a float after the first iteration has that iteration peeled, the
loop index acts as a Python int (NEP 50: weak), and the index read after the loop is the
last one. Every case goes through the oracle, over trip counts 0, 1, 2 and a large one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.runner import compile_function
from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute

X = np.arange(10.0)


def _compiled(jitted, compiles: int | None = None) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    if compiles is not None:
        assert stats["compiles"] == compiles, stats


# -- a carried int becoming a float: the first iteration peeled --------------------------------
def int_then_float(g, steps):
    acc1 = 1
    for j in range(steps):
        acc1 += j * 0.5
    return g, acc1


def int_then_float_again(g, steps):
    acc1 = 1
    for j in range(steps):
        acc1 += j * 0.5
    return g, acc1


def test_an_int_that_becomes_a_float_is_peeled() -> None:
    jitted = assert_calls_match_numpy(int_then_float, [(X, s) for s in (0, 1, 2, 500)])
    _compiled(jitted, 2)   # (no iteration returns the int 1, any other a float)
    jitted = assert_calls_match_numpy(int_then_float_again, [(X, s) for s in (1, 2, 3, 500)])
    _compiled(jitted, 1)


def float_after_floor(x, n):
    acc = 0
    for i in range(n):
        acc += i // 2
        acc = acc * 0.5 + 1
    return acc


def test_floor_division_of_the_index_then_float_arithmetic() -> None:
    _compiled(assert_calls_match_numpy(float_after_floor, [(X, s) for s in (1, 2, 7, 300)]), 1)


# -- carried ints ------------------------------------------------------------------------------
def running_max(steps):
    acc1 = 0
    for j in range(1, steps - 1):
        acc1 = max(acc1, j)
    return acc1


def stepped_count(n, k):
    cnt2 = 0
    s4 = 0.0
    for _ in range(0, n, 2):
        cnt2 += k // 2
    return cnt2 + s4


def mixed_int(x, n):
    cnt = 0
    for i in range(n):
        cnt += i % 3
        cnt = cnt % 7 - (cnt // 3)
    return cnt, x


def bool_arithmetic(x, n):
    c = 0
    for i in range(n):
        c += True
        c = c - (i > 2) * 1
    return c


def counter_in_branch(x, n):
    k = 0
    for i in range(n):
        if i % 3 == 0:
            k += 1
    return x * k, i


@pytest.mark.parametrize(("fn", "calls"), [
    (running_max, [(s,) for s in (0, 1, 2, 3, 1000)]),
    (stepped_count, [(s, 5) for s in (0, 1, 2, 999)] + [(7, -3), (7, 0)]),
    (mixed_int, [(X, s) for s in (0, 1, 2, 500)]),
    (bool_arithmetic, [(X, s) for s in (0, 1, 2, 400)]),
    (counter_in_branch, [(X, s) for s in (1, 2, 3, 1000)]),
], ids=["max", "floor_div_of_argument", "mod_and_floor_div", "bools", "index_after_loop"])
def test_carried_ints_compile_once(fn, calls) -> None:
    _compiled(assert_calls_match_numpy(fn, calls), 1)


def test_the_result_is_a_python_int() -> None:
    jitted = autoroute(stepped_count, force="cpu")
    assert type(jitted(10, 4)) is float and jitted(10, 4) == 10.0
    jitted = autoroute(running_max, force="cpu")
    assert type(jitted(10)) is int and jitted(10) == 8


def index_after_loop(x, n):
    i = -5
    for i in range(2, n, 3):
        x = x + i
    return x, i


def test_the_index_after_the_loop_is_the_last_one() -> None:
    # (no iteration leaves the value before the loop: a decision, one more compile)
    _compiled(assert_calls_match_numpy(index_after_loop, [(X, s) for s in (2, 3, 10, 6, 2)]),
              2)


# -- int64 overflow: Python's ints do not overflow -------------------------------------------
def doubling(n):
    cnt = 0
    for i in range(n):
        cnt = cnt * 2 - i
    return cnt


def test_a_carried_int_the_body_multiplies_runs_as_python() -> None:
    jitted = assert_calls_match_numpy(doubling, [(s,) for s in (0, 3, 40, 70, 200)])
    assert jitted.stats()["routes"]["python"] == 4   # (no iteration: compiled)
    assert doubling(70) == jitted(70) and abs(jitted(70)) > 2 ** 63


def test_a_sum_that_would_leave_int64_runs_as_python() -> None:
    calls = [(10, 4), (10, 2 ** 62), (3, 2 ** 61), (0, 2 ** 62), (10, 6)]
    jitted = assert_calls_match_numpy(stepped_count, calls)
    assert jitted.stats()["routes"]["python"] == 1   # (10, 2**62): 5 * 2**61 > int64
    assert jitted(10, 2 ** 62) == 5 * 2 ** 61


def large_start(n, start):
    cnt = start
    for _ in range(n):
        cnt += 1
    return cnt


def test_a_counter_from_an_argument_near_int64_runs_as_python() -> None:
    calls = [(5, 3), (5, 2 ** 63 - 3), (2, 2 ** 63 - 10), (5, -(2 ** 62))]
    jitted = assert_calls_match_numpy(large_start, calls)
    assert jitted.stats()["routes"]["python"] == 1


# -- Python's exceptions ------------------------------------------------------------------------
def floor_by_argument(n, k):
    cnt = 3
    for i in range(n):
        cnt += i // k
    return cnt


def floor_by_zero(n):
    cnt = 3
    for _ in range(n):
        cnt = cnt // 0
    return cnt


def modulo_by_zero(n):
    acc = 1.5
    for i in range(n):
        acc += i % 0
    return acc


def divide_by_index(n):
    acc = 1.0
    for i in range(n):
        acc += 1.0 / i
    return acc


@pytest.mark.parametrize(("fn", "calls"), [
    (floor_by_argument, [(5, 2), (5, 0), (0, 0), (5, -3)]),
    (floor_by_zero, [(0,), (2,)]),
    (modulo_by_zero, [(0,), (3,)]),
    (divide_by_index, [(0,), (1,), (4,)]),
], ids=["floordiv_argument", "floordiv_zero", "mod_zero", "truediv_index"])
def test_zero_division_raises_as_python_does(fn, calls) -> None:
    assert_calls_match_numpy(fn, calls)


# -- NumPy scalars and the index as a Python int --------------------------------------------------
def float32_plus_index(x, steps):
    acc1 = np.float32(1)
    for t in range(1, steps - 1):
        acc1 += t
    return acc1


def numpy_then_python(x, n, k):
    acc1 = 1
    for i in range(n - 1, -1, -1):
        acc1 = acc1 + x[i] * x[i] if k > 0 else acc1 - 1
    return acc1


def test_a_numpy_scalar_plus_the_index_stays_float32() -> None:
    calls = [(X, s) for s in (0, 1, 2, 3, 1000)]
    _compiled(assert_calls_match_numpy(float32_plus_index, calls), 1)


def test_a_python_int_that_becomes_a_numpy_scalar() -> None:
    calls = [(X, s, 1) for s in (0, 1, 2, 10)]
    _compiled(assert_calls_match_numpy(numpy_then_python, calls))


def while_counter(x, tol):
    it = 0
    err = 1.0
    while err > tol:
        err = err * 0.5
        it += 1
    return it, err


def test_a_while_counter_and_float() -> None:
    _compiled(assert_calls_match_numpy(while_counter, [(X, 0.1), (X, 1e-3), (X, 2.0)]), 1)


# -- generated: random int updates of a carried int ----------------------------------------------
_UPDATES = ["c += i", "c -= i // 2", "c += k % 5", "c = max(c, i - k)", "c = min(c, k * i)",
            "c += 1", "c = c + (i % 3) * k", "c = -c + 2", "c = c // 3 + i",
            "c = c % 11 + k // 4", "f += c * 0.5", "f = f * 0.5 + i"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(_UPDATES), min_size=1, max_size=3),
       st.integers(-3, 2 ** 40), st.sampled_from([0, 1, 2, 9, 200]))
def test_generated_int_updates_match_python(updates, k, n) -> None:
    source = ("def fn(x, n, k):\n    c = 0\n    f = 0.0\n    for i in range(n):\n"
              + "".join(f"        {u}\n" for u in updates) + "    return c, f, x\n")
    fn = compile_function(source, "fn", tag=f"pyscalar {abs(hash(source))}")
    assert_calls_match_numpy(fn, [(X, n, k), (X, 3, 7), (X, 0, k)])


# -- tests on Python scalars inside a loop body: per iteration, not one decision ---------------
def while_on_the_index(x, n):
    z = x
    for i in range(1, n - 1):
        it5 = 0
        while i % 2 == 0 and it5 < 5:
            it5 += 1
            z = 0.5 * z + z
    return z, it5


def not_or_on_the_index(x, n):
    tot = 0
    for i in range(n):
        if not (i % 3 == 0 or i > 5):
            tot += 2
    return tot


def nested_counters(x, n):
    cnt = 0
    for i in range(n):
        cnt += i
        for j in range(i):
            cnt -= j % 3
    return cnt


def test_a_while_on_the_index_inside_a_loop_body() -> None:
    _compiled(assert_calls_match_numpy(while_on_the_index, [(X, s) for s in (3, 4, 10, 50)]),
              1)


def test_and_or_not_on_the_index_inside_a_loop_body() -> None:
    _compiled(assert_calls_match_numpy(not_or_on_the_index, [(X, s) for s in (0, 1, 3, 50)]),
              1)


def test_nested_loops_bound_their_ints_together() -> None:
    _compiled(assert_calls_match_numpy(nested_counters, [(X, s) for s in (0, 1, 2, 300)]), 1)


# -- arithmetic Python may raise in, where Python does not evaluate it -------------------------
def modulo_in_a_branch(x, n):
    cnt = 0
    for i in range(n):
        if i != 2:
            cnt += 10 % (i - 2)
    return cnt


def division_in_a_branch(x, n):
    acc = 0.0
    for i in range(n):
        if i != 2:
            acc += 10.0 / (i - 2)
    return acc


def division_after_and(x, n):
    acc = 0.0
    for i in range(n):
        if x[0] > 5 and 10.0 / (i - 2) > 1:
            acc += 1.0
    return acc


def division_in_a_selected_side(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + 1.0 / (i - 2) if x[0] > i else acc
    return acc


@pytest.mark.parametrize("fn", [modulo_in_a_branch, division_in_a_branch, division_after_and,
                                division_in_a_selected_side])
def test_a_division_in_a_branch_python_skips_does_not_raise(fn) -> None:
    # (the prologue computes every host step at every iteration: a step that may raise is
    # refused in a branch, and the function runs as Python)
    assert_calls_match_numpy(fn, [(X, s) for s in (0, 1, 3, 5)])


def prefix_by_counter(x, n):
    k = 0
    for i in range(n):
        if i % 3 == 0:
            k += 1
    return x[:k].sum(), i


def test_a_counter_as_a_slice_bound_runs_as_python_with_its_reason() -> None:
    jitted = assert_calls_match_numpy(prefix_by_counter, [(X, s) for s in (1, 2, 10)])
    stats = jitted.stats()
    assert stats["routes"]["python"] == 3
    assert "a slice bound that is a Python int computed" in stats["fallbacks"][0]


def modulo_by_a_size_in_a_branch(x, n):
    cnt = 0
    for i in range(n):
        if i > 1:
            cnt += i % x.shape[0]
    return cnt


def test_a_modulo_by_a_size_in_a_branch_is_guarded_on_the_size() -> None:
    # (an empty x: Python raises ZeroDivisionError at i == 2, or not where n <= 2)
    calls = [(np.arange(5.0), 7), (np.arange(3.0), 9), (np.arange(0.0), 4), (np.arange(0.0), 1),
             (np.arange(4.0), 0)]
    jitted = assert_calls_match_numpy(modulo_by_a_size_in_a_branch, calls)
    assert jitted.stats()["routes"]["cpu"] >= 2


# -- decisions on the call's Python scalars inside a loop body: the same at every iteration -----
def select_on_an_argument(x, n, k):
    acc1 = 0
    for i in range(n - 1, -1, -1):
        acc1 = acc1 + x[i] * x[i] if k > 0 else acc1 - 1
    return acc1


def compare_index_with_argument(x, n, k):
    acc = 0
    for i in range(n):
        if i > k:
            acc += 1
    return acc


def test_a_decision_on_an_argument_in_a_loop_body_is_the_outer_traces() -> None:
    calls = [(X, 3, 0), (X, 5, -2), (X, 0, 0), (X, 3, 1), (X, 2, -1)]
    _compiled(assert_calls_match_numpy(select_on_an_argument, calls))
    calls = [(X, 3, 0), (X, 5, 3), (X, 9, 2), (X, 0, 1)]
    _compiled(assert_calls_match_numpy(compare_index_with_argument, calls), 1)


def _promoted_in_a_later_iteration(x):
    acc1 = np.float32(0)
    for j in range(1, len(x)):
        if j % 3 == 1:
            pass
        else:
            acc1 += x[j] * x[j]   # float32 until the first iteration that takes this branch
    return acc1


def test_a_decision_on_the_index_that_changes_a_carried_type_is_not_guarded() -> None:
    # a Python if on the loop index holds for one iteration: the body must not guard on it
    # (merging two hoisting passes once let it through: float32 where NumPy gives float64)
    assert_calls_match_numpy(_promoted_in_a_later_iteration, [
        (np.array([0.0, -0.008, -5762.25]),), (np.array([1.0, 2.0]),), (np.arange(9.0),)])
