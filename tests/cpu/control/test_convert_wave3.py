"""More of the code people write compiles (issue 15, wave 3, the converter and host side):
Python scalars returned as Python scalars, ``int()``/``float()``/``len()``/``bool()`` of
traced values, ``if`` on a loop index inside a loop body, ``for`` loops that ``break``.
Every test compares with plain NumPy through the oracle and checks the result types."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def _compiled(jitted, compiles: int = 1) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == compiles, stats["recompiles"]


# -- returning Python scalars ------------------------------------------------------------
def constant_float(x, c):
    acc = 1.5
    acc += 0.5
    return x * 2.0, acc


def constant_int(x):
    count = 0
    return count


def constants_exact(x):
    return -0.0, float("nan"), 2 ** 70, True, x + 1


def test_a_python_constant_returned_stays_a_python_scalar() -> None:
    for fn, calls in ((constant_float, [(np.ones(3), 0.5), (np.arange(5.0), 1.5)]),
                      (constant_int, [(np.ones(3),), (np.ones(7),)]),
                      (constants_exact, [(np.ones(2),), (np.zeros(4),)])):
        _compiled(assert_calls_match_numpy(fn, calls))


# -- int(), float(), bool(), len() of traced values ----------------------------------------
def sized_by_int(x, n):
    return np.zeros(int(n)) + x[:len(x) // 2].sum()


def converted_scalars(x, c):
    return x * float(c), float(len(x)), int(c), bool(c)


def filled_by_len(x):
    out = np.empty(len(x))
    for i in range(len(x)):
        out[i] = x[i] * 2
    return out


def own_int(x):
    int = lambda v: 7   # noqa: E731 (a user's own int: not the builtin)
    return x + int(x)


def test_int_of_a_python_scalar_argument_is_its_value_per_call() -> None:
    calls = [(np.ones(4), 3), (np.arange(6.0), 2), (np.ones(2), 0)]
    _compiled(assert_calls_match_numpy(sized_by_int, calls))
    calls = [(np.ones(3), 2.5), (np.ones(4), 0.0), (np.ones(2), -1.75)]
    _compiled(assert_calls_match_numpy(converted_scalars, calls))


def test_len_of_an_argument_is_its_size_without_a_guard() -> None:
    calls = [(np.arange(3.0),), (np.arange(10.0),), (np.arange(500.0),), (np.zeros(0),)]
    _compiled(assert_calls_match_numpy(filled_by_len, calls))


def test_a_users_own_int_is_called_as_it_is() -> None:
    _compiled(assert_calls_match_numpy(own_int, [(np.ones(2),), (np.ones(5),)]))


# -- the generator's harness ---------------------------------------------------------------
def test_an_early_return_of_an_inexact_value_taints_the_returned_items() -> None:
    """Program 12:1212 returns ``s3`` (a tanh sum) from inside an ``if`` and ``acc1 + acc1``
    at the end: the comparison must allow the sum's rounding for the call that returns it
    early, in the run and in the repro it writes."""
    from tests.fuzz.loopgen import generate_loop, run_loop_program
    program = generate_loop("12:1212")
    assert "return s3" in program.source()
    assert not program.taint["acc1 + acc1"].exact
    assert "'acc1 + acc1': (8.0, True)" in program.repro()
    assert run_loop_program(program).failure is None


# -- an if on the loop index inside a loop body ----------------------------------------------
def every_third(x, n):
    acc = x[0] * 0.0
    for j in range(n):
        if j % 3 == 1:  # noqa: SIM108 (the statement is what is tested)
            acc = acc + x[j]
        else:
            acc = acc - 1.0
    return x * acc


def test_an_if_on_the_loop_index_in_a_body_is_a_select() -> None:
    """A decision holds for one iteration only; a select of both branches (each a pure
    value) is exact for every iteration, so the loop is one region for all trip counts."""
    calls = [(np.arange(6.0), 5), (np.arange(4.0), 0), (np.arange(9.0), 9), (np.arange(3.0), 1)]
    _compiled(assert_calls_match_numpy(every_third, calls))


# -- the corpus: issue 15's Done-when sizes and trip counts ----------------------------------
def _stepped():
    from tests.support.loop_programs import EXPECTED_TO_COMPILE, LOOP_PROGRAMS
    return [case for case in LOOP_PROGRAMS if case.name in EXPECTED_TO_COMPILE
            and len(case.trips) > 1 and min(case.trips) >= 3]


def test_stepping_programs_compile_once_for_the_done_when_sizes_and_steps() -> None:
    """Each time-stepping program that compiles: one compile for grid sizes 10 and 500 and
    steps 3, 50 and 1000 (issue 15's Done-when), every call matching NumPy."""
    import warnings

    from tests.support.loop_programs import DONE_WHEN_SIZES, DONE_WHEN_TRIPS
    cases = _stepped()
    assert {"heat", "jacobi_1d", "wave", "ping_pong", "euler_f32"} <= {c.name for c in cases}
    for case in cases:
        pairs = [(s, t) for s in DONE_WHEN_SIZES for t in DONE_WHEN_TRIPS]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jitted = assert_calls_match_numpy(
                case.fn, [lambda s=s, t=t, case=case: case.make(s, t) for s, t in pairs],
                rtol=case.rtol, atol=case.atol)
        stats = jitted.stats()
        assert stats["routes"]["python"] == 0, (case.name, stats["fallbacks"])
        assert stats["compiles"] == 1, (case.name, stats["recompiles"])


# -- a loop that runs no iteration for the traced call ---------------------------------------
def fill_rows(x, n):
    e = np.empty(n, dtype=x.dtype)
    for i in range(n):
        e[i] = x[i] * 2
    return e


def test_a_loop_running_no_iteration_leaves_its_values_guarded_on_running_none() -> None:
    """Traced first with n = 0 on an empty x, the body's example index is out of range
    (x[0]): the loop leaves every value as it is, guarded; a call that runs it traces
    again and compiles it as a region."""
    calls = [(np.zeros(0), 0), (np.arange(5.0), 5), (np.arange(3.0), 0), (np.arange(8.0), 6)]
    _compiled(assert_calls_match_numpy(fill_rows, calls), compiles=2)


# -- a conditional expression assigned ------------------------------------------------------
def alternating(x, n):
    acc = x[0] * 0.0
    for j in range(n):
        acc = acc + x[j] if j % 2 == 0 else acc - 1.0
    return x * acc


def nested_choice(x, n):
    s = 0 if n > 2 else (1 if n > 1 else 2)
    s += 3 if n else 4
    x[0] = 5.0 if n > 1 else -5.0
    return x + s


def test_a_conditional_expression_on_the_loop_index_is_a_select() -> None:
    calls = [(np.arange(5.0), 4), (np.arange(7.0), 7), (np.arange(3.0), 0), (np.arange(4.0), 1)]
    _compiled(assert_calls_match_numpy(alternating, calls))


def test_conditional_expressions_outside_loops_keep_their_decisions() -> None:
    calls = [(np.ones(2), 3), (np.ones(2), 2), (np.ones(2), 0), (np.ones(3), 3)]
    jitted = assert_calls_match_numpy(nested_choice, calls)
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]


# -- continue on the loop index ----------------------------------------------------------------
def skip_multiples_of_three(x, n):
    acc = x[0] * 0.0
    for j in range(n):
        if j % 3 == 0:
            continue
        acc = acc + x[j]
    return x * acc


def test_a_continue_on_the_loop_index_is_a_select_of_graph_flags() -> None:
    """The continue flag is a graph bool in the body the region tracer traces: ``if c:
    continue`` and the guarded rest are selects, one region for every trip count."""
    calls = [(np.arange(5.0), 4), (np.arange(7.0), 7), (np.arange(3.0), 0), (np.arange(9.0), 2)]
    _compiled(assert_calls_match_numpy(skip_multiples_of_three, calls))


# -- break in a range loop -------------------------------------------------------------------
def sum_until_large(x):
    acc = x[0] * 0.0
    for j in range(len(x)):
        if x[j] > 2:
            break
        acc = acc + x[j]
    return x * acc


def negate_first(x, n):
    for j in range(n):
        if j > 2:
            break
        x[j] = -x[j]
    return x


def test_a_break_in_a_loop_over_an_array_is_a_region_of_graph_flags() -> None:
    calls = [(np.arange(5.0),), (np.arange(7.0) - 3,), (np.arange(3.0),), (np.full(4, 9.0),)]
    _compiled(assert_calls_match_numpy(sum_until_large, calls))


def test_a_break_in_a_loop_over_an_int_argument_stops_at_the_break() -> None:
    """The region stops after the iteration that sets its break flag (``Region.exit``), as
    Python does: ``range(n)`` of an int argument with a break compiles once for every trip
    count (10**6: a region that ran its whole range would not stop at the break)."""
    calls = [(np.arange(6.0), n) for n in (0, 1, 2, 4, 50, 10**6)]
    _compiled(assert_calls_match_numpy(negate_first, calls))
    # the breaking iteration's view x[3] is out of range (its write is predicated, not
    # skipped): that call runs as Python, Python's answer
    assert_calls_match_numpy(negate_first, [(np.arange(3.0), 9)])


# -- max(a, b) and min(a, b) of traced scalars --------------------------------------------
def running_peak(x):
    acc = x[0]
    for i in range(len(x)):
        acc = max(acc, x[i])
    return x - acc


def running_floor(x):
    lo = x[0]
    for i in range(len(x)):
        lo = min(lo, x[i] * 2)
    return x + lo


def picked_scalars(x, a, b):
    return x + max(a, b) - min(a, 2.5)


def test_max_and_min_of_traced_scalars_are_pythons_choice() -> None:
    """Python's max(a, b) keeps a unless b compares greater (ties and NaN keep a): a
    select for graph scalars of one type, a host step for Python scalars."""
    calls = [(np.array([1.0, 5.0, np.nan, 3.0]),), (np.array([-0.0, 0.0]),),
             (np.arange(7.0),), (np.array([0.0, -0.0, 0.0]),)]
    _compiled(assert_calls_match_numpy(running_peak, calls))
    _compiled(assert_calls_match_numpy(running_floor, calls))
    calls = [(np.ones(2), 1.5, 2.0), (np.ones(2), 3.0, 2.0), (np.ones(2), 2.0, 2.0)]
    _compiled(assert_calls_match_numpy(picked_scalars, calls))


def break_in_try(x):
    total = 0
    try:
        for i in range(10 ** 9):
            total += i
            if i == 3:
                break
    except KeyError:
        pass
    for _ in range(3):
        x = x + 1
    return x + total


def test_a_range_loop_with_break_left_to_python_stops_at_the_break() -> None:
    """Inside a try the loop stays a Python for (its flag a Python bool): it must still
    stop at the break, not run the range's other 10**9 iterations doing nothing."""
    _compiled(assert_calls_match_numpy(break_in_try, [(np.ones(2),), (np.zeros(3),)]))
