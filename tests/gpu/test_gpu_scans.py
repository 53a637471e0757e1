"""Scan kernels on a real GPU: every case of the scan catalogue (``tests/support/scan_cases``,
as in ``tests/cuda_compile``) and a long vector split across many blocks (two launches, chunk
totals first) match NumPy within the same bounds as the emulation. Skipped where no usable
device exists."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.cuda_compile.test_cuda_scans import _check
from tests.support.scan_cases import Case, all_cases, sum_bound

from autojit.fuse.plan import plan_kernels
from autojit.lower_gpu import gpu_available
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import GpuTarget
from autojit.tracer import trace_function

_NO_GPU = pytest.mark.skipif(not gpu_available(), reason="no usable CUDA device")


def needs_gpu(test: Callable) -> Callable:
    return pytest.mark.gpu(_NO_GPU(test))


def _on_gpu(case: Case):
    import cupy
    plan = plan_kernels(trace_function(case.fn, case.args),
                        [a.flags.c_contiguous for a in case.args])
    target = GpuTarget()
    programs = [target.compile(k) for k in plan.kernels]
    device_args = tuple(cupy.asarray(a) for a in case.args)
    got = run_plan(plan, programs, target, device_args, bind_sizes(plan, case.args))
    cupy.cuda.runtime.deviceSynchronize()
    return tuple(cupy.asnumpy(g) for g in got) if isinstance(got, tuple) else cupy.asnumpy(got)


CASES = [c for c in all_cases() if not c.launch] + [
    Case("cumsum_vector_many_splits", np.cumsum,
         (np.random.default_rng(8).standard_normal(10_000_000),), sum_bound(None)),
    Case("cumsum_i64_many_splits", np.cumsum, (np.arange(3_000_001, dtype=np.int64),)),
]


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scan_on_the_gpu_matches_numpy(case: Case) -> None:
    with np.errstate(all="ignore"):
        want = case.fn(*case.args)
    _check(case, _on_gpu(case), want)
