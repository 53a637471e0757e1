"""Notebook rendering of an Inspection: collapsible sections, highlighted IR, the escape
report as a table, and the fusion graph as a picture.

Pygments highlights the IR when it is installed; Graphviz draws the graph when both the
``graphviz`` package and its ``dot`` program are present, else a text diagram is shown.
"""

from __future__ import annotations

import html
import shutil
from typing import Any

from autojit.ir.ops import Op
from autojit.ir.printer import param_names, region_head

#: section title, Inspection attribute, pygments lexer name (None: plain text)
SECTIONS: tuple[tuple[str, str, str | None], ...] = (
    ("Graph", "graph_text", None),
    ("Fused kernels", "kernels_text", None),
    ("LLVM IR (optimised)", "llvm_ir_optimized", "llvm"),
    ("CUDA C", "cuda_source", "cuda"),
    ("Route", "route_text", None),
)

#: fill colour of a graph node by its buffer-plan decision
DECISION_COLOURS = {"fused": "#d8f0d8", "recomputed": "#e8f4e8", "heap": "#f8d0c8",
                    "escapes": "#c8daf8", "view": "#eeeeee", "constant": "#ffffff"}


def highlight(code: str, language: str | None) -> str:
    """Return ``code`` as HTML: highlighted by pygments when it is installed and knows
    ``language``, else escaped inside ``<pre>``."""
    if language:
        try:
            from pygments import highlight as pyg_highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name
            lexer = get_lexer_by_name(language)
        except Exception:   # not installed, or no lexer for the language
            lexer = None
        if lexer is not None:
            return pyg_highlight(code, lexer, HtmlFormatter(noclasses=True, nowrap=False))
    return f"<pre>{html.escape(code)}</pre>"


def report_table(inspection: Any, verbosity: int = 2) -> str:
    """Return the escape report as an HTML table: location, kind, message, reasons."""
    rows = []
    for fact in inspection.report_facts():
        if fact.level > verbosity:
            continue
        where = html.escape(str(fact.loc)) if fact.loc else ""
        details = "<br>".join(html.escape(d) for d in fact.details)
        rows.append(f"<tr><td><code>{where}</code></td><td>{fact.kind}</td>"
                    f"<td>{html.escape(fact.message)}</td><td><small>{details}</small></td></tr>")
    head = "<tr><th>where</th><th>kind</th><th>decision</th><th>why / flow</th></tr>"
    return f"<table class='autojit-report'>{head}{''.join(rows)}</table>"


def graph_dot(inspection: Any) -> str:
    """Return the fusion graph in Graphviz's dot language: one cluster per kernel, nodes
    coloured by their buffer-plan decision."""
    graph, plan = inspection.graph, inspection.buffer_plan
    lines = ["digraph fusion {", "  rankdir=TB; node [shape=box, style=filled, fontsize=10];"]
    for kernel in inspection.plan.own_kernels:   # a loop body's kernels are the loop's
        lines.append(f'  subgraph "cluster_{kernel.name}" {{ label="{kernel.name}";')
        lines += [f"    n{n};" for n in kernel.nodes]
        lines.append("  }")
    for node in graph.nodes:
        if node.op is Op.SIZE:
            continue
        decision = "argument" if node.op is Op.ARG else plan.fate(node.id).decision
        label = _label(graph, node)
        colour = DECISION_COLOURS.get(decision, "#fff8c0")
        lines.append(f'  n{node.id} [label="{label}\\n{decision}", fillcolor="{colour}"];')
        lines += [f"  n{i} -> n{node.id};" for i in node.inputs
                  if graph.node(i).op is not Op.SIZE]
    lines.append("}")
    return "\n".join(lines)


def _label(graph: Any, node: Any) -> str:
    if node.op is Op.ARG:
        return graph.params[node.attr("index")].name
    return f"%{node.id} {node.op.value}".replace('"', "'")


def graph_text_diagram(inspection: Any) -> str:
    """Return the fusion graph as text: each kernel and library step with its values, and
    the stored values that connect the steps."""
    plan = inspection.buffer_plan
    graph = inspection.graph
    lines = []
    for step, name in enumerate(plan.step_names):
        kind, index = inspection.plan.steps[step]
        if kind == "kernel":
            nodes = inspection.kernels[index].nodes
            members = " ".join(f"%{n}" for n in nodes)
        elif kind == "region":   # a loop: its head in the user's names
            call = inspection.plan.regions[index]
            head = region_head(graph.node(call.node), graph, param_names(graph))
            members = f"%{call.node} = {head.rstrip(':')}"
        else:
            call = inspection.plan.libraries[index]
            members = f"%{call.output} = {call.name}"
        lines.append(f"[{name}] {members}")
        for fate in plan.fates:
            if fate.writer == name and fate.allocated:
                target = ", ".join(fate.readers) or "caller"
                if fate.escape:
                    target = fate.escape
                node = graph.node(fate.node)
                reuse = "" if fate.reuses is None else f", in %{fate.reuses}'s buffer"
                lines.append(f"   └─ %{fate.node} {node.type} ({fate.decision}{reuse}) ──▶ "
                             f"{target}")
    return "\n".join(lines) + "\n"


def graph_picture(inspection: Any) -> tuple[str, str]:
    """Return ("svg", markup) when Graphviz can draw the fusion graph, else ("text", the
    text diagram)."""
    if shutil.which("dot"):
        try:
            import graphviz
            return "svg", graphviz.Source(graph_dot(inspection)).pipe(format="svg").decode()
        except Exception:   # package missing, or dot failed: fall back to text
            pass
    return "text", graph_text_diagram(inspection)


class FusionGraph:
    """The fusion graph as a notebook picture: ``kind`` is "svg" (Graphviz) or "text"."""

    def __init__(self, inspection: Any) -> None:
        self.kind, self.data = graph_picture(inspection)

    def _repr_html_(self) -> str:
        return self.data if self.kind == "svg" else f"<pre>{html.escape(self.data)}</pre>"

    def __str__(self) -> str:
        return self.data


def render_html(inspection: Any) -> str:
    """Return the whole inspection as HTML for Jupyter (``_repr_html_``)."""
    title = html.escape(f"autojit inspection of {inspection.function}")
    if inspection.plan is None:
        return (f"<div class='autojit'><h3>{title}</h3><p>runs as plain Python: "
                f"{html.escape(str(inspection.fallback_reason))}</p></div>")
    figure = FusionGraph(inspection)._repr_html_()
    parts = [f"<div class='autojit'><h3>{title}</h3>",
             f"<p>{len(inspection.kernels)} kernel(s), route <b>{inspection.route}</b></p>",
             f"<details open><summary>Fusion graph</summary>{figure}</details>",
             f"<details open><summary>Escape report</summary>{report_table(inspection)}"
             "</details>"]
    for heading, attribute, language in SECTIONS:
        text = getattr(inspection, attribute)
        if text:
            parts.append(f"<details><summary>{heading}</summary>"
                         f"{highlight(text, language)}</details>")
    parts.append("</div>")
    return "\n".join(parts)


__all__ = ["FusionGraph", "graph_dot", "graph_picture", "graph_text_diagram", "highlight",
           "render_html", "report_table"]
