"""Mixed-sign zeros and NaNs through max/min, argmax/argmin, nanmax/nanmin and the
elementwise maximum/minimum/fmax/fmin on the CPU, against NumPy bit for bit (the oracle
compares zero signs with ``np.signbit``).

The inputs (``tests/support/zero_sign_inputs.py``) are ones NumPy answers by one rule in every
layout and on every machine; the same inputs run through the CUDA emulation in
``tests/cuda_compile/test_cuda_zero_sign.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy
from tests.support.zero_sign_inputs import (
    FLOATS,
    elementwise,
    nan_reductions,
    one_sign_rows,
    reductions,
    signed_zero_rows,
)

from autojit import config as autojit_config


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("threads", [1, 3])
def test_max_min_and_arg_reductions_keep_numpy_s_zero_signs(dtype: type, threads: int) -> None:
    with autojit_config(num_threads=threads, thread_min_work=0):
        assert_matches_numpy(reductions, signed_zero_rows(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_short_contiguous_rows_keep_the_last_zero(dtype: type) -> None:
    """Rows shorter than a vector: NumPy's scalar loop, last zero wins, on any machine."""
    rows = np.array([[0.0, -0.0, 0.0, -0.0], [-0.0, 0.0, -0.0, 0.0], [-0.0, -1.0, 0.0, -2.0],
                     [np.nan, -0.0, 0.0, 1.0], [0.0, 0.0, np.nan, -0.0]], dtype)
    assert_matches_numpy(reductions, rows)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nanmax_nanmin_keep_a_zero_s_sign_and_skip_nans(dtype: type) -> None:
    with np.errstate(invalid="ignore"):
        assert_matches_numpy(nan_reductions, one_sign_rows(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_elementwise_maximum_minimum_give_the_second_zero_and_propagate_nan(dtype: type
                                                                              ) -> None:
    values = np.array([0.0, -0.0, np.nan, 1.0, -1.0], dtype)
    a, b = (x.ravel() for x in np.meshgrid(values, values))
    assert_matches_numpy(elementwise, a, b)
