"""The exact mixed signed/unsigned comparison rule (``autojit.ir.decompose``) through the
CUDA path: the kernels compile with NVRTC and their CPU emulation matches NumPy."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from oracle import call_numpy, compare_results
from translation_unit import ARCHS, case_plan, compile_unit

from autojit.policy.backends import EmulatedCudaBackend, bind_sizes, run_plan


def _comparisons(a, b):
    return (a == b, a != b, a < b, a <= b, a > b, a >= b, np.less(b, a), np.greater_equal(b, a))


def _where_less(a0, a1):
    return np.where(np.less(a0, a1), a0, -3.25)


CASES = [
    (_comparisons, (np.array([-1, 2**63 - 1, 0, -(2**63), 5, 7], np.int64),
                    np.array([2**64 - 1, 2**63, 0, 0, 5, 2**63 + 7], np.uint64))),
    (_comparisons, (np.array([-128, 127, 0, -1, 3], np.int8),
                    np.array([2**64 - 1, 127, 0, 2**63, 3], np.uint64))),
    (_where_less, (np.array([-32768, 0, -471, 794], np.int16),
                   np.array([[4], [1], [3]], np.uint64))),
]


@functools.cache
def _unit():
    plans = [case_plan(fn, args, f"ps{i}") for i, (fn, args) in enumerate(CASES)]
    source, binaries = compile_unit(plans, "python_scalars")
    return plans, source, binaries


@pytest.mark.parametrize("arch", ARCHS)
def test_mixed_sign_comparison_kernels_compile_with_nvrtc(arch):
    plans, _, binaries = _unit()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    assert {k.name for plan in plans for k in plan.kernels} <= entries


@pytest.mark.parametrize("index", range(len(CASES)))
def test_mixed_sign_comparisons_emulated_cuda_match_numpy(index):
    plans, source, _ = _unit()
    fn, args = CASES[index]
    plan = plans[index]
    expected, error = call_numpy(fn, args)
    assert error is None
    actual = run_plan(plan, [source] * len(plan.kernels), EmulatedCudaBackend(source), args,
                      bind_sizes(plan, args))
    compare_results(actual, expected)
