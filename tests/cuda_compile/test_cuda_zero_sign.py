"""Mixed-sign zeros and NaNs through the CUDA path: max/min, argmax/argmin, nanmax/nanmin
and the elementwise maximum/minimum compile with NVRTC (both archs) and, run by the CPU
emulation, match NumPy bit for bit (``np.signbit`` of every zero) — the inputs of the
CPU's ``tests/cpu/test_zero_sign_reductions.py``, under launches that cut rows across the
lanes of a warp, the warps of a block and the blocks of a split row.

Before the combine spec (``ir.ops.COMBINES``) carried the last-zero rule to CUDA, a team
reduction combined lanes in tree order, not row order: ``max`` of a row whose last zero is
-0 (lane 0's second element) and whose +0 sits in lane 1 gave +0.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tests.support.translation_unit import ARCHS, compile_unit, shared_plans
from tests.support.zero_sign_inputs import (
    elementwise,
    nan_reductions,
    one_sign_rows,
    reductions,
    signed_zero_rows,
)

from autojit.fuse.plan import Plan
from autojit.lower_gpu import CudaBinary
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget


@dataclass(frozen=True)
class Case:
    """``fn(*args)`` emulated under ``launch`` (forced block/team/splits) vs NumPy."""

    id: str
    fn: Callable
    args: tuple[np.ndarray, ...]
    launch: dict[str, int] = field(default_factory=dict)


def _row_max(a: np.ndarray) -> Any:
    return a.max()


def _row_min(a: np.ndarray) -> Any:
    return a.min()


def _cases() -> list[Case]:
    cases: list[Case] = []
    values = np.array([0.0, -0.0, np.nan, 1.0, -1.0])
    a, b = (x.ravel() for x in np.meshgrid(values, values))
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        rows = signed_zero_rows(dtype)
        long_row = signed_zero_rows(dtype, width=3000)[3]
        cases += [
            Case(f"reductions_{name}", reductions, (rows,)),
            Case(f"reductions_block_{name}", reductions, (rows,), {"team": 64}),
            Case(f"reductions_warp8_{name}", reductions, (rows,), {"team": 8}),
            Case(f"nan_reductions_{name}", nan_reductions, (one_sign_rows(dtype),)),
            Case(f"elementwise_{name}", elementwise, (a.astype(dtype), b.astype(dtype))),
            Case(f"split_max_{name}", _row_max, (long_row,), {"team": 64, "splits": 3}),
            Case(f"split_min_{name}", _row_min, (-long_row,), {"team": 64, "splits": 3}),
        ]
    return cases


CASES = _cases()


@functools.cache
def corpus() -> tuple[list[Plan], str, dict[str, CudaBinary]]:
    plans = shared_plans(CASES, "z")
    source, binaries = compile_unit(plans, "zero_signs")
    return plans, source, binaries


def _assert_bitwise(got: Any, want: Any, label: str) -> None:
    for g, w in zip(got if isinstance(want, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), label
        np.testing.assert_array_equal(g, w, err_msg=label, strict=True)
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=label)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_emulated_zero_signs_match_numpy(index: int) -> None:
    case, (plans, source, _) = CASES[index], corpus()
    plan = plans[index]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # nanmax of an all-NaN row
        want = case.fn(*case.args)
        target = EmulatedCudaTarget(source, **case.launch)
        got = run_plan(plan, [source] * len(plan.kernels), target, case.args,
                       bind_sizes(plan, case.args))
    _assert_bitwise(got, want, case.id)


@pytest.mark.parametrize("arch", ARCHS)
def test_zero_sign_kernels_compile_with_nvrtc(arch: str) -> None:
    plans, _, binaries = corpus()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    assert {k.name for plan in plans for k in plan.kernels} <= entries
