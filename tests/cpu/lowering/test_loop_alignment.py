"""CPU kernels align every innermost loop to 64 bytes (``mathlib.LOOP_ALIGN_LOG2``): a loop of
vector math calls at some 16-byte offsets of its page ran up to 2.6x slower on an AVX-512
Xeon, never at a 64-byte one (``benchmarks/bench_svml_chains.py --placement``)."""

from __future__ import annotations

import platform
import re

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.lower_cpu import mathlib

pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                                reason="the loop alignment option is LLVM's x86 backend's")


def _loop_alignments(asm: str) -> dict[str, str]:
    """Return the alignment directive before each label a later branch jumps back to."""
    lines = asm.splitlines()
    found = {}
    for i, line in enumerate(lines):
        label = re.match(r"^(\.LBB\w+):", line)
        if label and any(re.search(rf"\tj\w+\t{re.escape(label.group(1))}\b", later)
                         for later in lines[i + 1:]):
            found[label.group(1)] = lines[i - 1].strip() if i else ""
    return found


@pytest.mark.parametrize("fn", [lambda a: np.tanh(np.exp(a)),
                                lambda a: np.sin(np.expm1(a)) * 0.5 + a,
                                lambda a: a * 2.0 + 1.0],
                         ids=["tanh-exp", "sin-expm1", "no-math"])
def test_innermost_loops_are_aligned_to_64_bytes(fn) -> None:
    jitted = autoroute(fn, force="cpu", cache_max_mb=0)
    x = np.linspace(-3, 3, 1001)
    jitted(x)
    asm = jitted.inspect(x).asm
    loops = _loop_alignments(asm if isinstance(asm, str) else "\n".join(asm))
    assert loops, "no loop found in the listing"
    assert all(directive.split() == [".p2align", str(mathlib.LOOP_ALIGN_LOG2)]
               for directive in loops.values()), loops


def test_aligned_kernels_keep_their_results() -> None:
    x = np.random.default_rng(1).uniform(-3, 3, 10_007)
    assert_calls_match_numpy(lambda a: np.exp(a) * 2.0, [(x,), (x[:7],), (x[1:30],)])
