"""Every form of matrix product (vector·vector, matrix·vector, batched, made inside the
function, unused) against NumPy, with its result read by further elementwise work and a
reduction, plus the buffer reuse that chains through values of other item sizes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)


def _operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Small integers in any dtype: products and sums are exact, so results compare bit
    for bit whatever order BLAS or the kernels add in."""
    values = rng.integers(-3, 4, shape)
    return (values > 0) if dtype is np.bool_ else values.astype(dtype)


def _shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Return operand shapes for np.matmul: 1-D, 2-D or 3-D, sizes 0, 1 or 3, sometimes
    broadcast batches, sometimes (one case in eight) mismatched contracted sizes."""
    size = lambda: int(rng.choice([0, 1, 3]))   # noqa: E731
    m, k, n, batch = size(), size(), size(), int(rng.choice([1, 2]))
    k_b = k if rng.random() > 0.125 else k + 1
    forms = {1: lambda rows, cols: (rows,), 2: lambda rows, cols: (rows, cols),
             3: lambda rows, cols: (batch, rows, cols)}
    a_dims, b_dims = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    a = (k,) if a_dims == 1 else forms[a_dims](m, k)
    b = (k_b,) if b_dims == 1 else forms[b_dims](k_b, n)
    if a_dims == 3 and b_dims == 3 and rng.random() < 0.5:
        b = (1, *b[1:])             # a batch of one broadcasts
    return a, b


def _product_then_work(a, b):
    product = a @ b
    return product * 2 + 1, (product + 1).sum()


CASES = []
for seed in range(40):
    rng = np.random.default_rng(seed)
    shape_a, shape_b = _shapes(rng)
    dtype_a, dtype_b = DTYPES[rng.integers(len(DTYPES))], DTYPES[rng.integers(len(DTYPES))]
    CASES.append((seed, shape_a, dtype_a, shape_b, dtype_b))


@pytest.mark.parametrize("seed, shape_a, dtype_a, shape_b, dtype_b", CASES,
                         ids=[f"{c[0]}-{c[1]}{c[2].__name__}@{c[3]}{c[4].__name__}"
                              for c in CASES])
def test_products_of_any_rank_and_dtype_feed_later_work(seed, shape_a, dtype_a, shape_b,
                                                        dtype_b):
    rng = np.random.default_rng(1000 + seed)
    a, b = _operand(rng, shape_a, dtype_a), _operand(rng, shape_b, dtype_b)
    assert_calls_match_numpy(_product_then_work, [(a, b)])


VECTOR_PRODUCTS = {
    "dot_scaled": lambda a, b: np.dot(a, b) * 2,
    "every_spelling": lambda a, b: (a @ b).sum() + np.inner(a, b) + np.einsum("i,i->", a, b),
    "dot_then_broadcast": lambda a, b: a * np.dot(a, b),
    "two_dots": lambda a, b: np.dot(a, b) - np.dot(b, b) / 2,
}


@pytest.mark.parametrize("name", VECTOR_PRODUCTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_vector_dot_vector_is_a_scalar_later_ops_read(name, dtype):
    rng = np.random.default_rng(7)
    a, b = _operand(rng, (5,), dtype), _operand(rng, (5,), dtype)
    assert_matches_numpy(VECTOR_PRODUCTS[name], a, b)


def test_product_with_an_array_made_inside_the_function():
    assert_matches_numpy(lambda x: x @ np.ones(4), np.arange(200.0).reshape(50, 4))
    assert_matches_numpy(lambda x: np.zeros((3, 4)) @ x + 1, np.arange(8.0).reshape(4, 2))


def test_unused_product_of_a_computed_bool_value_is_still_run():
    def unused_product(a0, a1):
        v4 = np.less_equal(-float("inf"), np.expand_dims(np.isnan(a0), -2))
        np.matmul(v4, a1)
        return np.isnan(a0)

    assert_matches_numpy(unused_product, np.ones((2, 3)), np.ones((3, 2), bool))


@pytest.mark.parametrize("max_ops", [1, 2, 3])
def test_buffer_taken_over_twice_through_a_narrower_dtype(max_ops):
    """Small kernels chain reuse int64 -> bool -> int32 through one allocation: each taker
    sees the whole first allocation, not the previous taker's narrower view."""
    def plus_eye(a0):
        return a0 + np.eye(a0.shape[-2], a0.shape[-1], dtype=np.uint16)

    calls = [(np.ones(shape, np.int8),) for shape in ((3, 3), (5, 2), (4, 4))]
    assert_calls_match_numpy(plus_eye, calls, options={"fusion_max_ops": max_ops})


@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 3, 3)])
def test_literal_sized_values_only_reuse_buffers_that_hold_them(shape):
    """Sizes fixed by the code (np.ones(3)) are literal dims: a (3, 3) value must not take
    over a dead (3,) buffer of a larger item size but fewer bytes."""
    def literal_sizes(x):
        small = np.ones(3, np.int64) * x.shape[-1]
        big = np.ones((3, 3), np.int32) + small.astype(np.int32)
        return x + big.sum(), big

    for max_ops in (1, 2):
        assert_calls_match_numpy(literal_sizes, [(np.ones(shape),)],
                                 options={"fusion_max_ops": max_ops})


@pytest.mark.parametrize("form", ["ij,jk->ik", "ij,j->i", "i,i->"])
def test_einsum_products_of_every_rank(form):
    shapes = {"ij,jk->ik": ((3, 4), (4, 2)), "ij,j->i": ((3, 4), (4,)), "i,i->": ((4,), (4,))}
    rng = np.random.default_rng(3)
    a, b = (_operand(rng, s, np.float64) for s in shapes[form])
    assert_matches_numpy(lambda x, y: np.einsum(form, x, y) * 3 - 1, a, b)


def test_every_operand_pair_of_small_ranks():
    """All rank pairs with sizes 0 and 1, in one compiled function per pair."""
    for rank_a, rank_b in itertools.product((1, 2, 3), repeat=2):
        for size in (0, 1):
            a = np.ones((2, size, size)[3 - rank_a:])
            b = np.ones((2, size, size)[3 - rank_b:])
            assert_calls_match_numpy(_product_then_work, [(a, b)])


@pytest.mark.parametrize(("a_shape", "b_shape"), [((), (3,)), ((3,), ()), ((3,), (3,)),
                                                  ((2, 3), (3,)), ((3,), (4, 3)),
                                                  ((2, 3), (4, 3)), ((2, 2, 3), (2, 3)),
                                                  ((2, 3, 3), (2, 3, 3))])
def test_inner_contracts_the_last_axes_of_every_rank(a_shape, b_shape):
    rng = np.random.default_rng(5)
    a, b = rng.integers(-3, 4, a_shape).astype(float), rng.integers(-3, 4, b_shape).astype(float)
    assert_calls_match_numpy(lambda x, y: np.inner(x, y) + 1, [(a, b), (a * 2, b - 1)])
