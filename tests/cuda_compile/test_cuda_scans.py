"""Scan kernels through the CUDA path, without a GPU: every kernel the pipeline makes for
these functions compiles with NVRTC (sm_80, sm_90, one translation unit), and its CPU
emulation (blocks of fibers meeting at __syncthreads and shuffles) matches NumPy.

Exact: integer and bool results (wrapping sums and products are associative), NaN and inf
positions, argmax. Float scans differ from NumPy's sequential order by rounding only (each
thread's chunk total joins the others' in a tree): within each case's ``bound``.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Any

import numpy as np
import pytest

from tests.support.scan_cases import Case, all_cases
from tests.support.translation_unit import ARCHS, compile_unit, shared_plans

from autojit.fuse.plan import Plan, plan_kernels
from autojit.lower_gpu import CudaBinary, render_cuda
from autojit.lower_gpu.emulate import emulated_launch
from autojit.lower_gpu.reduce_launch import can_split, launch_splits
from autojit.lower_gpu.render_scan import cuda_scan_gaps
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.tracer import trace_function

CASES = all_cases()


@functools.cache
def corpus() -> tuple[list[Plan], str, dict[str, CudaBinary]]:
    """Trace and render every case once (a forced-launch case reuses its base case's
    kernels) into one translation unit, compiled for both archs and the emulation."""
    plans = shared_plans(CASES, "s")
    source, binaries = compile_unit(plans, "scans")
    return plans, source, binaries


def _check(case: Case, got: Any, want: Any) -> None:
    got_all = got if isinstance(want, tuple) else (got,)
    for g, w in zip(got_all, want if isinstance(want, tuple) else (want,), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), case.id
        if case.bound is None or w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=case.id, strict=True)
            continue
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=case.id)
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=case.id)
        finite = np.isfinite(w)
        with np.errstate(invalid="ignore"):   # inf - inf where both are inf
            error = np.abs(g.astype(np.float64) - w.astype(np.float64))
        bound = np.broadcast_to(case.bound(case.args[0], w), w.shape)
        bad = finite & ~(error <= bound)
        assert not bad.any(), (f"{case.id}: {bad.sum()} elements off, max error "
                               f"{np.max(error[finite])}, bound there {bound[bad][0]}")


def test_every_scan_kind_and_dtype_kind_has_a_cuda_rule() -> None:
    assert cuda_scan_gaps() == []


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_emulated_scan_matches_numpy(index: int) -> None:
    case, (plans, source, _) = CASES[index], corpus()
    plan = plans[index]
    assert any(k.has_scan for k in plan.kernels), case.id
    sizes = bind_sizes(plan, case.args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = case.fn(*case.args)
        target = EmulatedCudaTarget(source, **case.launch)
        got = run_plan(plan, [source] * len(plan.kernels), target, case.args, sizes)
    _check(case, got, want)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_scan_kernel_compiles_with_nvrtc(arch: str) -> None:
    plans, _, binaries = corpus()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    names = {k.name for plan in plans for k in plan.kernels}
    assert names <= entries and binaries[arch].cubin[:4] == b"\x7fELF"


def _kernel_of(case_id: str):
    plans, _, _ = corpus()
    (kernel,) = plans[next(i for i, c in enumerate(CASES) if c.id == case_id)].kernels
    return kernel


def test_a_scan_kernel_is_tiles_with_a_team_scan_and_no_atomics() -> None:
    kernel = _kernel_of("producers_and_consumer")
    source = render_cuda(kernel).split("end of scan preamble")[1]
    assert kernel.phases == 1 and can_split(kernel)
    assert source.count("aj_team_exscan(") == 1 and "atomicAdd" not in source
    assert source.count("aj_team_reduce(") == 2 and "if (aj_totals) {" in source
    assert "aj_last_arrival" not in source and "if (aj_valid) out0[" in source
    with_reduction = _kernel_of("sum_and_argmax_in_the_scan_pass")
    assert not can_split(with_reduction)
    assert "aj_totals) {" not in render_cuda(with_reduction).split("end of scan preamble")[1]


def test_a_long_row_is_split_across_blocks_and_launched_twice() -> None:
    plans, _, _ = corpus()
    index = next(i for i, c in enumerate(CASES) if c.id == "cumsum_vector_split")
    (kernel,) = plans[index].kernels
    launch = emulated_launch(kernel, bind_sizes(plans[index], CASES[index].args))
    assert launch.splits > 1 and launch_splits(kernel, launch) == (-launch.splits,
                                                                   launch.splits)


def test_launch_choices_reach_every_team_kind() -> None:
    """One thread per row for columns, warp lanes for many mid rows, the block for long."""
    plans, _, _ = corpus()
    teams = {}
    for case_id in ("cumsum_columns_thread_each", "cumsum_f32_warp", "cumsum_f64_block_tiles",
                    "cumsum_short_rows"):
        index = next(i for i, c in enumerate(CASES) if c.id == case_id)
        (kernel,) = plans[index].kernels
        launch = emulated_launch(kernel, bind_sizes(plans[index], CASES[index].args))
        teams[case_id] = (launch.team, launch.block, launch.splits)
    assert teams == {"cumsum_columns_thread_each": (1, 64, 1), "cumsum_f32_warp": (32, 64, 1),
                     "cumsum_f64_block_tiles": (64, 64, 1), "cumsum_short_rows": (8, 64, 1)}


def test_launcher_runs_a_split_vector_scan_as_two_launches(monkeypatch) -> None:
    """``device.launch`` on a fake 2-SM device (the g++ emulation behind CuPy's calls)."""
    import sys

    from tests.cuda_compile.test_cuda_reductions import _FakeCupy

    from autojit.lower_gpu import device, gpu_available, launch

    x = np.random.default_rng(9).standard_normal(120000)
    plan = plan_kernels(trace_function(np.cumsum, (x,)), [True])
    (kernel,) = plan.kernels
    fake = _FakeCupy(render_cuda(kernel), kernel)
    clears = (gpu_available.cache_clear, device._device_properties.cache_clear)
    for clear in clears:
        clear()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device, "_FUNCTIONS", {})
    try:
        out = np.empty_like(x)
        launch(kernel, CudaBinary(b"\x7fELF", "", "", "sm_90"), [x, out], [],
               bind_sizes(plan, (x,)))
    finally:
        for clear in clears:
            clear()
    # 2 SMs x 8 resident blocks; one row of 120000: 29 chunks (>= 16 elements a thread)
    assert fake.launches == [(29, 256, 256, -29), (29, 256, 256, 29)]
    want = np.cumsum(x)
    assert np.all(np.abs(out - want) <= 64 * 2**-52 * np.cumsum(np.abs(x)))
