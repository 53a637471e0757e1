"""The scan test catalogue: NumPy functions whose kernels scan (np.cumsum / np.cumprod), with
inputs that reach every scan kind x dtype kind, every team size (one thread per row, warp
lanes, the whole block), several tiles per row, fused producers, consumers and reductions,
strided and empty inputs, and forced launch shapes.

``bound`` is None for exact results; else it maps (input, output) to the allowed absolute
error of each float output element (see ``test_cuda_scans``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

RNG = np.random.default_rng(77)
EPS = {np.dtype("float32"): np.finfo(np.float32).eps, np.dtype("float64"): np.finfo(float).eps}


@dataclass(frozen=True)
class Case:
    """``fn(*args)`` emulated (``launch``: forced grid/block/team) vs NumPy."""

    id: str
    fn: Callable
    args: tuple[np.ndarray, ...]
    bound: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    launch: dict[str, int] = field(default_factory=dict)


def normal(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def ints(shape: tuple[int, ...], dtype: str, low: int | None = None,
         high: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    low, high = info.min if low is None else low, info.max if high is None else high
    return RNG.integers(low, high, shape, dtype=dtype, endpoint=True)


def sum_bound(axis: int | None) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A float cumsum of n terms in any order errs by at most (n - 1) u sum|x| (Higham,
    ch. 4); NumPy's order and ours both add at most n deep, so twice that, plus a margin."""
    def bound(x: np.ndarray, out: np.ndarray) -> np.ndarray:
        flat = x.reshape(-1) if axis is None else x
        along = 0 if axis is None else axis
        depth = 2 * flat.shape[along] + 32
        return depth * EPS[out.dtype] * np.cumsum(np.abs(flat.astype(np.float64)), axis=along)
    return bound


def prod_bound(axis: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A float cumprod of n factors errs by at most (n - 1) u relative, in any order."""
    def bound(x: np.ndarray, out: np.ndarray) -> np.ndarray:
        return (2 * x.shape[axis] + 32) * EPS[out.dtype] * np.abs(out.astype(np.float64))
    return bound


def _with_nans(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y[1, 17], y[3, 0], y[4, -1] = np.nan, np.nan, np.inf
    return y


def _scan_cases() -> list[Case]:
    """cumsum / cumprod on every dtype kind; team = block, warp, short rows, one thread."""
    long_rows, warp_rows = normal((2, 3000)), normal((40, 300), "float32")
    short_rows, columns = normal((200, 5)), normal((30, 300))
    near1 = RNG.uniform(0.9, 1.1, (6, 700))
    return [
        Case("cumsum_f64_block_tiles", lambda x: np.cumsum(x, axis=1), (long_rows,),
             sum_bound(1)),
        Case("cumsum_f32_warp", lambda x: x.cumsum(-1), (warp_rows,), sum_bound(1)),
        Case("cumsum_short_rows", lambda x: np.cumsum(x, axis=1), (short_rows,), sum_bound(1)),
        Case("cumsum_columns_thread_each", lambda x: np.cumsum(x, axis=0), (columns,),
             sum_bound(0)),
        Case("cumsum_nan_inf", lambda x: np.cumsum(x, axis=1), (_with_nans(normal((6, 90))),),
             sum_bound(1)),
        Case("cumsum_flattened_i64", np.cumsum, (ints((13, 77), "int64"),)),
        Case("cumsum_i8_to_i64", lambda x: np.cumsum(x, axis=-1), (ints((9, 400), "int8"),)),
        Case("cumsum_u8_to_u64", lambda x: np.cumsum(x, axis=0), (ints((300, 7), "uint8"),)),
        Case("cumsum_i16_wrapping", lambda x: np.cumsum(x, axis=1, dtype=np.int16),
             (ints((5, 500), "int16"),)),
        Case("cumprod_i32_wrapping", lambda x: np.cumprod(x, axis=1, dtype=np.int32),
             (ints((5, 200), "int32", -5, 5),)),
        Case("cumprod_u64_wrapping", lambda x: np.cumprod(x, axis=1), (ints((4, 150), "uint64"),)),
        Case("cumprod_f64", lambda x: np.cumprod(x, axis=1), (near1,), prod_bound(1)),
        Case("cumprod_f32", lambda x: np.cumprod(x, axis=0), (near1.T.astype("float32"),),
             prod_bound(0)),
        Case("cumsum_bool_or", lambda x: np.cumsum(x > 2.5, axis=1, dtype=bool), (long_rows,)),
        Case("cumprod_bool_and", lambda x: np.cumprod(x > -2.5, axis=1, dtype=bool),
             (long_rows,)),
        Case("count_true", lambda x: np.cumsum(x > 0, axis=1), (warp_rows,)),
        Case("cumsum_vector_split", np.cumsum, (normal((5000,)),), sum_bound(None)),
        Case("cumsum_i64_vector_split", lambda x: np.cumsum(x * 3), (ints((4000,), "int64"),)),
        Case("cumprod_rows_split", lambda x: np.cumprod(x, axis=1), (near1[:1].repeat(4, 1),),
             prod_bound(1)),
    ]


def _fused_cases() -> list[Case]:
    """Producers, consumers and reductions in the scan's kernel; layouts; empty inputs."""
    x, y, wide = normal((7, 600)), normal((600,)), normal((3, 4, 50))
    return [
        Case("producers_and_consumer", lambda a, b: np.cumsum(a * 2 + b, axis=1) / 600,
             (x, y), lambda a, out: sum_bound(1)(3 * np.abs(a) + np.abs(y), out) / 300),
        Case("normalised_by_row_sum", lambda a: np.cumsum(a, 1) / np.abs(a).sum(1, keepdims=True),
             (x,), lambda a, out: sum_bound(1)(a, out) / np.abs(a).sum(1, keepdims=True) + 1e-15),
        Case("after_row_max", lambda a: np.cumsum(np.exp(a - a.max(1, keepdims=True)), 1),
             (x,), lambda a, out: sum_bound(1)(np.exp(a - a.max(1, keepdims=True)), out) * 4),
        Case("sum_and_argmax_in_the_scan_pass",
             lambda a: (np.cumsum(a, 1), np.cumsum(a, 1).sum(1), np.argmax(a, 1)), (x,),
             lambda a, out: (600 * sum_bound(1)(a, a)[:, -1] if out.ndim == 1
                             else sum_bound(1)(a, out))),
        Case("three_scans_one_pass",
             lambda a: (np.cumsum(a, 1), np.cumsum(a * a, 1), np.cumprod(a > -2, 1)), (x,),
             lambda a, out: sum_bound(1)(a * np.maximum(np.abs(a), 1), out)),
        Case("flattened_3d", np.cumsum, (wide,), sum_bound(None)),
        Case("middle_axis", lambda a: np.cumprod(a, axis=1), (RNG.uniform(0.5, 1.5, (3, 40, 5)),),
             prod_bound(1)),
        Case("reversed_strided", lambda a: np.cumsum(a[:, ::-2], axis=1),
             (normal((5, 300)),), lambda a, out: sum_bound(1)(a[:, ::-2], out)),
        Case("transposed", lambda a: np.cumsum(a, axis=1), (normal((80, 6)).T,), sum_bound(1)),
        Case("empty_rows", lambda a: np.cumsum(a, axis=1), (np.zeros((4, 0)),)),
        Case("empty_outer", lambda a: np.cumsum(a, axis=1), (np.zeros((0, 5)),)),
        Case("rows_of_one", lambda a: np.cumsum(a, axis=1), (normal((50, 1)),)),
        Case("zero_d", np.cumsum, (np.array(-0.0),)),
    ]


def _forced(case: Case, suffix: str, **launch: int) -> Case:
    return dataclasses.replace(case, id=f"{case.id}_{suffix}", launch=launch)


def _launch_cases(base: dict[str, Case]) -> list[Case]:
    """The same kernels under every team size, blocks of 1-3 warps and one block."""
    return [
        _forced(base["cumsum_f64_block_tiles"], "team1", team=1),
        _forced(base["cumsum_f64_block_tiles"], "team4_grid1", team=4, grid=1),
        _forced(base["cumsum_f64_block_tiles"], "block96", block=96, team=96),
        _forced(base["cumsum_f64_block_tiles"], "block32", block=32, team=32),
        _forced(base["cumsum_i8_to_i64"], "block128", block=128, team=128, grid=2),
        _forced(base["cumprod_i32_wrapping"], "team2", team=2),
        _forced(base["cumsum_short_rows"], "team32", team=32),
        _forced(base["cumsum_columns_thread_each"], "block64", team=64),
        _forced(base["sum_and_argmax_in_the_scan_pass"], "team16", team=16),
        _forced(base["after_row_max"], "block96_grid1", block=96, team=96, grid=1),
        _forced(base["three_scans_one_pass"], "block128", block=128, team=128),
        _forced(base["three_scans_one_pass"], "team32_grid1", team=32, grid=1),
        _forced(base["cumsum_bool_or"], "team8", team=8),
        _forced(base["empty_rows"], "team32", team=32),
        _forced(base["cumsum_vector_split"], "splits7_warp", block=32, team=32, splits=7),
        _forced(base["cumsum_vector_split"], "splits3_grid1", team=64, splits=3, grid=1),
        _forced(base["cumsum_i64_vector_split"], "splits13_block96", block=96, team=96,
                splits=13),
        _forced(base["three_scans_one_pass"], "splits5", team=64, splits=5),
        _forced(base["flattened_3d"], "splits4", team=64, splits=4),
        _forced(base["cumsum_bool_or"], "splits9", team=64, splits=9),
        _forced(base["cumsum_short_rows"], "splits2", team=64, splits=2),
    ]


def all_cases() -> list[Case]:
    cases = _scan_cases() + _fused_cases()
    return cases + _launch_cases({c.id: c for c in cases})
