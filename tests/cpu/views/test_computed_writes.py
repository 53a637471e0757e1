"""In-place updates of arrays computed inside the function, and what ``a[...] = value`` and
``out=`` refuse: NumPy is the oracle (values, shapes, dtypes, exception types).

``v += x`` / ``np.ufunc(..., out=v)`` on a computed ``v`` writes into ``v``: its shape and
dtype stay (the result is cast same_kind and broadcast into it, or NumPy's error), and views
of ``v`` see the new values (those run as Python).
"""

from __future__ import annotations

import linecache
import random
import shutil
import tempfile
from collections.abc import Callable

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy


# -- in-place updates of computed arrays --------------------------------------------------
def _out_into_broadcast_local(a0, a1):
    v1 = a0 + a1
    np.fmax(a0, a0, out=v1)
    return v1


def test_out_into_a_computed_array_keeps_its_shape():
    assert_calls_match_numpy(_out_into_broadcast_local, [
        (np.array(3.0), np.zeros((2, 2))), (np.arange(3.0), np.zeros((2, 3))),
        (np.array([-0.0, np.nan]), np.zeros((3, 1))), (np.array(3), np.zeros((4, 4), np.int8)),
    ])


def _view_before_update(a0):
    v1 = a0 * 1
    v2 = v1.T
    v1 += 5
    return v2


def _update_through_view(a0):
    v1 = a0 * 1
    v2 = v1[0]
    v2 += 5
    return v1


def _view_after_update(a0):
    v1 = a0 * 1
    v1 += 5
    return v1.T, v1[::-1]


@pytest.mark.parametrize("fn", [_view_before_update, _update_through_view, _view_after_update])
def test_views_of_a_computed_array_see_its_update(fn):
    assert_calls_match_numpy(fn, [(np.ones((2, 3)),), (np.arange(12.0).reshape(3, 4),),
                                  (np.arange(6).reshape(2, 3),)])


def _update_with_broadcast_operand(a0, a1):
    v1 = np.negative(a0)
    v1 += a1
    return v1


def test_update_that_does_not_fit_raises_like_numpy():
    assert_calls_match_numpy(_update_with_broadcast_operand, [
        (np.ones(2), np.ones((3, 2))), (np.ones(2), np.ones(2)), (np.ones((3, 2)), np.ones(2)),
        (np.ones(3), np.ones((1, 3))), (np.ones((2, 3)), np.ones((2, 1))),
        (np.ones(3), np.ones(4)), (np.array(2.0), np.ones(1)),
    ])


def _int_local_plus_float(a0, s):
    v1 = a0 * 2
    v1 += s
    return v1


def test_update_of_a_computed_int_array_casts_same_kind():
    assert_calls_match_numpy(_int_local_plus_float, [
        (np.arange(3), 1.5), (np.arange(3), 2), (np.arange(3, dtype=np.int8), 300),
        (np.arange(3.0, dtype=np.float32), 1e300), (np.arange(3), np.float64(2.0)),
    ])


def _argument_plus(a, b):
    a += b


def test_update_of_an_argument_must_hold_the_broadcast_result():
    """``a += b`` is ``np.add(a, b, out=a)``: no leading size-1 axis of ``b`` is dropped."""
    assert_calls_match_numpy(_argument_plus, [
        (np.array(1.0), np.ones(1)), (np.ones(2), np.ones((1, 2))), (np.ones((2, 2)), np.ones(2)),
        (np.ones(3), np.ones(1)), (np.ones(3), np.ones(4)), (np.ones(3), 2.0),
    ])


_UFUNCS = ("add", "subtract", "multiply", "maximum", "fmin", "copysign", "true_divide")
_STARTS = ("a0 * 1", "a0 + a1", "np.negative(a0)", "np.zeros_like(a0)", "a0 - 0.5")
_UPDATES = ("v += a1", "v -= a1", "v *= a1", "np.{u}(a1, v, out=v)", "np.{u}(a0, a1, out=v)",
            "np.{u}(v, 2, out=v)")
_VIEWS = ("v.T", "v[::-1]", "v[..., 1:]", "v[None]", "v[-1]", "v.reshape(-1)")
_SHAPES = ((), (3,), (2, 3), (1, 3), (2, 1), (4,))
_DTYPES = (np.float64, np.float32, np.int64, np.int32)


def _generated(seed: int) -> tuple[Callable, list[tuple]]:
    """A random in-place update of a computed array, with views of it before and after."""
    rng = random.Random(seed)
    lines = [f"v = {rng.choice(_STARTS)}"]
    returned = ["v"]
    if rng.random() < 0.5:
        lines.append(f"w = {rng.choice(_VIEWS)}")
        returned.append("w")
    for _ in range(rng.randint(1, 2)):
        lines.append(rng.choice(_UPDATES).format(u=rng.choice(_UFUNCS)))
    if rng.random() < 0.5:
        lines.append(f"x = {rng.choice(_VIEWS)}")
        returned.append("x")
    source = "def f(a0, a1):\n" + "".join(f"    {line}\n" for line in lines)
    source += f"    return {', '.join(returned)}\n"
    filename = f"<computed_writes_{seed}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict = {"np": np}
    exec(compile(source, filename, "exec"), ns)
    shape0, shape1 = rng.choice(_SHAPES[1:]), rng.choice(_SHAPES)
    dtype0, dtype1 = rng.choice(_DTYPES), rng.choice(_DTYPES)
    values = np.random.default_rng(seed)

    def make(shape: tuple, dtype: type) -> np.ndarray:
        return values.integers(-4, 5, shape).astype(dtype)
    calls = [(make(shape0, dtype0), make(shape1, dtype1)) for _ in range(2)]
    return ns["f"], calls


@pytest.mark.parametrize("seed", range(40))
def test_generated_updates_of_computed_arrays_match_numpy(seed):
    fn, calls = _generated(seed)
    assert_calls_match_numpy(fn, calls)


# -- what a[...] = value refuses ----------------------------------------------------------
def _array_into_element(a0):
    a0[0] = a0 + a0


def _list_into_element(a0):
    a0[-1] = [1.0]


@pytest.mark.parametrize("fn", [_array_into_element, _list_into_element])
def test_an_array_into_one_element_raises_like_numpy(fn):
    assert_calls_match_numpy(fn, [(np.array([1.0]),), (np.ones(3),), (np.ones((2, 2)),)])


def _store_sum(a, x):
    a[...] = x.sum()


def _store_element(a, x):
    a[0] = x[1]


@pytest.mark.parametrize("fn", [_store_sum, _store_element])
def test_a_numpy_scalar_is_stored_as_numpy_converts_it(fn):
    """NumPy converts a NumPy scalar into a signed integer array through Python: 300 into
    int8 raises OverflowError, NaN ValueError (an array would be cast)."""
    assert_calls_match_numpy(fn, [
        (np.zeros(2, np.int8), np.array([200, 100])), (np.zeros(2, np.int8), np.array([2, 1])),
        (np.zeros(2, np.int32), np.array([np.nan, 1.0])),
        (np.zeros(2, np.int32), np.array([2.5, 1.0])),
        (np.zeros(2, np.uint8), np.array([-1, 0])), (np.zeros(2, np.float32), np.array([2, 1e300])),
        (np.zeros(2, np.int64), np.array([3, 4], np.int32)),
    ])


def test_a_safely_cast_numpy_scalar_store_compiles():
    assert_matches_numpy(_store_element, np.zeros(3, np.int64), np.array([1, 2], np.int16))


# -- creation: NumPy's errors and dtypes ------------------------------------------------------
@pytest.mark.parametrize("bounds", [(3,), (2,), (1,), (0, 2, 0.5), (0.5, 2, 1), (0, 0)])
def test_arange_of_booleans_raises_like_numpy_beyond_two(bounds):
    def boolean_range(x):
        return np.arange(*bounds, dtype=np.bool)
    assert_calls_match_numpy(boolean_range, [(np.ones(3),)])


_LINSPACE_BOUNDS = (1, -3, 2.5, True, np.float32(2), np.float32(-0.1), np.float64(0.3), np.int8(3),
                    np.int16(-7), np.uint8(200), np.array(1.5, np.float32), 16777217)


@pytest.mark.parametrize("start", _LINSPACE_BOUNDS)
@pytest.mark.parametrize("stop", [np.float32(2), 7, -0.25, np.int16(-7)])
def test_linspace_computes_in_numpys_dtype_for_its_bounds(start, stop):
    """``result_type(start, stop)`` made inexact, Python numbers weak (NEP 50): float32
    bounds compute in float32; an integer ``dtype=`` floors."""
    def spaced(x):
        return (np.linspace(start, stop, 5), np.linspace(start, stop, 4, endpoint=False),
                np.linspace(start, stop, 1), np.linspace(start, stop, 7, dtype=np.int32),
                np.linspace(start, stop, 3, dtype=np.float32))
    assert_matches_numpy(spaced, np.ones(1))


def _floor_of_a_big_int():
    return np.floor(9223372036854775808)


def _longlong_constant():
    return np.longlong(3) * np.longlong(2)


@pytest.mark.parametrize("fn", [_floor_of_a_big_int, _longlong_constant])
def test_a_returned_numpy_scalar_keeps_its_scalar_type(fn):
    """np.ulonglong and np.uint64 (np.ulong) share a dtype but are two scalar types: also
    when a fresh dispatcher loads the compiled function from the disk cache."""
    cache_dir = tempfile.mkdtemp(prefix="autojit-test-")
    try:
        for _ in range(2):
            assert_calls_match_numpy(fn, [(), ()], force=None, options={"cache_dir": cache_dir})
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def _out_into_computed_scalar(x):
    s = x.sum()
    np.add(x, 1, out=s)
    return s


def _out_into_scalar_argument(x, s):
    np.multiply(x, 2, out=s)
    return s


def test_out_into_a_scalar_raises_like_numpy():
    """A NumPy scalar is immutable: ``out=`` refuses it (``s += 1`` rebinds it instead)."""
    assert_calls_match_numpy(_out_into_computed_scalar, [(np.ones(3),), (np.ones(()),)])
    assert_calls_match_numpy(_out_into_scalar_argument, [(np.ones(3), np.float64(2)),
                                                         (np.ones(3), np.ones(3))])


def _element_before_update(a0):
    v1 = a0 * 2
    first = v1[0, 1]
    v1 += 5
    return first, v1


def test_an_element_read_before_an_update_keeps_its_value():
    """``v[i, j]`` is a scalar copy in NumPy, not a view: the update does not reach it."""
    assert_matches_numpy(_element_before_update, np.arange(6.0).reshape(2, 3))


def _matmul_into_argument(a, b, o):
    np.matmul(a, b, out=o)


def _matmul_into_local(a, b):
    v = a * 0
    np.matmul(a, b, out=v)
    return v


def test_matmul_out_casts_and_broadcasts_into_the_output():
    a = np.arange(4.0).reshape(2, 2)
    assert_calls_match_numpy(_matmul_into_argument, [
        (a, a, np.zeros((3, 2, 2))), (a, a[0], np.zeros((2, 2))),
        (a, a, np.zeros((2, 2), np.float32)), (a.astype(int), a.astype(int), np.zeros((2, 2))),
        (a, a, np.zeros(2)),
    ])
    assert_calls_match_numpy(_matmul_into_local, [(a, a), (a, a[0].copy()),
                                                  (a.astype(int), a.astype(int))])


def _self_store(a1, a2):
    a1[...] = a1
    return a2


def _self_store_region(a):
    a[1:] = a[1:]
    return a * 2


def _read_only() -> tuple:
    return (np.broadcast_to(np.arange(3.0), (2, 3)), np.ones(2))


def test_storing_an_array_into_itself_still_needs_it_writeable():
    """``a[...] = a`` changes nothing, but NumPy still raises for a read-only ``a``."""
    assert_calls_match_numpy(_self_store, [_read_only, (np.arange(3.0), np.ones(2)), _read_only])
    assert_calls_match_numpy(_self_store_region, [lambda: _read_only()[:1], (np.arange(3.0),),
                                                  lambda: _read_only()[:1]])
