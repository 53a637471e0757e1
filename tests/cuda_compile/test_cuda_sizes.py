"""Sizes read as Python ints through the CUDA path, without a GPU: every kernel of the plans
of ``tests/cpu/control/test_compile_once.py``'s programs (sizes in Python arithmetic, in
straight-line code and loop bodies) compiles with NVRTC for sm_80/sm_90, and ONE plan per
program, traced at its first call's sizes, runs its first three calls (other sizes) on the
CPU emulation of that CUDA source, matching NumPy: the sizes are the call's, not the
trace's."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from tests.cpu.control.test_compile_once import CASES, Case
from tests.cuda_compile.test_cuda_regions import _copies, _every_kernel
from tests.support.oracle import call_numpy, compare_results
from tests.support.translation_unit import ARCHS

from autojit.dispatch.signature import signature_of
from autojit.fuse.plan import Plan, plan_kernels
from autojit.lower_gpu import compile_cuda, render_cuda
from autojit.lower_gpu.emulate import build_emulation
from autojit.runtime.binding import bind_sizes, call_arguments
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.tracer import trace_function

#: the 500 grid of heat is the CPU test's; its 10 grid is in test_cuda_regions
EMULATED = tuple(case for case in CASES if case.name != "heat")


@functools.cache
def unit() -> tuple[dict[str, Plan], str]:
    """Each program's plan at its first call (kernel names prefixed: one unit), and the
    CUDA source of all their kernels, compiled for both archs and emulated."""
    plans: dict[str, Plan] = {}
    for number, case in enumerate(EMULATED):
        args = case.calls[0]()
        contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(args))]
        plans[case.name] = plan_kernels(trace_function(case.fn, args), contiguous,
                                        prefix=f"s{number}_")
    source = "\n".join(render_cuda(k) for plan in plans.values() for k in _every_kernel(plan))
    for arch in ARCHS:
        compile_cuda(source, "sizes", arch)   # raises where NVRTC refuses a kernel
    build_emulation(source)
    return plans, source


@pytest.mark.parametrize("case", EMULATED, ids=[c.name for c in EMULATED])
def test_one_emulated_cuda_plan_serves_every_size(case: Case) -> None:
    plans, source = unit()
    plan = plans[case.name]
    for call in case.calls[:3]:
        args = call()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, error = call_numpy(case.fn, tuple(_copies(args)))
        assert error is None
        mine = call_arguments(plan, _copies(args))
        sizes = bind_sizes(plan, mine)
        assert sizes.__class__ is dict, "the plan was specialised on the first call's sizes"
        with np.errstate(all="ignore"):
            got = run_plan(plan, [source] * len(plan.kernels), EmulatedCudaTarget(source),
                           mine, sizes)
        compare_results(got, want, 0, rtol=case.rtol, atol=case.atol)
