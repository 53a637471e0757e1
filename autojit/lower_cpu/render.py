"""Render a Kernel as an LLVM IR module; each instruction goes through ``rules.LLVM_RULES``.

Float sums NumPy adds pairwise (``Kernel.pairwise``) replace the innermost row loop (or,
with ``pairwise_from``, the row loops from there in) by ``_emit_pairwise``: NumPy's
``pairwise_sum`` tree over the same positions in the same order, so single-threaded
results are NumPy's bit for bit.

Two functions per kernel. The exported one follows the calling convention
``void <name>(void **data, const int64_t *meta)``: it reads every pointer, size, runtime
stride and scalar once, then calls the loop nest, an internal ``alwaysinline`` function
whose output pointers are ``noalias`` (outputs are always freshly allocated, so they
never alias an input). Inlining turns that promise into alias metadata, which lets the
loop vectoriser skip runtime overlap checks. Sample (``out0 = in0 + 1.0``, rank 1)::

    define internal void @"k.loops"(ptr %"in0", ptr noalias %"out0", i64 %"n0")
        alwaysinline nounwind {
    entry:
      %".5" = icmp sgt i64 %"n0", 0
      br i1 %".5", label %"loop0", label %"exit0"
    loop0:
      %"i0" = phi  i64 [0, %"entry"], [%"i0.next", %"loop0"]
      %"in0.p" = getelementptr inbounds double, ptr %"in0", i64 %"i0"
      %"out0.p" = getelementptr inbounds double, ptr %"out0", i64 %"i0"
      %".7" = load double, ptr %"in0.p", align 8
      %".8" = fadd double %".7", 0x3ff0000000000000
      store double %".8", ptr %"out0.p", align 8
      %"i0.next" = add nuw nsw i64 %"i0", 1
      %".10" = icmp slt i64 %"i0.next", %"n0"
      br i1 %".10", label %"loop0", label %"exit0"
    exit0:
      ret void
    }
    define void @"k"(ptr %"data", ptr %"meta") nounwind {
    entry:
      %".4" = getelementptr inbounds ptr, ptr %"data", i64 0
      %"in0.base" = load ptr, ptr %".4", align 8
      ...
      %"n0" = load i64, ptr %".6", align 8
      call void @"k.loops"(ptr %"in0.base", ptr %"out0.base", i64 %"n0")
      ret void
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import OP_TABLE, Op
from autojit.ir.verify import check_kernel
from autojit.ir.zero_sign import zero_sign_blind
from autojit.lower_cpu.mathlib import MathCalls
from autojit.lower_cpu.reduce import Accumulator
from autojit.lower_cpu.rules import (
    I64,
    LLVM_RULES,
    BodyContext,
    Rule,
    llvm_rule_gaps,
    llvm_type,
    memory_type,
    rule_kind,
)
from autojit.lower_cpu.scan import ScanAccumulator

__all__ = ["llvm_rule_gaps", "render_llvm"]

PTR = ir.PointerType()
#: instructions that carry a value along the row loop, reset at each phase's start
_ACCUMULATORS = {Op.REDUCE: Accumulator, Op.SCAN: ScanAccumulator}
VOID = ir.VoidType()


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


@dataclass
class _Nest:
    """The loop nest being emitted: the loops function's arguments, split by role."""

    kernel: Kernel
    builder: ir.IRBuilder
    math: MathCalls
    bases: list[ir.Value]          # buffer base pointers
    sizes: list[ir.Value]          # loop sizes, outermost first
    runtime: list[ir.Value]        # runtime strides, in meta order
    scalars: list[ir.Value]
    values: dict[int, ir.Value] = field(default_factory=dict)
    dtypes: dict[int, np.dtype] = field(default_factory=dict)
    accumulators: dict[int, Accumulator | ScanAccumulator] = field(default_factory=dict)
    #: REDUCE id -> where its value goes now, inside a pairwise loop (``_emit_pairwise``)
    pairwise_into: dict[int, Callable[[ir.Value], None]] = field(default_factory=dict)

    def stride(self, buffer: int, dim: int) -> int | ir.Value:
        """Return a stride: an ``int`` known now, or the argument carrying it at run time."""
        static = self.kernel.buffers[buffer].strides[dim]
        if static is not None:
            return static
        return self.runtime[self.kernel.runtime_strides().index((buffer, dim))]


def _loops_param_types(kernel: Kernel) -> list[ir.Type]:
    """Return the loops function's parameter types: pointers, sizes, strides, scalars."""
    counts = len(kernel.buffers), kernel.rank + len(kernel.runtime_strides())
    return [PTR] * counts[0] + [I64] * counts[1] + [llvm_type(s.dtype) for s in kernel.scalars]


def _advance(b: ir.IRBuilder, offset: ir.Value | None, index: ir.Value,
             stride: int | ir.Value) -> ir.Value | None:
    """Return ``offset + index * stride`` (``None`` stands for 0); offsets are in elements
    inside one allocation, so the arithmetic cannot overflow (``nsw``)."""
    if isinstance(stride, int) and stride == 0:
        return offset
    if isinstance(stride, int) and stride == 1:
        step = index
    else:
        step = b.mul(index, _i64(stride) if isinstance(stride, int) else stride, flags=("nsw",))
    return step if offset is None else b.add(offset, step, flags=("nsw",))


def _emit_counted_loop(b: ir.IRBuilder, size: ir.Value, tag: str,
                       body: Callable[[ir.Value], None]) -> None:
    """Emit a guarded, rotated loop ``for i in range(size)`` (runs zero times for size <= 0)."""
    fn = b.function
    loop, done = fn.append_basic_block(f"loop{tag}"), fn.append_basic_block(f"exit{tag}")
    preheader = b.block
    b.cbranch(b.icmp_signed(">", size, _i64(0)), loop, done)
    b.position_at_end(loop)
    index = b.phi(I64, name=f"i{tag}")
    index.add_incoming(_i64(0), preheader)
    body(index)
    following = b.add(index, _i64(1), name=f"i{tag}.next", flags=("nuw", "nsw"))
    index.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, size), loop, done)
    b.position_at_end(done)


def _row_position(nest: _Nest, indices: list[ir.Value]) -> ir.Value:
    """Return the C-order position inside the row (for argmax/argmin)."""
    b, kernel = nest.builder, nest.kernel
    position: ir.Value = _i64(0)
    for d in range(kernel.outer_rank, kernel.rank):
        scaled = b.mul(position, nest.sizes[d], flags=("nsw",))
        position = b.add(scaled, indices[d], flags=("nsw",))
    return position


def _rule(ins: Instr, kind: str) -> Rule:
    """Return the LLVM rule of ``ins`` on operands of dtype ``kind``; InternalError (the
    CUDA renderer's words) when there is none."""
    rule = LLVM_RULES.get((ins.op, kind))
    if rule is None:
        raise InternalError.no_rule("LLVM", ins.op, ins.dtype)
    return rule


def _emit_body(nest: _Nest, offsets: list[ir.Value | None], level: str, phase: int,
               indices: list[ir.Value]) -> None:
    """Emit the instructions of one (level, phase), each through its (op, kind) rule."""
    b, kernel = nest.builder, nest.kernel
    chosen = [ins for ins in kernel.body if ins.level == level and ins.phase == phase
              and ins.id not in nest.values]
    if not chosen:
        return
    pointers = [
        b.gep(base, [off if off is not None else _i64(0)], inbounds=True,
              source_etype=memory_type(buf.dtype), name=f"{buf.name}.p")
        for base, off, buf in zip(nest.bases, offsets, kernel.buffers, strict=True)
    ]
    ctx = BodyContext(b, nest.math, kernel, pointers, nest.scalars, nest.dtypes)
    position = None
    for ins in chosen:
        if ins.op is Op.INDEX:   # the loop index of one dimension: arange, linspace, eye
            nest.values[ins.id] = indices[ins.attr]
            ctx.dtypes[ins.id] = ins.dtype
            continue
        if ins.op is Op.SCAN:   # a running value, read in this same iteration
            nest.values[ins.id] = nest.accumulators[ins.id].update(b, nest.values[ins.args[0]])
            ctx.dtypes[ins.id] = ins.dtype
            continue
        if ins.op is Op.REDUCE and ins.id in nest.pairwise_into:
            nest.pairwise_into[ins.id](nest.values[ins.args[0]])
            continue
        if ins.op is Op.REDUCE:
            if nest.accumulators[ins.id].needs_position and position is None:
                position = _row_position(nest, indices)
            nest.accumulators[ins.id].update(b, nest.values[ins.args[0]], position)
            continue
        rule = _rule(ins, rule_kind(ins, ctx.dtypes))
        result = rule(ctx, ins, [nest.values[a] for a in ins.args])
        if result is not None:
            nest.values[ins.id] = result
        ctx.dtypes[ins.id] = ins.dtype


def _emit_nest(nest: _Nest, depth: int, offsets: list[ir.Value | None],
               indices: list[ir.Value], phase: int = -1) -> None:
    """Emit loop ``depth`` and everything inside it, advancing each buffer's offset.

    At the outer rank, the phases follow one another: reset the phase's accumulators, run
    its row loops (depth ``outer_rank`` to ``rank``), then its outer-level instructions."""
    kernel, b = nest.kernel, nest.builder
    if depth == kernel.outer_rank and phase < 0:
        for p in range(kernel.phases):
            for acc in nest.accumulators.values():
                if acc.ins.phase == p:
                    acc.reset(b)
            _emit_nest(nest, depth, offsets, indices, p)
            for acc in nest.accumulators.values():
                if acc.ins.phase == p:
                    nest.values[acc.ins.id] = acc.result(b)
                    nest.dtypes[acc.ins.id] = acc.ins.dtype
            _emit_body(nest, offsets, "outer", p, indices)
        return
    if depth == kernel.rank:
        _emit_body(nest, offsets, "row", max(phase, 0), indices)
        return

    def inner(index: ir.Value) -> None:
        moved = [_advance(b, off, index, nest.stride(buf, depth))
                 for buf, off in enumerate(offsets)]
        _emit_nest(nest, depth + 1, moved, indices + [index], phase)

    chunks = {chunk for i, chunk in kernel.pairwise
              if nest.accumulators[i].ins.phase == phase}
    if depth == kernel.pairwise_dim and chunks:
        if len(chunks) > 1:
            raise InternalError(f"{kernel.name}: pairwise sums of one phase in chunks of "
                                "different sizes", Op.REDUCE)
        sums = [nest.accumulators[i] for i, _ in kernel.pairwise
                if nest.accumulators[i].ins.phase == phase]
        if kernel.pairwise_from is None:
            _emit_pairwise(nest, nest.sizes[depth], chunks.pop(), sums, inner)  # type: ignore
            return
        total: ir.Value = nest.sizes[depth]   # one run over this and the inner row loops
        for d in range(depth + 1, kernel.rank):
            total = b.mul(total, nest.sizes[d], flags=("nsw",))

        def spanning(position: ir.Value) -> None:
            """The element at C-order ``position`` of the run: its index per loop."""
            rest, found = position, []
            for d in range(kernel.rank - 1, depth, -1):
                found.insert(0, b.srem(rest, nest.sizes[d]))
                rest = b.sdiv(rest, nest.sizes[d])
            found.insert(0, rest)
            moved = list(offsets)
            for d, index in zip(range(depth, kernel.rank), found, strict=True):
                moved = [_advance(b, off, index, nest.stride(buf, d))
                         for buf, off in enumerate(moved)]
            _emit_nest(nest, kernel.rank, moved, indices + found, phase)

        _emit_pairwise(nest, total, chunks.pop(), sums, spanning)   # type: ignore
        return
    _emit_counted_loop(b, nest.sizes[depth], str(depth) if phase < 0 else f"{depth}p{phase}",
                       inner)


#: NumPy's ``pairwise_sum`` (``loops_utils.h.src``): blocks of up to this many elements
#: are summed with eight accumulators; longer runs split in two, the first part a multiple
#: of eight
_PAIRWISE_BLOCK = 128
_PAIRWISE_DEPTH = 64      # the split stack: each level at least halves the run
#: element code emitted once per lane (``direct_block``) up to this many instructions
_DIRECT_MAX_INSTRUCTIONS = 32


def _emit_pairwise(nest: _Nest, size: ir.Value, chunk: int, sums: list[Accumulator],
                   element: Callable[[ir.Value], None]) -> None:
    """Emit the loop over ``size`` row positions (``element(i)`` emits position i) that
    adds each of ``sums`` exactly as NumPy's reduce loop does: ``acc += pairwise_sum(run)``
    for each run of ``chunk`` positions (0: one run), in order. ``pairwise_sum`` splits
    a run of more than 128 elements at ``n2 = n/2 - (n/2) % 8`` and adds the two halves'
    sums; a block of at most 128 adds element k into accumulator ``k % 8`` (the first
    ``n - n % 8`` elements), then ``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))``, then the rest
    one by one (a block of fewer than 8: ``-0.0`` plus each element). The eight
    accumulators are one ``<8 x T>`` vector. The positions are visited in order: element
    code without calls is emitted once per lane (``direct_block``: the SLP vectoriser
    widens it, no memory round trip); element code with calls (exp, pow) is emitted once,
    in a loop storing each block's values to a 128-element scratch array (the loop
    vectoriser gives its calls their vector forms). The splits run from an explicit stack."""
    b = nest.builder
    types = [llvm_type(acc.source) for acc in sums]
    phase = sums[0].ins.phase
    element_code = [ins for ins in nest.kernel.body if ins.level == "row" and ins.phase == phase]
    direct = len(element_code) <= _DIRECT_MAX_INSTRUCTIONS and not any(
        ins.op in OP_TABLE and OP_TABLE[ins.op].math_name for ins in element_code)
    entry = b.function.entry_basic_block
    with b.goto_block(entry):
        if entry.terminator is not None:
            b.position_before(entry.terminator)
        else:
            b.position_at_start(entry)
        lanes = [b.alloca(ir.VectorType(t, 8), name="pw.lanes") for t in types]
        lanes2 = [b.alloca(ir.VectorType(t, 8), name="pw.lanes2") for t in types]
        values = [] if direct else [
            b.alloca(ir.ArrayType(t, _PAIRWISE_BLOCK), name="pw.values") for t in types]
        lefts = [b.alloca(ir.ArrayType(t, _PAIRWISE_DEPTH), name="pw.left") for t in types]
        results = [b.alloca(t, name="pw.res") for t in types]
        rights = b.alloca(ir.ArrayType(I64, _PAIRWISE_DEPTH), name="pw.right")
        states = b.alloca(ir.ArrayType(I64, _PAIRWISE_DEPTH), name="pw.state")
        depth_at = b.alloca(I64, name="pw.sp")
        current = b.alloca(I64, name="pw.cur")
        where = b.alloca(I64, name="pw.pos")

    def slot(array: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(array, [_i64(0), index], inbounds=True)

    def visit(pos: ir.Value, into: Callable[[int], Callable[[ir.Value], None]]) -> None:
        saved = dict(nest.values)
        nest.pairwise_into.update({acc.ins.id: into(k) for k, acc in enumerate(sums)})
        element(pos)
        for acc in sums:
            del nest.pairwise_into[acc.ins.id]
        nest.values.clear()
        nest.values.update(saved)

    def lanes_sum(vector: ir.Value) -> ir.Value:
        """``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))`` of an ``<8 x T>``, in that order."""
        def pick(v: ir.Value, picked: Sequence[int]) -> ir.Value:
            mask = ir.Constant(ir.VectorType(ir.IntType(32), len(picked)), list(picked))
            return b.shuffle_vector(v, v, mask)
        pairs = b.fadd(pick(vector, (0, 2, 4, 6)), pick(vector, (1, 3, 5, 7)))
        quads = b.fadd(pick(pairs, (0, 2)), pick(pairs, (1, 3)))
        return b.fadd(b.extract_element(quads, _i64(0)), b.extract_element(quads, _i64(1)))

    def octets_then_rest(length: ir.Value, octet: Callable[[ir.Value], list[ir.Value]],
                         rest: Callable[[ir.Value, Sequence[ir.Value]], None]) -> None:
        """Eight lanes per sum over the first ``length - length % 8`` positions (``octet(j)``
        returns each sum's ``<8 x T>`` of positions 8j..8j+7), their sum into ``results``,
        then ``rest(k, results)`` for each position left."""
        eights = b.and_(length, _i64(-8))
        for acc, t in zip(lanes, types, strict=True):
            b.store(ir.Constant(ir.VectorType(t, 8), [-0.0] * 8), acc)

        def each(j: ir.Value) -> None:
            for acc, vector in zip(lanes, octet(j), strict=True):
                b.store(b.fadd(b.load(acc), vector), acc)
        _emit_counted_loop(b, b.ashr(length, _i64(3)), "pw.octet", each)
        for acc, res in zip(lanes, results, strict=True):
            b.store(lanes_sum(b.load(acc)), res)
        _emit_counted_loop(b, b.sub(length, eights), "pw.rest",
                           lambda k: rest(b.add(eights, k, flags=("nsw",)), results))

    def block(start: ir.Value, length: ir.Value) -> None:
        """``pairwise_sum`` of one block of at most 128 elements, into ``results``."""
        if direct:
            direct_block(start, length)
            return
        # the element code runs once per position in a plain loop (the vectoriser takes
        # it, calls to vector math included), storing the summed values; then the
        # eight-lane sum over them, as NumPy adds them
        def value(i: ir.Value) -> None:
            def into(n: int) -> Callable[[ir.Value], None]:
                return lambda v: b.store(v, slot(values[n], i))
            visit(b.add(start, i, flags=("nsw",)), into)
        _emit_counted_loop(b, length, "pw.values", value)

        def octet(j: ir.Value) -> list[ir.Value]:
            at = b.shl(j, _i64(3))
            return [b.load(slot(vals, at), typ=ir.VectorType(t, 8), align=8)
                    for vals, t in zip(values, types, strict=True)]

        def rest(k: ir.Value, into: Sequence[ir.Value]) -> None:
            for vals, res in zip(values, into, strict=True):
                b.store(b.fadd(b.load(res), b.load(slot(vals, k))), res)
        octets_then_rest(length, octet, rest)

    def direct_octet(start: ir.Value, j: ir.Value) -> list[ir.Value]:
        """Each sum's ``<8 x T>`` of positions start+8j..start+8j+7, the element code
        emitted per lane (the SLP vectoriser makes it one vector op each)."""
        base = b.add(start, b.shl(j, _i64(3)), flags=("nsw",))
        found: list[list[ir.Value]] = [[] for _ in sums]

        def into(n: int) -> Callable[[ir.Value], None]:
            return lambda v: found[n].append(v)
        for k in range(8):
            visit(b.add(base, _i64(k), flags=("nsw",)) if k else base, into)
        vectors = []
        for got, t in zip(found, types, strict=True):
            vector: ir.Value = ir.Constant(ir.VectorType(t, 8), None)
            for k, v in enumerate(got):
                vector = b.insert_element(vector, v, _i64(k))
            vectors.append(vector)
        return vectors

    def direct_rest(start: ir.Value, k: ir.Value, into: Sequence[ir.Value]) -> None:
        def add(n: int) -> Callable[[ir.Value], None]:
            return lambda v: b.store(b.fadd(b.load(into[n]), v), into[n])
        visit(b.add(start, k, flags=("nsw",)), add)

    def direct_block(start: ir.Value, length: ir.Value) -> None:
        """The same sum with no scratch array (``direct_octet``; only for element code
        without calls, which the SLP vectoriser cannot widen)."""
        octets_then_rest(length, lambda j: direct_octet(start, j),
                         lambda k, into: direct_rest(start, k, into))

    def twin_blocks(start: ir.Value, length: ir.Value) -> None:
        """A node of two blocks (128 < length, its right part at most 128): both blocks'
        eight lanes in one loop (two independent chains of vector adds), then the left
        sum plus the right one, as NumPy adds them. The left part is a multiple of 8."""
        half = b.sdiv(length, _i64(2))
        first = b.sub(half, b.and_(half, _i64(7)))
        second = b.sub(length, first)
        right = b.add(start, first, flags=("nsw",))
        for acc, other, t in zip(lanes, lanes2, types, strict=True):
            b.store(ir.Constant(ir.VectorType(t, 8), [-0.0] * 8), acc)
            b.store(ir.Constant(ir.VectorType(t, 8), [-0.0] * 8), other)

        def add_into(accs: Sequence[ir.Value], vectors: Sequence[ir.Value]) -> None:
            for acc, vector in zip(accs, vectors, strict=True):
                b.store(b.fadd(b.load(acc), vector), acc)

        def both(j: ir.Value) -> None:
            left_vectors = direct_octet(start, j)
            right_vectors = direct_octet(right, j)
            add_into(lanes, left_vectors)
            add_into(lanes2, right_vectors)
        octets = b.ashr(first, _i64(3))
        _emit_counted_loop(b, octets, "pw.twin", both)
        _emit_counted_loop(b, b.sub(b.ashr(second, _i64(3)), octets), "pw.twin.more",
                           lambda j: add_into(lanes2, direct_octet(
                               right, b.add(octets, j, flags=("nsw",)))))
        for acc, res in zip(lanes2, results, strict=True):
            b.store(lanes_sum(b.load(acc)), res)
        eights = b.and_(second, _i64(-8))
        _emit_counted_loop(b, b.sub(second, eights), "pw.twin.rest",
                           lambda k: direct_rest(right, b.add(eights, k, flags=("nsw",)),
                                                 results))
        for acc, res in zip(lanes, results, strict=True):
            b.store(b.fadd(lanes_sum(b.load(acc)), b.load(res)), res)

    def run(start: ir.Value, length: ir.Value) -> None:
        """``acc += pairwise_sum(run)`` for every accumulator."""
        fn = b.function
        descend, leaf, ascend, combine, climb, done = (
            fn.append_basic_block(f"pw.{name}")
            for name in ("descend", "leaf", "ascend", "combine", "climb", "done"))
        b.store(_i64(0), depth_at)
        b.store(length, current)
        b.store(start, where)
        b.branch(descend)
        b.position_at_end(descend)            # split while longer than a block
        cur = b.load(current)                 # (direct: than two, ``twin_blocks``)
        half = b.sdiv(cur, _i64(2))
        half = b.sub(half, b.and_(half, _i64(7)))
        split = b.icmp_signed(">", b.sub(cur, half) if direct else cur,
                              _i64(_PAIRWISE_BLOCK))
        with b.if_then(split):
            sp = b.load(depth_at)
            b.store(b.sub(cur, half), slot(rights, sp))
            b.store(_i64(0), slot(states, sp))
            b.store(b.add(sp, _i64(1)), depth_at)
            b.store(half, current)
        b.cbranch(split, descend, leaf)
        b.position_at_end(leaf)               # a block: its sum into results
        pos, cur = b.load(where), b.load(current)
        if direct:
            with b.if_else(b.icmp_signed(">", cur, _i64(_PAIRWISE_BLOCK))) as (two, one):
                with two:
                    twin_blocks(pos, cur)
                with one:
                    block(pos, cur)
        else:
            block(pos, cur)
        b.store(b.add(pos, cur, flags=("nsw",)), where)
        b.branch(ascend)
        b.position_at_end(ascend)             # a finished right half: add to its left
        sp = b.load(depth_at)
        top = b.sub(sp, _i64(1))
        nonempty = b.icmp_signed(">", sp, _i64(0))
        safe_top = b.select(nonempty, top, _i64(0))
        right_done = b.select(nonempty, b.load(slot(states, safe_top)), _i64(0))
        b.cbranch(b.and_(nonempty, b.icmp_signed("==", right_done, _i64(1))), combine, climb)
        b.position_at_end(combine)
        for left, res in zip(lefts, results, strict=True):
            b.store(b.fadd(b.load(slot(left, top)), b.load(res)), res)
        b.store(top, depth_at)
        b.branch(ascend)
        b.position_at_end(climb)              # a finished left half: the right one next
        with b.if_then(nonempty):
            for left, res in zip(lefts, results, strict=True):
                b.store(b.load(res), slot(left, top))
            b.store(_i64(1), slot(states, top))
            b.store(b.load(slot(rights, top)), current)
        b.cbranch(nonempty, descend, done)
        b.position_at_end(done)
        for acc, res in zip(sums, results, strict=True):
            b.store(b.fadd(b.load(acc.value), b.load(res)), acc.value)

    if chunk == 0:
        with b.if_then(b.icmp_signed(">", size, _i64(0))):
            run(_i64(0), size)
        return
    count = b.sdiv(b.add(size, _i64(chunk - 1)), _i64(chunk))

    def each(c: ir.Value) -> None:
        start = b.mul(c, _i64(chunk), flags=("nsw",))
        left = b.sub(size, start)
        run(start, b.select(b.icmp_signed("<", left, _i64(chunk)), left, _i64(chunk)))
    _emit_counted_loop(b, count, "pw.chunk", each)


def _prepare(nest: _Nest) -> None:
    """Give constants and scalars their values, and every REDUCE/SCAN its accumulator, up
    front: both are used at several levels, and allocas belong in the entry block."""
    ctx = BodyContext(nest.builder, nest.math, nest.kernel, [], nest.scalars, nest.dtypes)
    for ins in nest.kernel.body:
        if ins.op in (Op.CONST, Op.LOAD_SCALAR):
            nest.values[ins.id] = _rule(ins, ins.dtype.kind)(ctx, ins, [])
            nest.dtypes[ins.id] = ins.dtype
    sources = {ins.id: ins.dtype for ins in nest.kernel.body}
    blind = zero_sign_blind(nest.kernel)
    for ins in nest.kernel.body:
        if ins.op in _ACCUMULATORS:
            nest.accumulators[ins.id] = _ACCUMULATORS[ins.op].allocate(
                nest.builder, ins, sources[ins.args[0]], sign_matters=ins.id not in blind)


def _loops_signature(module: ir.Module, kernel: Kernel, math: MathCalls, name: str,
                     extra: Sequence[ir.Type] = ()) -> tuple[ir.Function, _Nest]:
    """Declare ``name``, an internal always-inlined function taking the kernel's buffers
    (outputs ``noalias`` unless aliased), loop sizes, runtime strides and scalars, then
    ``extra`` parameters; return it and a _Nest at its entry, ready for the loops."""
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
    nest = _Nest(kernel, builder, math, args[:nb], args[nb:nb + kernel.rank],
                 args[nb + kernel.rank:nb + nm], args[nb + nm:len(types)])
    _prepare(nest)
    return fn, nest


def _emit_loops_function(module: ir.Module, kernel: Kernel, math: MathCalls,
                         name: str) -> ir.Function:
    """Return the internal loop-nest function (see the module docstring)."""
    fn, nest = _loops_signature(module, kernel, math, name)
    _emit_nest(nest, 0, [None] * len(kernel.buffers), [])
    nest.builder.ret_void()
    return fn


def _load_slot(b: ir.IRBuilder, array: ir.Value, index: int, ty: ir.Type,
               name: str) -> ir.Value:
    """``%name = load <ty>, ptr (getelementptr <ty>, ptr %array, i64 index)``"""
    slot = b.gep(array, [_i64(index)], inbounds=True, source_etype=ty)
    return b.load(slot, typ=ty, align=8, name=name)


def _load_scalar_param(b: ir.IRBuilder, data: ir.Value, slot: int, kernel: Kernel,
                       index: int) -> ir.Value:
    param = kernel.scalars[index]
    where = _load_slot(b, data, slot, PTR, f"{param.name}.ptr")
    value = b.load(where, typ=memory_type(param.dtype), align=param.dtype.itemsize)
    if param.dtype.kind == "b":
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0), name=param.name)
    return value


def _emit_entry(module: ir.Module, kernel: Kernel, loops: ir.Function, name: str) -> None:
    """Emit ``void @name(ptr data, ptr meta)``: read every argument once, call the nest."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR]), name)
    fn.attributes.add("nounwind")
    data, meta = fn.args
    data.name, meta.name = "data", "meta"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    nb = len(kernel.buffers)
    bases = [_load_slot(b, data, i, PTR, f"{buf.name}.base")
             for i, buf in enumerate(kernel.buffers)]
    metas = [_load_slot(b, meta, j, I64, f"n{j}" if j < kernel.rank else f"stride{j}")
             for j in range(kernel.rank + len(kernel.runtime_strides()))]
    scalars = [_load_scalar_param(b, data, nb + j, kernel, j) for j in range(len(kernel.scalars))]
    b.call(loops, bases + metas + scalars)
    b.ret_void()


def render_llvm(kernel: Kernel, symbol: str | None = None) -> str:
    """Return the LLVM IR module text of ``kernel``, its entry point named ``symbol``
    (default: the kernel's name); see the module docstring for a sample."""
    check_kernel(kernel)
    symbol = symbol or kernel.name
    module = ir.Module(name=kernel.name)
    math = MathCalls(module)
    loops = _emit_loops_function(module, kernel, math, f"{symbol}.loops")
    _emit_entry(module, kernel, loops, symbol)
    math.finish()
    return str(module)
