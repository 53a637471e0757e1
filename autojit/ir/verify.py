"""Structural checks of a Graph and a Kernel; raise VerifyError naming the bad value.

The pipeline runs them on every graph it plans (``fuse.plan``) and every kernel it plans
and lowers (``lower_cpu``, ``lower_gpu``) when checks are on: ``AUTOJIT_CHECKS=1``, read by
the config table at import and by ``reload_environment()``, which calls
:func:`set_checks`; the test suite turns them on. They are a switch of the process, not of
a call: a compiled kernel serves every call, whatever its options, and kernels are built
where no call's settings reach (the disk cache, calibration, ``autojit inspect``).
"""

from __future__ import annotations

import numpy as np

from autojit.errors import InternalError
from autojit.ir.graph import Graph
from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import OP_TABLE, REDUCE_KINDS, SCAN_KINDS, Op, OpGroup, reduce_result_dtype

_SAME_DTYPE_GROUPS = (OpGroup.UNARY, OpGroup.BINARY, OpGroup.COMPARE)


class VerifyError(InternalError):
    """The IR is malformed: a bug in autojit, never in the user's code."""


_checks = False   # AUTOJIT_CHECKS, set by the config table (set_checks)


def set_checks(on: bool) -> None:
    """Turn the pipeline's checks (``check_graph``, ``check_kernel``) on or off."""
    global _checks
    _checks = bool(on)


def checks_enabled() -> bool:
    """Return whether the pipeline verifies every graph and kernel (``AUTOJIT_CHECKS``)."""
    return _checks


def check_graph(graph: Graph) -> Graph:
    """Return ``graph``, verified first when checks are on (``verify_graph``)."""
    if _checks:
        verify_graph(graph)
    return graph


def check_kernel(kernel: Kernel) -> Kernel:
    """Return ``kernel``, verified first when checks are on (``verify_kernel``)."""
    if _checks:
        verify_kernel(kernel)
    return kernel


def verify_graph(graph: Graph) -> None:
    """Check ids are unique and topological, arities match and outputs exist."""
    seen: set[int] = set()
    for node in graph.nodes:
        info = OP_TABLE[node.op]
        if node.id in seen:
            raise VerifyError(f"%{node.id} defined twice")
        missing = [i for i in node.inputs if i not in seen]
        if missing:
            raise VerifyError(f"%{node.id} reads %{missing[0]} before it is defined")
        variadic = node.op is Op.REGION   # its operands are its body's sources
        if info.group is not OpGroup.LEAF and not variadic and len(node.inputs) != info.arity:
            raise VerifyError(f"%{node.id} {node.op.value} takes {info.arity} operands")
        if node.op is Op.ARG and not 0 <= node.attr("index", -1) < len(graph.params):
            raise VerifyError(f"%{node.id} reads a missing parameter")
        if node.op is Op.REGION:
            _verify_region(graph, node)
        if node.op is Op.CARRY and graph.node(node.inputs[0]).op is not Op.REGION:
            raise VerifyError(f"%{node.id} carry reads %{node.inputs[0]}, not a region")
        seen.add(node.id)
    for out in graph.outputs:
        if out not in seen:
            raise VerifyError(f"output %{out} is not defined")


def _verify_region(graph: Graph, node) -> None:
    """A REGION's sources name its inputs; its body has a parameter per source (and the
    index) and returns each carried value (and a while loop's condition)."""
    region = node.attr("region")
    if region is None or region.kind not in ("for", "while"):
        raise VerifyError(f"%{node.id} region without a for/while body")
    sources = (*region.bounds, *((region.first,) if region.first else ()), *region.sources)
    for kind, value in sources:
        if kind == "input" and not 0 <= value < len(node.inputs):
            raise VerifyError(f"%{node.id} region reads a missing input {value}")
    body = region.body
    index = 1 if region.kind == "for" else 0
    if len(body.params) - len(body.prologue) != index + len(region.sources):
        raise VerifyError(f"%{node.id} region body takes another number of parameters")
    results = len(region.carried) + (region.kind == "while")
    if len(body.outputs) != results:
        raise VerifyError(f"%{node.id} region body returns {len(body.outputs)} values, "
                          f"not {results}")
    verify_graph(body)


def _check_instruction_types(kernel: Kernel, ins, dtypes: dict[int, np.dtype]) -> None:
    info = OP_TABLE[ins.op]
    if not info.is_primitive:
        raise VerifyError(f"{kernel.name} %{ins.id}: {ins.op.value} is not a primitive")
    operand_dtypes = {dtypes[a] for a in ins.args}
    if info.group in _SAME_DTYPE_GROUPS and len(operand_dtypes) > 1:
        raise VerifyError(f"{kernel.name} %{ins.id}: mixed operand dtypes {operand_dtypes}")
    checked = ins.dtype if info.group is not OpGroup.COMPARE and not info.bool_result else None
    same_group = info.group in _SAME_DTYPE_GROUPS
    if checked is not None and same_group and operand_dtypes and operand_dtypes != {ins.dtype}:
        raise VerifyError(f"{kernel.name} %{ins.id}: result dtype differs from operands")
    if ins.dtype.kind not in info.primitive_kinds and info.group is not OpGroup.COMPARE:
        raise VerifyError(f"{kernel.name} %{ins.id}: {ins.op.value} on {ins.dtype}")
    if info.group is OpGroup.COMPARE and ins.dtype != np.dtype(bool):
        raise VerifyError(f"{kernel.name} %{ins.id}: comparison must give bool")


def _check_reduce(kernel: Kernel, ins, dtypes: dict[int, np.dtype]) -> None:
    kind = REDUCE_KINDS.get(ins.attr)
    if kind is None or ins.level != Level.ROW:
        raise VerifyError(f"{kernel.name} %{ins.id}: bad reduction {ins.attr} at {ins.level}")
    source = dtypes[ins.args[0]]
    expected = reduce_result_dtype(ins.attr, source)
    if source.kind not in kind.kinds or ins.dtype != expected:
        raise VerifyError(f"{kernel.name} %{ins.id}: reduce.{ins.attr} of {source}")


def _check_scan(kernel: Kernel, ins, dtypes: dict[int, np.dtype], scanned: set[int]) -> None:
    """A scan runs along the row of a row kernel, on a value no scan of its phase feeds."""
    kind = SCAN_KINDS.get(ins.attr)
    if kind is None or ins.level != Level.ROW or kernel.row_dims == 0:
        raise VerifyError(f"{kernel.name} %{ins.id}: bad scan {ins.attr} at {ins.level}")
    if ins.args[0] in scanned:
        raise VerifyError(f"{kernel.name} %{ins.id}: scan of a scan of the same phase")
    source = dtypes[ins.args[0]]
    if source.kind not in kind.kinds or ins.dtype != source:
        raise VerifyError(f"{kernel.name} %{ins.id}: scan.{ins.attr} of {source}")


def _check_recurrence(kernel: Kernel, ins, dtypes: dict[int, np.dtype],
                      positions: dict[int, tuple[str, int, bool]]) -> None:
    """A RECUR starts at a constant or scalar of its dtype in the row of a one-phase
    kernel of one row loop (``Kernel.sequential``); a RECUR_SET gives a RECUR of its row a
    value of its dtype."""
    bad = ins.level != Level.ROW or not kernel.sequential or kernel.phases != 1
    if ins.op is Op.RECUR:
        bad = bad or positions[ins.args[0]][0] != "any" or dtypes[ins.args[0]] != ins.dtype
    else:
        recur = kernel.body[ins.args[0]] if ins.args[0] < len(kernel.body) else None
        bad = bad or recur is None or recur.op is not Op.RECUR or dtypes[ins.args[1]] != \
            recur.dtype
    if bad:
        raise VerifyError(f"{kernel.name} %{ins.id}: bad {ins.op.value}")


def _check_position(kernel: Kernel, ins, positions: dict[int, tuple[str, int, bool]]) -> None:
    """A row value is visible only in its own phase's row loop; an outer value (or a
    reduction result) from the outer level of its phase on. Constants are visible anywhere."""
    for a in ins.args:
        level, phase, reduced = positions[a]
        if level == "any":
            continue
        if level == "recur":   # its current value in the row, its last one after it
            visible = ins.phase >= phase
        elif level == Level.ROW and not reduced:
            visible = ins.level == Level.ROW and ins.phase == phase
        else:
            visible = ins.phase > phase or (ins.level == Level.OUTER and ins.phase == phase)
        if not visible:
            raise VerifyError(f"{kernel.name} %{ins.id} at {ins.level}.{ins.phase} cannot "
                              f"read %{a} ({level}.{phase})")


def verify_kernel(kernel: Kernel) -> None:
    """Check SSA order, primitive-only bodies, dtype consistency and one store per output."""
    dtypes: dict[int, np.dtype] = {}
    positions: dict[int, tuple[str, int, bool]] = {}
    stored: list[int] = []
    reloads: list[Instr] = []
    scanned: set[int] = set()      # row values computed from a scan of their phase
    for ins in kernel.body:
        for a in ins.args:
            if a not in dtypes:
                raise VerifyError(f"{kernel.name} %{ins.id} reads undefined %{a}")
        if ins.op is Op.SELECT and dtypes[ins.args[0]] != np.dtype(bool):
            raise VerifyError(f"{kernel.name} %{ins.id}: select condition is not bool")
        if ins.op in (Op.LOAD, Op.STORE):
            buf = kernel.buffers[ins.attr]
            if ins.op is Op.STORE and not buf.is_output:
                raise VerifyError(f"{kernel.name} %{ins.id}: store to input {buf.name}")
            if ins.op is Op.LOAD and buf.is_output:   # a spilled value read back (fuse.plan)
                reloads.append(ins)
            if len(buf.strides) != kernel.rank:
                raise VerifyError(f"{kernel.name}: {buf.name} has wrong stride count")
        if ins.op is Op.STORE:
            stored.append(ins.attr)
            if dtypes[ins.args[0]] != kernel.buffers[ins.attr].dtype:
                raise VerifyError(f"{kernel.name}: store of wrong dtype to buffer {ins.attr}")
        elif ins.op is Op.REDUCE:
            _check_reduce(kernel, ins, dtypes)
        elif ins.op is Op.SCAN:
            _check_scan(kernel, ins, dtypes, scanned)
        elif ins.op in (Op.RECUR, Op.RECUR_SET):
            _check_recurrence(kernel, ins, dtypes, positions)
        elif ins.op not in (Op.LOAD, Op.LOAD_SCALAR, Op.CONST, Op.CAST, Op.SELECT, Op.INDEX):
            _check_instruction_types(kernel, ins, dtypes)
        _check_position(kernel, ins, positions)
        if ins.level == Level.ROW and ins.op is not Op.REDUCE and (
                ins.op is Op.SCAN or any(a in scanned for a in ins.args)):
            scanned.add(ins.id)
        anywhere = ins.op in (Op.CONST, Op.LOAD_SCALAR)
        level = "any" if anywhere else "recur" if ins.op is Op.RECUR else ins.level
        positions[ins.id] = (level, ins.phase, ins.op is Op.REDUCE)
        dtypes[ins.id] = np.dtype(ins.dtype)
    outputs = [i for i, b in enumerate(kernel.buffers) if b.is_output]
    if sorted(stored) != outputs:
        raise VerifyError(f"{kernel.name}: outputs {outputs} stored as {sorted(stored)}")
    _check_reloads(kernel, reloads)


def _check_reloads(kernel: Kernel, reloads: list[Instr]) -> None:
    """A load of an output buffer reads back a value an earlier phase stored into the same
    memory (another output buffer of the same value) and precedes the buffer's own store,
    in that store's row phase: each element is read before it is overwritten."""
    for load in reloads:
        buf = kernel.buffers[load.attr]
        store = next(i for i in kernel.body if i.op is Op.STORE and i.attr == load.attr)
        earlier = [i for i in kernel.body if i.op is Op.STORE and i.phase < load.phase
                   and i.level == Level.ROW and kernel.buffers[i.attr].value == buf.value]
        if (load.level != Level.ROW or store.level != Level.ROW or store.phase != load.phase
                or store.id < load.id or not earlier):
            raise VerifyError(f"{kernel.name} %{load.id}: load of output {buf.name} is not "
                              "a spilled value read back before its final store")
