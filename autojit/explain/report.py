"""The escape and allocation report, in the style of Go's ``go build -gcflags=-m``.

One fact per line, ``file:line:col: message``, sorted by position (ties keep the order:
summary, values by id, kernels by launch order). ``-m`` (verbosity 1) gives decisions;
``-m -m`` (verbosity 2) adds indented reasons and flow chains under each, as Go does::

    norm.py:4:9: %40 = reduce.add %39 moved to heap: f32[B,1,1] 4·B bytes (16 B here), ...
    norm.py:4:9:   why: k1_reduce is a separate loop nest ([B,1,1] reducing the last 3 ...)
    norm.py:4:9:   flow: %40 -> %41 = reduce.add %40 (k1_reduce) at norm.py:7:15
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autojit.fuse.buffers import (
    BufferPlan,
    ValueFate,
    bytes_formula,
    kernel_nest,
    plan_buffers,
    value_bytes,
)
from autojit.fuse.plan import Plan, RegionCall
from autojit.ir.graph import Graph, Node, SourceLoc
from autojit.ir.ops import Op
from autojit.ir.printer import body_names, param_names, region_head, written_params
from autojit.ir.region import Region
from autojit.ir.types import short_name


@dataclass(frozen=True)
class Fact:
    """One report line and, at ``-m -m``, the lines under it."""

    loc: SourceLoc | None
    kind: str                     # fused, recomputed, heap, escapes, reuse, view, ...
    message: str
    details: tuple[str, ...] = ()
    node: int | None = None
    level: int = 1                # the verbosity that shows it

    def as_dict(self) -> dict[str, Any]:
        where = ({"file": self.loc.file, "line": self.loc.line, "col": self.loc.col}
                 if self.loc else {"file": None, "line": 0, "col": 0})
        return {**where, "kind": self.kind, "node": self.node, "message": self.message,
                "details": list(self.details)}


@dataclass
class ReportInputs:
    """What the report reads besides the buffer plan: sizes of the call at hand, names for
    size symbols (``n0`` -> ``B``), per-kernel LLVM facts, GPU resources, NumPy's measured
    peak."""

    sizes: Mapping[str, int]
    names: Mapping[str, str] = field(default_factory=dict)
    numpy_measured: int | None = None
    gpu_arch: str = "sm_90"
    llvm: Sequence[Any] = ()
    gpu: Mapping[str, Any] = field(default_factory=dict)


#: the -m message of each decision; {v} is the value, {k} its kernels
_DECISION_TEXT = {
    "fused": "{v} fused into {k} (no allocation)",
    "recomputed": "{v} recomputed in {k} (no allocation)",
    "view": "{v} is a view (no allocation)",
    "constant": "{v} is a constant, broadcast (no allocation)",
    "loop": "{v} is a loop region: its body's plan runs once per iteration (its carried "
            "values are its carries)",
}

#: -m -m reason of each no-allocation decision
_DECISION_WHY = {
    "fused": "every reader runs in the same kernel, so it stays in registers",
    "recomputed": ("uniform, or cheap and read through a broadcast: recomputing it in each "
                   "reader is cheaper than storing and reloading it"),
    "view": "the same memory as its base, with other strides",
    "constant": "one element, passed to the kernels that read it",
    "loop": "a host loop over the body's kernels; nothing is traced or planned per iteration",
}


def _constant(node: Node) -> str:
    """Return a constant as its dtype prints it: ``1.8``, not ``1.7999999523162842``."""
    value = node.attr("value")
    try:
        return str(node.type.dtype.type(value))
    except (TypeError, ValueError):   # an array-valued constant
        return repr(value)


def _operand(graph: Graph, node_id: int, shown: Sequence[str] | None = None) -> str:
    """Return how a report names an operand: arguments by name (``shown``: a loop body's
    by the user's names), constants by value, sizes as ``size(n1*n2)``, other values as
    ``%id``."""
    node = graph.node(node_id)
    if node.op is Op.ARG:
        return (shown or [p.name for p in graph.params])[node.attr("index")]
    if node.op is Op.CONST:
        return _constant(node)
    if node.op is Op.SIZE:
        return f"size({'*'.join(node.attr('symbols')) or '1'})"
    return f"%{node_id}"


def _op_name(node: Node) -> str:
    if node.op is Op.REDUCE:
        return f"reduce.{node.attr('kind')}"
    if node.op is Op.CAST:
        return f"cast<{short_name(node.type.dtype)}>"
    return node.op.value


def describe_node(graph: Graph, node: Node, shown: Sequence[str] | None = None) -> str:
    """Return ``%7 = sub x %6``: the value and how it is computed, arguments by name."""
    operands = " ".join(_operand(graph, i, shown) for i in node.inputs)
    if node.op in (Op.CONST, Op.FILL):   # np.zeros((n, n)) is ``fill 0.0``
        operands = _constant(node)
    return f"%{node.id} = {_op_name(node)} {operands}".rstrip()


class _Writer:
    """Builds the facts of one report."""

    def __init__(self, plan: BufferPlan, inputs: ReportInputs,
                 shown: Sequence[str] | None = None) -> None:
        self.bp, self.inputs, self.graph = plan, inputs, plan.graph
        self.shown = shown   # parameters' names (a loop body's: the user's)
        self.users = self.graph.users()
        self.facts: list[Fact] = []
        #: where a flow chain stops: stored or returned values (once, not per value)
        self.stops = {a.node for a in plan.allocations} | set(self.graph.outputs)

    def rename(self, text: str) -> str:
        names = self.inputs.names
        return re.sub(r"\bn\d+\b", lambda m: names.get(m[0], m[0]), text) if names else text

    def rename_sizes(self, text: str) -> str:
        """Rename the size symbols inside ``size(...)`` operands (``size(H*W)``)."""
        return re.sub(r"size\(([^)]*)\)", lambda m: f"size({self.rename(m[1])})", text)

    def size_text(self, node: Node) -> str:
        here = value_bytes(node, self.inputs.sizes)
        return (f"{self.rename(str(node.type))} {self.rename(bytes_formula(node))} bytes "
                f"({here:,} B here)")

    def add(self, loc: SourceLoc | None, kind: str, message: str, details: Sequence[str] = (),
            node: int | None = None, level: int = 1) -> None:
        self.facts.append(Fact(loc, kind, message, tuple(details), node, level))

    def value(self, fate: ValueFate) -> None:
        node = self.graph.node(fate.node)
        if fate.decision == "loop":   # said by ``regions``, in the user's names
            return
        text = self.rename_sizes(describe_node(self.graph, node, self.shown))
        if fate.decision in _DECISION_TEXT:
            level = 2 if fate.decision == "constant" else 1
            message = _DECISION_TEXT[fate.decision].format(v=text, k=", ".join(fate.kernels))
            why = _DECISION_WHY[fate.decision]
            if fate.decision == "view" and node.op is Op.WRITE:   # into a scratch array
                written = _operand(self.graph, node.inputs[0], self.shown)
                message = f"%{node.id}: {written} {fate.escape}"
                message += " (no allocation)"
                why = ("each write is the array's next version; nothing reads the old "
                       "values after it, so it is written in the array's own buffer")
            elif fate.decision == "view":
                returned = f", {fate.escape}" if fate.escape else ""
                base = _operand(self.graph, node.inputs[0], self.shown)
                message = f"%{node.id} is a view of {base}{returned} (no allocation)"
            self.add(node.loc, fate.decision, message,
                     [f"why: {why}", *self.readers(fate.node)], fate.node, level)
        elif fate.decision == "escapes" and not fate.allocated:
            self.add(node.loc, "escapes", f"{text} escapes: {fate.escape} (no allocation)",
                     ["why: an assignment into an argument writes the caller's memory"],
                     fate.node)
        else:
            self.stored(fate, node, text)

    def stored(self, fate: ValueFate, node: Node, text: str) -> None:
        where = f"written by {fate.writer}" + (
            f", read by {', '.join(fate.readers)}" if fate.readers else "")
        if fate.decision == "escapes":
            message = f"{text} escapes to caller ({fate.escape}): {self.size_text(node)}, {where}"
            why = ["why: the caller keeps it after the call"]
        else:
            message = f"{text} moved to heap: {self.size_text(node)}, {where}"
            why = [f"why: {reason}" for reason in self.why_stored(fate)]
        self.add(node.loc, fate.decision, message, [*why, *self.flow(fate)], fate.node)
        if fate.reuses is not None and fate.in_place:
            self.add(node.loc, "reuse", f"%{fate.node} reuses the buffer of %{fate.reuses} "
                     f"in place ({fate.writer} reads each element before overwriting it)",
                     [f"why: same type and access pattern, and %{fate.reuses} dies in "
                      f"{fate.writer}; no new allocation"], fate.node)
        elif fate.reuses is not None:
            self.add(node.loc, "reuse", f"%{fate.node} reuses the buffer of %{fate.reuses} "
                     f"(dead after {fate.dead_after})",
                     ["why: same byte count in the size symbols, item size fits; no new "
                      "allocation"], fate.node)

    def why_stored(self, fate: ValueFate) -> list[str]:
        """Return why a value could not stay in registers, from the plan's steps."""
        kernels = {k.name: k for k in self.bp.plan.own_kernels}
        writer = kernels.get(fate.writer or "")
        reasons = [] if writer else [f"{fate.writer} is a BLAS call: it writes to memory"]
        for reader in fate.readers:
            if reader not in kernels:
                reasons.append(f"{reader} is a BLAS call: it reads its operands from memory")
            elif writer is not None:
                reasons.append(self.rename(
                    f"{reader} is a separate loop nest ({kernel_nest(kernels[reader])}) from "
                    f"{writer.name} ({kernel_nest(writer)})"))
        viewed = [u for u in self.users[fate.node] if self.graph.node(u).op is Op.VIEW]
        written = [n.id for n in self.graph.nodes
                   if n.op is Op.WRITE and n.attr("root") == fate.node]
        if written:
            reasons.append(f"a scratch array written in place (%{written[0]}): it keeps a "
                           "buffer of its own for the call")
        elif viewed:
            reasons.append(f"a view is taken of it (%{viewed[0]}): views need memory")
        return reasons or ["read from memory by another step"]

    def readers(self, node_id: int) -> list[str]:
        """Return one ``flow:`` line naming the values that read ``node_id``."""
        names = []
        for user in dict.fromkeys(self.users[node_id]):   # x * x reads x once here
            fate = self.bp.fate(user)
            where = ", ".join(fate.kernels) or fate.writer or "no kernel"
            names.append(f"%{user} {_op_name(self.graph.node(user))} ({where})")
        returned = " and returned" if node_id in self.graph.outputs else ""
        return [f"flow: read by {', '.join(names)}{returned}"] if names else []

    def flow(self, fate: ValueFate) -> list[str]:
        """Return the flow chain from the value to the next stored or returned value."""
        stop = self.stops
        lines, current = [], fate.node
        for _ in range(8):
            readers = self.users[current]
            if not readers:
                break
            node = self.graph.node(readers[0])
            kernels = self.bp.fate(node.id).kernels or (self.bp.fate(node.id).writer or "",)
            where = f" ({', '.join(k for k in kernels if k)})" if any(kernels) else ""
            lines.append(f"flow: %{current} -> "
                         f"{self.rename_sizes(describe_node(self.graph, node, self.shown))}{where} "
                         f"at {node.loc}")
            current = node.id
            if current in stop:
                break
        if fate.escape and fate.allocated:
            lines.append(f"flow: %{fate.node} -> {fate.escape} of {self.graph.name}")
        return lines

    def summary(self) -> None:
        bp, sizes = self.bp, self.inputs.sizes
        plan = bp.plan
        reused = len(bp.allocations) - bp.fresh_allocations()
        self.add(self.graph.loc, "summary",
                 f"{self.graph.name}: {len(plan.kernels)} kernel(s), {len(plan.libraries)} "
                 f"library call(s); {bp.fresh_allocations()} allocation(s) per call"
                 f" ({len(bp.allocations)} stored value(s), {reused} reuse(s))")
        plan_peak, eager = bp.peak_bytes(sizes), bp.numpy_peak_bytes(sizes)
        details = ["why: plan = buffers live at once in launch order (arguments excluded); "
                   "NumPy eager = a model: one array per NumPy call, freed after its last "
                   "reader, temporaries elided as NumPy does"]
        message = f"peak memory {plan_peak:,} B (plan) vs {eager:,} B (NumPy eager model)"
        if self.inputs.numpy_measured is not None:
            message += f", {self.inputs.numpy_measured:,} B (NumPy measured, tracemalloc)"
        self.add(self.graph.loc, "peak", message, details)

    def kernels(self) -> None:
        """Per kernel: what LLVM did (remarks, calls, allocas, counts) and GPU resources."""
        locs = {k.name: self.kernel_loc(k.nodes) for k in self.bp.plan.own_kernels}
        for facts in self.inputs.llvm:
            loc = locs.get(facts.kernel, self.graph.loc)
            for remark in facts.remarks:
                self.add(loc, "llvm", f"{facts.kernel}: {remark}")
            for call in facts.calls:
                self.add(loc, "llvm", f"{facts.kernel}: call to {call} not inlined")
            if facts.allocas:
                self.add(loc, "llvm", f"{facts.kernel}: {facts.allocas} alloca(s) left")
            counts = ", ".join(f"{n} {a} -> {b}" for n, a, b in facts.counts)
            self.add(loc, "llvm", f"{facts.kernel}: O3 redundancy (before -> after): {counts}",
                     level=2)
        for name, res in sorted(self.inputs.gpu.items()):
            self.add(locs.get(name, self.graph.loc), "gpu",
                     f"{name}: {self.inputs.gpu_arch} {res.registers} registers, "
                     f"{res.spill_stores} B spill stores, {res.spill_loads} B spill loads")

    # -- loop regions ------------------------------------------------------------------------
    def regions(self, plan: Plan, names: Mapping[int, str] | None = None) -> None:
        """Per loop (nested ones too): how it runs, what it carries and where, the scratch
        arrays it writes (in place or copied, and why), what it allocates per iteration;
        then each loop or branch of the trace that runs as Python, and why."""
        graph = plan.graph
        shown = param_names(graph, names)
        for kind, index in plan.steps:
            if kind == "region":
                self.region(plan, plan.regions[index], shown)
        for ref, taken, where in graph.decisions:   # a Python if on int arguments
            self.add(_loc_of(where) or graph.loc, "decision",
                     f"if {shown[ref]} was {taken} here: the trace holds the "
                     f"{'true' if taken else 'false'} branch; a call deciding otherwise traces "
                     "again (a recompile, with this place as its reason)",
                     ["why: a Python if on Python scalars of the call guards on the decision, "
                      "not on the values"])
        for kind, where, why in graph.declined:
            loc = _loc_of(where)
            at = f"{os.path.basename(loc.file)}:{loc.line}" if loc else where
            loc = loc or graph.loc
            how = "unrolled into the trace" if kind == "loop" else "traced as it went"
            self.add(loc, "python-loop", f"{kind} at {at} runs as Python while tracing "
                     f"({how}): {why}",
                     ["why: it cannot be a region and keep Python's meaning, so Python ran "
                      "it while tracing; the trace holds what it did for these arguments"])

    def region(self, plan: Plan, call: RegionCall, shown: Sequence[str]) -> None:
        graph, region, body = plan.graph, call.region, call.body
        node = graph.node(call.node)
        loc = node.loc
        at = f"loop at {str(loc).rsplit(':', 1)[0]}" if loc else "loop"
        head = region_head(node, graph, shown).rstrip(":")
        inner = body_names(node, graph, shown)
        native = bool(getattr(call, "native", None))
        kernels = [k.name for k in body.own_kernels] if hasattr(body, "own_kernels") else []
        if native:
            self.add(loc, "loop", f"{at} ({head}) compiled into one native loop",
                     ["why: its body is scalar code: the whole loop is one compiled function"],
                     node.id)
        else:
            why = ["why: each iteration runs the body's plan, compiled once with the "
                   "function's; nothing is traced or planned per iteration"]
            if region.kind == "while":
                why.append("why: the condition is one scalar read back per iteration")
            if kernels:
                why.append(f"flow: per iteration {', '.join(kernels)}")
            self.add(loc, "loop", f"{at} ({head}) runs as a host loop of "
                     f"{step_counts(body)} per iteration", why, node.id)
        lead = 1 if region.kind == "for" else 0
        where = "in a register" if native else "in memory"
        for j, name in enumerate(region.names):
            type_ = self.rename(str(body.graph.params[lead + j].type))
            self.add(loc, "carried", f"{at}: {name} is carried: {type_} {where}",
                     [f"why: {name} is rebound in the body and read by the next iteration; "
                      + ("a native loop keeps it in a register" if native else
                         "a host loop passes each iteration's value to the next as an array")],
                     node.id)
            if j in region.copied:
                self.add(loc, "scratch", f"{at}: {name} is a scratch array the loop updates in "
                         f"place: copied once before the loop, {type_}",
                         [f"why: {name} is computed before the loop and updated in place "
                          "(``+=``, ``out=``) by the body: the loop writes its own copy at "
                          "every iteration, which is the array after the loop"], node.id)
        written = written_params(region.body)
        for k in range(len(region.carried), len(region.sources)):
            if lead + k not in written:
                continue
            self.scratch(plan, call, k, inner[lead + k], at, loc)
        nested = _Writer(plan_buffers(body), self.inputs, param_names(body.graph, inner))
        if native:   # one kernel: its body's buffer plan is the host loop's, not run
            self.add(loc, "iteration", f"{at}: no allocation per iteration",
                     ["why: the native loop keeps its values in registers"], node.id)
        else:
            self.per_iteration(region, nested, at, loc, node.id)
        for fate in nested.bp.fates:   # -m -m: what the body's values became
            nested.value(fate)
        self.facts += [dataclasses.replace(f, message=f"{at}: in the body: {f.message}",
                                           level=2) for f in nested.facts
                       if f.kind not in ("heap", "escapes", "loop")]
        self.regions(body, inner)

    def scratch(self, plan: Plan, call: RegionCall, k: int, name: str, at: str,
                loc: SourceLoc | None) -> None:
        """An array the loop writes into: the caller's (in place) or a scratch array (its
        own buffer, or copied once before the loop: ``Region.private``)."""
        graph, region = plan.graph, call.region
        kind, value = region.sources[k]
        operand = graph.node(call.inputs[value]) if kind == "input" else None
        if operand is None:
            return
        type_ = self.rename(str(operand.type))
        param = operand.attr("param") if operand.op is Op.WRITE else None
        if k not in region.private and (operand.op is Op.ARG or param is not None):
            self.add(loc, "in-place", f"{at}: {name} is written in place: {type_}, the "
                     "caller's array (no copy, no allocation)",
                     ["why: an argument the body writes into: NumPy writes the caller's "
                      "array, so does the loop"], operand.id)
            return
        made = describe_node(graph, operand, param_names(graph))
        where = f" at {operand.loc}" if operand.loc else ""
        if k in region.private:
            size = self.size_or_formula(operand)
            self.add(loc, "scratch", f"{at}: {name} ({made}{where}) is a scratch array the "
                     f"loop writes: copied once before the loop, {type_} {size}",
                     ["why: a value computed before the loop that the body writes into: "
                      "the loop works on its own copy (the value before the loop is left "
                      "as it was), which is the array after the loop"], operand.id)
        else:
            self.add(loc, "scratch", f"{at}: {name} ({made}{where}) is a scratch array "
                     f"written in place: {type_} (no copy)",
                     ["why: nothing reads the value before the loop's writes"], operand.id)

    def per_iteration(self, region: Region, nested: _Writer, at: str,
                      loc: SourceLoc | None, node: int) -> None:
        """What the body's plan allocates each iteration (there should be nothing), each
        with why the body's plan stores it."""
        plan, graph = nested.bp, nested.bp.graph
        fresh = [a for a in plan.allocations if a.reuses is None]
        if not fresh:
            self.add(loc, "iteration", f"{at}: no allocation per iteration", node=node)
            return
        for allocation in fresh:
            value = graph.node(allocation.node)
            fate = plan.fate(allocation.node)
            text = self.rename_sizes(describe_node(graph, value, nested.shown))
            carried = [region.names[j] for j, o in enumerate(graph.outputs)
                       if o == allocation.node and j < len(region.names)]
            what = f" (the next {carried[0]})" if carried else (
                " (the next condition)" if allocation.node in graph.outputs else "")
            where = f" at {value.loc}" if value.loc else ""
            why = (["why: a carried value: the next iteration reads it (a host loop "
                    "passes it as an array)"] if what else
                   [f"why: {reason}" for reason in nested.why_stored(fate)])
            self.add(value.loc or loc, "iteration",
                     f"{at}: allocates per iteration: {text}{what}{where}: "
                     f"{self.rename(str(value.type))} {self.size_or_formula(value)}, "
                     f"written by {fate.writer}", why, allocation.node)

    def size_or_formula(self, node: Node) -> str:
        """``8·n bytes (128 B here)``, or the formula alone when the size varies."""
        try:
            here = f" ({value_bytes(node, self.inputs.sizes):,} B here)"
        except KeyError:   # a size of the body that changes per iteration (x[:i])
            here = ""
        return f"{self.rename(bytes_formula(node))} bytes{here}"

    def kernel_loc(self, nodes: Sequence[int]) -> SourceLoc | None:
        located = [self.graph.node(n).loc for n in nodes if self.graph.node(n).loc]
        return min(located, key=lambda loc: (loc.line, loc.col)) if located else self.graph.loc


def report_facts(plan: BufferPlan, inputs: ReportInputs) -> list[Fact]:
    """Return every fact of the report, in report order (see the module docstring)."""
    writer = _Writer(plan, inputs)
    writer.summary()
    for fate in plan.fates:
        writer.value(fate)
    writer.kernels()
    writer.regions(plan.plan)
    order = {id(f): i for i, f in enumerate(writer.facts)}
    return sorted(writer.facts, key=lambda f: ((f.loc.line, f.loc.col) if f.loc else (0, 0),
                                               order[id(f)]))


def _loc_of(where: str) -> SourceLoc | None:
    """``f.py:12`` or ``f.py:12:8`` as a SourceLoc (None when it is not one)."""
    match = re.fullmatch(r"(.*?):(\d+)(?::(\d+))?", where)
    return SourceLoc(match[1], int(match[2]), int(match[3] or 0)) if match else None


def step_counts(plan: Plan) -> str:
    """``2 kernels, 1 library call, 1 loop``: what one run of a (body) plan runs."""
    counts = {"kernel": 0, "library": 0, "region": 0}
    for kind, _ in plan.steps:
        counts[kind] = counts.get(kind, 0) + 1
    words = {"kernel": "kernel", "library": "library call", "region": "loop"}
    text = [f"{n} {words[k]}{'s' if n != 1 else ''}" for k, n in counts.items() if n]
    return ", ".join(text) or "nothing"


def format_report(facts: Sequence[Fact], verbosity: int = 1) -> str:
    """Return the report text: ``file:line:col: message`` lines, reasons under them at 2."""
    lines = []
    for fact in facts:
        if fact.level > verbosity:
            continue
        where = f"{fact.loc}: " if fact.loc else ""
        lines.append(f"{where}{fact.message}")
        if verbosity >= 2:
            lines.extend(f"{where}  {detail}" for detail in fact.details)
    return "\n".join(lines) + "\n"


__all__ = ["Fact", "ReportInputs", "describe_node", "format_report", "report_facts",
           "step_counts"]
