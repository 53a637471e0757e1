"""The reduction test catalogue: NumPy functions whose traced kernels reduce, each with
inputs that reach every reduction kind x dtype kind, axis form, row length (shorter and
longer than a block, empty), multi-phase kernel and forced launch shape.

``scale`` bounds, per output, the sum of absolute terms behind a float result; see
``test_reductions`` for how it becomes a tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RNG = np.random.default_rng(2024)


@dataclass(frozen=True)
class Case:
    """``fn(*args)`` emulated (``launch``: forced grid/block/team/splits) vs NumPy.
    ``scale`` None: exact; else the float bound's ``scale`` (see module docstring)."""

    id: str
    fn: Callable
    args: tuple[np.ndarray, ...]
    scale: Any = None
    launch: dict[str, int] = field(default_factory=dict)


# -- inputs -------------------------------------------------------------------------------
def normal(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _ints(shape: tuple[int, ...], dtype: str, low: int | None = None,
          high: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    low, high = info.min if low is None else low, info.max if high is None else high
    return RNG.integers(low, high, shape, dtype=dtype, endpoint=True)


def _nans(x: np.ndarray, every: int) -> np.ndarray:
    """Return ``x`` with NaN at every ``every``-th element and a whole NaN first row."""
    y = x.copy()
    y.reshape(-1)[3::every] = np.nan
    y[0] = np.nan
    return y


def _ties(x: np.ndarray) -> np.ndarray:
    """Return ``x`` rounded so rows hold repeated extremes (argmax must pick the first)."""
    return np.round(x * 2) / 2


def absmax(x: np.ndarray) -> float:
    return float(np.nanmax(np.abs(x))) if x.size else 0.0


# -- functions ------------------------------------------------------------------------------
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    m = x.mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


def image_norm(img):
    return ((img - img.mean(axis=(1, 2), keepdims=True))
            / img.std(axis=(1, 2), keepdims=True))


def normalise_stack(img):
    """The coverage issue's per-image normalisation with its error: float32 std in one
    shifted pass, and the (B,H,W) mean riding along as per-image partial sums."""
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    y = np.maximum((img - mean) / std * 1.0123 - 0.02, 0) ** 1.8
    return y, np.mean((y - img) ** 2)


def layer_norm_var(x):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def center(x):
    return x - x.mean()


def mse(x, y):
    return np.mean((x - y) ** 2)


def spread(x):
    return x.max() - x.min()


def argmax_and_sum(x):
    return np.argmax(x), x.sum()


F64, F32, BIG = normal((13, 100)), normal((300, 7), "float32"), normal((5000,))
I8, U64, I64 = _ints((9, 40), "int8"), _ints((6, 45), "uint64"), _ints((7, 33), "int64")


def _sum_prod_cases() -> list[Case]:
    """add and mul on every dtype kind (wrapping integers); axis None/int/negative."""
    f64, f32, big, i8, u64 = F64, F32, BIG, I8, U64
    u8, near1 = _ints((11, 30), "uint8"), RNG.uniform(0.5, 1.5, (6, 50))
    f32_2d, strided = normal((70, 90), "float32"), normal((40, 90))[:, ::3]
    columns = normal((20, 50))
    return [
        Case("sum_f64_axis1", lambda x: np.sum(x, axis=1), (f64,), 100 * absmax(f64)),
        Case("sum_f32_axis0", lambda x: x.sum(axis=0), (f32,), 300 * absmax(f32)),
        Case("sum_columns_thread_each", lambda x: x.sum(axis=0), (columns,),
             20 * absmax(columns)),
        Case("sum_f64_all_split", np.sum, (big,), 5000 * absmax(big)),
        Case("sum_f32_all_2d", np.sum, (f32_2d,), f32_2d.size * absmax(f32_2d)),
        Case("sum_strided_view", lambda x: np.sum(x, axis=1), (strided,), 30 * absmax(strided)),
        Case("sum_i8_to_i64", lambda x: np.sum(x, axis=-1), (i8,)),
        Case("sum_u8_wrapping", lambda x: np.sum(x, axis=1, dtype=np.uint8), (u8,)),
        Case("sum_i8_wrapping", lambda x: np.sum(x, axis=0, dtype=np.int8), (i8,)),
        Case("sum_u64_wrapping", lambda x: np.sum(x, axis=1), (u64,)),
        Case("prod_f64", lambda x: np.prod(x, axis=1), (near1,),
             50 * np.abs(np.prod(near1, axis=1))),
        Case("prod_f32_all", np.prod, (near1[:2].astype("float32"),),
             100 * abs(float(np.prod(near1[:2])))),
        Case("prod_i32_wrapping", lambda x: np.prod(x, axis=1, dtype=np.int32),
             (_ints((5, 20), "int32", -1000, 1000),)),
        Case("prod_u16_wrapping", lambda x: np.prod(x, axis=0, dtype=np.uint16),
             (_ints((12, 9), "uint16"),)),
    ]


def _extremum_cases() -> list[Case]:
    """max/min/fmax/fmin/or/and/argmax/argmin on every dtype kind, with NaN and ties."""
    f64, f32, big, u64, i64 = F64, F32, BIG, U64, I64
    return [
        Case("max_f64_nan", lambda x: np.max(x, axis=1), (_nans(f64, 37),)),
        Case("min_f32_nan", lambda x: x.min(axis=0), (_nans(f32, 301),)),
        Case("max_i8_axes02", lambda x: np.max(x, axis=(0, 2)), (_ints((4, 5, 6), "int8"),)),
        Case("min_u64", lambda x: np.min(x, axis=1), (u64,)),
        Case("max_i64_keepdims", lambda x: np.max(x, axis=1, keepdims=True), (i64,)),
        Case("max_transposed", lambda x: np.max(x, axis=1), (i64.T,)),
        Case("nanmax_f64", lambda x: np.nanmax(x, axis=1), (_nans(f64, 7),)),
        Case("nanmin_f32", lambda x: np.nanmin(x, axis=-1), (_nans(normal((8, 77), "f4"), 5),)),
        Case("any_f64", lambda x: np.any(x > 1.5, axis=1), (f64,)),
        Case("all_i32", lambda x: np.all(x, axis=0), (_ints((40, 6), "int32", 0, 30),)),
        Case("any_all_elements", lambda x: np.any(x < -3.5), (big,)),
        Case("argmax_f64_nan_ties", lambda x: np.argmax(x, axis=1), (_ties(_nans(f64, 41)),)),
        Case("argmin_f32_ties", lambda x: np.argmin(x, axis=0), (_ties(f32),)),
        Case("argmax_i8_ties", lambda x: np.argmax(x, axis=1), (_ints((9, 40), "int8", 0, 3),)),
        Case("argmin_u64", lambda x: np.argmin(x, axis=-1), (u64,)),
        Case("argmin_i64_all", np.argmin, (i64,)),
        Case("argmax_f32_all_nan_late", np.argmax,
             (np.where(np.arange(12000) == 9000, np.nan, normal((12000,))).astype("f4"),)),
    ]


def _shape_cases() -> list[Case]:
    """Axis tuples, keepdims, empty rows and outers, rows of one, multi-phase kernels."""
    x3, img, x2 = normal((5, 6, 7)), normal((4, 13, 11)), normal((60, 70))
    rows_of_one, rows_129, x4 = normal((50, 1)), normal((9, 129)), normal((3, 4, 5, 5))
    return [
        Case("sum_outer_2d", lambda x: x.sum(axis=-2), (x3,), 6 * absmax(x3)),
        Case("sum_4d_outer_2d_row_2d", lambda x: np.sum(x, axis=(1, 3)), (x4,), 20 * absmax(x4)),
        Case("sum_axes02", lambda x: x.sum(axis=(0, 2)), (x3,), 35 * absmax(x3)),
        Case("mean_keepdims", lambda x: x.mean(axis=(1, 2), keepdims=True), (x3,),
             absmax(x3)),
        Case("std_axes12", lambda x: x.std(axis=(1, 2)), (x3,), 8 * absmax(x3) ** 2),
        Case("var_all", lambda x: x.var(), (x2,), 8 * absmax(x2) ** 2),
        Case("sum_empty_rows", lambda x: np.sum(x, axis=1), (np.zeros((5, 0)),), 1.0),
        Case("prod_any_all_empty_rows",
             lambda x: (np.prod(x, axis=1), np.any(x, axis=1), np.all(x, axis=1)),
             (np.zeros((4, 0), np.int16),)),
        Case("sum_empty_outer", lambda x: np.sum(x, axis=1), (np.zeros((0, 5)),), 1.0),
        Case("sum_rows_of_one", lambda x: np.sum(x, axis=1), (rows_of_one,),
             absmax(rows_of_one)),
        Case("softmax_f64", softmax, (normal((17, 33)),), 4.0),
        Case("softmax_f32_long", softmax, (normal((3, 700), "float32"),), 4.0),
        Case("softmax_short_rows", softmax, (normal((200, 5)),), 4.0),
        Case("layer_norm", layer_norm, (rows_129,), 32 * absmax(rows_129)),
        Case("image_norm", image_norm, (img,), 32 * absmax(img)),
        Case("normalise_stack_f32", normalise_stack, (img.astype(np.float32) + 3,), 64.0),
        Case("layer_norm_one_pass_var_f32", layer_norm_var, (rows_129.astype(np.float32),),
             32 * absmax(rows_129)),
        Case("center_whole_array", center, (x2,), 2 * absmax(x2)),
        Case("mse", mse, (x2, normal((60, 70))), 16 * absmax(x2) ** 2),
        Case("spread_two_reductions", spread, (x2,)),
        Case("argmax_and_sum", argmax_and_sum, (_ties(x2),), x2.size * absmax(x2)),
    ]


def _initial_cases() -> list[Case]:
    """Reductions with ``initial=`` / ``where=`` (the seeded reduction, empty rows allowed, and
    the combine with the initial value): exact, NaN and zero signs included."""
    zeros = np.zeros((6, 40))
    zeros[:, 1::3] = -0.0
    return [
        Case("max_initial_nan_rows", lambda x: np.max(x, axis=1, initial=0.0), (_nans(F64, 37),)),
        Case("min_initial_nan_f32", lambda x: x.min(axis=0, initial=np.nan), (F32,)),
        Case("max_initial_zero_signs", lambda x: (np.max(x, axis=1, initial=-0.0),
                                                  np.min(x, axis=1, initial=0.0)), (zeros,)),
        Case("max_initial_empty_rows", lambda x: np.max(x, axis=1, initial=-1.5),
             (np.zeros((5, 0)),)),
        Case("min_initial_empty_outer", lambda x: np.min(x, axis=0, initial=3),
             (np.zeros((0, 5), np.int16),)),
        Case("max_initial_where", lambda x: np.max(x, axis=1, where=x > 0, initial=0.5),
             (F64,)),
        Case("max_initial_all_split", lambda x: np.max(x, initial=2.0), (BIG,)),
        Case("sum_i8_initial_where", lambda x: np.sum(x, axis=0, where=x > 2, initial=100),
             (_ints((40, 6), "int8"),)),
    ]


def _forced(case: Case, suffix: str, **launch: int) -> Case:
    return dataclasses.replace(case, id=f"{case.id}_{suffix}", launch=launch)


def _launch_cases(base: dict[str, Case]) -> list[Case]:
    """The same kernels under every team size, blocks of 1-3 warps, one block, splits."""
    return [
        _forced(base["sum_f64_axis1"], "team1", team=1),
        _forced(base["sum_f64_axis1"], "team2_grid1", team=2, grid=1),
        _forced(base["sum_f64_axis1"], "block96", block=96, team=96),
        _forced(base["argmax_f64_nan_ties"], "team4", team=4),
        _forced(base["argmax_f64_nan_ties"], "block32", block=32, team=32, grid=2),
        _forced(base["softmax_f64"], "block96_grid2", block=96, team=96, grid=2),
        _forced(base["softmax_f64"], "team8_grid1", team=8, grid=1),
        _forced(base["softmax_short_rows"], "team16", team=16),
        _forced(base["argmax_f32_all_nan_late"], "splits7_warp", block=32, team=32, splits=7),
        _forced(base["mse"], "splits5_grid2", team=64, splits=5, grid=2),
        _forced(base["argmax_and_sum"], "splits3", team=64, splits=3),
        _forced(base["sum_empty_rows"], "team32", team=32),
        _forced(base["nanmax_f64"], "block128", block=128, team=128, grid=3),
        _forced(base["max_initial_all_split"], "splits4", team=64, splits=4),
    ]


def all_cases() -> list[Case]:
    cases = _sum_prod_cases() + _extremum_cases() + _shape_cases() + _initial_cases()
    return cases + _launch_cases({c.id: c for c in cases})
