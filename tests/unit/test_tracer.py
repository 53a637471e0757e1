"""Tracer, printer and verifier, without any compiler: graphs are checked by evaluating them."""

import os

import numpy as np
import pytest

from autojit.errors import TraceError, UnsupportedError
from autojit.fuse.plan import plan_kernels
from autojit.ir.evaluate import evaluate_graph
from autojit.ir.printer import format_graph, format_kernel
from autojit.ir.verify import VerifyError, verify_graph, verify_kernel
from autojit.tracer import trace_function

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden")


def model(a, b, s):
    d = (a - b) * s
    return np.where(d > 0, np.sqrt(d), -d), np.clip(a, 0.0, 1.0).astype(np.float32)


ARGS = (np.linspace(-1, 2, 12).reshape(3, 4), np.linspace(0, 1, 4, dtype=np.float32), 2.0)


def golden(name, text):
    path = os.path.join(GOLDEN, name)
    if os.environ.get("AUTOJIT_UPDATE_GOLDEN"):
        with open(path, "w") as handle:
            handle.write(text)
    with open(path) as handle:
        assert text == handle.read(), f"{name} changed; AUTOJIT_UPDATE_GOLDEN=1 rewrites it"


def test_graph_text_is_stable():
    golden("model_graph.txt", format_graph(trace_function(model, ARGS)))


def test_kernel_text_is_stable():
    graph = trace_function(model, ARGS)
    plan = plan_kernels(graph, [True, True, True])
    golden("model_kernels.txt", "\n".join(format_kernel(k) for k in plan.kernels))


def test_graph_verifies_and_evaluates_to_numpy():
    graph = trace_function(model, ARGS)
    verify_graph(graph)
    for got, expected in zip(evaluate_graph(graph, ARGS), model(*ARGS)):
        np.testing.assert_array_equal(got, expected)
    for kernel in plan_kernels(graph, [True] * 3).kernels:
        verify_kernel(kernel)


def test_every_node_records_the_user_source_line():
    graph = trace_function(model, ARGS)
    compute = [n for n in graph.nodes if n.op.value not in ("arg", "const")]
    assert all(n.loc and n.loc.file.endswith("test_tracer.py") for n in compute)
    lines = {n.loc.line for n in compute}
    assert len(lines) == 2            # the two statements of model()


def test_broadcast_symbols_unify_and_record_their_sources():
    graph = trace_function(lambda a, b: a + b, (np.ones((3, 4)), np.ones(4)))
    assert graph.dims == (("n0", ((0, 0),)), ("n1", ((0, 1), (1, 0))))


def test_size_one_dimensions_are_literal():
    graph = trace_function(lambda a, b: a * b, (np.ones((3, 1)), np.ones((1, 5))))
    assert str(graph.nodes[-1].type) == "f64[n0,n1]"


@pytest.mark.parametrize("fn, exc, words", [
    (lambda a: float(a), TraceError, "float()"),
    (lambda a: a[a > 0], UnsupportedError, "boolean masks"),
    (lambda a: np.cumsum(a, out=a), UnsupportedError, "np.cumsum(..., out=...)"),
    (lambda a: a.sort(), UnsupportedError, "ndarray.sort"),
    (lambda a: np.linalg.det(a), UnsupportedError, "np.linalg.det"),
    (lambda a: [a], UnsupportedError, "returns a list"),
])
def test_untraceable_constructs_say_why(fn, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        trace_function(fn, (np.ones(4),))


def test_in_place_update_is_a_write_not_a_silent_rebind():
    def bump(a):
        a += 1
        return a
    graph = trace_function(bump, (np.ones(3),))
    (write,) = [n for n in graph.nodes if n.op.value == "write"]
    assert write.attr("param") == 0 and graph.outputs == (write.id,)


def test_verifier_rejects_a_broken_kernel():
    graph = trace_function(lambda a: a + 1.0, (np.ones(3),))
    kernel = plan_kernels(graph, [True]).kernels[0]
    broken = type(kernel)(kernel.name, kernel.loop_sizes, kernel.buffers, kernel.scalars,
                          kernel.body[:-1], kernel.nodes)
    with pytest.raises(VerifyError, match="stored"):
        verify_kernel(broken)
