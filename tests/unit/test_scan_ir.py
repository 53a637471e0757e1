"""SCAN in the IR, without compilers: the tracer's nodes and dtypes, the fused kernel's text,
the verifier's rules, and the reference interpreter running the kernel as it addresses
memory."""

import dataclasses

import numpy as np
import pytest

from autojit.fuse.plan import plan_kernels
from autojit.ir.evaluate import evaluate_graph, run_strided
from autojit.ir.ops import Op
from autojit.ir.printer import format_graph, format_kernel
from autojit.ir.verify import VerifyError, verify_kernel
from autojit.runtime.binding import bind_sizes
from autojit.runtime.schedule import run_plan
from autojit.tracer import trace_function


def test_cumsum_traces_to_one_scan_node_with_numpys_dtype():
    graph = trace_function(lambda a: np.cumsum(a * 2, axis=-1), (np.ones((3, 4), np.int8),))
    (scan,) = [n for n in graph.nodes if n.op is Op.SCAN]
    assert scan.attr("axes") == (1,) and scan.attr("kind") == "add"
    assert scan.type.dtype == np.int64
    assert "scan.add %" in format_graph(graph)


def test_flattened_scan_covers_every_axis_then_reshapes():
    x = np.arange(12.0).reshape(3, 4)
    graph = trace_function(lambda a: a.cumprod(), (x,))
    assert [n.op for n in graph.nodes][-2:] == [Op.SCAN, Op.VIEW]
    np.testing.assert_array_equal(evaluate_graph(graph, (x,))[0], np.cumprod(x))


def test_bool_scans_are_or_and_and():
    graph = trace_function(lambda a: (np.cumsum(a, dtype=bool, axis=0),
                                      np.cumprod(a, dtype=bool, axis=0)), (np.ones(4),))
    kinds = [n.attr("kind") for n in graph.nodes if n.op is Op.SCAN]
    assert kinds == ["or", "and"]


def _kernel(fn, x):
    plan = plan_kernels(trace_function(fn, (x,)), [True])
    (kernel,) = plan.kernels
    return plan, kernel


def test_consumers_share_the_scans_row_iteration():
    _, kernel = _kernel(lambda a: np.cumsum(a, 1) / 4.0, np.ones((3, 4)))
    text = format_kernel(kernel)
    assert "scan.add" in text and kernel.row_dims == 1 and kernel.has_scan
    scan = next(i for i in kernel.body if i.op is Op.SCAN)
    div = next(i for i in kernel.body if i.op is Op.DIV)
    assert div.args[0] == scan.id and div.level == scan.level == "row"


def test_verifier_rejects_scans_out_of_place():
    _, kernel = _kernel(lambda a: np.cumsum(a, 1), np.ones((3, 4)))
    verify_kernel(kernel)
    scan = next(i for i in kernel.body if i.op is Op.SCAN)
    for bad in (dataclasses.replace(scan, level="outer"), dataclasses.replace(scan, attr="max"),
                dataclasses.replace(scan, dtype=np.dtype(np.float32))):
        body = tuple(bad if i.id == scan.id else i for i in kernel.body)
        with pytest.raises(VerifyError):
            verify_kernel(dataclasses.replace(kernel, body=body))
    twice = dataclasses.replace(scan, id=len(kernel.body), args=(scan.id,))
    with pytest.raises(VerifyError, match="scan of a scan"):
        verify_kernel(dataclasses.replace(kernel, body=kernel.body + (twice,)))


class _Reference:
    """Runs each kernel on the reference interpreter as compiled code addresses memory."""

    name = "reference"

    def compile(self, kernel):
        return None

    def empty(self, shape, dtype):
        return np.full(shape, 77, dtype)

    def launch(self, kernel, program, arrays, scalars, sizes, meta):
        run_strided(kernel, arrays, scalars, meta)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reference_interpreter_runs_the_scan_kernel_as_it_addresses_memory(axis):
    x = np.random.default_rng(5).random((4, 6))[:, ::-1]

    def fn(a):
        return np.cumsum(a * 3, axis=axis)

    plan = plan_kernels(trace_function(fn, (x,)), [x.flags.c_contiguous])
    assert len(plan.kernels) == 1 and plan.kernels[0].has_scan
    got = run_plan(plan, [None], _Reference(), (x,), bind_sizes(plan, (x,)))
    np.testing.assert_array_equal(got, fn(x))
