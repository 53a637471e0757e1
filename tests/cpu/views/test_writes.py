"""Writes into arguments: the caller sees them, and right sides that read what the left
side writes get NumPy's evaluate-then-write answer."""

import warnings

import numpy as np
import pytest

from tests.support.oracle import call_numpy, compare_results

from autojit import FallbackWarning, autoroute

RNG = np.random.default_rng(0)


def _copies(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def assert_writes_match_numpy(fn, *args, rtol=0.0):
    """Run ``fn`` on copies under NumPy and autojit: results and written arguments agree."""
    expected_args, actual_args = _copies(args), _copies(args)
    expected, error = call_numpy(fn, expected_args)
    jitted = autoroute(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        actual = jitted(*actual_args)
    assert error is None
    if expected is None:
        assert actual is None
    else:
        compare_results(actual, expected, rtol=rtol)
    for want, got in zip(expected_args, actual_args):
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
    return jitted


def fill_out(out, x, y):
    out[...] = x + y


def add_in_place(a, x):
    a += x
    return a


def smooth(a):
    a[1:-1] = 0.5 * (a[:-2] + a[2:])       # reads what it writes: evaluated first


def ufunc_out(a, b):
    np.add(a, b, out=a)
    return a * 2


def read_before_and_after(a, x):
    before = a * 2
    a[...] = x
    return before + a


def shift(a):
    a[1:] = a[:-1] + 1


def two_writes(a):
    a[0] = 7
    a[:, 1] = a[:, 2] * 2
    return a.sum()


def local_update(a, x):
    y = x + 1
    y *= 2
    a[...] = y


V, X = RNG.random(10), RNG.random(10)
CASES = [
    ("fill_out", fill_out, (np.zeros(10), V, X)),
    ("add_in_place", add_in_place, (V, X)),
    ("smooth", smooth, (V,)),
    ("ufunc_out", ufunc_out, (V, X)),
    ("read_before_and_after", read_before_and_after, (V, X)),
    ("shift", shift, (V,)),
    ("two_writes", two_writes, (RNG.random((4, 5)),)),
    ("local_update", local_update, (np.zeros(10), X)),
    ("strided_target", lambda a, x: a.__setitem__((slice(None, None, 2),), x[:5] * 3),
     (np.zeros(10), X)),
    ("integer_target_casts", fill_out, (np.zeros(10, dtype=np.int32), V * 10, X * 10)),
]


@pytest.mark.parametrize("name, fn, args", CASES, ids=[c[0] for c in CASES])
def test_writes_match_numpy(name, fn, args):
    assert_writes_match_numpy(fn, *args, rtol=1e-12)


def test_returning_the_written_argument_returns_the_callers_array():
    a = np.zeros(4)
    assert autoroute(add_in_place)(a, np.ones(4)) is a
    np.testing.assert_array_equal(a, np.ones(4))


def test_same_kind_violation_raises_like_numpy():
    def bump(a):
        a += 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(TypeError):
            autoroute(bump)(np.arange(3))


def test_read_only_argument_raises_like_numpy():
    a = np.zeros(3)
    a.flags.writeable = False
    f = autoroute(fill_out)
    f(np.zeros(3), np.ones(3), np.ones(3))                   # compiled for this signature
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(ValueError):
            f(a, np.ones(3), np.ones(3))


def test_reading_a_view_taken_before_a_write_sees_the_write():
    def stale(a):
        head = a[:2]
        a[...] = 0
        return head * 1                 # NumPy: the view sees the zeros
    assert_writes_match_numpy(stale, np.ones(4))


def test_reading_a_scalar_taken_before_a_write_falls_back_correctly():
    def stale(a):
        first = a[0]                    # a NumPy scalar: a copy, it keeps the old value
        a[...] = 0
        return first * 1
    a = np.ones(4)
    with pytest.warns(FallbackWarning, match="before a later write"):
        result = autoroute(stale)(a)
    assert result == 1.0


def test_masked_assignment_compiles_as_a_select():
    def clamp_negative(a):
        a[a < 0.5] = 0.0
        return a
    assert_writes_match_numpy(clamp_negative, RNG.random(12))
