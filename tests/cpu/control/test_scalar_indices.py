"""Python int arguments (and Python arithmetic on them) as indices and slice bounds: one
compile for every value. Python's slice rules (negatives, clamping, empty and reversed
ranges) and NumPy's IndexError apply to each call's values, read per call."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

X = np.arange(10.0) - 3.5
A = np.arange(30.0).reshape(5, 6) * 0.5 - 4.0
BOUNDS = [(1, 5), (2, 8), (-3, 10), (0, 0), (5, 2), (-20, 30), (9, -1), (-1, -5), (3, 3)]
COUNTS = [0, 1, 3, 7, 10, 12, -2, -10, -11]


def _compiled_once(jitted, python_calls: int = 0) -> None:
    stats = jitted.stats()
    assert stats["compiles"] == 1, stats["recompiles"]
    assert stats["routes"]["python"] == python_calls, stats["fallbacks"]


def window(x, i, j):
    return x[i:j] * 2


def head(x, n):
    return x[:n] + 1.0


def tail(x, n):
    return x[n:] - 1.0


def last(x, n):
    return x[-n:] * 3.0


def shifted(x, n):
    return x[n - 2:2 * n] + x[0]


def element(x, i):
    return x[i] + 1.0


def row_prefix(a, i, j):
    return a[i, :j] * 2.0


def column_prefix(a, i, j):
    return a[:i, j] + 1.0


def corner(a, i):
    return a[i, i] * 2.0


def alternate(u, t):
    return u[t % 2] * 0.5


def dot_prefix(a, x, i):
    return a[i, :i] @ x[:i]


def set_element(x, i, v):
    x[i] = v
    return x.sum()


def set_window(x, i, j):
    x[i:j] = 7.0


def test_a_slice_between_two_int_arguments_compiles_once():
    _compiled_once(assert_calls_match_numpy(window, [(X, i, j) for i, j in BOUNDS]))


@pytest.mark.parametrize("fn", [head, tail, last, shifted], ids=lambda f: f.__name__)
def test_a_slice_bound_from_an_int_argument_compiles_once(fn):
    _compiled_once(assert_calls_match_numpy(fn, [(X, n) for n in COUNTS]))


def test_an_integer_index_from_an_argument_compiles_once_and_raises_out_of_range():
    calls = [(X, i) for i in (0, 3, -1, 9, -10)] + [(X, 10), (X, -11)]
    jitted = assert_calls_match_numpy(element, calls)
    _compiled_once(jitted, python_calls=2)   # the IndexError calls run (and raise) as Python


def test_a_row_and_a_column_prefix_compile_once():
    calls = [(A, i, j) for i in (0, 2, 4, -1) for j in (0, 3, 6, -2)]
    _compiled_once(assert_calls_match_numpy(row_prefix, calls))
    calls = [(A, i, j) for i in (0, 2, 5, 9, -1) for j in (0, 3, 5, -2)] + [(A, 2, 6)]
    _compiled_once(assert_calls_match_numpy(column_prefix, calls), python_calls=1)


def test_a_diagonal_element_and_an_alternating_plane_compile_once():
    _compiled_once(assert_calls_match_numpy(corner, [(A, i) for i in (0, 1, 4, -2)]))
    u = np.arange(12.0).reshape(2, 6)
    _compiled_once(assert_calls_match_numpy(alternate, [(u, t) for t in (0, 1, 2, 7, -3)]))


def test_a_dot_product_of_prefixes_compiles_once():
    a = np.arange(36.0).reshape(6, 6) / 7.0
    x = np.linspace(-1.0, 1.0, 6)
    _compiled_once(assert_calls_match_numpy(dot_prefix, [(a, x, i) for i in (0, 1, 2, 5)]))


def test_writes_through_int_arguments_compile_once():
    calls = [(X, i, v) for i, v in ((0, 1.5), (4, -2.0), (-1, 9.0), (9, 0.25))]
    _compiled_once(assert_calls_match_numpy(set_element, calls))
    _compiled_once(assert_calls_match_numpy(set_window, [(X, i, j) for i, j in BOUNDS]))


def test_an_index_that_is_a_python_bool_or_float_runs_as_python():
    assert_calls_match_numpy(element, [(X, 2.0), (X, True)])
