"""Stable, diffable text forms of a Graph and a Kernel (golden tests pin them).

Graph::

    trace f(a: f64[n0], b: f64[n0]):          # source: model.py:10:0
      %2 = sub %0 %1 : f64[n0]                # model.py:11:11
      return %2

Kernel::

    kernel k0_sub(in0: f64[n0] strides (1), out0: f64[n0] strides (1)) loop [n0]:
      %0 = load in0 : f64
      store out0 %3
"""

from __future__ import annotations

from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.types import short_name

_COMMENT_COLUMN = 44


def _with_comment(text: str, comment: str) -> str:
    return f"{text.ljust(_COMMENT_COLUMN - 1)} # {comment}" if comment else text


def _node_operands(node: Node, graph: Graph) -> str:
    if node.op is Op.ARG:
        return graph.params[node.attr("index")].name
    if node.op in (Op.CONST, Op.FILL):
        return repr(node.attr("value"))
    if node.op is Op.SIZE:
        return "*".join(node.attr("symbols"))
    operands = " ".join(f"%{i}" for i in node.inputs)
    if node.op is Op.VIEW:
        name, argument = node.attr("step")
        return f"{operands} {name}{argument}"
    if node.op is Op.REDUCE:
        keep = " keepdims" if node.attr("keepdims") else ""
        return f"{operands} axes={node.attr('axes')}{keep}"
    if node.op is Op.SCAN:
        return f"{operands} axes={node.attr('axes')}"
    if node.op is Op.CARRY:
        return f"{operands}[{node.attr('index')}]"
    if node.op is Op.WRITE and node.attr("region"):
        return f"{operands} (in the loop)"
    return operands


def _source(source: tuple, node: Node, graph: Graph) -> str:
    """A region operand: a parameter by name, another value as ``%id``, a constant."""
    kind, value = source
    if kind != "input":
        return repr(value)
    operand = graph.node(node.inputs[value])
    if operand.op is Op.ARG:
        return graph.params[operand.attr("index")].name
    return f"%{operand.id}"


def _region_lines(node: Node, graph: Graph) -> list[str]:
    """``loop %t in [0, steps) carried (acc):`` then the body's graph, indented."""
    region = node.attr("region")
    carried = ", ".join(region.names)
    operands = ", ".join(_source(s, node, graph) for s in region.sources)
    if region.kind == "for":
        start, stop, step = (_source(b, node, graph) for b in region.bounds)
        by = "" if step == "1" else f" step {step}"
        head = f"loop %t in [{start}, {stop}){by} carried ({carried}) from ({operands}):"
    else:
        head = (f"while {_source(region.first, node, graph)} carried ({carried}) "
                f"from ({operands}):")
    body = format_graph(region.body).splitlines()
    return [f"  %{node.id} = {head}"] + [f"    {line}" for line in body]


def _node_name(node: Node) -> str:
    if node.op in (Op.REDUCE, Op.SCAN):
        return f"{node.op.value}.{node.attr('kind')}"
    return f"cast<{short_name(node.type.dtype)}>" if node.op is Op.CAST else node.op.value


def format_graph(graph: Graph) -> str:
    """Return the graph's text form (see module docstring)."""
    arguments = graph.params[:len(graph.params) - len(graph.prologue)]
    params = ", ".join(f"{p.name}: {p.type}" for p in arguments)
    head = f"trace {graph.name}({params}):"
    lines = [_with_comment(head, f"source: {graph.loc}" if graph.loc else "")]
    for step, param in zip(graph.prologue, graph.params[len(arguments):]):
        operands = ", ".join(graph.params[v].name if kind == "ref" else repr(v)
                             for kind, v in step.operands)
        lines.append(f"  {param.name} = python {step.op}({operands}) : {step.result_type}")
    for node in graph.nodes:
        if node.op is Op.REGION:
            region_lines = _region_lines(node, graph)
            region_lines[0] = _with_comment(region_lines[0], str(node.loc) if node.loc else "")
            lines += region_lines
            continue
        text = f"  %{node.id} = {_node_name(node)} {_node_operands(node, graph)} : {node.type}"
        lines.append(_with_comment(text, str(node.loc) if node.loc else ""))
    for symbol, value in graph.guards:
        lines.append(f"  guard {symbol} == {value}")
    for symbol, ref in graph.scalar_dims:   # sizes Python ints of the call give
        lines.append(f"  size {symbol} = {graph.params[ref].name}")
    for ref, taken, where in graph.decisions:
        lines.append(f"  decision {graph.params[ref].name} is {taken}  # {where}")
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
