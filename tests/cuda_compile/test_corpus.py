"""The whole elementwise corpus through the CUDA path, without a GPU: every generated kernel
compiles with NVRTC for sm_80 and sm_90, and the CPU emulation of the CUDA source (the same
text NVRTC compiles) matches NumPy."""

from __future__ import annotations

import dataclasses
import functools
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from corpus import all_cases
from oracle import call_numpy, compare_results

from autojit.fuse.plan import Plan, plan_kernels
from autojit.lower_gpu import CudaBinary, compile_cuda, render_cuda
from autojit.lower_gpu.emulate import build_emulation
from autojit.policy.backends import EmulatedCudaBackend, bind_sizes, run_plan
from autojit.policy.signature import signature_of
from autojit.tracer import trace_function

CASES = all_cases()


def _plan(index: int) -> Plan:
    case = CASES[index]
    graph = trace_function(case.fn, case.args)
    contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(case.args)]
    plan = plan_kernels(graph, contiguous)
    # unique names, so the whole corpus is one translation unit (one g++, one NVRTC run)
    kernels = tuple(dataclasses.replace(k, name=f"c{index}_{k.name}") for k in plan.kernels)
    return dataclasses.replace(plan, kernels=kernels)


ARCHS = ("sm_80", "sm_90")


@functools.cache
def corpus() -> tuple[list[Plan], str, dict[str, CudaBinary]]:
    """Trace and render the corpus; compile it for both archs and for emulation at once
    (NVRTC releases the GIL, g++ is a subprocess: the three overlap)."""
    plans = [_plan(i) for i in range(len(CASES))]
    source = "\n".join(render_cuda(k) for plan in plans for k in plan.kernels)
    with ThreadPoolExecutor(len(ARCHS)) as pool:
        futures = {arch: pool.submit(compile_cuda, source, "corpus", arch) for arch in ARCHS}
        build_emulation(source)
        binaries = {arch: future.result() for arch, future in futures.items()}
    return plans, source, binaries


@pytest.mark.parametrize("arch", ARCHS)
def test_every_corpus_kernel_compiles_with_nvrtc(arch):
    plans, _, binaries = corpus()
    binary = binaries[arch]
    entries = set(re.findall(r"\.entry\s+(\w+)", binary.ptx))
    names = {k.name for plan in plans for k in plan.kernels}
    assert names <= entries and binary.cubin[:4] == b"\x7fELF"
    assert len(names) >= len(CASES)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_emulated_cuda_matches_numpy(index):
    case = CASES[index]
    plans, source, _ = corpus()
    plan = plans[index]
    backend = EmulatedCudaBackend(source)
    expected, error = call_numpy(case.fn, case.args)
    assert error is None
    with np.errstate(all="ignore"):
        actual = run_plan(plan, [source] * len(plan.kernels), backend, case.args,
                          bind_sizes(plan, case.args))
    compare_results(actual, expected, case.ulps, case.labels)
