"""Loop programs through the CUDA path, without a GPU (issue 15, "every region kernel
compiles with NVRTC for sm_80/sm_90 and its emulation matches NumPy"): every kernel of
every plan of ``tests/support/loop_programs.py`` — the outer plan's, each loop body's (the
host loop launches them per iteration on a GPU) and each native loop's — is rendered into
one translation unit that NVRTC compiles for both archs, and the plan runs on the CPU
emulation of that same CUDA source (``EmulatedCudaTarget``), checked against NumPy."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from tests.support.loop_programs import EXPECTED_TO_COMPILE, LOOP_PROGRAMS, LoopCase
from tests.support.oracle import call_numpy, compare_results
from tests.support.translation_unit import ARCHS

from autojit.dispatch.signature import signature_of
from autojit.errors import TraceError
from autojit.fuse.plan import Plan, plan_kernels
from autojit.lower_gpu import compile_cuda, render_cuda
from autojit.lower_gpu.emulate import build_emulation
from autojit.runtime.binding import bind_sizes, call_arguments
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.tracer import trace_function

SIZE, TRIPS = 10, 3


def _inputs(case: LoopCase) -> tuple:
    return case.make(SIZE, case.trips[0] if case.trips != (0,) else TRIPS)


def _copies(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _every_kernel(plan: Plan) -> list:
    """The plan's kernels, its bodies' (nested loops too) and their native loops'."""
    found, pending = [], [plan]
    while pending:
        current = pending.pop()
        found.extend(current.kernels)
        for call in current.regions:
            pending.append(call.body)
            if call.native is not None:
                found.append(call.native.kernel)
    return list({k.name: k for k in found}.values())


@functools.cache
def unit() -> tuple[dict[str, Plan], str, dict]:
    """Each compiling program's plan (kernel names prefixed: unique in one unit), the CUDA
    source of all their kernels, and its NVRTC binaries per arch (emulation built too)."""
    plans: dict[str, Plan] = {}
    for number, case in enumerate(LOOP_PROGRAMS):
        args = _inputs(case)
        contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(args))]
        try:
            graph = trace_function(case.fn, args)
        except TraceError:   # runs as Python: no kernels to compile
            continue
        plans[case.name] = plan_kernels(graph, contiguous, prefix=f"l{number}_")
    kernels = [k for plan in plans.values() for k in _every_kernel(plan)]
    source = "\n".join(render_cuda(k) for k in kernels)
    binaries = {arch: compile_cuda(source, "loop_programs", arch) for arch in ARCHS}
    build_emulation(source)
    return plans, source, binaries


def test_most_loop_programs_have_regions() -> None:
    plans, _, _ = unit()
    with_regions = [name for name, plan in plans.items() if plan.regions]
    assert len(with_regions) >= 20, sorted(plans)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_region_kernel_compiles_with_nvrtc(arch: str) -> None:
    plans, _, binaries = unit()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    names = {k.name for plan in plans.values() for k in _every_kernel(plan)}
    assert names and names <= entries, sorted(names - entries)
    assert binaries[arch].cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("case", LOOP_PROGRAMS, ids=[c.name for c in LOOP_PROGRAMS])
def test_emulated_cuda_loop_program_matches_numpy(case: LoopCase) -> None:
    plans, source, _ = unit()
    if case.name not in plans:   # (a program the corpus expects to compile must have one)
        assert case.name not in EXPECTED_TO_COMPILE, f"{case.name} no longer traces"
        pytest.skip("this program runs as plain Python (it does not trace): no kernels")
    plan = plans[case.name]
    args = _inputs(case)
    want, error = call_numpy(case.fn, tuple(_copies(args)))
    assert error is None
    mine = call_arguments(plan, _copies(args))
    with np.errstate(all="ignore"):
        got = run_plan(plan, [source] * len(plan.kernels), EmulatedCudaTarget(source), mine,
                       bind_sizes(plan, mine))
    compare_results(got, want, 0, rtol=case.rtol, atol=case.atol)
