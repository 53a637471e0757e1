"""Reductions with ``initial=`` and ``where=`` (np.max/min/amax/amin/sum/prod and the ndarray
methods) agree with NumPy: the initial value cast to the result dtype the way NumPy casts it,
empty rows giving the initial value, NaN and zero-sign rules (NumPy's loop starts each row's
accumulator at the initial value: it is the row's first element, so a NaN initial wins and a
row's last zero keeps its sign), and the fallbacks (float sums/products with an initial,
whose order of additions NumPy picks by layout; traced initial values).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64)
SHAPES_AXES = (((7,), None), ((0,), None), ((4, 3), None), ((4, 3), 0), ((4, 3), 1),
               ((4, 3), -1), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1), ((2, 3, 4), (0, 2)),
               ((1, 5), 0), ((), None))
EXTREMA = (np.max, np.min, np.amax, np.amin)
FLOAT_INITIALS = (0.0, -0.0, np.nan, -np.inf, np.float32(0.5))
INT_INITIALS = (0, 3, np.int64(-5), True, 2.5)


def _array(dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    values = (np.arange(int(np.prod(shape))) * 7 % 11 - 5).reshape(shape)
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    data = values.astype(dtype)
    if np.dtype(dtype).kind == "f" and data.size > 2:
        data.flat[1] = -0.0
        data.flat[-1] = 0.0
    return data


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assert_matches_numpy(fn, *args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", SHAPES_AXES, ids=str)
@pytest.mark.parametrize("keepdims", (False, True))
def test_extremum_with_initial_matches_numpy(dtype: type, shape: tuple, axis, keepdims) -> None:
    x = _array(dtype, shape)
    initials = FLOAT_INITIALS if np.dtype(dtype).kind == "f" else INT_INITIALS
    for reduce, initial in itertools.product((np.max, np.min), initials):
        def fn(a, reduce=reduce, initial=initial):
            return reduce(a, axis=axis, keepdims=keepdims, initial=initial)
        _quiet(fn, x)


@pytest.mark.parametrize("dtype", (np.bool_, np.int8, np.int32, np.uint16, np.int64),
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", SHAPES_AXES, ids=str)
def test_integer_sum_and_prod_with_initial_match_numpy(dtype: type, shape: tuple,
                                                       axis) -> None:
    x = _array(dtype, shape)
    for reduce, initial in itertools.product((np.sum, np.prod), (0, 5, -3, np.int8(4), 2.5,
                                                                  True)):
        _quiet(lambda a, reduce=reduce, initial=initial: reduce(a, axis=axis,
                                                                 initial=initial), x)
    _quiet(lambda a: np.sum(a, axis=axis, dtype=np.int8, initial=100), x)


@pytest.mark.parametrize("reduce", (np.amax, np.amin))
@pytest.mark.parametrize("initial", (1.5, -0.0, np.inf, np.float64(np.nan), np.float32(2),
                                     -1, np.int8(2), np.uint8(7)))
def test_more_initial_types(reduce, initial) -> None:
    for dtype in (np.float32, np.float64, np.int8, np.uint32, np.bool_):
        _quiet(lambda a: reduce(a, axis=0, initial=initial), _array(dtype, (4, 3)))


@pytest.mark.parametrize("method", ("max", "min", "sum", "prod"))
def test_array_methods_take_initial(method: str) -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    _quiet(lambda a: getattr(a, method)(axis=1, initial=2), x)
    leading = (0, None, None, False) if method in ("sum", "prod") else (0, None, False)
    _quiet(lambda a: getattr(a, method)(*leading, 3), x)   # initial given positionally


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", (1, 2, 3, 7, 8, 9, 16, 17, 33, 100))
@pytest.mark.parametrize("step", (1, 2, -1))
def test_zero_signs_and_nans_with_initial(dtype: type, size: int, step: int) -> None:
    """NumPy's answer, measured for sizes below and above the SIMD width and for strided and
    reversed rows: the initial is the row's first element, ties go to the later zero."""
    for pattern in range(3):
        base = np.zeros(size * abs(step), dtype)
        base[pattern % 2::2] = -0.0
        if pattern == 2:
            base[size // 2 * abs(step)] = np.nan
        x = base[::step]
        for reduce, initial in itertools.product((np.max, np.min), (0.0, -0.0, np.nan, 1.0)):
            _quiet(lambda a, reduce=reduce, initial=initial: reduce(a, initial=initial), x)


def test_empty_arrays() -> None:
    """With an initial an empty reduction is the initial; without one NumPy raises."""
    assert_calls_match_numpy(lambda a: np.max(a, initial=-1.0),
                             [(np.zeros(0),), (np.ones(5),), (np.zeros(0),)])
    assert_calls_match_numpy(lambda a: np.min(a, axis=0, initial=9),
                             [(np.zeros((0, 3), np.int16),), (np.ones((4, 3), np.int16),)])
    assert_calls_match_numpy(lambda a: np.max(a), [(np.ones(3),), (np.zeros(0),)])


def test_sizes_and_layouts_change_between_calls() -> None:
    x = np.linspace(-1, 1, 24).reshape(4, 6)
    assert_calls_match_numpy(lambda a: np.max(a, axis=1, initial=0.0),
                             [(x,), (x[:, ::2],), (x.T,), (x[:0],), (x[:, :0],), (x[::-1],)])


@pytest.mark.parametrize("reduce,initial", ((np.max, 0.5), (np.min, 0.5), (np.max, np.nan),
                                            (np.sum, 3), (np.prod, 2)))
def test_where_mask(reduce, initial) -> None:
    x = np.array([[3, -1, 4], [1, -5, 9]], dtype=np.float64 if reduce in EXTREMA else np.int32)
    _quiet(lambda a: reduce(a, where=a > 0, initial=initial), x)
    _quiet(lambda a, m: reduce(a, axis=0, where=m, initial=initial), x,
           np.array([True, False, True]))
    _quiet(lambda a: reduce(a, axis=1, where=False, initial=initial), x)


def test_where_mask_must_be_boolean() -> None:
    x = np.arange(6.0).reshape(2, 3)
    assert_matches_numpy(lambda a, m: np.max(a, where=m, initial=0), x, np.array([1, 0, 1]),
                         compiled=False)


def test_where_without_initial() -> None:
    """sum of integers takes a mask alone; max without an initial is NumPy's ValueError."""
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    _quiet(lambda a: np.sum(a, where=a % 2 == 0), x)
    assert_matches_numpy(lambda a: np.max(a, where=a > 2), x, compiled=False)


def test_initial_casts_like_numpy() -> None:
    """An int8 max with a float initial truncates it; an out-of-range Python int raises
    OverflowError (the fallback raises it too); a float32 max keeps float32."""
    x = np.array([1, 2, 3], dtype=np.int8)
    _quiet(lambda a: np.max(a, initial=7.9), x)
    assert_matches_numpy(lambda a: np.max(a, initial=300), x, compiled=False)
    _quiet(lambda a: np.max(a, initial=1e30), np.ones(3, np.float32) / 3,
           allowed_fallbacks=("warns",))


def test_initial_none_is_no_identity() -> None:
    """``initial=None`` means no initial value: an empty sum raises then, as an empty max."""
    for reduce in (np.sum, np.max):
        assert_matches_numpy(lambda a, reduce=reduce: reduce(a, initial=None), np.zeros(0),
                             compiled=False)
        assert_matches_numpy(lambda a, reduce=reduce: reduce(a, initial=None), np.ones(3),
                             compiled=False)


def test_float_sum_with_initial_falls_back() -> None:
    jitted = assert_matches_numpy(lambda a: np.sum(a, axis=0, initial=0.1),
                                  np.linspace(0, 1, 600).reshape(200, 3), compiled=False)
    assert any("layout" in reason for reason in jitted.stats()["fallbacks"])


def relax(x, tol):
    """The loop generator's convergence loop: a max with an initial in a while body."""
    err = abs(tol) + 1.0
    it = 0
    while err > abs(tol) and it < 50:
        new = 0.5 * (x[:-2] + x[2:])
        err = np.max(np.abs(new - x[1:-1]), initial=0.0)
        x[1:-1] = new
        it += 1
    return x, it, err


def running_peak(x, n):
    peak = np.zeros(x.shape[1])
    for i in range(n):
        peak = np.maximum(peak, np.max(x[i % x.shape[0]] * i, axis=0, initial=-1.0))
    return peak, np.min(peak, initial=np.inf)


def test_initial_inside_loop_bodies_compiles() -> None:
    x = np.sin(np.arange(12.0))
    jitted = assert_calls_match_numpy(relax, [(x, 0.5), (x[:5], 0.1), (np.zeros(3), 1.0)])
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]
    y = np.cos(np.arange(12.0)).reshape(3, 4)
    jitted = assert_calls_match_numpy(running_peak, [(y, 4), (y[:, :0], 2), (y, 0)])
    assert jitted.stats()["routes"]["python"] == 0, jitted.stats()["fallbacks"]
