"""Sizes from Python int arguments (and Python arithmetic on them): ``np.zeros(n)``,
``np.ones((n, 3))``, ``np.full(n, v)``, ``np.arange(a, b)``, ``np.linspace(a, b, n)``
compile once for every value; NumPy's errors for bad values (negative sizes) are still
raised. Python ``if``s on such scalars guard on the decision, not the value."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy

import autojit

SIZES = [0, 1, 2, 5, 17, 3]


def _compiled_once(jitted, python_calls: int = 0, compiles: int = 1) -> None:
    stats = jitted.stats()
    assert stats["compiles"] == compiles, stats["recompiles"]
    assert stats["routes"]["python"] == python_calls, stats["fallbacks"]


def zeros_square(n):
    return np.zeros((n, n)) + 1.0


def ones_columns(n):
    return np.ones((n, 3)) * 2.0


def full_of(n, v):
    return np.full(n, v)


def full_pairs(n):
    return np.full((n, 2), 1.5)


def doubled(n):
    return np.zeros(2 * n, dtype=np.int32) + 1


def count_up(n):
    return np.arange(n) * 2


def between(a, b):
    return np.arange(a, b)


def every_third(a, b):
    return np.arange(a, b, 3) + 0


def samples(a, b, n):
    return np.linspace(a, b, n)


def open_samples(n):
    return np.linspace(0.0, 1.0, n, endpoint=False) * 2.0


def distances(n, x):
    return np.zeros((n, n)) + np.abs(x[:n, None] - x[None, :n])


def shrunk(x, n):
    return x[:n - 2] + np.ones(n - 2)


def step(x, n):
    if n > 100:
        return np.sqrt(x)
    return x * 2.0


def test_creation_sizes_from_an_int_argument_compile_once():
    for fn in (zeros_square, ones_columns, full_pairs, doubled, count_up, open_samples):
        _compiled_once(assert_calls_match_numpy(fn, [(n,) for n in SIZES]))


def test_a_fill_value_from_an_argument_compiles_once():
    calls = [(n, v) for n, v in ((3, 1.5), (0, 2.0), (7, -0.0), (2, float("nan")))]
    _compiled_once(assert_calls_match_numpy(full_of, calls))
    _compiled_once(assert_calls_match_numpy(full_of, [(n, v) for n, v in ((4, 3), (1, -9))]))


def test_arange_bounds_from_int_arguments_compile_once():
    calls = [(0, 5), (3, 10), (10, 3), (-4, 4), (2, 2)]
    _compiled_once(assert_calls_match_numpy(between, calls))
    _compiled_once(assert_calls_match_numpy(every_third, calls))


def test_linspace_with_an_int_count_compiles_once():
    calls = [(0.0, 1.0, n) for n in (2, 5, 50, 3)] + [(-2.5, 7.0, 9), (1.0, 1.0, 4)]
    _compiled_once(assert_calls_match_numpy(samples, calls))
    calls = [(a, b, n) for a, b, n in ((0, 10, 11), (3, -3, 4), (0, 1, 7))]
    _compiled_once(assert_calls_match_numpy(samples, calls))


def test_linspace_of_no_or_one_value_owns_its_memory_as_numpy_does():
    calls = [(0.0, 1.0, n) for n in (0, 1, 5, 1, 0, 2)]
    jitted = assert_calls_match_numpy(samples, calls)
    _compiled_once(jitted, compiles=2)   # NumPy's result is a view for 2 or more values


def test_a_negative_size_raises_as_numpy_does():
    jitted = assert_calls_match_numpy(zeros_square, [(4,), (-1,), (2,)])
    _compiled_once(jitted, python_calls=1)
    jitted = assert_calls_match_numpy(samples, [(0.0, 1.0, 4), (0.0, 1.0, -1)])
    _compiled_once(jitted, python_calls=1)


def test_distances_of_a_prefix_compile_once():
    x = np.linspace(-3.0, 5.0, 20)
    _compiled_once(assert_calls_match_numpy(distances, [(n, x) for n in (0, 1, 4, 20, 9)]))


def test_a_size_from_python_arithmetic_must_agree_with_a_slice():
    x = np.arange(12.0)
    jitted = assert_calls_match_numpy(shrunk, [(x, 2), (x, 5), (x, 12), (x, 14), (x, 1)])
    _compiled_once(jitted, python_calls=1)   # ones(-1): NumPy's ValueError, from Python


def test_a_branch_on_an_int_argument_guards_the_decision_not_the_value():
    x = np.linspace(0.0, 4.0, 9)
    calls = [(x, n) for n in (3, 50, 100, 101, 1000, 7, 250)]
    jitted = assert_calls_match_numpy(step, calls)
    _compiled_once(jitted, compiles=2)   # one trace per branch taken
    assert any("decision" in why for why in jitted.stats()["recompiles"])


def test_an_arange_of_an_int_argument_runs_compiled():
    f = autojit.autoroute(count_up, force="cpu")
    assert f(4).tolist() == [0, 2, 4, 6]


# -- an array's sizes as values of the call (x.shape[k], x.size) ----------------------------

def mean_rows(x):
    return x.sum(axis=0) / x.shape[0]


def first_half(x):
    return x[: x.shape[0] // 2] * 2.0


def ramp(x):
    return np.arange(x.shape[0]) * x


def zeros_like_shape(x):
    return np.zeros(x.shape) + x


def per_element(x):
    return x / x.size


def last_of(x):
    return x[x.shape[0] - 1] + 0.5


def same_shapes(x, y):
    if x.shape == y.shape:
        return x + y
    return x * 2.0


def as_column(x):
    return x.reshape(x.shape[0], 1) * 2.0


def unrolled(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


def _vectors(*sizes):
    return [(np.linspace(-1.0, 2.0, n),) for n in sizes]


def test_sizes_used_as_values_compile_once_for_every_size():
    for fn in (first_half, ramp, zeros_like_shape, per_element, last_of):   # (size 1 is
        _compiled_once(assert_calls_match_numpy(fn, _vectors(3, 8, 2, 20, 5)))   # its own key)
    matrices = [(np.arange(float(n * 3)).reshape(n, 3),) for n in (2, 7, 4)]
    _compiled_once(assert_calls_match_numpy(mean_rows, matrices))


def test_a_comparison_of_sizes_guards_the_decision():
    calls = [(np.ones(3), np.arange(3.0)), (np.ones(6), np.arange(6.0)),
             (np.ones(4), np.arange(5.0)), (np.ones(2), np.arange(2.0))]
    jitted = assert_calls_match_numpy(same_shapes, calls)
    stats = jitted.stats()
    # sizes that differ decide otherwise (x + y of the first version would raise): that
    # call compiles the other branch, a version of its own, instead of running as Python
    assert stats["compiles"] == 2, stats["recompiles"]
    assert stats["routes"]["python"] == 0
    assert any("decision" in why for why in stats["recompiles"])


def spelled_size(x):
    return x * float(str(x.shape[0]))


def test_a_use_that_needs_the_concrete_size_still_guards_on_it():
    jitted = assert_calls_match_numpy(spelled_size, _vectors(3, 5, 3))   # str() of it
    _compiled_once(jitted, compiles=2)
    # a reshape reads its sizes per call (a ScalarRef in its step): one compile
    jitted = assert_calls_match_numpy(as_column, _vectors(3, 5, 3))
    _compiled_once(jitted, compiles=1)
    # a loop over x.shape[0] is a region since the regions work: one compile for every size
    jitted = assert_calls_match_numpy(unrolled, _vectors(3, 5, 3))
    _compiled_once(jitted, compiles=1)


def test_a_size_scalar_is_never_an_int_subclass():
    """C code reads an int subclass's value without asking it (no guard would be made):
    a size is a traced Python scalar whose type is not int, though isinstance answers."""
    seen = []

    def probe(x):
        n = x.shape[0]
        seen.append((type(n) is int, isinstance(n, int), issubclass(type(n), int)))
        return x * n

    autojit.autoroute(probe, force="cpu")(np.ones(4))
    assert seen == [(False, True, False)]


# -- conversions for the converter (tracer/host.py: int(), float(), bool() as host steps) --

def _converted(x, s):
    from autojit.tracer.host import python_bool, python_float, python_int
    return x[: python_int(s)] * python_float(s) + python_bool(s)


def test_int_float_and_bool_of_a_python_scalar_are_host_steps():
    x = np.arange(6.0)
    calls = [(x, s) for s in (2.7, 0.0, 5.5, -1.5, 3.0)] + [(x, float("inf")), (x, 4.25)]
    jitted = assert_calls_match_numpy(_converted, calls)
    _compiled_once(jitted, python_calls=1)   # int(inf): OverflowError, raised by Python


def _many_branches(x, n):
    for k in range(40):   # 41 ways to decide: the first 17 compile, the rest run as Python
        if n < k:
            return x * k
    return x


def test_decisions_that_keep_changing_stop_compiling():
    from autojit.dispatch.dispatcher import MAX_DECISION_RETRACES
    x = np.arange(3.0)
    jitted = assert_calls_match_numpy(_many_branches, [(x, n) for n in range(41)] + [(x, 2)])
    stats = jitted.stats()
    assert stats["compiles"] == MAX_DECISION_RETRACES + 1
    assert stats["routes"]["python"] == 41 - stats["compiles"]
    assert any("decisions" in why for why in stats["fallbacks"])
