"""Stable, diffable text forms of a Graph and a Kernel (golden tests pin them).

Graph::

    trace f(a: f64[n0], b: f64[n0]):          # source: model.py:10:0
      %2 = sub %0 %1 : f64[n0]                # model.py:11:11
      return %2

A loop region, in the user's names, its body indented (``ir.region``)::

      %4 = loop i in [0, b.shape[0]) carried (), in place (x), reads (L, b): # f.py:13:0
        trace for_body(i: i64[], L: f64[n0,n1], b: f64[n2], x: f64[n2]):
          %4 = view %0[i, :i] : f64[n3]           # f.py:14:24
          ...
      %5 = carry %4[0] (x after the loop) : f64[n2]

Kernel::

    kernel k0_sub(in0: f64[n0] strides (1), out0: f64[n0] strides (1)) loop [n0]:
      %0 = load in0 : f64
      store out0 %3
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.region import Region
from autojit.ir.types import short_name
from autojit.ir.views import ScalarRef

_COMMENT_COLUMN = 44


def _with_comment(text: str, comment: str) -> str:
    return f"{text.ljust(_COMMENT_COLUMN - 1)} # {comment}" if comment else text


def _node_operands(node: Node, graph: Graph, shown: Sequence[str]) -> str:
    if node.op is Op.ARG:   # a host value also says what made it: ``host0 (b.shape[0])``
        index = node.attr("index")
        name = graph.params[index].name
        host = index >= len(graph.params) - len(graph.prologue)
        return f"{name} ({shown[index]})" if host and shown[index] != name else shown[index]
    if node.op in (Op.CONST, Op.FILL):
        return repr(node.attr("value"))
    if node.op is Op.SIZE:
        return "*".join(node.attr("symbols"))
    operands = " ".join(f"%{i}" for i in node.inputs)
    if node.op is Op.VIEW:
        name, argument = node.attr("step")
        if name == "getitem" and _has_ref(argument):   # x[i, :i]: by the user's names
            return f"{operands}[{', '.join(_index_text(p, shown) for p in argument)}]"
        return f"{operands} {name}{argument}"
    if node.op is Op.REDUCE:
        keep = " keepdims" if node.attr("keepdims") else ""
        return f"{operands} axes={node.attr('axes')}{keep}"
    if node.op is Op.SCAN:
        return f"{operands} axes={node.attr('axes')}"
    if node.op is Op.CARRY:
        index = node.attr("index")
        names = carry_names(graph.node(node.inputs[0]).attr("region"))
        name = names[index] if index < len(names) else ""
        return f"{operands}[{index}]" + (f" ({name} after the loop)" if name else "")
    if node.op is Op.WRITE and node.attr("region"):
        return f"{operands} (in the loop)"
    return operands


def carry_names(region: Region) -> list[str]:
    """The user's name of each CARRY index: the carried values, then the scratch arrays
    the loop wrote into (``Region.private``); ``""`` where unknown."""
    captured = list(region.captured_names)
    count = len(region.carried)
    return list(region.names) + [captured[k - count] if 0 <= k - count < len(captured)
                                 else "" for k in region.private]


#: Python's spelling of the host prologue's operators, to name a bound as the user wrote it
_HOST_SYNTAX: dict[str, str] = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "mod": "{} % {}", "truediv": "{} / {}", "neg": "-{}", "dim": "{}.shape[{}]",
    "int": "int({})", "float": "float({})", "abs": "abs({})", "max": "max({}, {})",
    "min": "min({}, {})", "range_len": "len(range({}))", "gt": "{} > {}", "lt": "{} < {}",
    "ge": "{} >= {}", "le": "{} <= {}", "eq": "{} == {}", "ne": "{} != {}",
}


def param_names(graph: Graph, names: Mapping[int, str] | None = None) -> list[str]:
    """How a reader names each parameter: ``names`` where given (a loop body's index and
    carried values by the user's names), an argument by its name, a host prologue value by
    the expression that made it (``b.shape[0]``, ``n - 1``) when it is short."""
    names = names or {}
    shown = [names.get(k) or p.name for k, p in enumerate(graph.params)]
    first = len(graph.params) - len(graph.prologue)
    for j, step in enumerate(graph.prologue):
        syntax = _HOST_SYNTAX.get(step.op)
        operands = [shown[v] if kind == "ref" else repr(v) for kind, v in step.operands]
        if syntax is None or syntax.count("{}") != len(operands) or step.op == "dim" and (
                step.operands[0][0] != "ref"):
            continue
        operands = [f"({o})" if " " in o and step.op != "range_len" else o for o in operands]
        text = syntax.format(*operands)
        if len(text) <= 40 and first + j not in names:
            shown[first + j] = text
    return shown


def _has_ref(key: object) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, ScalarRef) or isinstance(p, slice) and any(
        isinstance(v, ScalarRef) for v in (p.start, p.stop, p.step)) for p in parts)


def _index_text(part: object, shown: Sequence[str]) -> str:
    """One index of a view as Python writes it: ``i``, ``:i``, ``1:-1``, ``...``."""
    if isinstance(part, ScalarRef):
        return shown[part.index]
    if isinstance(part, slice):
        start, stop, step = ("" if v is None else _index_text(v, shown)
                             for v in (part.start, part.stop, part.step))
        return f"{start}:{stop}" + (f":{step}" if step else "")
    if part is Ellipsis:
        return "..."
    return "None" if part is None else repr(part)


def _source(source: tuple, node: Node, graph: Graph, shown: Sequence[str]) -> str:
    """A region operand: a parameter by name, another value as ``%id``, a constant."""
    kind, value = source
    if kind != "input":
        return repr(value)
    operand = graph.node(node.inputs[value])
    if operand.op is Op.ARG:
        return shown[operand.attr("index")]
    return f"%{operand.id}"


def body_names(node: Node, graph: Graph, shown: Sequence[str]) -> dict[int, str]:
    """The names of a REGION's body parameters as the user wrote them: the loop index, the
    carried values, the captured ones (else what the loop passes them: ``alpha``, ``%4``)."""
    region = node.attr("region")
    lead = 1 if region.kind == "for" else 0
    names = {0: region.index_name} if lead and region.index_name else {}
    given = list(region.names) + list(region.captured_names)
    for k, source in enumerate(region.sources):
        name = given[k] if k < len(given) else ""
        names[lead + k] = name or _source(source, node, graph, shown)
    return names


def written_params(body: Graph) -> set[int]:
    """The body parameters the body writes into (in place)."""
    return {n.attr("param") for n in body.nodes if n.op is Op.WRITE and n.attr("param")
            is not None}


def region_head(node: Node, graph: Graph, shown: Sequence[str]) -> str:
    """``loop i in [0, n) carried (acc) from (%4), in place (u), reads (alpha):``: the
    user's names for the index, the bounds, what the loop carries and what it reads."""
    region = node.attr("region")
    lead = 1 if region.kind == "for" else 0
    inner = body_names(node, graph, shown)
    count = len(region.carried)
    carried = ", ".join(inner[lead + k] for k in range(count))
    initial = ", ".join(_source(s, node, graph, shown) for s in region.carried)
    written = written_params(region.body)
    in_place = [inner[lead + k] for k in range(count, len(region.sources))
                if lead + k in written]
    reads = [inner[lead + k] for k in range(count, len(region.sources))
             if lead + k not in written]
    if region.kind == "for":
        start, stop, step = (_source(b, node, graph, shown) for b in region.bounds)
        by = "" if step == "1" else f" step {step}"
        head = f"loop {region.index_name or '%t'} in [{start}, {stop}){by}"
    else:
        head = f"while {_condition(region, inner) or _source(region.first, node, graph, shown)}"
    head += f" carried ({carried}) from ({initial})" if count else " carried ()"
    head += f", in place ({', '.join(in_place)})" if in_place else ""
    head += f", reads ({', '.join(reads)})" if reads else ""
    return head + ":"


#: comparisons a while condition is written with, as Python spells them
_COMPARE = {Op.GT: ">", Op.LT: "<", Op.GE: ">=", Op.LE: "<=", Op.EQ: "==", Op.NE: "!="}


def _condition(region: Region, inner: Mapping[int, str]) -> str:
    """A while loop's condition as the user wrote it (``err > tol``) when the body's next
    condition compares carried values, captured ones and constants; else ``""``."""
    body = region.body
    if not body.outputs:
        return ""
    cond = body.node(body.outputs[-1])
    if cond.op not in _COMPARE or len(cond.inputs) != 2:
        return ""
    carried = {o: j for j, o in enumerate(body.outputs[:-1])}
    sides = []
    for i in cond.inputs:
        operand = body.node(i)
        if i in carried and carried[i] < len(region.names):
            sides.append(region.names[carried[i]])
        elif operand.op is Op.ARG and inner.get(operand.attr("index")):
            sides.append(inner[operand.attr("index")])
        elif operand.op is Op.CONST:
            sides.append(repr(operand.attr("value")))
        else:
            return ""
    return f"{sides[0]} {_COMPARE[cond.op]} {sides[1]}"


def _region_lines(node: Node, graph: Graph, shown: Sequence[str]) -> list[str]:
    """``loop %t in [0, steps) carried (acc):`` then the body's graph, indented."""
    region = node.attr("region")
    body = format_graph(region.body, body_names(node, graph, shown)).splitlines()
    return [f"  %{node.id} = {region_head(node, graph, shown)}"] + [f"    {line}"
                                                                   for line in body]


def _node_name(node: Node) -> str:
    if node.op in (Op.REDUCE, Op.SCAN):
        return f"{node.op.value}.{node.attr('kind')}"
    return f"cast<{short_name(node.type.dtype)}>" if node.op is Op.CAST else node.op.value


def format_graph(graph: Graph, names: Mapping[int, str] | None = None) -> str:
    """Return the graph's text form (see module docstring); ``names`` renames parameters
    (a loop body's, by the user's names: ``body_names``)."""
    arguments = graph.params[:len(graph.params) - len(graph.prologue)]
    shown = param_names(graph, names)
    header = shown[:len(arguments)]
    params = ", ".join(f"{n}: {p.type}" for n, p in zip(header, arguments))
    head = f"trace {graph.name}({params}):"
    lines = [_with_comment(head, f"source: {graph.loc}" if graph.loc else "")]
    for step, param in zip(graph.prologue, graph.params[len(arguments):]):
        operands = ", ".join(graph.params[v].name if kind == "ref" else repr(v)
                             for kind, v in step.operands)
        lines.append(f"  {param.name} = python {step.op}({operands}) : {step.result_type}")
    for node in graph.nodes:
        if node.op is Op.REGION:
            region_lines = _region_lines(node, graph, shown)
            region_lines[0] = _with_comment(region_lines[0], str(node.loc) if node.loc else "")
            lines += region_lines
            continue
        text = f"  %{node.id} = {_node_name(node)} {_node_operands(node, graph, shown)} : " \
            f"{node.type}"
        lines.append(_with_comment(text, str(node.loc) if node.loc else ""))
    for symbol, value in graph.guards:
        lines.append(f"  guard {symbol} == {value}")
    for symbol, ref in graph.scalar_dims:   # sizes Python ints of the call give
        lines.append(f"  size {symbol} = {graph.params[ref].name}")
    for ref, taken, where in graph.decisions:
        lines.append(f"  decision {shown[ref]} is {taken}  # {where}")
    outs = ", ".join(f"%{i}" for i in graph.outputs)
    lines.append(f"  return ({outs})" if graph.output_tuple else f"  return {outs}")
    return "\n".join(lines) + "\n"


def _size(product: tuple[str, ...]) -> str:
    return "*".join(product) if product else "1"


def format_kernel(kernel: Kernel) -> str:
    """Return the kernel's text form (see module docstring)."""
    shape = ",".join(_size(p) for p in kernel.loop_sizes)
    params = [
        f"{b.name}: {short_name(b.dtype)}[{shape}] strides "
        f"({','.join('?' if s is None else str(s) for s in b.strides)})"
        for b in kernel.buffers
    ] + [f"{s.name}: {short_name(s.dtype)}" for s in kernel.scalars]
    rows = f" rows {kernel.row_dims} phases {kernel.phases}" if kernel.row_dims else ""
    lines = [f"kernel {kernel.name}({', '.join(params)}) loop [{shape}]{rows}:"]
    for ins in kernel.body:
        where = f"  @{ins.level}.{ins.phase}" if kernel.row_dims else ""
        if ins.op is Op.STORE:
            lines.append(f"  store {kernel.buffers[ins.attr].name} %{ins.args[0]}{where}")
            continue
        if ins.op is Op.LOAD:
            operands = kernel.buffers[ins.attr].name
        elif ins.op is Op.LOAD_SCALAR:
            operands = kernel.scalars[ins.attr].name
        elif ins.op is Op.CONST:
            operands = repr(ins.attr)
        else:
            operands = " ".join(f"%{a}" for a in ins.args)
        name = f"cast<{short_name(ins.dtype)}>" if ins.op is Op.CAST else ins.op.value
        if ins.op in (Op.REDUCE, Op.SCAN):
            name = f"{ins.op.value}.{ins.attr}"
        lines.append(f"  %{ins.id} = {name} {operands} : {short_name(ins.dtype)}{where}")
    return "\n".join(lines) + "\n"
