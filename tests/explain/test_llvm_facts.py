"""Per-kernel LLVM facts (remarks, calls and allocas left, redundancy counts before and
after O3) and ptxas register counts, as the report prints them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from autojit import autoroute
from autojit.explain.llvm_facts import (
    calls_left,
    count_instructions,
    describe_remark,
    kernel_llvm_facts,
)

SAMPLE = """
define void @k(ptr %a) {
entry:
  %p = getelementptr double, ptr %a, i64 1
  %x = load double, ptr %p
  %y = call double @exp(double %x)
  %z = call double @llvm.fabs.f64(double %y)
  store double %z, ptr %a
  br label %exit
exit:
  ret void
}
"""


def test_counts_and_calls_from_text() -> None:
    assert count_instructions(SAMPLE) == {"loads": 1, "stores": 1,
                                          "address computations": 1, "branches": 1}
    assert calls_left(SAMPLE) == ("exp",)


def test_remark_phrases() -> None:
    assert describe_remark("vectorized loop (vectorization width: 8, interleaved count: 2)") \
        == "loop vectorized (width 8, interleave 2)"
    facts = kernel_llvm_facts("k", SAMPLE, SAMPLE, [
        "loop not vectorized: call instruction cannot be vectorized",
        "loop not vectorized"])
    assert facts.remarks == ("loop not vectorized: call instruction cannot be vectorized",)
    assert facts.counts[0] == ("loads", 1, 1)


def chain(x):
    return np.tanh(np.cos(x)) * 2.0


def test_report_has_vectorisation_and_redundancy() -> None:
    ins = autoroute(chain).inspect(np.ones(1000))
    text = ins.report(verbosity=2)
    assert re.search(r"k0_\w+: loop vectorized \(width \d+, interleave \d+\)", text)
    assert re.search(r"k0_\w+: call to \S*(cos|tanh)\S* not inlined", text)
    match = re.search(r"O3 redundancy \(before -> after\): loads (\d+) -> (\d+), stores "
                      r"(\d+) -> (\d+), address computations (\d+) -> (\d+), branches", text)
    assert match
    assert "O3 redundancy" not in ins.report(verbosity=1)


@pytest.mark.nvrtc
def test_gpu_registers_when_nvrtc_is_present() -> None:
    ins = autoroute(chain).inspect(np.ones(1000))
    resources = ins.gpu_resources
    assert set(resources) == {k.name for k in ins.kernels}
    assert all(r.registers > 0 and r.spill_stores >= 0 for r in resources.values())
    assert re.search(r"k0_\w+: sm_90 \d+ registers, \d+ B spill stores, \d+ B spill loads",
                     ins.report())
