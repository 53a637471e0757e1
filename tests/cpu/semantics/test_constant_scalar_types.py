"""A returned NumPy scalar constant keeps NumPy's scalar type when the same value is also an
operand of a loop whose dtype is its twin (np.longlong is int64's dtype, np.int64 its type)."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def _returned_constant_also_compared(a0):
    total = np.sum(a0)                     # uint64: int64 >= uint64 runs NumPy's 'qQ' loop
    v = np.square(np.int64(-0))
    return v, v >= total


def test_returned_int64_constant_is_int64_after_a_mixed_comparison() -> None:
    assert_calls_match_numpy(_returned_constant_also_compared,
                             [(np.array([], np.uint16).reshape(0, 0),),
                              (np.array([1, 2], np.uint16),)])
