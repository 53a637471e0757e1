"""The notebook view of an Inspection: sections, highlighted IR, the report table, and the
fusion graph as Graphviz SVG or, without Graphviz, a text diagram."""

from __future__ import annotations

import shutil

import pytest

from tests.explain.inspect_programs import PROGRAMS

from autojit import autoroute
from autojit.explain import html as html_view


@pytest.fixture(scope="module")
def inspection():
    fn, make_args, _ = PROGRAMS["matmul_chain"]
    return autoroute(fn).inspect(*make_args())


def test_html_has_sections_and_report_table(inspection) -> None:
    page = inspection._repr_html_()
    for heading in ("Fusion graph", "Escape report", "Graph", "Fused kernels",
                    "LLVM IR (optimised)", "CUDA C", "Route"):
        assert f"<summary>{heading}</summary>" in page
    assert "<table class='autojit-report'>" in page
    assert "reuses the buffer of %4" in page


def test_ir_is_highlighted_when_pygments_is_installed() -> None:
    pytest.importorskip("pygments")
    assert "<span style=" in html_view.highlight("define void @f() {\n  ret void\n}", "llvm")
    assert html_view.highlight("a < b", None) == "<pre>a &lt; b</pre>"


def test_text_diagram_without_graphviz(inspection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    picture = inspection.fusion_graph()
    assert picture.kind == "text"
    text = str(picture)
    assert text.splitlines()[0] == "[lib0_matmul] %2 = matmul"
    assert "%7 f64[n0,n1] (heap, in %4's buffer) ──▶ k2_reduce" in text
    assert "<pre>" in picture._repr_html_()


def test_dot_source_clusters_kernels(inspection) -> None:
    dot = html_view.graph_dot(inspection)
    assert dot.startswith("digraph fusion {")
    assert 'subgraph "cluster_k0_exp"' in dot and "n2 -> n3;" in dot


def test_svg_with_graphviz(inspection) -> None:
    pytest.importorskip("graphviz")
    if not shutil.which("dot"):
        pytest.skip("Graphviz's dot program is not installed")
    assert inspection.fusion_graph().kind == "svg"


def test_fallback_renders(tmp_path) -> None:
    def branchy(x):   # an if on a traced value leaving two dtypes: not a select
        if x.sum() > 0:
            x = x.astype(np.float32)
        return x

    import warnings

    import numpy as np
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ins = autoroute(branchy).inspect(np.ones(4))
    assert "runs as plain Python" in ins._repr_html_()
    assert "not compiled" in ins.report()
