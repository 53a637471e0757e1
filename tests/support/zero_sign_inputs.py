"""Inputs with mixed-sign zeros and NaNs that NumPy answers by one rule in every layout and
on every machine, and the functions run on them, shared by the CPU
(``tests/cpu/test_zero_sign_reductions.py``) and CUDA
(``tests/cuda_compile/test_cuda_zero_sign.py``) tests.

Rows read with a stride or shorter than any vector run NumPy's scalar loops: a zero result
of max/min takes the sign of the row's last zero (``ir.ops.ZeroSign.LAST_ZERO``);
reductions across rows run NumPy's elementwise ``maximum``, where a tie gives the later
row; nanmax/nanmin rows hold zeros of one sign only, since NumPy leaves a tie of 0.0 and
-0.0 in fmax to its loop (``ir.ops.ZeroSign.SECOND``).
"""

from __future__ import annotations

import numpy as np

FLOATS = [np.float32, np.float64]


def signed_zero_rows(dtype: type, width: int = 130, seed: int = 5) -> np.ndarray:
    """Return (8, width) rows whose max or min is a zero of a known last sign, read with a
    stride of two (NumPy's scalar reduce loop). Row by row: random zeros of both signs;
    negatives with one +0 early and a -0 late (max -0); its mirror (min +0); a -0 in lane 0
    of a 64-thread team after a +0 in lane 1 (the CUDA tree order differs from row
    order); the last element a zero of each sign; a NaN among zeros; all -0."""
    rng = np.random.default_rng(seed)
    rows = np.where(rng.random((8, 2 * width)) < 0.5, 0.0, -0.0)
    rows[1] = -1.0 - rng.random(2 * width)
    rows[1, [2, 2 * (width - 3)]] = [0.0, -0.0]
    rows[2] = -rows[1]
    rows[2, [2, 2 * (width - 3)]] = [-0.0, 0.0]
    rows[3] = -1.0
    rows[3, [2, 128]] = [0.0, -0.0]
    rows[4, -2] = -0.0
    rows[5, -2] = 0.0
    rows[6, 2 * (width // 2)] = np.nan
    rows[7] = -0.0
    return rows.astype(dtype)[:, ::2]


def one_sign_rows(dtype: type, width: int = 130) -> np.ndarray:
    """Rows for nanmax/nanmin: zeros of one sign each, among NaNs and negatives."""
    rows = np.full((4, 2 * width), np.nan)
    rows[0, ::3] = -0.0
    rows[1, ::5] = 0.0
    rows[2, 1::4] = -2.0
    rows[2, 7] = -0.0
    rows[3, ::2] = -0.0
    rows[3, 11] = 4.0
    return rows.astype(dtype)[:, ::2]


def reductions(a: np.ndarray) -> tuple:
    return (a.max(axis=1), a.min(axis=1), np.argmax(a, axis=1), np.argmin(a, axis=1),
            a.max(axis=0), a.min(axis=0), np.argmax(a, axis=0), np.argmin(a, axis=0),
            a[3].max(), a[4].min(), np.argmax(a[3]), np.argmin(a[7]))


def nan_reductions(a: np.ndarray) -> tuple:
    return (np.nanmax(a, axis=1), np.nanmin(a, axis=1), np.nanmax(a[1]), np.nanmin(a[0]))


def elementwise(a: np.ndarray, b: np.ndarray) -> tuple:
    return np.maximum(a, b), np.minimum(a, b), np.maximum(b, a), np.minimum(b, a)
