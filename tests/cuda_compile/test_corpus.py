"""The whole elementwise corpus through the CUDA path, without a GPU: every generated kernel
compiles with NVRTC for sm_80 and sm_90, and the CPU emulation of the CUDA source (the same
text NVRTC compiles) matches NumPy."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from tests.support.corpus import all_cases
from tests.support.oracle import call_numpy, compare_results
from tests.support.translation_unit import ARCHS, case_plan, compile_unit

from autojit.fuse.plan import Plan
from autojit.lower_gpu import CudaBinary
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget

CASES = all_cases()


@functools.cache
def corpus() -> tuple[list[Plan], str, dict[str, CudaBinary]]:
    """Trace and render the corpus into one translation unit (one g++, one NVRTC run per
    arch, overlapping)."""
    plans = [case_plan(case.fn, case.args, f"c{i}") for i, case in enumerate(CASES)]
    source, binaries = compile_unit(plans, "corpus")
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
    target = EmulatedCudaTarget(source)
    expected, error = call_numpy(case.fn, case.args)
    assert error is None
    with np.errstate(all="ignore"):
        actual = run_plan(plan, [source] * len(plan.kernels), target, case.args,
                          bind_sizes(plan, case.args))
    compare_results(actual, expected, case.ulps, case.labels)
