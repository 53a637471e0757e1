"""Regressions found by the wave-14 differential fuzz run and its follow-ups, each named for
the behaviour: NumPy's answer, compiled (no fallback), through the oracle helpers."""

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

#: float sums NumPy adds pairwise over an integer array (cast to float64 element by element)
_SUMS = {
    "mean": lambda a: np.mean(a),
    "sum_float64": lambda a: np.sum(a, dtype=np.float64),
    "mean_axis0": lambda a: np.mean(a, axis=0),
    "mean_last": lambda a: np.mean(a, axis=-1),
    "var": lambda a: np.var(a),
    "var_of_row_minima": lambda a: np.var(np.min(a, axis=-1, keepdims=True), ddof=1),
}
#: shapes with length-1 axes around the summed ones, and empty ones
_ODD_SHAPES = [(2, 1), (1, 2), (5, 1), (1, 5), (2, 1, 3), (3, 1, 1), (1, 1, 200),
               (300, 1), (0,), (0, 1), (1, 0), (2, 0, 3)]


@pytest.mark.parametrize("dtype", [np.uint64, np.uint32, np.int64])
@pytest.mark.parametrize("shape", _ODD_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(_SUMS))
def test_integer_float_sums_over_length_one_axes_compile(name, shape, dtype):
    """A pairwise float sum whose summed axis has length-1 row axes inside it emits the
    element's value inside straight-line code (no loop of length 1 around it), so LLVM
    accepts the IR and the call does not fall back."""
    a = (np.arange(int(np.prod(shape)), dtype=dtype) * 3 + 1).reshape(shape)
    assert_matches_numpy(_SUMS[name], a)


def test_uint64_mean_of_a_column_keeps_compiling_as_sizes_change():
    """One compiled mean answers NumPy's for columns, rows and blocks of changing sizes."""
    def mean(a):
        return np.mean(a)
    assert_calls_match_numpy(mean, [
        (np.array([0, 2], np.uint64).reshape(2, 1),),
        (np.arange(7, dtype=np.uint64).reshape(7, 1),),
        (np.arange(1000, dtype=np.uint64).reshape(1000, 1) * 2**40,),
        (np.arange(2, dtype=np.uint64).reshape(2, 1),),
    ])


def _shift_in_place(a, b):
    a <<= b
    a >>= 1
    return a


_SHIFTS = {
    "lshift": (lambda a, b: a << b, "np.left_shift"),
    "rshift": (lambda a, b: a >> b, "np.right_shift"),
    "int_lshift": (lambda a, b: 1 << a, "np.left_shift"),
    "rrshift": (lambda a, b: 1024 >> a, "np.right_shift"),
    "in_place": (_shift_in_place, "np.left_shift"),
    "float_shift": (lambda a, b: a.astype(np.float64) << b, "np.left_shift"),
}


@pytest.mark.parametrize("name", sorted(_SHIFTS))
def test_shift_operators_fall_back_as_the_shift_ufunc(name):
    """``a << b`` and ``a >> b`` on traced arrays are NumPy's shift ufuncs: they run as
    plain Python with the ufunc's reason and the user's line (not a TypeError raised
    while tracing), and give NumPy's answer, argument writes and exceptions."""
    fn, ufunc = _SHIFTS[name]
    jitted = assert_matches_numpy(fn, np.arange(6, dtype=np.int64), np.int64(2), compiled=False)
    reasons = jitted.stats()["fallbacks"]
    assert reasons and all(f"{ufunc} is not supported" in r for r in reasons), reasons
    assert not any("while tracing" in r for r in reasons), reasons
