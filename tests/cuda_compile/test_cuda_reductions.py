"""Reduction kernels through the CUDA path, without a GPU: every kernel the pipeline makes
for these functions compiles with NVRTC (sm_80, sm_90, one translation unit each), and its
CPU emulation (blocks of fibers meeting at __syncthreads and shuffles) matches NumPy.

Exact: integer and bool results, max/min/fmax/fmin and argmax/argmin (NaN where NumPy has
NaN). Float sums (and what is computed from them) differ from NumPy's pairwise summation
only by rounding. Any summation order of n terms is within ``(d - 1) u sum|x|`` of the exact
sum, where ``d`` is the longest chain of additions an element goes through (Higham, ch. 4):
ours is ``ceil(row / (team * splits))`` sequential adds per thread, then the shuffle and
shared-memory trees (``2 log2 block``) and the partials of a split row; NumPy's pairwise
sum adds at most ``16 + log2 n``. So each float result is checked against
``|got - want| <= depth * u * scale``, with ``depth`` the sum of both plus a margin (24)
for the few roundings around the sum (division by n, sqrt, exp), and ``scale`` a bound on
``sum|terms|`` of that output (e.g. ``row * max|x|`` for a sum, ``max|x|`` for a mean).
Dropping or doubling one element is orders of magnitude above this bound.
"""

from __future__ import annotations

import ctypes
import functools
import math
import re
import sys
import warnings
from functools import partial
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.support.reduction_cases import Case, absmax, all_cases, normal
from tests.support.translation_unit import ARCHS, compile_unit, shared_plans

from autojit.fuse.plan import Plan, plan_kernels
from autojit.ir.abi import loop_extent
from autojit.lower_gpu import (
    CudaBinary,
    cuda_reduce_gaps,
    cuda_rules,
    device,
    gpu_available,
    launch,
    render_cuda,
    run_emulated,
)
from autojit.lower_gpu.emulate import build_emulation, emulated_launch
from autojit.lower_gpu.reduce_launch import is_reduction, row_extent
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.tracer import trace_function

CASES = all_cases()


# -- plans, one translation unit -----------------------------------------------------------
@functools.cache
def corpus() -> tuple[list[Plan], str, dict[str, CudaBinary]]:
    """Trace and render every case once (a forced-launch case reuses its base case's
    kernels) into one translation unit, compiled for both archs and the emulation."""
    plans = shared_plans(CASES, "r")
    source, binaries = compile_unit(plans, "reductions")
    return plans, source, binaries


def _depth(plan: Plan, sizes: dict[str, int], forced: dict[str, int]) -> int:
    """Return the longest addition chain (ours + NumPy's + margin) over the plan's kernels."""
    depth = 0
    for kernel in filter(is_reduction, plan.kernels):
        go = emulated_launch(kernel, sizes, **forced)
        _, row = row_extent(kernel, loop_extent(kernel, sizes))
        ours = -(-row // (go.team * go.splits)) + -(-go.splits // go.block)
        ours += 2 * int(math.log2(go.block))
        depth = max(depth, ours + 16 + int(math.log2(row + 1)) + 24)
    return depth


def _check(case: Case, got: Any, want: Any, depth: int) -> None:
    got_all = got if isinstance(want, tuple) else (got,)
    for g, w in zip(got_all, want if isinstance(want, tuple) else (want,), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), case.id
        if case.scale is None or w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=case.id, strict=True)
            continue
        bound = depth * np.finfo(w.dtype).eps / 2 * np.asarray(case.scale, np.float64)
        error = np.abs(g.astype(np.float64) - w.astype(np.float64))
        ok = (error <= bound) | (np.isnan(g) & np.isnan(w)) | (g == w)
        assert ok.all(), f"{case.id}: max error {np.nanmax(error)} > bound {np.max(bound)}"


# -- tests -----------------------------------------------------------------------------------
def test_every_reduce_kind_and_dtype_kind_has_a_cuda_rule() -> None:
    assert cuda_reduce_gaps() == []


def test_a_missing_reduce_rule_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(cuda_rules.REDUCE_RULES, ("argmin", "u"))
    assert cuda_reduce_gaps() == [("argmin", "u")]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_emulated_reduction_matches_numpy(index: int) -> None:
    case, (plans, source, _) = CASES[index], corpus()
    plan = plans[index]
    assert any(is_reduction(k) for k in plan.kernels), case.id
    sizes = bind_sizes(plan, case.args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # nanmax of an all-NaN row
        want = case.fn(*case.args)
        target = EmulatedCudaTarget(source, **case.launch)
        got = run_plan(plan, [source] * len(plan.kernels), target, case.args, sizes)
    _check(case, got, want, _depth(plan, sizes, case.launch))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_reduction_kernel_compiles_with_nvrtc(arch: str) -> None:
    plans, _, binaries = corpus()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    names = {k.name for plan in plans for k in plan.kernels}
    assert names <= entries and binaries[arch].cubin[:4] == b"\x7fELF"


def test_softmax_is_one_kernel_of_team_reductions_without_float_atomics() -> None:
    plans, _, _ = corpus()
    (kernel,) = plans[next(i for i, c in enumerate(CASES) if c.id == "softmax_f64")].kernels
    source = render_cuda(kernel).split("end of reduction preamble")[1]
    assert kernel.phases == 3
    assert source.count("aj_team_reduce(") == 2 and "aj_last_arrival" not in source
    assert "if (aj_valid) out0[" in source and "atomicAdd" not in source
    single = render_cuda(plans[next(i for i, c in enumerate(CASES) if c.id == "mse")].kernels[0])
    assert "if (aj_splits > 1) {" in single and "if (aj_leader) out0[0] = " in single


def test_launches_the_generated_code_does_not_support_are_refused() -> None:
    plans, source, _ = corpus()
    case = next(i for i, c in enumerate(CASES) if c.id == "softmax_f64")
    kernel, args = plans[case].kernels[0], CASES[case].args
    sizes = bind_sizes(plans[case], args)
    for bad in ({"block": 7}, {"team": 3}, {"team": 64, "block": 128},
                {"splits": 2, "team": 64}):
        with pytest.raises(ValueError):
            run_emulated(kernel, source, [args[0], np.empty_like(args[0])], [], sizes, **bad)


_DEADLOCK = r"""
extern "C" __global__ void aj_test_barrier(long long *out) {
  if (threadIdx.x < 32) __syncthreads();
  out[threadIdx.x] = threadIdx.x;
}
extern "C" void aj_test_barrier_emulate(long long *out, int block) {
  aj_emulate_grid(2, block, [&] { aj_test_barrier(out); });
}
"""


def test_emulator_reports_a_barrier_not_every_thread_reaches() -> None:
    library = build_emulation(_DEADLOCK)
    library.aj_emulate_error.restype = ctypes.c_char_p
    out = np.zeros(64, np.int64)
    library.aj_test_barrier_emulate(ctypes.c_void_p(out.ctypes.data), 32)
    assert library.aj_emulate_error() is None and out[31] == 31
    library.aj_test_barrier_emulate(ctypes.c_void_p(out.ctypes.data), 64)
    assert b"deadlock" in library.aj_emulate_error()


class _FakeCupy:
    """Just enough of ``cupy`` for ``launch``: a 2-SM device whose kernels run in the g++
    emulation with the grid, block and reduction arguments ``launch`` chose."""

    def __init__(self, source: str, kernel: Any) -> None:
        self.source, self.kernel, self.launches = source, kernel, []
        self.zeros = np.zeros
        self.cuda = SimpleNamespace(runtime=SimpleNamespace(
            getDeviceCount=lambda: 1, getDevice=lambda: 0,
            getDeviceProperties=lambda dev: {"major": 9, "minor": 0, "multiProcessorCount": 2}))

    def RawModule(self, path: str) -> SimpleNamespace:  # noqa: N802 - CuPy's name
        return SimpleNamespace(get_function=lambda name: partial(self._run, name))

    def _run(self, name: str, grid: tuple, block: tuple, args: tuple) -> None:
        *head, scratch, team, splits = args
        self.launches.append((grid[0], block[0], int(team), int(splits)))
        nb, ns = len(self.kernel.buffers), len(self.kernel.scalars)
        boxes = [np.array([s]) for s in head[nb:nb + ns]]
        data = (ctypes.c_void_p * (nb + ns))(*[a.ctypes.data for a in head[:nb]],
                                             *[b.ctypes.data for b in boxes])
        meta = np.array(head[nb + ns:], dtype=np.int64)
        pointer = scratch.ctypes.data if isinstance(scratch, np.ndarray) else int(scratch)
        entry = getattr(build_emulation(self.source), f"{name}_emulate")
        entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                          ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong]
        entry(ctypes.cast(data, ctypes.c_void_p), meta.ctypes.data, grid[0], block[0],
              pointer, int(team), int(splits))


def test_launcher_splits_a_whole_array_sum_across_blocks(monkeypatch) -> None:
    x = normal((300, 400))
    plan = plan_kernels(trace_function(np.sum, (x,)), [True])
    (kernel,) = plan.kernels
    fake = _FakeCupy(render_cuda(kernel), kernel)
    for clear in (gpu_available.cache_clear, device._device_properties.cache_clear):
        clear()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device, "_FUNCTIONS", {})
    try:
        out = np.empty((), np.float64)
        launch(kernel, CudaBinary(b"\x7fELF", "", "", "sm_90"), [x, out], [],
               bind_sizes(plan, (x,)))
    finally:
        for clear in (gpu_available.cache_clear, device._device_properties.cache_clear):
            clear()
    # 2 SMs x 8 resident blocks of 256 threads; one row of 120000 elements: split in 29
    # (at least 16 elements a thread), one block per split
    assert fake.launches == [(29, 256, 256, 29)]
    assert abs(out - x.sum()) <= 120000 * absmax(x) * (16 + 16 + 17 + 24) * 2**-53
