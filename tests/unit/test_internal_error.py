"""A missing rule, a missing decomposition or malformed IR is autojit's bug, never the user's:
one ``InternalError`` carrying the op (and dtype) and a hint to report it, in the same words
on both renderers (the LLVM renderer raised CompileError, the CUDA one NotImplementedError),
and a call that meets one runs as plain Python with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import autojit
from autojit.errors import AutojitError, CompileError, InternalError
from autojit.fuse.builder import KernelBuilder
from autojit.ir import decompose
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.verify import VerifyError
from autojit.lower_cpu import jit
from autojit.lower_cpu.llvm_rules import LLVM_RULES
from autojit.lower_cpu.render import render_llvm
from autojit.lower_gpu import cuda_rules, render_cuda

F64 = np.dtype(np.float64)
RENDERERS = {"LLVM": render_llvm, "CUDA": render_cuda}


def _sine_kernel() -> Kernel:
    kb = KernelBuilder("sine", loop_sizes=(("n0",),))
    x = kb.load(kb.add_buffer("x", F64, (1,)))
    kb.store(kb.add_buffer("out", F64, (1,), is_output=True), kb.emit(Op.SIN, (x,), F64))
    return kb.finish()


@pytest.fixture
def no_sine_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both renderers without their rule for sin on floats."""
    monkeypatch.delitem(LLVM_RULES, (Op.SIN, "f"))
    monkeypatch.delitem(cuda_rules.CUDA_RULES, (Op.SIN, "f"))
    jit.forget_kernels()    # a kernel compiled earlier would be reused without rendering


def test_internal_error_is_an_autojit_error_and_no_compile_error() -> None:
    assert issubclass(InternalError, AutojitError)
    assert not issubclass(InternalError, CompileError)
    assert issubclass(VerifyError, InternalError)
    assert autojit.InternalError is InternalError


def test_both_renderers_give_the_same_internal_error_for_a_missing_rule(no_sine_rules) -> None:
    kernel = _sine_kernel()
    raised = {}
    for target, render in RENDERERS.items():
        with pytest.raises(InternalError) as caught:
            render(kernel)
        raised[target] = caught.value
    for target, error in raised.items():
        assert type(error) is InternalError
        assert (error.op, error.dtype) == (Op.SIN, F64)
        assert error.detail == f"no {target} rule for sin on float64"
        assert str(error) == f"{error.detail} ({InternalError.HINT})"
        assert "this is a bug in autojit; please report it" in str(error)


def test_a_missing_cuda_reduce_rule_is_an_internal_error(monkeypatch) -> None:
    monkeypatch.delitem(cuda_rules.REDUCE_RULES, ("max", "f"))
    with pytest.raises(InternalError, match="no CUDA rule for reduce.max on float64") as caught:
        cuda_rules.reduce_combine("max", F64, "a", "b")
    assert caught.value.op == "reduce.max"


def test_a_missing_decomposition_is_an_internal_error(monkeypatch) -> None:
    monkeypatch.delitem(decompose.DECOMPOSITIONS, Op.RECIPROCAL)
    kb = KernelBuilder("recip", loop_sizes=(("n0",),))
    x = kb.load(kb.add_buffer("x", F64, (1,)))
    with pytest.raises(InternalError, match="no decomposition for reciprocal") as caught:
        kb.graph_op(Op.RECIPROCAL, (x,), F64)
    assert caught.value.op is Op.RECIPROCAL


def test_a_call_meeting_a_missing_rule_runs_as_python_with_the_reason(no_sine_rules) -> None:
    fn = autojit.autoroute(lambda a: np.sin(a) + 1.0)
    x = np.linspace(0.0, 3.0, 11)
    with pytest.warns(autojit.FallbackWarning, match="no LLVM rule for sin on float64"):
        assert fn(x).tobytes() == (np.sin(x) + 1.0).tobytes()
    (reason,) = fn.stats()["fallbacks"]
    assert reason.startswith("internal error while compiling (InternalError: no LLVM rule")
    assert "please report it" in reason


def test_strict_mode_names_the_internal_error(no_sine_rules) -> None:
    fn = autojit.autoroute(lambda a: np.sin(a) - 1.0, strict=True)
    with pytest.raises(autojit.errors.StrictFallbackError, match="no LLVM rule for sin"):
        fn(np.ones(3))
