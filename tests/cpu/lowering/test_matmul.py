"""Matrix products (BLAS through the array library) with their elementwise epilogues fused."""

import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning

RNG = np.random.default_rng(0)
X = RNG.random((64, 32), np.float32)
W = RNG.random((32, 16), np.float32)
B = RNG.random(16, np.float32)

PROGRAMS = [
    ("relu_dense", lambda x, w, b: np.maximum(x @ w + b, 0), (X, W, B), (1, 1)),
    ("matmul", lambda x, w, b: np.matmul(x, w), (X, W, B), (0, 1)),
    ("dot_scaled", lambda x, w, b: np.dot(x, w) * 2, (X, W, B), (1, 1)),
    ("transposed_operand", lambda x, w, b: x.T @ x, (X, W, B), (0, 1)),
    ("einsum", lambda x, w, b: np.einsum("ij,jk->ik", x, w), (X, W, B), (0, 1)),
    ("inner", lambda x, w, b: np.inner(b, b), (X, W, B), (0, 1)),
    ("outer", lambda x, w, b: np.outer(b, b), (X, W, B), (1, 0)),
    ("chained", lambda x, w, b: (x @ w) @ w.T, (X, W, B), (0, 2)),
    ("softmax_after_product", lambda x, w, b: np.exp(x @ w - (x @ w).max(axis=-1,
                                                                            keepdims=True)),
     (X, W, B), (1, 1)),
    ("batched_f64", lambda a, c: a @ c, (RNG.random((3, 4, 5)), RNG.random((3, 5, 2))), (0, 1)),
    ("integer_matrix_vector", lambda a, c: a @ c,
     (RNG.integers(0, 5, (4, 5)), RNG.integers(0, 5, 5)), (0, 1)),
]


@pytest.mark.parametrize("name, fn, args, counts", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_products_match_numpy_with_fused_epilogues(name, fn, args, counts):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        f = assert_matches_numpy(fn, *args, rtol=1e-5, atol=1e-5)
    plan = f.inspect(*args).plan
    assert (len(plan.kernels), len(plan.libraries)) == counts


def test_mismatched_inner_sizes_raise_like_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        assert_matches_numpy(lambda a, c: a @ c, np.ones((2, 3)), np.ones((4, 2)),
                             compiled=False)
