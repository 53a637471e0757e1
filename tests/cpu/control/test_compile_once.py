"""Sizes read as Python ints (``x.shape[0]``, ``len(x)``, ``x.size``, an int argument ``n``)
in Python arithmetic (``%``, ``//``, ``-``, ``*``, ``min``/``max``, comparisons), as an
index, a slice bound, a ``range`` bound or a size (``np.zeros((n // 2, 3))``,
``np.linspace(0, 1, n)``, ``np.arange(n)``) stay symbolic, in straight-line code and inside
loop regions: one compile serves every value (issue 15, scope 3). Each program of the table
is called on one dispatcher with several sizes and trip counts; every call must match NumPy
(the oracle), run compiled (``routes["python"] == 0``) and the whole table compile once.

No call passes a size of 1: an axis of size 1 is specialised (NumPy broadcasts it), so a
call with one compiles a version of its own, by design.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from tests.support import loop_programs as lp
from tests.support.oracle import assert_calls_match_numpy


def _vec(size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(1000 * size + seed).uniform(-1.0, 1.0, size)


def _mat(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(1000 * rows + cols + seed).uniform(-1.0, 1.0, (rows, cols))


# -- programs of our own: sizes in Python arithmetic ----------------------------------------
def row_distances(x, n):          # the repro: a size read in the body, ``%`` on it
    e = np.empty((x.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        e[i] = np.abs(x - x[i % x.shape[0]])
    return e


def half_scratch(x, n):           # np.zeros((n // 2, 3))
    return np.zeros((n // 2, 3)) + x[:3]


def first_half(x):                # a slice bound len(x) // 2
    return x[: len(x) // 2] * 2.0


def last_and_rest(x):             # an index n - 1 and a slice bound
    n = x.shape[0]
    return x[n - 1] + x[: n - 1]


def doubled_size(x):              # a size x.shape[0] * 2, and x.size
    return np.zeros(x.shape[0] * 2) + x.size


def unit_samples(n):              # np.linspace(0, 1, n)
    return np.linspace(0, 1, n)


def ramp(x):                      # np.arange(len(x))
    return np.arange(len(x)) * x


def clipped_prefix(x, n):         # min(n, x.shape[0]) as a slice bound
    return x[: min(n, x.shape[0])] * 2.0


def middle_scaled(x):             # an index x.shape[0] // 2
    return x[x.shape[0] // 2] * x


def bumps(x, steps):              # x[t % n] in a loop over an int argument
    n = x.shape[0]
    for t in range(steps):
        x[t % n] += 1.0
    return x


def clamped_neighbours(x):        # min/max of the index and a size read in the body
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[max(i - 1, 0)] + x[min(i + 1, x.shape[0] - 1)]
    return out


def centre_bumps(u, steps):       # u.shape[0] // 2 inside the body
    for _ in range(steps):
        u[u.shape[0] // 2] += 1.0
    return u


def reversed_copy(x):             # len(x) - 1 - i inside the body
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = x[len(x) - 1 - i] * 2.0
    return out


def shrinking_sums(x):            # a slice bound x.shape[0] - i inside the body
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sum(x[: x.shape[0] - i])
    return out


def scratch_in_body(x, steps):    # np.zeros((x.shape[0] // 2, 3)) inside the body
    acc = np.zeros(3)
    for t in range(steps):
        z = np.zeros((x.shape[0] // 2, 3))
        acc = acc + z.sum(axis=0) + x[t % x.shape[0]]
    return acc


def samples_in_body(x, steps):    # np.linspace(0, 1, x.shape[0]) inside the body
    acc = np.zeros(x.shape[0])
    for t in range(steps):
        acc = acc + np.linspace(0.0, 1.0, x.shape[0]) + x[t]
    return acc


def ramp_in_body(x, steps):       # np.arange(len(x)) inside the body
    acc = np.zeros(x.shape[0])
    for t in range(steps):
        acc = acc + np.arange(len(x)) * x[t % len(x)]
    return acc


def flat_index(a, steps):         # a.size // a.shape[1] in the body
    for t in range(steps):
        a[t % a.size // a.shape[1], 0] += 1.0
    return a


def mirrored_rows(a):             # a nested loop over a.shape[1] // 2, read in both bodies
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        for j in range(a.shape[1] // 2):
            out[i] += a[i, a.shape[1] - 1 - j]
    return out


def negate_front(x):              # a comparison of the index with a size, in the body
    for i in range(x.shape[0]):
        if i * 2 < x.shape[0]:
            x[i] = -x[i]
    return x


def weighted_rows(x, n):          # an int argument and a size in the body's arithmetic
    out = np.zeros((n, x.shape[0]))
    for i in range(n):
        out[i] = x * (n - i) + x[(i * 3) % x.shape[0]]
    return out


def scattered(a, steps):          # both sizes of a tuple unpacking, % in the body
    r, c = a.shape
    for t in range(steps):
        a[t % r, (t * 7) % c] += 1.0
    return a


def window_sums(x):               # max(0, i - 3) as a slice bound in the body
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(1, n):
        out[i] = np.sum(x[max(0, i - 3):i])
    return out


def samples_of_n(x, n, steps):    # np.linspace(0, 1, n) of an int argument in the body
    acc = np.zeros(n)
    for t in range(steps):
        acc = acc + np.linspace(0.0, 1.0, n) * x[t % x.shape[0]]
    return acc


def pairs_summed(x):              # a reshape to x.shape[0] // 2 rows
    return x.reshape(x.shape[0] // 2, 2).sum(axis=1)


def rows_of(x, n):                # np.reshape(x, (n, -1)) of an int argument
    return np.reshape(x, (n, -1)) * 2.0


def pairs_in_body(a, steps):      # a reshape sized by a.shape[0] // 2 inside the body
    acc = np.zeros(a.shape[0] // 2)
    for t in range(steps):
        acc = acc + a.reshape(a.shape[0] // 2, 2)[:, t % 2]
    return acc


def int_offsets(x, steps):        # x.shape[0] // 2 meets an int64 array in the body
    acc = np.zeros(x.shape[0], dtype=np.int64)
    for t in range(steps):
        acc = acc + (x.shape[0] // 2) + x[t % x.shape[0]]
    return acc


@dataclass(frozen=True)
class Case:
    """A program and the argument tuples of its calls (fresh inputs per call)."""

    name: str
    fn: Callable
    calls: tuple[Callable[[], tuple], ...]
    rtol: float = 0.0
    atol: float = 0.0


def _each(make: Callable[[int], tuple], values: tuple[int, ...] = (7, 9, 5, 12, 7)
          ) -> tuple[Callable[[], tuple], ...]:
    return tuple((lambda v=v: make(v)) for v in values)


def _heat_calls() -> tuple[Callable[[], tuple], ...]:
    # issue 15's Done-when: steps 3, 50, 1000 and grids 10 and 500 (the 500 grid with few
    # steps: the suite's time is tight), then the first call again
    pairs = [(10, 3), (10, 50), (10, 1000), (500, 3), (10, 3)]
    return tuple((lambda s=s, t=t: (lp._grid(s, t), t, 0.2)) for s, t in pairs)


CASES: tuple[Case, ...] = (
    Case("heat", lp.heat, _heat_calls()),
    Case("distances", lp.distances, _each(lambda s: (s - 2, _vec(s)))),
    Case("lower_solve", lp.lower_solve, _each(lambda s: (lp._lower(s, 0), _vec(s))),
         **lp.SUMS),
    Case("lu_inplace", lp.lu_inplace, _each(lambda s: (lp._dominant(s, 0),)), **lp.SUMS),
    Case("trace_tanh", lp.trace_tanh, _each(lambda s: (lp._dominant(s, 0) / s,)),
         **lp.SUMS),
    Case("relax", lp.relax, _each(lambda s: (_vec(s), 1e-3))),
    Case("row_distances", row_distances, _each(lambda s: (_vec(s), 3))),
    Case("half_scratch", half_scratch, _each(lambda s: (_vec(3), s))),
    Case("first_half", first_half, _each(lambda s: (_vec(s),))),
    Case("last_and_rest", last_and_rest, _each(lambda s: (_vec(s),))),
    Case("doubled_size", doubled_size, _each(lambda s: (_vec(s),))),
    Case("unit_samples", unit_samples, _each(lambda s: (s,))),
    Case("ramp", ramp, _each(lambda s: (_vec(s),))),
    Case("clipped_prefix", clipped_prefix, _each(lambda s: (_vec(s), s - 2))),
    Case("middle_scaled", middle_scaled, _each(lambda s: (_vec(s),))),
    Case("bumps", bumps, _each(lambda s: (_vec(s), s + 3))),
    Case("clamped_neighbours", clamped_neighbours, _each(lambda s: (_vec(s),))),
    Case("centre_bumps", centre_bumps, _each(lambda s: (_vec(s), 3))),
    Case("reversed_copy", reversed_copy, _each(lambda s: (_vec(s),))),
    Case("shrinking_sums", shrinking_sums, _each(lambda s: (_vec(s),)), **lp.SUMS),
    Case("scratch_in_body", scratch_in_body, _each(lambda s: (_vec(s), 4))),
    Case("samples_in_body", samples_in_body, _each(lambda s: (_vec(s), 3))),
    Case("samples_of_n", samples_of_n, _each(lambda s: (_vec(4), s, 3))),
    Case("ramp_in_body", ramp_in_body, _each(lambda s: (_vec(s), 3))),
    Case("flat_index", flat_index, _each(lambda s: (_mat(s, 3), 2 * s))),
    Case("mirrored_rows", mirrored_rows, _each(lambda s: (_mat(s, s + 2),))),
    Case("negate_front", negate_front, _each(lambda s: (_vec(s),))),
    Case("weighted_rows", weighted_rows, _each(lambda s: (_vec(s + 1), s))),
    Case("scattered", scattered, _each(lambda s: (_mat(s, s + 3), 3 * s))),
    Case("window_sums", window_sums, _each(lambda s: (_vec(s),)), **lp.SUMS),
    Case("pairs_summed", pairs_summed, _each(lambda s: (_vec(2 * s),))),
    Case("rows_of", rows_of, _each(lambda s: (_vec(3 * s), s))),
    Case("pairs_in_body", pairs_in_body, _each(lambda s: (_vec(2 * s), 3))),
    Case("int_offsets", int_offsets, _each(lambda s: (np.arange(s), 3))),
)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_sizes_in_python_arithmetic_compile_once(case: Case) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted = assert_calls_match_numpy(case.fn, case.calls, rtol=case.rtol,
                                          atol=case.atol)
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == 1, stats["recompiles"]


def test_a_branch_on_an_int_argument_guards_the_decision() -> None:
    """``if n > 100:`` outside a region: n = 200 then 300 take one version; n = 50 decides
    otherwise and compiles again, with the decision as the logged reason."""
    x = _vec(6) ** 2
    jitted = assert_calls_match_numpy(lp.step, [(x, 200), (x, 300)])
    assert jitted.stats()["compiles"] == 1, jitted.stats()["recompiles"]
    jitted(x.copy(), 50)
    stats = jitted.stats()
    assert stats["compiles"] == 2
    assert any("decision" in why and "was True, now False" in why
               for why in stats["recompiles"]), stats["recompiles"]


def counted_prefix(x, n):
    k = 0
    while k < n:   # Python runs this loop: a decision per iteration (k < n), not n itself
        x[k] = -x[k]
        k += 1
    return x


def test_a_version_traced_for_other_decisions_is_a_miss_not_an_error() -> None:
    """A version whose views NumPy would refuse for this call (``x[6]`` of a 5-element
    array, from a loop Python ran for n = 7) but that decided otherwise on the call's
    Python scalars is another path's: the call compiles its own, it does not run as Python."""
    calls = [(_vec(7), 7), (_vec(5), 5), (_vec(7), 7)]
    jitted = assert_calls_match_numpy(counted_prefix, calls)
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == 2, stats["recompiles"]


def test_a_reshape_to_sizes_that_do_not_fit_raises_as_numpy_does() -> None:
    """The reshape's sizes are read per call: one that does not fit is NumPy's ValueError
    (that call runs as Python, which raises), and the version still serves the others."""
    calls = [(_vec(12), 3), (_vec(10), 3), (_vec(20), 5), (_vec(6), -1), (_vec(12), 4)]
    jitted = assert_calls_match_numpy(rows_of, calls)
    stats = jitted.stats()
    assert stats["compiles"] == 1, stats["recompiles"]
    assert stats["routes"]["python"] == 2   # the two calls NumPy raises for


def added_int(x, k, steps):
    acc = np.zeros(3, dtype=np.int32)
    for _ in range(steps):
        acc = acc + k   # NumPy: OverflowError where k does not fit int32
    return acc + x


def test_an_int_the_body_converts_is_checked_once_per_call() -> None:
    """A Python int the same at every iteration that the body converts to an integer dtype
    is checked outside the loop (NumPy's OverflowError for 2**40, through Python)."""
    calls = [(np.arange(3), 5, 2), (np.arange(3), 2 ** 40, 2), (np.arange(3), 7, 3)]
    jitted = assert_calls_match_numpy(added_int, calls)
    stats = jitted.stats()
    assert stats["compiles"] == 1, stats["recompiles"]
    assert stats["routes"]["python"] == 1   # the call NumPy raises for


def test_a_size_one_recompile_says_it_is_a_broadcast_specialisation() -> None:
    jitted = assert_calls_match_numpy(row_distances, [(_vec(7), 3), (_vec(1), 3)])
    assert jitted.stats()["compiles"] == 2
    assert jitted.stats()["recompiles"] == [
        "x: float64[1d,C], a size 1 (specialised for broadcasting) on axis 0"]


def peeled_sum(y, n):
    acc = 0.0   # a Python float, then a NumPy float64: the first iteration is peeled
    for t in range(1, n - 1):
        acc = acc * 0.5 + y[t]
    return y * acc


def test_a_loop_that_runs_no_iteration_now_says_why_it_compiles_again() -> None:
    """The peeled first iteration is guarded on the loop running at least once (a sign of
    ``n - 2``): a call running none compiles again, and the reason names that guard."""
    jitted = assert_calls_match_numpy(peeled_sum, [(_vec(6), n) for n in (5, 6, 1, 2, 5)])
    stats = jitted.stats()
    assert stats["compiles"] == 2, stats["recompiles"]
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert any("sign of a Python int" in why for why in stats["recompiles"])


def test_sizes_in_an_inner_bound_keep_the_nest_in_the_native_driver(driver_runs) -> None:
    """``range(a.shape[1] // 2)`` inside the body is computed once per call before the
    loop (a parameter of the body, not a host step per iteration): the whole nest runs in
    the native driver, once per call, for every size."""
    jitted = assert_calls_match_numpy(mirrored_rows, _each(lambda s: (_mat(s, s + 2),)))
    assert jitted.stats()["compiles"] == 1, jitted.stats()["recompiles"]
    assert driver_runs() == 5
