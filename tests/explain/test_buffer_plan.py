"""The buffer plan names every value, and ``run_plan`` does what it says: the allocations a
call makes are the report's heap and escape lines less its reuse lines, and the memory a
call holds at its peak is the report's plan peak."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

from tests.explain.inspect_programs import PROGRAMS, scale_into

from autojit import autoroute
from autojit.fuse.buffers import plan_buffers, value_bytes
from autojit.ir.ops import Op
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.runtime.targets import CpuTarget


class CountingTarget(CpuTarget):
    """The CPU target, recording every allocation ``run_plan`` asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.allocated: list[tuple[tuple[int, ...], np.dtype]] = []

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        self.allocated.append((shape, np.dtype(dtype)))
        return super().empty(shape, dtype)


def _inspect(name: str):
    fn, make_args, _ = PROGRAMS[name]
    args = make_args()
    routed = autoroute(fn)
    return routed.inspect(*args), args, fn


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_names_every_value(name: str) -> None:
    ins, _, _ = _inspect(name)
    text = ins.report(verbosity=2, toolchain=False)
    for node in ins.graph.nodes:
        if node.op not in (Op.ARG, Op.SIZE):
            assert re.search(rf"%{node.id}\b", text), f"%{node.id} missing from\n{text}"
    decisions = {f.decision for f in plan_buffers(ins.plan).fates}
    assert decisions <= {"fused", "recomputed", "heap", "escapes", "view", "constant"}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_allocations_match_report(name: str) -> None:
    ins, args, fn = _inspect(name)
    report = ins.report(verbosity=1, toolchain=False)
    stored = re.findall(r"(moved to heap|escapes to caller)", report)
    reused = re.findall(r"reuses the buffer of", report)
    target = CountingTarget()
    sizes = bind_sizes(ins.plan, args)
    got = run_plan(ins.plan, ins._programs, target, args, sizes)
    assert len(target.allocated) == len(stored) - len(reused)
    fresh = [a for a in plan_buffers(ins.plan).allocations if a.reuses is None]
    want = [ins.graph.node(a.node) for a in fresh]
    assert sorted(value_bytes(n, sizes) for n in want) == sorted(
        int(np.prod(s)) * d.itemsize for s, d in target.allocated)
    expected = fn(*args)
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(g, e, rtol=2e-4, atol=1e-5)


def test_reuse_really_shares_memory() -> None:
    ins, args, _ = _inspect("matmul_chain")
    plan = plan_buffers(ins.plan)
    assert plan.fresh_allocations() < len(plan.allocations)   # the chain reuses buffers
    assert "%7 reuses the buffer of %4 (dead after k1_mul)" in ins.report(toolchain=False)


@pytest.mark.parametrize("name", ["matmul_chain", "normalise_stack", "dense_relu"])
def test_peak_matches_tracemalloc(name: str) -> None:
    fn, make_args, _ = PROGRAMS[name]
    big = tuple(np.repeat(np.repeat(a, 8, axis=0), 1, axis=-1) if a.ndim == 3 else a
                for a in make_args())
    ins = autoroute(fn).inspect(*big)
    sizes = bind_sizes(ins.plan, big)
    run_plan(ins.plan, ins._programs, CpuTarget(), big, sizes)   # warm: schedule cached
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = run_plan(ins.plan, ins._programs, CpuTarget(), big, sizes)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del result
    planned = plan_buffers(ins.plan).peak_bytes(sizes)
    assert planned <= peak <= planned + 16_384, (planned, peak)


def test_write_into_argument_escapes_without_allocation() -> None:
    out, x = np.zeros(100), np.arange(100.0)
    ins = autoroute(scale_into).inspect(out, x)
    text = ins.report(toolchain=False)
    assert re.search(r"escapes: written into argument out \(no allocation\)", text)


def test_in_place_reuse_on_big_threaded_and_emulated_cuda() -> None:
    """An elementwise kernel writing over its dying input gives NumPy's answer when the
    loop is vectorised and split across threads, and in the generated CUDA C (g++)."""
    from autojit import config
    from autojit.testing import assert_backends_agree

    fn = PROGRAMS["dense_relu"][0]
    rng = np.random.default_rng(1)
    x, w = rng.random((2048, 256), np.float32), rng.random((256, 512), np.float32)
    b = rng.random(512, np.float32)
    routed = autoroute(fn)
    assert "in place" in routed.inspect(x, w, b).report(toolchain=False)
    with config(force="cpu", num_threads=2):
        np.testing.assert_allclose(routed(x, w, b), fn(x, w, b), rtol=1e-5)
    small = (x[:64], w[:, :48], b[:48])
    assert_backends_agree(fn, *small, backends=["python", "cpu", "cuda-emulated"])


def _big(name: str) -> tuple:
    rng = np.random.default_rng(2)
    if name == "mean_sq_error":
        return rng.random(400_000), rng.random(400_000)
    return (rng.random((4096, 16), np.float32), rng.random((16, 64), np.float32),
            rng.random(64, np.float32))


@pytest.mark.parametrize("name", ["mean_sq_error", "dense_relu"])
def test_numpy_eager_model_matches_numpy(name: str) -> None:
    """For code the tracer does not decompose, the eager model (temporary elision included)
    is NumPy's measured peak, less the interpreter's own small allocations."""
    fn, args = PROGRAMS[name][0], _big(name)
    ins = autoroute(fn).inspect(*args)
    model = plan_buffers(ins.plan).numpy_peak_bytes(bind_sizes(ins.plan, args))
    measured = ins.measure_numpy(fn, *args)
    assert model <= measured <= model * 1.02 + 8192, (model, measured)
