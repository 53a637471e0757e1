"""``AUTOJIT_CHECKS=1``: the pipeline verifies every graph it plans and every kernel it plans
and lowers (``autojit/ir/verify.py``), and the test suite runs with it on (conftest.py). A
malformed graph or kernel is an ``InternalError``; the call runs as plain Python with the
reason. Also what the checks found when first turned on: booleans' max/min/argmax/argmin
were kernels of reduction kinds no bool row has (``REDUCE_KINDS``): no CUDA rule either."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

import autojit
from autojit.errors import InternalError
from autojit.fuse import plan as fuse_plan
from autojit.fuse.plan import plan_kernels
from autojit.ir import verify
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.verify import VerifyError, checks_enabled
from autojit.lower_cpu.render import render_llvm
from autojit.lower_gpu import render_cuda


def _kernels_of(fn, *args) -> list[Kernel]:
    return autojit.autoroute(fn).inspect(*args).kernels


def _without_stores(kernel: Kernel) -> Kernel:
    """``kernel`` with its stores dropped: an output never written (verify: "stored as")."""
    return dataclasses.replace(kernel, body=tuple(i for i in kernel.body if i.op is not Op.STORE))


@pytest.fixture
def checks_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(verify, "_checks", False)


def test_checks_are_on_in_the_test_suite() -> None:
    assert checks_enabled()


def test_the_variable_turns_the_checks_on_and_off(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        monkeypatch.setenv("AUTOJIT_CHECKS", "0")
        autojit.reload_environment()
        assert not checks_enabled()
        monkeypatch.setenv("AUTOJIT_CHECKS", "yes")
        autojit.reload_environment()
        assert checks_enabled()
        monkeypatch.delenv("AUTOJIT_CHECKS")
        autojit.reload_environment()
        assert not checks_enabled()          # off by default
    finally:
        monkeypatch.undo()
        autojit.reload_environment()
    assert checks_enabled()


def test_a_malformed_kernel_is_refused_when_planned(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.linspace(0.0, 1.0, 7)
    graph = autojit.autoroute(lambda a: np.sin(a) * 2.0).inspect(x).graph
    emit = fuse_plan._emit_kernel
    monkeypatch.setattr(fuse_plan, "_emit_kernel", lambda *a: _without_stores(emit(*a)))
    with pytest.raises(VerifyError, match="stored as") as caught:
        plan_kernels(graph, [True])
    assert isinstance(caught.value, InternalError) and "bug in autojit" in str(caught.value)
    monkeypatch.setattr(verify, "_checks", False)
    plan_kernels(graph, [True])              # not checked: nothing notices


def test_a_malformed_kernel_makes_the_call_fall_back_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emit = fuse_plan._emit_kernel
    monkeypatch.setattr(fuse_plan, "_emit_kernel", lambda *a: _without_stores(emit(*a)))
    f = autojit.autoroute(lambda a: np.cos(a) + 1.0)
    x = np.linspace(-1.0, 1.0, 9)
    with pytest.warns(autojit.FallbackWarning, match="VerifyError"):
        result = f(x)
    assert result.tobytes() == (np.cos(x) + 1.0).tobytes()
    (reason,) = f.stats()["fallbacks"]
    assert "internal error while planning" in reason and "bug in autojit" in reason


def test_a_malformed_graph_is_refused_when_planned() -> None:
    x = np.ones(4)
    graph = autojit.autoroute(lambda a: a + 1.0).inspect(x).graph
    broken = dataclasses.replace(graph, outputs=(max(n.id for n in graph.nodes) + 1,))
    with pytest.raises(VerifyError, match="is not defined"):
        plan_kernels(broken, [True])


def test_both_renderers_verify_the_kernel_they_lower() -> None:
    (kernel,) = _kernels_of(lambda a: np.exp(a) - a, np.ones(5))
    broken = _without_stores(kernel)
    for render in (render_llvm, render_cuda):
        with pytest.raises(VerifyError, match="stored as"):
            render(broken)


def test_unchecked_renderers_do_not_verify(checks_off) -> None:
    (kernel,) = _kernels_of(lambda a: np.exp(a) - a, np.ones(5))
    render_llvm(_without_stores(kernel))    # renders: only the checks would notice


# -- what the checks found -------------------------------------------------------------------
BOOL_EXTREMES = {
    "max": lambda a: a.max(), "min axis 1": lambda a: np.min(a, axis=1),
    "max keepdims": lambda a: np.max(a, axis=0, keepdims=True), "amin": lambda a: np.amin(a),
    "argmax": lambda a: np.argmax(a), "argmin axis 1": lambda a: a.argmin(axis=1),
    "argmax axis 0": lambda a: np.argmax(a, axis=0), "argmin": lambda a: np.argmin(a),
}
BOOLS = [np.zeros((3, 4), bool), np.ones((3, 4), bool),
         np.array([[False, True, False, True], [False, False, False, False],
                   [True, True, True, False]]),
         np.array([[True, False, True], [False, True, True]]).T]   # an F-ordered view


@pytest.mark.parametrize("name", BOOL_EXTREMES)
@pytest.mark.parametrize("case", range(len(BOOLS)))
def test_extremes_of_booleans_compile_and_match(name: str, case: int) -> None:
    assert_matches_numpy(BOOL_EXTREMES[name], BOOLS[case])


@pytest.mark.parametrize("name", ["max", "min axis 1", "argmax", "argmin axis 1"])
def test_extremes_of_booleans_over_no_elements_raise_as_numpy_does(name: str) -> None:
    empty = np.zeros((0, 3), bool) if "axis 1" not in name else np.zeros((2, 0), bool)
    assert_matches_numpy(BOOL_EXTREMES[name], empty)


@pytest.mark.parametrize("name", BOOL_EXTREMES)
def test_extremes_of_booleans_have_cuda_kernels(name: str) -> None:
    for kernel in _kernels_of(BOOL_EXTREMES[name], BOOLS[2]):
        assert "__global__" in render_cuda(kernel)
