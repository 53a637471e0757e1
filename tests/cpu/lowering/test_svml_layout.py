"""Where a kernel calls NumPy's SVML routines, its own code comes first in its module and
in its object code, as without SVML: the routine's narrower wrappers (``mathlib.py``) first
moved every such kernel 0x60 bytes into its text section, where the hot loop of
``tanh(exp(x))`` ran 2.6x slower on an AVX-512 Xeon (``benchmarks/bench_svml_chains.py``).

Skipped where float64 ``exp`` is not NumPy's SVML routine here (AVX2 machines)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.lower_cpu import svml, svml_symbols

pytestmark = pytest.mark.skipif(("exp", 8) not in svml.bound(),
                                reason="float64 exp is not NumPy's SVML routine here")


def _tanh_of_exp(a: np.ndarray) -> np.ndarray:
    return np.tanh(np.exp(a))


def _compiled(x: np.ndarray):
    jitted = autoroute(_tanh_of_exp, force="cpu", cache_max_mb=0)
    jitted(x)
    return jitted.inspect(x)


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "\n".join(value)


def test_svml_wrappers_follow_the_kernel_in_its_module() -> None:
    x = np.linspace(-3, 3, 1001)
    for ir_text in (_text(_compiled(x).llvm_ir), _text(_compiled(x).llvm_ir_optimized)):
        defined = re.findall(r"^define [^@]*@\"?([^\"(]+)", ir_text, re.M)
        wrappers = [i for i, name in enumerate(defined)
                    if name.startswith(svml_symbols.PREFIX)]
        kernels = [i for i, name in enumerate(defined)
                   if not name.startswith(svml_symbols.PREFIX)]
        assert wrappers, defined     # the loop's tail calls the one-lane wrapper
        assert max(kernels) < min(wrappers), defined


def test_kernel_code_starts_its_text_section() -> None:
    """The object code's first function is the kernel (offset 0), not a wrapper."""
    asm = _text(_compiled(np.linspace(-3, 3, 1001)).asm)
    labels = re.findall(r"^([A-Za-z_.][\w.$]*):", asm, re.M)
    functions = [name for name in labels if not name.startswith(".")]
    assert functions and not functions[0].startswith(svml_symbols.PREFIX), functions


def test_kernel_with_its_wrappers_last_is_numpys() -> None:
    """Moving the wrappers changes no bit: the loop (8-lane routine) and its tail (one-lane
    wrapper) both give NumPy's ``exp``."""
    x = np.random.default_rng(0).uniform(-3, 3, 10_007)
    assert_calls_match_numpy(lambda a: np.exp(a) * 2.0, [(x,), (x[:5],), (x[3:20],)])
