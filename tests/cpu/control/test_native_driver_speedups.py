"""The native driver's run program (``native_region._run_form``: no CHECK records, affine
forms as wide as the nest) and its per-iteration fast paths compute NumPy's results bit
for bit: LU in place, forward and back substitution at several sizes, f64 and f32 (each
dot product NumPy's own BLAS call, the updates the same IEEE operations)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.loop_programs import lu_inplace
from tests.support.oracle import assert_calls_match_numpy

import autojit.runtime.native_region as native_region


def forward(low, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - low[i, :i] @ x[:i]) / low[i, i]
    return x


def backward(up, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - up[i, i + 1:] @ x[i + 1:]) / up[i, i]
    return x


def _matrix(n, dtype, seed, part=None):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)) + np.eye(n) * n
    a = a if part is None else part(a)
    return a.astype(dtype), rng.uniform(-1, 1, n).astype(dtype)


SIZES = (1, 2, 7, 33, 130)
DTYPES = (np.float64, np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_in_place_is_numpys_bit_for_bit(dtype, driver_runs):
    assert_calls_match_numpy(lu_inplace, [(_matrix(n, dtype, n)[0],) for n in SIZES])
    assert driver_runs() >= len(SIZES) - 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_substitution_is_numpys_bit_for_bit(dtype, driver_runs):
    assert_calls_match_numpy(forward, [_matrix(n, dtype, n, np.tril) for n in SIZES])
    assert driver_runs() >= len(SIZES) - 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_back_substitution_is_numpys_bit_for_bit(dtype, driver_runs):
    assert_calls_match_numpy(backward, [_matrix(n, dtype, n, np.triu) for n in SIZES])
    assert driver_runs() >= len(SIZES) - 1


def test_run_program_drops_checks_and_narrows_affine_forms():
    """A run executes no CHECK record (only the dry run proves the bounds), reads each
    affine form with as many index terms as the nest has, and carries each innermost
    patch's step (coefficient of the loop's index times its step)."""
    w = native_region.MAX_DEPTH
    check = [native_region.OP_CHECK, 5, 1, *([0] * (w - 1))]
    pcopy = [native_region.OP_PCOPY, 1, 7, 100, 3, 8, *([0] * (w - 2)), 0, 1, 16]
    body = [*check, *pcopy]
    code = [native_region.OP_LOOP, 0, 0, *([0] * w), 9, *([0] * w), 2, len(body), 1, *body]
    run, where = native_region._run_form(code, 2)
    assert run == [native_region.OP_LOOP, 0, 0, 0, 0, 9, 0, 0, 2, 10, 1,
                   native_region.OP_PCOPY, 1, 7, 6, 100, 3, 8, 0, 1, 16]
    assert where[2] == 2 and where[3 + w] == 5
    assert run[where[len(code) - len(pcopy) + 3]] == 100   # a patch base (a per-call root)


def strided_rows(x, out):
    for i in range(x.shape[0] // 3):
        out[i] = x[3 * i + 1] - x[3 * i]
    return out


def test_innermost_patches_move_by_their_steps(driver_runs):
    """Addresses that move by a multiple of the index per iteration (and loops of step 2,
    counting down) match NumPy through every iteration, not only the first."""
    x = np.random.default_rng(5).random((31, 4))
    assert_calls_match_numpy(strided_rows, [(x, np.zeros((10, 4))), (x[:7], np.zeros((2, 4)))])
    assert_calls_match_numpy(backward, [_matrix(9, np.float64, 1, np.triu)])
    assert driver_runs() >= 2


def while_inner(u, out):
    while u[0] < 5.0:
        for i in range(out.shape[0]):
            out[i] = out[i] * 0.5 + u[0] * out[out.shape[0] - 1 - i]
        u = u + 1.0
    return u


def test_inner_loop_of_a_while_matches(driver_runs):
    """A while loop's body (run by the record walker that evaluates every patch) with an
    inner for loop whose views move with its index, and one moving down the array."""
    assert_calls_match_numpy(while_inner, [(np.zeros(2), np.arange(6.0)),
                                           (np.array([3.5, 0.0]), np.arange(9.0))])
    assert driver_runs() >= 2
