"""Python scalars and integer semantics: NEP 50 promotion, Python-int range rules, exact
mixed-sign comparisons, and Python arithmetic on Python scalars staying Python's."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_calls_match_numpy, assert_matches_numpy

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_DTYPES = ["bool", *INT_DTYPES, "float32", "float64"]
#: Python ints at and beyond every integer dtype's edge (a generator that does not share
#: autojit's idea of what fits where).
EDGE_INTS = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 2**15, -(2**15) - 1, 2**31,
             -(2**31) - 1, 2**32, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]


def _edges(dtype: str) -> np.ndarray:
    """An array holding the extremes of ``dtype`` and a few ordinary values."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True])
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 2.0**63], dt)
    info = np.iinfo(dt)
    below = info.min // 2 - 1 if info.min else 3
    return np.array([info.min, info.max, 0, 1, info.max // 2, below], dt)


# -- the ** operator -------------------------------------------------------------------------
def test_bool_array_squared_by_the_operator_is_int8():
    """``a ** 2`` is ``np.square`` for arrays (NumPy's fast path): int8 for bool."""
    assert_matches_numpy(lambda a: (a ** 2, a ** 3, np.power(a, 2)), np.array([True, False]))


# -- np.clip converts its first argument with np.asarray ------------------------------------
def test_clip_of_a_python_int_promotes_it_as_an_int64_array():
    def upper(s):
        return np.clip(s, None, np.uint64(7751921672582079718))

    def lower(s, x):
        return np.clip(s, np.int16(-53), None), x + 1

    assert_calls_match_numpy(upper, [(5,), (7,)])
    assert_calls_match_numpy(lower, [(5, np.zeros(2)), (-100, np.zeros(3))])


def test_clip_of_a_python_float_argument_is_a_float64_scalar():
    assert_calls_match_numpy(lambda s: np.clip(s, np.float32(0.5), np.float32(2.5)),
                             [(1.25,), (3.0,)])


# -- mixed signed / unsigned comparisons are exact -------------------------------------------
COMPARISONS = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


def _all_comparisons(a, b):
    return tuple(f(a, b) for f in COMPARISONS) + tuple(f(b, a) for f in COMPARISONS)


def test_int64_against_uint64_compares_values_not_bits():
    a = np.array([-1, 2**63 - 1, 0, -(2**63), 5, 7], np.int64)
    b = np.array([2**64 - 1, 2**63, 0, 0, 5, 2**63 + 7], np.uint64)
    assert_matches_numpy(_all_comparisons, a, b)
    assert_matches_numpy(lambda a, b: (a == b, a < b, a <= b, a != b, a > b, a >= b), a, b)


def test_small_signed_against_uint64_in_where():
    def fn(a0, a1):
        return np.where(np.less(a0, a1), a0, -3.25)

    assert_matches_numpy(fn, np.array([-32768, 0, -471, 794], np.int16),
                         np.array([[4], [1], [3]], np.uint64))


@pytest.mark.parametrize("left, right", [(s, u) for s in INT_DTYPES if s[0] == "i"
                                         for u in INT_DTYPES if u[0] == "u"])
def test_every_signed_unsigned_pair_compares_exactly(left, right):
    a = np.repeat(_edges(left), 6)
    b = np.tile(_edges(right), 6)
    assert_matches_numpy(_all_comparisons, a, b)
