"""The buffer plan on every corpus program and the reference-interpreter programs, with no
compiler: the report names each value, and ``run_plan`` (kernels run by the reference
interpreter) allocates exactly what the report says and still matches NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support.corpus import all_cases

from autojit.dispatch.signature import signature_of
from autojit.explain.report import ReportInputs, format_report, report_facts
from autojit.fuse.buffers import plan_buffers
from autojit.fuse.plan import plan_kernels
from autojit.ir.evaluate import run_strided
from autojit.ir.ops import Op
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.tracer import trace_function


class CountingReference:
    """Runs kernels with the reference interpreter; counts allocations; fills fresh memory
    with garbage so a kernel that relied on it would show."""

    name = "reference"

    def __init__(self) -> None:
        self.count = 0

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        self.count += 1
        return np.full(shape, 77, dtype) if np.dtype(dtype).kind != "b" else np.ones(shape, bool)

    def launch(self, kernel, program, arrays, scalars, sizes, meta) -> None:  # noqa: ANN001
        run_strided(kernel, arrays, scalars, meta)


def smooth(a):
    a[1:-1] = 0.5 * (a[:-2] + a[2:])
    return a.sum()


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on edge values

RNG = np.random.default_rng(3)
EXTRA = [
    ("views_and_product", lambda x: np.maximum(x[::-1] @ x.T + 1, 0), (RNG.random((3, 3)),)),
    ("row_of_a_product", lambda x: (x @ x)[1] * 2, (RNG.random((4, 4)),)),
    ("smooth_in_place", smooth, (RNG.random(12),)),
    ("chain_of_products", lambda x: np.exp(np.exp(x @ x) @ x) @ x, (RNG.random((5, 5)),)),
    ("cumsum_fused", lambda x: np.cumsum(x * 2 - 1, axis=1) / 6, (RNG.random((4, 6)),)),
]
CASES = [(c.id, c.fn, c.args) for c in all_cases()] + EXTRA


def _plan(fn, args):  # noqa: ANN001, ANN202
    graph = trace_function(fn, list(args))
    contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(args))]
    return plan_kernels(graph, contiguous)


@pytest.mark.parametrize(("name", "fn", "args"), CASES, ids=[c[0] for c in CASES])
def test_buffer_plan_is_what_run_plan_does(name: str, fn, args) -> None:  # noqa: ANN001
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    expected_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    plan = _plan(fn, args)
    sizes = bind_sizes(plan, args)
    text = format_report(report_facts(plan_buffers(plan), ReportInputs(sizes)), 2)
    for node in plan.graph.nodes:
        if node.op not in (Op.ARG, Op.SIZE):
            assert re.search(rf"%{node.id}\b", text), f"%{node.id} missing:\n{text}"
    backend = CountingReference()
    actual = run_plan(plan, [None] * len(plan.kernels), backend, args, sizes)
    stored = len(re.findall(r"(moved to heap|escapes to caller)", text))
    assert backend.count == stored - text.count("reuses the buffer of")
    expected = fn(*expected_args)
    for got, want in zip(actual if isinstance(actual, tuple) else (actual,),
                         expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(np.asarray(got, dtype=np.asarray(want).dtype), want,
                                   rtol=1e-6, equal_nan=True)
