"""The loop nest of one Kernel as LLVM IR: the public seam of the CPU renderer.

A kernel's loop nest has one *axis* per loop dimension (``kernel.rank`` of them, outermost
first): the first ``kernel.outer_rank`` are its outer loops, the rest its row loops (what a
reduction reduces over). The *bounds* are the loop sizes, arguments ``%n<d>`` of the loops
function; each buffer steps along axis ``d`` by its *stride* (``LoopNest.stride``: a
constant known at render time, or an argument read from ``meta``), kept as an element
offset per buffer (``None`` until a loop moves it, ``LoopNest.move``). The *body* at a
level is the kernel's instructions of that (level, phase), each through its rule
(``emit_level``); ``emit_loops`` walks the nest, the phases of a reduction one after
another at the outer rank (reset the phase's accumulators, its row loops, its outer-level
instructions). Every loop is ``loops.counted_loop``; a caller's own loops (the thread
partials, ``partials.py``) take a ``LoopBody`` callback the same way.

Vectors and remainders: the loops stay scalar and LLVM's loop vectoriser widens them (with
its own remainder loop); the loops function's ``noalias`` outputs spare it the overlap
checks. The one exception is a float sum NumPy adds pairwise (``Kernel.pairwise``): its
row loop is ``pairwise.emit_pairwise``, which keeps eight lanes in a ``<8 x T>`` and adds a
run's last ``n % 8`` elements one by one, as NumPy does.

Usage (``render.py``; ``partials.py`` declares the same function with more parameters)::

    fn, nest = LoopNest.declare(module, kernel, math, "k.loops")
    nest.emit_loops()
    nest.builder.ret_void()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import Op, rule_kind
from autojit.ir.zero_sign import zero_sign_blind
from autojit.lower_cpu.llvm_rules import LLVM_RULES, BodyContext, Rule, llvm_type, memory_type
from autojit.lower_cpu.loops import I64, PTR, VOID, LoopBody, advance, counted_loop, i64, load_slot
from autojit.lower_cpu.mathlib import MathCalls
from autojit.lower_cpu.pairwise import emit_pairwise
from autojit.lower_cpu.recur import Recurrence
from autojit.lower_cpu.reduce import Accumulator
from autojit.lower_cpu.scan import ScanAccumulator

__all__ = ["LoopBody", "LoopNest", "Offsets", "load_scalar", "read_arguments"]

#: one element offset per buffer (``None``: 0, no loop has moved it yet)
Offsets = list[ir.Value | None]
#: instructions that carry a value along the row loop, reset at each phase's start
_ACCUMULATORS = {Op.REDUCE: Accumulator, Op.SCAN: ScanAccumulator}


def _rule(ins: Instr, kind: str) -> Rule:
    """Return the LLVM rule of ``ins`` on operands of dtype ``kind``; InternalError (the
    CUDA renderer's words) when there is none."""
    rule = LLVM_RULES.get((ins.op, kind))
    if rule is None:
        raise InternalError.no_rule("LLVM", ins.op, ins.dtype)
    return rule


def _loops_param_types(kernel: Kernel) -> list[ir.Type]:
    """Return the loops function's parameter types: pointers, sizes, strides, scalars."""
    counts = len(kernel.buffers), kernel.rank + len(kernel.runtime_strides())
    return [PTR] * counts[0] + [I64] * counts[1] + [llvm_type(s.dtype) for s in kernel.scalars]


@dataclass
class LoopNest:
    """The loop nest being emitted: the loops function's arguments split by role, and the
    values emitted so far (by instruction id)."""

    kernel: Kernel
    builder: ir.IRBuilder
    math: MathCalls
    bases: list[ir.Value]          # buffer base pointers
    sizes: list[ir.Value]          # loop sizes (the bounds), outermost first
    runtime: list[ir.Value]        # runtime strides, in meta order
    scalars: list[ir.Value]
    values: dict[int, ir.Value] = field(default_factory=dict)
    dtypes: dict[int, np.dtype] = field(default_factory=dict)
    accumulators: dict[int, Accumulator | ScanAccumulator | Recurrence] = field(
        default_factory=dict)
    #: REDUCE id -> where its value goes now, inside a pairwise loop (``emit_pairwise``)
    pairwise_into: dict[int, Callable[[ir.Value], None]] = field(default_factory=dict)

    @classmethod
    def declare(cls, module: ir.Module, kernel: Kernel, math: MathCalls, name: str,
                extra: Sequence[ir.Type] = ()) -> tuple[ir.Function, LoopNest]:
        """Declare ``name``, an internal always-inlined function taking the kernel's buffers
        (outputs ``noalias`` unless aliased), loop sizes, runtime strides and scalars, then
        ``extra`` parameters; return it and a LoopNest at its entry, ready for the loops
        (constants, scalars and accumulators already in place)."""
        types = _loops_param_types(kernel)
        fn = ir.Function(module, ir.FunctionType(VOID, types + list(extra)), name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        nb, nm = len(kernel.buffers), kernel.rank + len(kernel.runtime_strides())
        args = list(fn.args)
        aliased = kernel.aliased_buffers
        for index, (arg, buf) in enumerate(zip(args, kernel.buffers, strict=False)):
            arg.name = buf.name
            if buf.is_output and index not in aliased:
                arg.add_attribute("noalias")
        for d, arg in enumerate(args[nb:nb + kernel.rank]):
            arg.name = f"n{d}"
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        nest = cls(kernel, builder, math, args[:nb], args[nb:nb + kernel.rank],
                   args[nb + kernel.rank:nb + nm], args[nb + nm:len(types)])
        nest._prepare()
        return fn, nest

    def _prepare(self) -> None:
        """Give constants and scalars their values, and every REDUCE/SCAN its accumulator,
        up front: both are used at several levels, and allocas belong in the entry block."""
        ctx = BodyContext(self.builder, self.math, self.kernel, [], self.scalars, self.dtypes)
        for ins in self.kernel.body:
            if ins.op in (Op.CONST, Op.LOAD_SCALAR):
                self.values[ins.id] = _rule(ins, ins.dtype.kind)(ctx, ins, [])
                self.dtypes[ins.id] = ins.dtype
        sources = {ins.id: ins.dtype for ins in self.kernel.body}
        blind = zero_sign_blind(self.kernel)
        for ins in self.kernel.body:
            if ins.op in _ACCUMULATORS:
                self.accumulators[ins.id] = _ACCUMULATORS[ins.op].allocate(
                    self.builder, ins, sources[ins.args[0]], sign_matters=ins.id not in blind)
            elif ins.op is Op.RECUR:   # its start is a constant or scalar: in values now
                self.accumulators[ins.id] = Recurrence.allocate(
                    self.builder, ins, self.values[ins.args[0]])

    # -- axes, strides, offsets -----------------------------------------------------------

    def start(self) -> Offsets:
        """Return every buffer's offset before any loop: all 0."""
        return [None] * len(self.kernel.buffers)

    def stride(self, buffer: int, dim: int) -> int | ir.Value:
        """Return a stride: an ``int`` known now, or the argument carrying it at run time."""
        static = self.kernel.buffers[buffer].strides[dim]
        if static is not None:
            return static
        return self.runtime[self.kernel.runtime_strides().index((buffer, dim))]

    def move(self, offsets: Offsets, dim: int, index: ir.Value) -> Offsets:
        """Return every buffer's offset advanced by ``index`` steps along axis ``dim``."""
        return [advance(self.builder, off, index, self.stride(buf, dim))
                for buf, off in enumerate(offsets)]

    def linear(self, indices: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
        """Return the C-order position of ``indices`` over the axes ``dims`` (0 for none)."""
        b = self.builder
        position: ir.Value = i64(0)
        for d in dims:
            scaled = b.mul(position, self.sizes[d], flags=("nsw",))
            position = b.add(scaled, indices[d], flags=("nsw",))
        return position

    def loop(self, dim: int, tag: str, body: LoopBody) -> None:
        """Emit ``for i in range(n<dim>)`` (``loops.counted_loop``, blocks ``loop<tag>``).
        A loop of length 1 known at render time (``loop_sizes[dim] == ()``) is its body at
        index 0, in the current block: what it computes dominates the code after it, as a
        pairwise sum's element code must (``pairwise_dim`` skips length-1 row axes, so the
        element at one position may sit inside such loops)."""
        if not self.kernel.loop_sizes[dim]:
            body(i64(0))
            return
        counted_loop(self.builder, self.sizes[dim], tag, body)

    def reductions(self, phase: int) -> list[Accumulator]:
        """Return the phase's REDUCE accumulators, in body order."""
        return [acc for acc in self.accumulators.values()
                if isinstance(acc, Accumulator) and acc.ins.phase == phase]

    # -- bodies and the walk --------------------------------------------------------------

    def emit_level(self, offsets: Offsets, level: Level, phase: int,
                   indices: list[ir.Value]) -> None:
        """Emit the instructions of one (level, phase), each through its (op, kind) rule."""
        b, kernel = self.builder, self.kernel
        chosen = [ins for ins in kernel.body if ins.level == level and ins.phase == phase
                  and ins.id not in self.values]
        if not chosen:
            return
        pointers = [
            b.gep(base, [off if off is not None else i64(0)], inbounds=True,
                  source_etype=memory_type(buf.dtype), name=f"{buf.name}.p")
            for base, off, buf in zip(self.bases, offsets, kernel.buffers, strict=True)
        ]
        ctx = BodyContext(b, self.math, kernel, pointers, self.scalars, self.dtypes)
        position = None
        for ins in chosen:
            if ins.op is Op.INDEX:   # the loop index of one dimension: arange, linspace, eye
                self.values[ins.id] = indices[ins.attr]
                ctx.dtypes[ins.id] = ins.dtype
                continue
            if ins.op is Op.SCAN:   # a running value, read in this same iteration
                self.values[ins.id] = self.accumulators[ins.id].update(
                    b, self.values[ins.args[0]])
                ctx.dtypes[ins.id] = ins.dtype
                continue
            if ins.op is Op.RECUR:   # the value carried into this iteration
                self.values[ins.id] = self.accumulators[ins.id].current(b)
                ctx.dtypes[ins.id] = ins.dtype
                continue
            if ins.op is Op.RECUR_SET:
                self.accumulators[ins.args[0]].set(b, self.values[ins.args[1]])
                continue
            if ins.op is Op.REDUCE and ins.id in self.pairwise_into:
                self.pairwise_into[ins.id](self.values[ins.args[0]])
                continue
            if ins.op is Op.REDUCE:
                if self.accumulators[ins.id].needs_position and position is None:
                    # the C-order position inside the row (for argmax/argmin)
                    position = self.linear(indices, range(kernel.outer_rank, kernel.rank))
                self.accumulators[ins.id].update(b, self.values[ins.args[0]], position)
                continue
            operand = ctx.dtypes[ins.args[0]] if ins.args else None
            rule = _rule(ins, rule_kind(ins.op, ins.dtype, operand))
            result = rule(ctx, ins, [self.values[a] for a in ins.args])
            if result is not None:
                self.values[ins.id] = result
            ctx.dtypes[ins.id] = ins.dtype

    def emit_loops(self, depth: int = 0, offsets: Offsets | None = None,
                   indices: list[ir.Value] | None = None, phase: int = -1) -> None:
        """Emit loop ``depth`` and everything inside it, advancing each buffer's offset
        (default: the whole nest). From the outer rank with ``phase`` >= 0: that phase's
        row loops only (the caller resets and reads its accumulators).

        At the outer rank, the phases follow one another: reset the phase's accumulators,
        run its row loops (depth ``outer_rank`` to ``rank``), then its outer-level
        instructions."""
        kernel, b = self.kernel, self.builder
        offsets = self.start() if offsets is None else offsets
        indices = [] if indices is None else indices
        if depth == kernel.outer_rank and phase < 0:
            for p in range(kernel.phases):
                for acc in self.accumulators.values():
                    if acc.ins.phase == p:
                        acc.reset(b)
                self.emit_loops(depth, offsets, indices, p)
                for acc in self.accumulators.values():
                    if acc.ins.phase == p:
                        self.values[acc.ins.id] = acc.result(b)
                        self.dtypes[acc.ins.id] = acc.ins.dtype
                self.emit_level(offsets, Level.OUTER, p, indices)
            return
        if depth == kernel.rank:
            self.emit_level(offsets, Level.ROW, max(phase, 0), indices)
            return

        def inner(index: ir.Value) -> None:
            self.emit_loops(depth + 1, self.move(offsets, depth, index), indices + [index],
                            phase)

        chunks = {chunk for i, chunk in kernel.pairwise
                  if self.accumulators[i].ins.phase == phase}
        if depth == kernel.pairwise_dim and chunks:
            self._emit_pairwise_rows(depth, offsets, indices, phase, chunks, inner)
            return
        self.loop(depth, str(depth) if phase < 0 else f"{depth}p{phase}", inner)

    def _emit_pairwise_rows(self, depth: int, offsets: Offsets, indices: list[ir.Value],
                            phase: int, chunks: set[int], inner: LoopBody) -> None:
        """Emit the row loops from ``depth`` in as one pairwise-summed run per row (or, with
        ``pairwise_from``, one run over this and the inner row loops)."""
        kernel, b = self.kernel, self.builder
        if len(chunks) > 1:
            raise InternalError(f"{kernel.name}: pairwise sums of one phase in chunks of "
                                "different sizes", Op.REDUCE)
        sums = [self.accumulators[i] for i, _ in kernel.pairwise
                if self.accumulators[i].ins.phase == phase]
        if kernel.pairwise_from is None:
            self._pairwise(self.sizes[depth], chunks.pop(), sums, inner)  # type: ignore
            return
        total: ir.Value = self.sizes[depth]   # one run over this and the inner row loops
        for d in range(depth + 1, kernel.rank):
            total = b.mul(total, self.sizes[d], flags=("nsw",))

        def spanning(position: ir.Value) -> None:
            """The element at C-order ``position`` of the run: its index per loop."""
            rest, found = position, []
            for d in range(kernel.rank - 1, depth, -1):
                found.insert(0, b.srem(rest, self.sizes[d]))
                rest = b.sdiv(rest, self.sizes[d])
            found.insert(0, rest)
            moved = list(offsets)
            for d, index in zip(range(depth, kernel.rank), found, strict=True):
                moved = self.move(moved, d, index)
            self.emit_loops(kernel.rank, moved, indices + found, phase)

        self._pairwise(total, chunks.pop(), sums, spanning)   # type: ignore

    def _pairwise(self, size: ir.Value, chunk: int, sums: list[Accumulator],
                  element: LoopBody) -> None:
        """Emit ``emit_pairwise`` over ``size`` positions, ``element(i)`` emitting one."""
        phase = sums[0].ins.phase
        element_code = [ins for ins in self.kernel.body
                        if ins.level == Level.ROW and ins.phase == phase]

        def visit(pos: ir.Value, into: Callable[[int], Callable[[ir.Value], None]]) -> None:
            saved = dict(self.values)
            self.pairwise_into.update({acc.ins.id: into(k) for k, acc in enumerate(sums)})
            element(pos)
            for acc in sums:
                del self.pairwise_into[acc.ins.id]
            self.values.clear()
            self.values.update(saved)

        emit_pairwise(self.builder, element_code, size, chunk, sums, visit)


def load_scalar(b: ir.IRBuilder, data: ir.Value, slot: int, kernel: Kernel,
                index: int) -> ir.Value:
    """Return scalar parameter ``index``, read through the pointer in ``data[slot]``."""
    param = kernel.scalars[index]
    where = load_slot(b, data, slot, PTR, f"{param.name}.ptr")
    value = b.load(where, typ=memory_type(param.dtype), align=param.dtype.itemsize)
    if param.dtype.kind == "b":
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0), name=param.name)
    return value


def read_arguments(b: ir.IRBuilder, kernel: Kernel, data: ir.Value, meta: ir.Value,
                   meta_name: Callable[[int], str]) -> list[ir.Value]:
    """Return the loops function's arguments read from an entry's ``(data, meta)``: the
    buffer bases, then the ``meta`` sizes and runtime strides (named ``meta_name(j)``),
    then the scalars (``void <name>(void **data, const int64_t *meta)``, ``render.py``)."""
    nb = len(kernel.buffers)
    bases = [load_slot(b, data, i, PTR, f"{buf.name}.base")
             for i, buf in enumerate(kernel.buffers)]
    metas = [load_slot(b, meta, j, I64, meta_name(j))
             for j in range(kernel.rank + len(kernel.runtime_strides()))]
    scalars = [load_scalar(b, data, nb + j, kernel, j) for j in range(len(kernel.scalars))]
    return bases + metas + scalars
