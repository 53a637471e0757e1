"""Planning a program is linear in its size, and a program over the compile budget falls
back before its kernels are emitted (counted, never timed: benchmarks/compile_scaling.py
times it)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute, config
from autojit.fuse import plan as plan_module
from autojit.fuse.plan import Outline, plan_kernels
from autojit.ir.graph import Graph
from autojit.lower_cpu import budget, jit, mathlib
from autojit.tracer import trace_function


def _chain(n: int):
    def fn(x):
        for _ in range(n // 2):
            x = np.sin(x) + 1.0
        return x
    return fn


def _passes(n: int):
    """A reduction every few ops: kernels of many phases, whose spills are chosen."""
    def fn(x):
        for i in [*range(n // 4)]:   # a list: unrolled (a range loop would be a region)
            x = np.exp(x) * 0.5
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x
    return fn


def _distinct(n: int):
    """``_passes`` with a constant of its own in every pass: no two kernels alike."""
    def fn(x):
        for i in [*range(n // 4)]:   # a list: unrolled (a range loop would be a region)
            x = np.exp(x) * (0.5 + 1e-3 * i)
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x
    return fn


def _lookups(monkeypatch, fn, max_ops: int, method: str = "") -> tuple[int, int]:
    """Return (graph node lookups while planning ``fn``, or inside ``method`` of the kernel
    emitter only; the graph's nodes): the lookups count every walk over the graph."""
    graph = trace_function(fn, (np.ones((4, 8)),))
    counted = [0]
    inside = [not method]
    node = Graph.node

    def counting(self, node_id):
        counted[0] += inside[0]
        return node(self, node_id)

    if method:
        original = getattr(plan_module._KernelEmitter, method)

        def within(self, *args, **kwargs):
            inside[0] = True
            try:
                return original(self, *args, **kwargs)
            finally:
                inside[0] = False
        monkeypatch.setattr(plan_module._KernelEmitter, method, within)
    monkeypatch.setattr(Graph, "node", counting)
    plan_kernels(graph, [True], max_ops)
    monkeypatch.undo()
    return counted[0], len(graph.nodes)


@pytest.mark.parametrize("make", [_chain, _passes, _distinct])
@pytest.mark.parametrize("max_ops", [16, 128])
def test_planning_walks_per_op_do_not_grow_with_the_program(monkeypatch, make, max_ops):
    """Partition and emission look each op up a bounded number of times: doubling the
    program doubles the lookups (a walk over the graph per op would not)."""
    small, small_nodes = _lookups(monkeypatch, make(500), max_ops)
    large, large_nodes = _lookups(monkeypatch, make(1000), max_ops)
    assert large / large_nodes <= 1.05 * small / small_nodes + 1


def test_spill_choice_visits_each_row_value_a_bounded_number_of_times(monkeypatch):
    """Whether a candidate's cone calls libm is memoised per kernel: the choice's lookups
    per op stay the same when kernels grow eightfold (a cone walked per candidate grew
    with the kernel: 0.3 s of a 10,000-op program's plan)."""
    per_op = []
    for max_ops in (16, 128):
        lookups, nodes = _lookups(monkeypatch, _passes(1000), max_ops, "_choose_spills")
        per_op.append(lookups / nodes)
    assert per_op[1] <= 1.5 * per_op[0] + 1


def _outlines(fn, max_ops: int) -> tuple[list[Outline], int]:
    """Return the outlines ``plan_kernels`` checks, and how many kernels the estimate
    after emission counts as distinct."""
    seen: list[Outline] = []
    plan = plan_kernels(trace_function(fn, (np.ones((4, 8)),)), [True], max_ops, seen.extend)
    return seen, budget.estimate_seconds(plan.kernels)[1]


@pytest.mark.parametrize("make", [_chain, _passes, _distinct])
@pytest.mark.parametrize("max_ops", [8, 128])
def test_outlines_tell_kernels_apart_as_their_code_does(make, max_ops):
    """A loop's repeated kernels share one outline key and kernels differing only in a
    constant do not, as the estimate from the emitted kernels says."""
    outlines, distinct = _outlines(make(400), max_ops)
    assert len({o.key for o in outlines}) == distinct


def test_constants_differing_only_in_their_zero_sign_make_distinct_outlines():
    def fn(x):
        for c in (0.0, -0.0, 0.0, -0.0):
            x = (x - x.max(axis=-1, keepdims=True)) * c
        return x

    outlines, distinct = _outlines(fn, 4)
    assert len({o.key for o in outlines}) == distinct >= 2


def test_program_over_the_budget_falls_back_before_its_kernels_are_emitted(monkeypatch):
    def emitted(self):
        raise AssertionError("a kernel was emitted")

    monkeypatch.setattr(budget, "COMPILE_BUDGET_S", 0.05)
    monkeypatch.setattr(plan_module._KernelEmitter, "emit", emitted)
    with pytest.warns(FallbackWarning, match="too large to compile in time"):
        jitted = assert_matches_numpy(_distinct(200), np.random.rand(4, 8), ulps=4,
                                      compiled=False)
    [reason] = jitted.stats()["fallbacks"]
    assert "ops in" in reason and "distinct" in reason and "over the 0.05 s budget" in reason


def test_program_within_the_budget_still_compiles_with_the_check():
    with config(fusion_max_ops=8):
        assert_matches_numpy(_passes(120), np.random.rand(4, 8), ulps=4)


def test_forced_gpu_route_does_not_apply_the_cpu_budget_while_planning(monkeypatch):
    """The outline check is the CPU's budget: a forced GPU route plans as before (its CPU
    fallback still meets the check after emission)."""
    monkeypatch.setattr(budget, "COMPILE_BUDGET_S", 0.0)
    checks = []
    plan_kernels_ = plan_module.plan_kernels

    def recording(graph, contiguous, max_ops=plan_module.DEFAULT_MAX_OPS, check=None,
                  *rest, **options):
        checks.append(check)
        return plan_kernels_(graph, contiguous, max_ops, check, *rest, **options)

    from autojit.dispatch import dispatcher
    monkeypatch.setattr(dispatcher, "plan_kernels", recording)
    with config(force="gpu"):
        fn = autoroute(lambda a: np.sin(a) + 1)
        with contextlib.suppress(Exception):   # no GPU here: only the planning is looked at
            fn.inspect(np.ones(3))
    assert checks and checks[0] is None


def _rendered(monkeypatch) -> list[str]:
    """Record the kernels ``jit`` renders to LLVM IR."""
    names: list[str] = []
    render = jit.render_llvm

    def counting(kernel, symbol=None):
        names.append(kernel.name)
        return render(kernel, symbol)

    monkeypatch.setattr(jit, "render_llvm", counting)
    return names


def test_kernels_alike_but_for_names_are_rendered_once(monkeypatch):
    """A loop's repeated kernels reuse one kernel's code without rendering their own IR
    (rendering each was most of a 10,000-op program's compile once LLVM ran only for its
    few distinct kernels)."""
    rendered = _rendered(monkeypatch)
    before = dict(jit.KERNEL_COUNTS)
    with config(fusion_max_ops=8):
        assert_matches_numpy(_passes(160), np.random.rand(4, 8) * 10, ulps=4)
    compiled = jit.KERNEL_COUNTS["compiled"] - before["compiled"]
    reused = jit.KERNEL_COUNTS["reused"] - before["reused"]
    assert reused >= 10 and len(rendered) <= compiled + 2


def test_kernels_differing_in_a_zero_sign_or_the_math_settings_are_rendered_apart(
        monkeypatch):
    """The structure key holds constants by their bits and the math settings the renderer
    reads: such kernels get their own text and code (results show the zero signs)."""
    def fn(x):
        for c in (0.0, -0.0, 0.0, -0.0):
            x = np.sin(x - x.max(axis=-1, keepdims=True)) * c
        return x

    rendered = _rendered(monkeypatch)
    with config(fusion_max_ops=4, cache_max_mb=0):
        assert_matches_numpy(fn, np.random.rand(4, 8), ulps=4)
        first = len(rendered)
        assert first >= 2
        with mathlib.scalar_math_only():
            assert_matches_numpy(fn, np.random.rand(4, 8), ulps=4)
    assert len(rendered) > first
