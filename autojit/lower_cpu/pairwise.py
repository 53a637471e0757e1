"""NumPy's ``pairwise_sum`` as LLVM IR: the row loop of float sums NumPy adds pairwise.

``emit_pairwise`` visits the row positions of one run in order and adds the element values
into each sum exactly as NumPy's reduce loop does (blocks of up to 128 elements summed
with eight accumulators, longer runs split in two), so single-threaded results are NumPy's
bit for bit. It is one of ``LoopNest``'s row strategies (``loop_nest.py``): the nest hands
it the row's element code and a ``visit(position, into)`` that emits that code at one
position and gives each sum's value to ``into(k)``. This is where this renderer builds
vectors itself: the eight accumulators are one ``<8 x T>``, and a run's remainder (its
last ``n % 8`` elements) is added one by one, as NumPy adds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from autojit.ir.kernel import Instr
from autojit.ir.ops import OP_TABLE
from autojit.lower_cpu.llvm_rules import llvm_type
from autojit.lower_cpu.loops import I64, counted_loop, i64
from autojit.lower_cpu.reduce import Accumulator

__all__ = ["Visit", "emit_pairwise"]

#: ``visit(position, into)``: emit the element code at row ``position``, handing sum k's
#: element value to ``into(k)`` (a callback emitting where that value goes)
Visit = Callable[[ir.Value, Callable[[int], Callable[[ir.Value], None]]], None]

#: NumPy's ``pairwise_sum`` (``loops_utils.h.src``): blocks of up to this many elements
#: are summed with eight accumulators; longer runs split in two, the first part a multiple
#: of eight
_PAIRWISE_BLOCK = 128
_PAIRWISE_DEPTH = 64      # the split stack: each level at least halves the run
#: element code emitted once per lane (``direct_block``) up to this many instructions
_DIRECT_MAX_INSTRUCTIONS = 32


def emit_pairwise(b: ir.IRBuilder, element_code: Sequence[Instr], size: ir.Value, chunk: int,
                  sums: Sequence[Accumulator], visit: Visit) -> None:
    """Emit the loop over ``size`` row positions (``visit`` emits position i) that
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
    types = [llvm_type(acc.source) for acc in sums]
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
        return b.gep(array, [i64(0), index], inbounds=True)

    def lanes_sum(vector: ir.Value) -> ir.Value:
        """``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))`` of an ``<8 x T>``, in that order."""
        def pick(v: ir.Value, picked: Sequence[int]) -> ir.Value:
            mask = ir.Constant(ir.VectorType(ir.IntType(32), len(picked)), list(picked))
            return b.shuffle_vector(v, v, mask)
        pairs = b.fadd(pick(vector, (0, 2, 4, 6)), pick(vector, (1, 3, 5, 7)))
        quads = b.fadd(pick(pairs, (0, 2)), pick(pairs, (1, 3)))
        return b.fadd(b.extract_element(quads, i64(0)), b.extract_element(quads, i64(1)))

    def octets_then_rest(length: ir.Value, octet: Callable[[ir.Value], list[ir.Value]],
                         rest: Callable[[ir.Value, Sequence[ir.Value]], None]) -> None:
        """Eight lanes per sum over the first ``length - length % 8`` positions (``octet(j)``
        returns each sum's ``<8 x T>`` of positions 8j..8j+7), their sum into ``results``,
        then ``rest(k, results)`` for each position left."""
        eights = b.and_(length, i64(-8))
        for acc, t in zip(lanes, types, strict=True):
            b.store(ir.Constant(ir.VectorType(t, 8), [-0.0] * 8), acc)

        def each(j: ir.Value) -> None:
            for acc, vector in zip(lanes, octet(j), strict=True):
                b.store(b.fadd(b.load(acc), vector), acc)
        counted_loop(b, b.ashr(length, i64(3)), "pw.octet", each)
        for acc, res in zip(lanes, results, strict=True):
            b.store(lanes_sum(b.load(acc)), res)
        counted_loop(b, b.sub(length, eights), "pw.rest",
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
        counted_loop(b, length, "pw.values", value)

        def octet(j: ir.Value) -> list[ir.Value]:
            at = b.shl(j, i64(3))
            return [b.load(slot(vals, at), typ=ir.VectorType(t, 8), align=8)
                    for vals, t in zip(values, types, strict=True)]

        def rest(k: ir.Value, into: Sequence[ir.Value]) -> None:
            for vals, res in zip(values, into, strict=True):
                b.store(b.fadd(b.load(res), b.load(slot(vals, k))), res)
        octets_then_rest(length, octet, rest)

    def direct_octet(start: ir.Value, j: ir.Value) -> list[ir.Value]:
        """Each sum's ``<8 x T>`` of positions start+8j..start+8j+7, the element code
        emitted per lane (the SLP vectoriser makes it one vector op each)."""
        base = b.add(start, b.shl(j, i64(3)), flags=("nsw",))
        found: list[list[ir.Value]] = [[] for _ in sums]

        def into(n: int) -> Callable[[ir.Value], None]:
            return lambda v: found[n].append(v)
        for k in range(8):
            visit(b.add(base, i64(k), flags=("nsw",)) if k else base, into)
        vectors = []
        for got, t in zip(found, types, strict=True):
            vector: ir.Value = ir.Constant(ir.VectorType(t, 8), None)
            for k, v in enumerate(got):
                vector = b.insert_element(vector, v, i64(k))
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
        half = b.sdiv(length, i64(2))
        first = b.sub(half, b.and_(half, i64(7)))
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
        octets = b.ashr(first, i64(3))
        counted_loop(b, octets, "pw.twin", both)
        counted_loop(b, b.sub(b.ashr(second, i64(3)), octets), "pw.twin.more",
                     lambda j: add_into(lanes2, direct_octet(
                         right, b.add(octets, j, flags=("nsw",)))))
        for acc, res in zip(lanes2, results, strict=True):
            b.store(lanes_sum(b.load(acc)), res)
        eights = b.and_(second, i64(-8))
        counted_loop(b, b.sub(second, eights), "pw.twin.rest",
                     lambda k: direct_rest(right, b.add(eights, k, flags=("nsw",)), results))
        for acc, res in zip(lanes, results, strict=True):
            b.store(b.fadd(lanes_sum(b.load(acc)), b.load(res)), res)

    def run(start: ir.Value, length: ir.Value) -> None:
        """``acc += pairwise_sum(run)`` for every accumulator."""
        fn = b.function
        descend, leaf, ascend, combine, climb, done = (
            fn.append_basic_block(f"pw.{name}")
            for name in ("descend", "leaf", "ascend", "combine", "climb", "done"))
        b.store(i64(0), depth_at)
        b.store(length, current)
        b.store(start, where)
        b.branch(descend)
        b.position_at_end(descend)            # split while longer than a block
        cur = b.load(current)                 # (direct: than two, ``twin_blocks``)
        half = b.sdiv(cur, i64(2))
        half = b.sub(half, b.and_(half, i64(7)))
        split = b.icmp_signed(">", b.sub(cur, half) if direct else cur,
                              i64(_PAIRWISE_BLOCK))
        with b.if_then(split):
            sp = b.load(depth_at)
            b.store(b.sub(cur, half), slot(rights, sp))
            b.store(i64(0), slot(states, sp))
            b.store(b.add(sp, i64(1)), depth_at)
            b.store(half, current)
        b.cbranch(split, descend, leaf)
        b.position_at_end(leaf)               # a block: its sum into results
        pos, cur = b.load(where), b.load(current)
        if direct:
            with b.if_else(b.icmp_signed(">", cur, i64(_PAIRWISE_BLOCK))) as (two, one):
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
        top = b.sub(sp, i64(1))
        nonempty = b.icmp_signed(">", sp, i64(0))
        safe_top = b.select(nonempty, top, i64(0))
        right_done = b.select(nonempty, b.load(slot(states, safe_top)), i64(0))
        b.cbranch(b.and_(nonempty, b.icmp_signed("==", right_done, i64(1))), combine, climb)
        b.position_at_end(combine)
        for left, res in zip(lefts, results, strict=True):
            b.store(b.fadd(b.load(slot(left, top)), b.load(res)), res)
        b.store(top, depth_at)
        b.branch(ascend)
        b.position_at_end(climb)              # a finished left half: the right one next
        with b.if_then(nonempty):
            for left, res in zip(lefts, results, strict=True):
                b.store(b.load(res), slot(left, top))
            b.store(i64(1), slot(states, top))
            b.store(b.load(slot(rights, top)), current)
        b.cbranch(nonempty, descend, done)
        b.position_at_end(done)
        for acc, res in zip(sums, results, strict=True):
            b.store(b.fadd(b.load(acc.value), b.load(res)), acc.value)

    if chunk == 0:
        with b.if_then(b.icmp_signed(">", size, i64(0))):
            run(i64(0), size)
        return
    count = b.sdiv(b.add(size, i64(chunk - 1)), i64(chunk))

    def each(c: ir.Value) -> None:
        start = b.mul(c, i64(chunk), flags=("nsw",))
        left = b.sub(size, start)
        run(start, b.select(b.icmp_signed("<", left, i64(chunk)), left, i64(chunk)))
    counted_loop(b, count, "pw.chunk", each)


