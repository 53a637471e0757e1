"""Compile cost of large programs (counted, never timed): kernels that differ only in their
names (a Python loop's repeated statements) are optimised by LLVM once and share the machine
code, long kernels get the lean pipeline, a program estimated over the compile budget runs
as Python with the reason, and none of it changes a result.
``benchmarks/compile_scaling.py`` times it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute, config
from autojit.lower_cpu import budget, entries, jit, threads


def _softmax_like(n: int):
    """``n`` passes, each a max reduction and elementwise ops (exact: no rounding order)."""
    def fn(x):
        for _ in list(range(n)):   # unrolled: n kernels alike (a range loop is one region)
            x = x * 0.5
            x = x - x.max(axis=-1, keepdims=True)
        return x
    return fn


def _counts() -> dict[str, int]:
    return dict(jit.KERNEL_COUNTS)


def _delta(before: dict[str, int]) -> dict[str, int]:
    return {k: jit.KERNEL_COUNTS[k] - before[k] for k in before}


def test_identical_kernels_compile_once():
    before = _counts()
    with config(fusion_max_ops=8):     # many small kernels, all alike
        assert_matches_numpy(_softmax_like(40), np.random.rand(4, 8) * 10)
    counted = _delta(before)
    assert counted["compiled"] <= 4
    assert counted["reused"] >= 10


def test_kernels_differing_in_a_constant_compile_apart():
    """-0.0 and 0.0 compare equal: the key is the exact module text, whose constants are
    hex, so the two kernels keep their own code (the result's zero signs show it)."""
    def fn(x):
        for c in (0.0, -0.0, 0.0, -0.0, 2.0):
            x = (x - x.max(axis=-1, keepdims=True)) * c
        return x

    before = _counts()
    with config(fusion_max_ops=4):
        assert_matches_numpy(fn, np.random.rand(4, 8))
    assert _delta(before)["compiled"] >= 2


def test_shared_code_shares_its_thread_partials(monkeypatch):
    """Kernels sharing one kernel's code split rows across threads with its partials,
    compiled once in the process (no disk store here: every link would compile)."""
    modules: list[str] = []
    compile_entries = jit.compile_entries

    def counted(text: str, symbols: tuple[str, ...]):
        modules.append(symbols[0])
        return compile_entries(text, symbols)

    monkeypatch.setattr(entries, "STORE", None)
    monkeypatch.setattr(jit, "compile_entries", counted)
    before, splits = _counts(), threads.SPLITS["partials"]
    with config(fusion_max_ops=8, num_threads=2, thread_min_work=0):
        assert_matches_numpy(_softmax_like(24), np.random.rand(1, 50000))
    counted_kernels = _delta(before)
    assert counted_kernels["reused"] >= 3
    assert threads.SPLITS["partials"] - splits >= counted_kernels["reused"]
    assert len(modules) <= counted_kernels["compiled"] + 1   # + the team's chunk loop


def test_long_kernels_are_optimised_lean_and_still_match():
    """Above LEAN_BODY instructions a kernel skips loop interleaving and unrolling."""
    def fn(x):
        for i in [*range(30)]:   # a list, not range: unrolled into one long kernel (a range
            x = x * 0.5          # loop would be a region, its body a short kernel)
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x

    before = _counts()
    with config(fusion_max_ops=160):
        assert_matches_numpy(fn, np.random.rand(5, 13) * 100)
    assert _delta(before)["lean"] >= 1
    before = _counts()
    assert_matches_numpy(lambda x: x * 3.0 - x.max(axis=-1, keepdims=True), np.random.rand(5, 7))
    assert _delta(before)["lean"] == 0


def test_program_over_the_compile_budget_falls_back_with_the_reason(monkeypatch):
    monkeypatch.setattr(budget, "COMPILE_BUDGET_S", 0.0)
    before = _counts()
    with pytest.warns(FallbackWarning, match="too large to compile in time"):
        jitted = assert_matches_numpy(_softmax_like(6), np.random.rand(4, 8), compiled=False)
    assert _delta(before)["compiled"] == 0
    [reason] = jitted.stats()["fallbacks"]
    assert "too large to compile in time" in reason and "over the 0 s budget" in reason


def test_estimate_counts_identical_kernels_once():
    from autojit.fuse.plan import plan_kernels
    from autojit.tracer import trace_function
    graph = trace_function(_softmax_like(40), (np.ones((4, 8)),))
    kernels = plan_kernels(graph, [True], 8).kernels
    seconds, distinct = budget.estimate_seconds(kernels)
    assert distinct <= 4 < len(kernels)
    assert seconds < budget.COMPILE_BUDGET_S


def test_inspecting_a_program_over_the_budget_reports_the_fallback(monkeypatch):
    monkeypatch.setattr(budget, "COMPILE_BUDGET_S", 0.0)
    inspection = autoroute(_softmax_like(3), force="cpu").inspect(np.random.rand(4, 8))
    assert inspection.route == "python" and "too large to compile" in inspection.route_reason
