"""A compiled result owns its memory exactly where NumPy's does: a new array where NumPy
makes one, a view (of an owning base) where NumPy returns a view of a new array. The
oracle helpers check ``flags.owndata`` and ``base is None`` on every call; these tests
name the operations whose rule the plan had to learn."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

from autojit import autoroute


def _owns(array: np.ndarray) -> tuple[bool, bool]:
    return array.flags.owndata, array.base is None


def test_scan_over_every_axis_owns_its_result():
    """np.cumsum(x) of an n-d x is a new 1-d array: computed into memory made in that shape
    (the kernel writes it through a reshape view), not a view of an n-d buffer."""
    jitted = assert_calls_match_numpy(
        lambda x: (np.cumsum(x), np.cumprod(x + 1.0), np.cumsum(x)[::2], np.cumsum(x * 2).T),
        [(np.arange(60.0).reshape(3, 4, 5),), (np.ones((2, 0, 3)),), (np.ones((1, 1, 7)),)])
    first = jitted(np.ones((2, 3, 4)))[0]
    assert _owns(first) == (True, True)


@pytest.mark.parametrize("bounds", [(0, 1, 5), (0.5, -2, 7, False), (0, 1, 1, False),
                                    (0, 1, 1), (0, 1, 0), (0, 10, 5, True, False, int),
                                    (0, 1, 5, True, False, np.float32),
                                    (np.float32(0), 1, 4)])
def test_linspace_is_a_view_exactly_where_numpys_is(bounds):
    """NumPy scales ``arange(num).reshape(-1)`` in place when there is a step and returns
    it in its computed dtype: a view; no step (num <= 1 with endpoint) or another dtype
    (astype copies) gives a new array."""
    assert_matches_numpy(lambda: np.linspace(*bounds))


def test_linspace_inside_an_expression_still_fuses():
    """Only a returned linspace becomes a view: inside an expression it is not stored.
    With its count an argument's size (read per call, issue 15) the view is decided only
    where it is returned: the whole expression is one kernel."""
    jitted = assert_matches_numpy(lambda x: np.linspace(0, 1, x.shape[0]) * x, np.ones(100))
    assert str(jitted.inspect(np.ones(100))).count("kernel k") == 1
    jitted = assert_matches_numpy(lambda x: np.linspace(0, 1, 100) * x, np.ones(100))
    assert str(jitted.inspect(np.ones(100))).count("kernel k") == 2


def test_returned_value_takes_over_no_buffer_of_another_type():
    """A result may reuse a dead buffer only of its own shape and dtype: another one makes
    it a view (bool over int64, int64 over float64), where NumPy's result is new."""
    def plus_eye(a0):
        return a0 + np.eye(a0.shape[-2], a0.shape[-1], dtype=np.uint16)
    assert_calls_match_numpy(plus_eye, [(np.ones((3, 3), np.int8),), (np.ones((2, 5), np.int8),)],
                             options={"fusion_max_ops": 3})
    x = np.random.default_rng(2).random((5, 7))
    assert_matches_numpy(lambda a: (np.nancumprod(a), np.nancumsum(a > 0.5, 0)), x)


def test_squeeze_with_nothing_to_squeeze_returns_its_argument():
    """NumPy's squeeze returns the array itself when no size is 1."""
    assert_calls_match_numpy(lambda a: (np.squeeze(a + 1), np.squeeze(a), a.squeeze(())),
                             [(np.ones((2, 3)),), (np.ones((4, 5)),)])
    assert_matches_numpy(lambda a: np.squeeze(a + 1), np.ones((3, 1)))


@pytest.mark.parametrize("program", [lambda x: (x + 1)[:, ::2].ravel(),
                                     lambda x: (x + 1).T.ravel(),
                                     lambda x: (x + 1)[1:].ravel(),
                                     lambda x: (x + 1).T.reshape(-1)],
                         ids=["strided", "transposed", "contiguous", "reshape"])
def test_ravel_of_a_view_of_a_computed_value_copies_where_numpys_does(program):
    """np.ravel of a view that is not C-contiguous is a new array (ours: the copy, made
    1-d); of a contiguous one a view; a reshape that copies is a view of the copy."""
    assert_matches_numpy(program, np.arange(8.0).reshape(2, 4))


def test_scan_result_survives_repeated_calls_as_its_own_array():
    jitted = autoroute(lambda x: np.cumsum(x), force="cpu")
    x = np.arange(12.0).reshape(3, 4)
    first, second = jitted(x), jitted(x)
    assert first is not second and not np.shares_memory(first, second)
    assert np.array_equal(first, np.cumsum(x)) and _owns(second) == (True, True)


def _ravel_after_a_write(a):
    a += 1
    return a.ravel()


def _ravel_of_a_slice_after_a_write(a):
    a += 1
    return a[:, ::2].ravel(), a.T.ravel()


def test_ravel_of_an_argument_after_a_write_copies_where_numpys_does():
    """The tracer copies a written argument before a ravel; NumPy's ravel is a new array
    when the argument (C-contiguity is in the signature) or its view is not C-contiguous."""
    assert_calls_match_numpy(_ravel_after_a_write, [
        lambda: (np.asfortranarray(np.arange(6.0).reshape(2, 3)),),
        lambda: (np.arange(6.0).reshape(2, 3),),
        lambda: (np.ones((2, 6))[:, ::2],),
        lambda: (np.asfortranarray(np.ones((1, 3))),)])
    assert_calls_match_numpy(_ravel_of_a_slice_after_a_write, [
        lambda: (np.arange(8.0).reshape(2, 4),), lambda: (np.ones((1, 4)),)])
