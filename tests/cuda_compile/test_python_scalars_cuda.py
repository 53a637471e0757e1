"""Python scalars and exact comparisons through the CUDA path: the mixed signed/unsigned
comparison rule and power's scalar-exponent shortcuts (``autojit.ir.decompose``), Python
scalars converted per call and host-prologue values as kernel scalars. The kernels compile
with NVRTC and their CPU emulation matches NumPy."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from tests.support.oracle import call_numpy, compare_results
from tests.support.translation_unit import ARCHS, case_plan, compile_unit

from autojit.runtime.binding import CALL_OK, bind_sizes, call_arguments, check_call
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import EmulatedCudaTarget


def _comparisons(a, b):
    return (a == b, a != b, a < b, a <= b, a > b, a >= b, np.less(b, a), np.greater_equal(b, a))


def _where_less(a0, a1):
    return np.where(np.less(a0, a1), a0, -3.25)


def _power(x, e):
    return x ** e, np.power(x, e)


def _half_step(x, v, dt):
    half = dt * 0.5
    return x + v * half, half


_BASES = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, 3.0, -2.0, 7.5])

CASES = [
    (_power, (_BASES, 0.5)),
    (_power, (_BASES.astype(np.float32), 0.5)),
    (_power, (_BASES, -1.0)),
    (_half_step, (np.linspace(0, 1, 5), np.linspace(1, 2, 5), 0.1)),
    (lambda x, s: (x + s, x < s), (np.arange(4, dtype=np.uint64), 2**63 + 5)),
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
def test_kernels_compile_with_nvrtc(arch):
    plans, _, binaries = _unit()
    entries = set(re.findall(r"\.entry\s+(\w+)", binaries[arch].ptx))
    assert {k.name for plan in plans for k in plan.kernels} <= entries


@pytest.mark.parametrize("index", range(len(CASES)))
def test_emulated_cuda_matches_numpy(index):
    plans, source, _ = _unit()
    fn, args = CASES[index]
    plan = plans[index]
    expected, error = call_numpy(fn, args)
    assert error is None
    assert check_call(plan, args) == CALL_OK
    actual = run_plan(plan, [source] * len(plan.kernels), EmulatedCudaTarget(source),
                      call_arguments(plan, args), bind_sizes(plan, args))
    compare_results(actual, expected)
    assert type(actual[-1]) is type(expected[-1])
