"""Deep graphs go through every stage without recursion (issue 15: traces never blow up).

Graphs are built directly (a chain of adds, a chain of views ``x = x[1:]``), far deeper than
Python's recursion limit, which stays as it is: a recursive walk anywhere raises
RecursionError here. The cheapest stages take a 10^6-node graph, the others one of 10^5
(a hundred times the limit, a tenth of the time); planning refuses a graph that big at once,
with the reason, and is shown one of ``DEEP`` nodes instead.
"""

from __future__ import annotations

import pickle
import sys
import time

import numpy as np
import pytest

from autojit.errors import UnsupportedError
from autojit.explain.report import ReportInputs, format_report, report_facts
from autojit.fuse.buffers import plan_buffers
from autojit.fuse.partition import inlined_nodes, memory_param, overwritten_memory
from autojit.fuse.plan import MAX_PLAN_NODES, plan_kernels
from autojit.fuse.split_reduce import split_reductions
from autojit.ir.evaluate import evaluate_graph, evaluate_kernel
from autojit.ir.graph import Graph, Node, Param
from autojit.ir.ops import Op
from autojit.ir.printer import format_graph, format_kernel
from autojit.ir.types import TensorType
from autojit.ir.verify import verify_graph, verify_kernel

F64 = np.dtype(np.float64)
HUGE = 1_000_000
BIG = 100_000
DEEP = 20_000          # 20x the recursion limit, and quick to plan
_STEP = (("step", ("getitem", (slice(1, None, None),))),)


def add_chain(n: int, op: Op = Op.ADD) -> Graph:
    """x + 1 + 1 + ... : ``n`` nodes, each reading the one before."""
    t = TensorType(F64, ("n0",))
    nodes = [Node(0, Op.ARG, (), t, None, (("index", 0),)),
             Node(1, Op.CONST, (), TensorType(F64, ()), None, (("value", 1.0),))]
    nodes += [Node(i, op, (i - 1 if i > 2 else 0, 1), t) for i in range(2, n)]
    return Graph("chain", (Param("x", "array", t),), tuple(nodes), (n - 1,),
                 scalar_outputs=(False,), dims=(("n0", ((0, 0),)),))


def view_chain(n: int) -> Graph:
    """x[1:][1:]... : ``n`` nodes, each a view of the one before, the last one returned + 1."""
    nodes = [Node(0, Op.ARG, (), TensorType(F64, ("n0",)), None, (("index", 0),))]
    nodes += [Node(i, Op.VIEW, (i - 1,), TensorType(F64, (f"n{i}",)), None, _STEP)
              for i in range(1, n - 2)]
    nodes.append(Node(n - 2, Op.CONST, (), TensorType(F64, ()), None, (("value", 1.0),)))
    nodes.append(Node(n - 1, Op.ADD, (n - 3, n - 2), TensorType(F64, (f"n{n - 3}",))))
    return Graph("views", (Param("x", "array", TensorType(F64, ("n0",))),), tuple(nodes),
                 (n - 1,), scalar_outputs=(False,), dims=(("n0", ((0, 0),)),))


@pytest.fixture(scope="module")
def huge_chain() -> Graph:
    return add_chain(HUGE)


@pytest.fixture(scope="module")
def huge_views() -> Graph:
    return view_chain(HUGE)


def test_the_recursion_limit_is_python_s_default():
    """Nothing in autojit raises the limit to make these pass."""
    import autojit  # noqa: F401

    assert sys.getrecursionlimit() <= 1000


@pytest.mark.parametrize("which", ["huge_chain", "huge_views"])
def test_a_million_node_graph_verifies_and_splits(which, request):
    graph = request.getfixturevalue(which)
    verify_graph(graph)
    assert split_reductions(graph) is graph or len(split_reductions(graph).nodes) == HUGE


def test_a_million_views_deep_are_walked_to_their_argument(huge_views):
    assert memory_param(huge_views, HUGE - 3) == 0
    assert overwritten_memory(huge_views) == set()


@pytest.mark.parametrize("make", [add_chain, view_chain])
def test_a_deep_graph_prints_pickles_and_is_partitioned(make):
    graph = make(BIG)
    assert format_graph(graph).count("\n") >= BIG
    assert pickle.loads(pickle.dumps(graph)).nodes == graph.nodes
    assert inlined_nodes(graph) == set()


def test_a_deep_graph_evaluates():
    x = np.arange(4.0)
    np.testing.assert_array_equal(evaluate_graph(add_chain(BIG), [x])[0], x + (BIG - 2))
    x = np.arange(BIG + 2.0)
    np.testing.assert_array_equal(evaluate_graph(view_chain(BIG), [x])[0], x[BIG - 3:] + 1)


@pytest.mark.parametrize("which", ["huge_chain", "huge_views"])
def test_planning_refuses_a_million_node_graph_at_once_with_the_reason(which, request):
    graph = request.getfixturevalue(which)
    started = time.perf_counter()
    with pytest.raises(UnsupportedError, match=f"over the {MAX_PLAN_NODES} autojit plans"):
        plan_kernels(graph, [True])
    assert time.perf_counter() - started < 5.0   # generous: nothing is walked


@pytest.mark.parametrize("make", [add_chain, view_chain])
def test_a_deep_graph_plans_and_reports(make):
    graph = make(DEEP)
    plan = plan_kernels(graph, [True])
    assert pickle.loads(pickle.dumps(plan)).graph.nodes == graph.nodes
    buffers = plan_buffers(plan)
    sizes = {f"n{i}": DEEP + 2 - i for i in range(DEEP)}   # each view one shorter
    text = format_report(report_facts(buffers, ReportInputs(sizes, {}, None, "sm_90")), 2)
    assert "kernel(s)" in text
    for kernel in plan.kernels:
        format_kernel(kernel)


def test_one_deep_kernel_renders_verifies_and_evaluates():
    """A kernel whose body is one chain of 20,000 instructions (fusion_max_ops lifted)."""
    from autojit.lower_cpu import render_llvm
    from autojit.lower_gpu import render_cuda

    plan = plan_kernels(add_chain(DEEP), [True], max_ops=2 * DEEP)
    (kernel,) = plan.kernels
    assert len(kernel.body) >= DEEP - 2
    verify_kernel(kernel)
    assert format_kernel(kernel).count("\n") >= DEEP - 2
    assert "define" in render_llvm(kernel)
    assert "__global__" in render_cuda(kernel)
    x, out = np.arange(3.0), np.empty(3)
    evaluate_kernel(kernel, [x, out])
    np.testing.assert_array_equal(out, x + (DEEP - 2))
