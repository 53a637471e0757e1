"""Native loops (``fuse.native_loop``: a loop region of scalar work as one kernel with a
recurrence) through the CUDA path, without a GPU: the kernels compile with NVRTC (sm_80,
sm_90, one translation unit) and the one-thread CUDA C, run in the g++ emulation by the
plan runner (``EmulatedCudaTarget``), matches NumPy bit for bit."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.cpu.control.test_native_loops import (
    axpy_rows,
    column_sum,
    scalar_update,
    strided_recurrence,
)
from tests.support.oracle import compare_results
from tests.support.translation_unit import ARCHS

from autojit.dispatch.signature import signature_of
from autojit.fuse.plan import plan_kernels
from autojit.lower_gpu import compile_cuda, render_cuda
from autojit.lower_gpu.emulate import build_emulation
from autojit.runtime.binding import bind_sizes, call_arguments
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.tracer import trace_function

_RNG = np.random.default_rng(7)
CASES = [
    (scalar_update, (np.full(4, 3.0), 1000)),
    (axpy_rows, (_RNG.standard_normal(33), _RNG.standard_normal(33), 1.5)),
    (column_sum, (_RNG.standard_normal((9, 4)), -1)),
    (strided_recurrence, (_RNG.standard_normal(30), 29)),
]


def _plans():
    plans = []
    for number, (fn, args) in enumerate(CASES):
        contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(args))]
        plans.append(plan_kernels(trace_function(fn, args), contiguous, prefix=f"n{number}_"))
    return plans


PLANS = _plans()
SOURCE = "\n".join(render_cuda(k) for plan in PLANS for k in plan.kernels)


def test_each_case_has_a_native_loop() -> None:
    assert all(call.native is not None for plan in PLANS for call in plan.regions)
    assert all(plan.regions for plan in PLANS)


@pytest.mark.parametrize("arch", ARCHS)
def test_native_loops_compile_with_nvrtc(arch: str) -> None:
    binary = compile_cuda(SOURCE, "native_loops", arch)
    entries = set(re.findall(r"\.entry\s+(\w+)", binary.ptx))
    names = {call.native.kernel.name for plan in PLANS for call in plan.regions}
    assert names <= entries and binary.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("index", range(len(CASES)), ids=[fn.__name__ for fn, _ in CASES])
def test_emulated_native_loop_matches_numpy(index: int, monkeypatch) -> None:
    import autojit.runtime.regions as regions_module
    ran = []
    original = regions_module._run_native
    monkeypatch.setattr(regions_module, "_run_native",
                        lambda *a: ran.append(1) or original(*a))
    build_emulation(SOURCE)
    (fn, args), plan = CASES[index], PLANS[index]
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    mine = call_arguments(plan, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = run_plan(plan, [SOURCE] * len(plan.kernels), EmulatedCudaTarget(SOURCE), mine,
                   bind_sizes(plan, mine))
    assert ran
    for g, w in zip(got if isinstance(want, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        compare_results(np.asarray(g), np.asarray(w), 0)
