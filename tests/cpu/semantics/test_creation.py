"""Arrays created inside a traced function: zeros, ones, full, empty and their ``_like``."""

import threading
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute

X = np.random.default_rng(5).random((4, 5))


@pytest.fixture(autouse=True)
def _no_fallbacks():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        yield


def test_like_functions_keep_symbolic_sizes():
    f = assert_matches_numpy(lambda a: (np.zeros_like(a) + a, np.ones_like(a, dtype=np.int32),
                                        np.full_like(a, 7.5)), X)
    np.testing.assert_array_equal(f(np.ones((2, 3)))[2], np.full((2, 3), 7.5))
    assert f.stats()["cache_misses"] == 1       # no new trace for another size


def test_empty_like_has_the_shape_and_dtype():
    # its contents are undefined (NumPy's may hold NaN), so only the array itself is checked
    result = autoroute(lambda a: np.empty_like(a, dtype=np.float32))(X)
    assert result.shape == X.shape and result.dtype == np.float32


def test_sized_creation_specialises_on_the_sizes():
    assert_matches_numpy(lambda a: np.zeros(a.shape) - a, X)
    assert_matches_numpy(lambda a: np.full((4, 5), 2, dtype=np.float32) * a, X)
    assert_matches_numpy(lambda a: np.ones(5) + a.sum(axis=0), X, rtol=1e-12)
    assert_matches_numpy(lambda a: (np.zeros(3), np.empty((2, 2), dtype=np.int8) * 0), X)


def test_fixed_size_that_no_longer_broadcasts_raises_like_numpy():
    f = autoroute(lambda a: np.ones(5) + a)
    np.testing.assert_array_equal(f(np.ones(5)), np.full(5, 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(ValueError):
            f(np.ones(4))


def test_numpy_creation_outside_traces_is_untouched():
    seen = []
    stop = threading.Event()

    def other_thread():
        while not stop.is_set():
            seen.append(type(np.zeros(2)))

    worker = threading.Thread(target=other_thread)
    worker.start()
    try:
        for _ in range(20):
            autoroute(lambda a: np.zeros_like(a) + np.ones(a.shape))(np.ones(3))
    finally:
        stop.set()
        worker.join()
    assert set(seen) == {np.ndarray}
    assert np.zeros.__module__ == "numpy"


RANGES = [
    ("arange_int", lambda a: np.arange(5) + a[0, :]),
    ("arange_float_step", lambda a: np.arange(0.0, 1.0, 0.1)),
    ("arange_negative_step", lambda a: np.arange(1.5, -3, -0.7)),
    ("arange_stride", lambda a: np.arange(3, 20, 4)),
    ("arange_float32", lambda a: np.arange(10, dtype=np.float32) * 2),
    ("arange_empty", lambda a: np.arange(0)),
    ("linspace", lambda a: np.linspace(0, 1, 7)),
    ("linspace_open", lambda a: np.linspace(-2.5, 3, 5, endpoint=False)),
    ("linspace_int", lambda a: np.linspace(0, 10, 11, dtype=np.int64)),
    ("eye_rectangular", lambda a: np.eye(4, 5) * a),
    ("eye_offset", lambda a: np.eye(3, k=1, dtype=np.int32)),
]


@pytest.mark.parametrize("name, fn", RANGES, ids=[r[0] for r in RANGES])
def test_ranges_match_numpy_exactly(name, fn):
    assert_matches_numpy(fn, X)
