"""Views of arguments (slices with steps, integer indices, None, ..., transposes, reshapes):
read in place through their strides, sizes bound at run time, results equal to NumPy's."""

import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute

RNG = np.random.default_rng(0)
X = RNG.random((6, 7))
V = RNG.random(9)
CUBE = RNG.random((2, 3, 4))

PROGRAMS = [
    ("stencil", lambda a: a[1:-1] - a[:-2], V),
    ("strided_2d", lambda a: a[1:-1, ::2] * 2, X),
    ("transpose", lambda a: a.T + a.T, X),
    ("outer_via_none", lambda a: a[:, None] * a[None, :], V),
    ("integer_index_scalar", lambda a: a[0], V),
    ("mixed_indices", lambda a: a[2, 3] + a[1], X),
    ("ellipsis", lambda a: a[..., 1], X),
    ("reshape", lambda a: a.reshape(-1) * 2, X),
    ("transpose_then_reduce", lambda a: np.transpose(a).sum(axis=0), X),
    ("swapaxes", lambda a: np.swapaxes(a, 0, 1) - a.T, X),
    ("moveaxis", lambda a: np.moveaxis(a, 0, -1) + 1, CUBE),
    ("expand_squeeze", lambda a: np.expand_dims(a, 0) + np.squeeze(a[None]), V),
    ("ravel_reversed", lambda a: a.ravel()[::-1], X),
    ("negative_steps", lambda a: a[::-1, 1:] + a[:, :-1], X),
    ("returned_view", lambda a: a.T, X),
    ("differences_summed", lambda a: (a[1:] - a[:-1]).sum(), V),
]


#: float sums NumPy adds in memory order, unknown when compiling: transposed views (a
#: reversed argument is C-ordered strided: its sums compile): those run as Python
MEMORY_ORDER_SUMS = {"transpose_then_reduce": 2}


@pytest.mark.parametrize("name, fn, x", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_views_match_numpy(name, fn, x):
    strided = x[::-1] if x.ndim == 1 else x[::-1, ::-1] if x.ndim == 2 else x[:, ::-1]
    as_python = MEMORY_ORDER_SUMS.get(name, 0)
    for number, arg in enumerate((x, strided)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if number >= 2 - as_python else "error",
                                  FallbackWarning)
            assert_matches_numpy(fn, arg, rtol=1e-12, allowed_fallbacks=["in memory order"]
                                 if number >= 2 - as_python else ())


def test_view_sizes_are_runtime_values_not_recompiles():
    f = autoroute(lambda a: a[1:-1] - a[:-2])
    for n in (5, 9, 100, 2):
        x = np.arange(float(n))
        np.testing.assert_array_equal(f(x), x[1:-1] - x[:-2])
    assert f.stats()["compiles"] == 1


def test_views_do_not_copy_their_argument():
    f = autoroute(lambda a: a.T)
    x = np.ones((3, 4))
    assert np.shares_memory(f(x), x)


def test_out_of_range_index_raises_like_numpy():
    f = autoroute(lambda a: a[10] + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(IndexError):
            f(np.ones(3))


@pytest.mark.parametrize("x", [V, X, X.astype(np.int16), X > 0.5], ids=["1d", "2d", "i16", "bool"])
def test_diff_matches_numpy(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        assert_matches_numpy(lambda a: (np.diff(a), np.diff(a, axis=0)), x)


COMPUTED = [
    ("centred_transposed", lambda a: (a - a.mean(axis=0)).T, X),
    ("differences_of_sin", lambda a: np.sin(a)[1:] - np.sin(a)[:-1], V),
    ("reversed_product", lambda a: (a * 2)[::-1] + a, V),
    ("reshape_then_stride", lambda a: (a + 1).reshape(-1)[::2], X),
    ("row_of_a_product", lambda a: (a @ a.T)[0], X),
    ("diff_of_computed", lambda a: np.diff(np.sin(a)), V),
    ("element_of_computed", lambda a: (a * 2)[2, 3], X),
]


@pytest.mark.parametrize("name, fn, x", COMPUTED, ids=[c[0] for c in COMPUTED])
def test_views_of_computed_values(name, fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        assert_matches_numpy(fn, x, rtol=1e-12)
