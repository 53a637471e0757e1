"""The dispatcher's front end: how a call reaches the trace (keyword arguments, static values,
callables without a name), which arguments it refuses to compile (ndarray subclasses), what it
raises when NumPy would refuse the sizes, and which changes of the function's environment
(globals, closures, defaults, helpers) it sees on the next call (guards)."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import pytest
from oracle import (
    assert_calls_match_numpy,
    assert_matches_numpy,
    assert_same_types,
    call_numpy,
    compare_results,
)

from autojit import autoroute


def _keyword_calls_match(fn: Any, calls: list[tuple[tuple, dict]]) -> Any:
    """Call one compiled ``fn`` with (args, kwargs) per call and compare with plain Python:
    the oracle helpers take positional arguments only."""
    jitted = autoroute(fn, force="cpu")
    for number, (args, kwargs) in enumerate(calls, 1):
        expected, error = call_numpy(lambda *a, kw=kwargs: fn(*a, **kw), args)
        if error is not None:
            with pytest.raises(type(error)):
                jitted(*args, **kwargs)
            continue
        actual = jitted(*args, **kwargs)
        assert_same_types(actual, expected, f"call {number}")
        compare_results(actual, expected)
    return jitted


# -- keyword arguments ---------------------------------------------------------------------------
def _scaled(x, scale=2.0, *, shift=1):
    return x * scale + shift


def _shifted(x, *, shift):
    return x + shift


def _mixed(x, a=1.0, b=2.0, *, c=3.0):
    return x * a + b * c


def test_keyword_only_arguments_reach_the_trace():
    x = np.ones(3)
    f = _keyword_calls_match(_scaled, [((x,), {"scale": 4.0, "shift": -1}),
                                       ((x,), {"shift": 7}), ((x,), {}), ((x, 3.0), {})])
    assert not f.stats()["fallbacks"] and f.stats()["routes"]["cpu"] == 4


def test_a_required_keyword_only_argument_is_bound():
    f = _keyword_calls_match(_shifted, [((np.ones(2),), {"shift": 5}),
                                        ((np.arange(3.0),), {"shift": 2.5}),
                                        ((np.ones(2),), {})])   # TypeError, as in Python
    assert f.stats()["routes"]["cpu"] == 2 and not f.stats()["fallbacks"]


def test_keywords_out_of_order_and_after_a_skipped_default_are_kept():
    x = np.arange(4.0)
    _keyword_calls_match(_mixed, [((x,), {"b": 5.0}), ((x,), {"c": 0.5, "a": 2.0}),
                                  ((x, 3.0), {"c": -1.0}), ((), {"x": x, "b": 1.0})])


def test_static_keyword_only_argument_specialises():
    def power(x, *, n):
        return x ** n
    f = autoroute(power, static_argnames=("n",), force="cpu")
    x = np.arange(4.0)
    for n in (2, 3):
        compare_results(f(x, n=n), power(x, n=n))
    assert f.stats()["compiles"] == 2 and not f.stats()["fallbacks"]


# -- static values -------------------------------------------------------------------------------
def test_static_values_of_different_types_do_not_share_a_specialisation():
    def times(x, n):
        return x * n
    x = np.ones(2, np.int8)
    f = autoroute(times, static_argnames=("n",), force="cpu")
    for n in (2, 2.0, True, 2, -0.0, 0.0, (1, 2.0), (1, 2)):
        expected = times(x, n[1] if isinstance(n, tuple) else n)
        got = f(x, n[1] if isinstance(n, tuple) else n)
        assert_same_types(got, expected, repr(n))
        compare_results(got, expected)


# -- callables without a name or code ------------------------------------------------------------
def test_a_functools_partial_is_compiled():
    f = assert_matches_numpy(functools.partial(np.add, 1.0), np.ones(3))
    assert "partial" in repr(f)
    g = assert_matches_numpy(functools.partial(_scaled, shift=3), np.arange(3.0), 0.5)
    assert g.stats()["routes"]["cpu"] == 1


def test_a_callable_instance_and_a_ufunc_are_compiled():
    class Twice:
        def __call__(self, x):
            return x * 2
    assert_matches_numpy(Twice(), np.arange(3.0))
    assert_matches_numpy(np.add, np.arange(3.0), 2.0)


def test_a_non_callable_is_refused_at_decoration():
    with pytest.raises(TypeError, match="callable"):
        autoroute(3)


# -- ndarray subclasses --------------------------------------------------------------------------
class _Plain(np.ndarray):
    """A subclass overriding nothing: still not known to be safe, so not compiled."""


def _affine(a, b):
    return a * b + 1


@pytest.mark.parametrize("make", [
    lambda: (np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.matrix([[1.0, 0.0], [1.0, 1.0]])),
    lambda: (np.ma.array(np.arange(4.0), mask=[0, 1, 0, 1]), 2.0),
    lambda: (np.arange(4.0).view(_Plain), np.float64(3)),
], ids=["matrix", "masked", "subclass"])
def test_ndarray_subclasses_run_as_plain_python(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = assert_calls_match_numpy(_affine, [make])
    assert f.stats()["routes"]["cpu"] == 0 and f.stats()["fallbacks"]
    expected = _affine(*make())
    assert type(f(*make())) is type(expected)
    if np.ma.isMaskedArray(expected):
        np.testing.assert_array_equal(np.ma.getmaskarray(f(*make())),
                                      np.ma.getmaskarray(expected))


# -- sizes NumPy refuses -------------------------------------------------------------------------
def test_an_allocation_that_cannot_succeed_raises_memory_error():
    def huge(x):
        return np.zeros((10 ** 6, 10 ** 6)) + x
    assert_calls_match_numpy(huge, [(np.ones(1),)])
    with pytest.raises(MemoryError, match="Unable to allocate"):
        autoroute(huge, force="cpu")(np.ones(1))


def test_a_broadcast_too_large_to_address_raises_value_error():
    def product(x, y):
        return x * y
    # the arguments are compared after the call: broadcast views of 2**66 elements cannot
    # be, so this calls the oracle pieces directly
    x = np.broadcast_to(np.ones((1, 1)), (2 ** 33, 1))
    y = np.broadcast_to(np.ones((1, 1)), (1, 2 ** 33))
    _, error = call_numpy(product, [x, y])
    assert isinstance(error, ValueError)
    f = autoroute(product, force="cpu")
    for _ in range(3):   # the fast path, once armed, must refuse them too
        with pytest.raises(ValueError):
            f(x, y)
        compare_results(f(np.ones((2, 1)), np.ones((1, 3))), np.ones((2, 3)))
    with pytest.raises(ValueError):
        autoroute(lambda a, b: (a * b).sum(), force="cpu")(x, y)
