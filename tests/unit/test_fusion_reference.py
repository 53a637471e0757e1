"""Fused plans run through the reference interpreter exactly as compiled kernels address
memory (``run_strided``): fusion, phases, views, writes and library steps are checked
against NumPy without any compiler."""

import numpy as np
import pytest

from autojit.dispatch.signature import signature_of
from autojit.fuse.plan import plan_kernels
from autojit.ir.evaluate import run_strided
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.tracer import trace_function


class ReferenceTarget:
    name = "reference"

    def compile(self, kernel):
        return None

    def empty(self, shape, dtype):
        return np.full(shape, 77, dtype) if np.dtype(dtype).kind != "b" else np.ones(shape, bool)

    def launch(self, kernel, program, arrays, scalars, sizes, meta):
        run_strided(kernel, arrays, scalars, meta)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def smooth(a):
    a[1:-1] = 0.5 * (a[:-2] + a[2:])
    return a.sum()


RNG = np.random.default_rng(2)
PROGRAMS = [
    ("softmax", softmax, (RNG.random((4, 9)),)),
    ("std_over_two_axes", lambda x: x.std(axis=(0, 2)), (RNG.random((3, 4, 5)),)),
    ("column_sums_broadcast_back", lambda x: x.sum(axis=0) - x, (RNG.random((5, 5)),)),
    ("argmax_rows", lambda x: np.argmax(x, axis=1), (RNG.random((4, 6)),)),
    ("views_and_product", lambda x: np.maximum(x[::-1] @ x.T + 1, 0), (RNG.random((3, 3)),)),
    ("smooth_in_place", smooth, (RNG.random(12),)),
    ("arange_linspace", lambda x: x + np.arange(6) * np.linspace(0, 1, 6), (RNG.random(6),)),
    ("cumsum_fused", lambda x: np.cumsum(x * 2 - 1, axis=1) / 6, (RNG.random((4, 6)),)),
    ("cumsum_after_row_max",
     lambda x: np.cumsum(x - x.max(1, keepdims=True), 1) / x.sum(1)[:, None],
     (RNG.random((3, 7)),)),
    ("cumprod_columns_of_a_view", lambda x: np.cumprod(x[::-1].T + 0.5, axis=0),
     (RNG.random((5, 4)),)),
    ("cumsum_flattened_then_scan_again", lambda x: np.cumsum(np.cumsum(x), 0),
     (RNG.random((3, 4)),)),
]


@pytest.mark.parametrize("name, fn, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_fused_plan_on_the_reference_interpreter_matches_numpy(name, fn, args):
    expected_args = [a.copy() for a in args]
    actual_args = [a.copy() for a in args]
    expected = fn(*expected_args)
    graph = trace_function(fn, actual_args)
    contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(actual_args))]
    plan = plan_kernels(graph, contiguous)
    actual = run_plan(plan, [None] * len(plan.kernels), ReferenceTarget(), actual_args,
                      bind_sizes(plan, actual_args))
    np.testing.assert_allclose(actual, expected, rtol=1e-12)
    for want, got in zip(expected_args, actual_args):
        np.testing.assert_allclose(got, want, rtol=1e-12)
