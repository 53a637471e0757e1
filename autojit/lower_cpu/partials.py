"""More entry points for one reduction Kernel, so threads can share each row.

A full reduction (``mean((x-y)**2)``: no outer dimension) or one with fewer outer rows than
threads cannot be split along its outer dimensions. Instead each thread takes a chunk of
the *first row dimension*, one phase at a time. For phase ``p``, ``part<p>`` reduces the
chunk and stores the phase's raw accumulators (value, and the global position for
argmax/argmin) in a partials block instead of running the outer-level instructions; then
``finish<p>`` combines the chunks' records **in chunk order** with the same update rule
the row loop uses (float sums NumPy adds pairwise, ``partials_layout.tree_sums``: the chunks are
the 2^L subtrees of ``pairwise_sum``'s tree, added back pairwise in place, ``_tree_add``),
runs the phase's outer-level instructions (casts, mean's division, stores), and writes
every value a later phase reads (its reductions and outer-level results) to a *carry*
block, which ``part<q>``/``finish<q>`` (q > p) read back. The kernel's calling
convention, with two more pointers and one more ``meta`` slot::

    void <symbol>.part<p>(void **data, const int64_t *meta)
        data: ..., partials block of this chunk, carry    meta: ..., chunk start position
    void <symbol>.finish<p>(void **data, const int64_t *meta)
        data: ..., partials (all chunks), carry           meta: ..., number of chunks

The caller offsets each buffer's pointer to the chunk's start and passes the chunk length
as the first row size (see ``threads.py``). A partials record is ``RECORD_BYTES`` (16): the
accumulator at offset 0 (its LLVM type), the int64 position at ``POSITION_OFFSET`` (8),
laid out ``[chunk][outer index][reduce of the phase]``; a carry slot is ``CARRY_BYTES``
(8), laid out ``[outer index][carried value]`` (``partials_layout``, shared with
``threads.py``). Which kernels qualify: ``threads.partials_ok``. The loops are the
kernel's own (``loop_nest.LoopNest``): the outer loops, then at the outer rank one phase's
row loops (``LoopNest.emit_loops``) and its outer-level instructions (``emit_level``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import llvmlite.ir as ir

from autojit.ir.kernel import Kernel, Level
from autojit.ir.verify import check_kernel
from autojit.lower_cpu.llvm_rules import llvm_type
from autojit.lower_cpu.loop_nest import LoopNest, Offsets, read_arguments
from autojit.lower_cpu.loops import I64, PTR, VOID, counted_loop, i64, load_slot
from autojit.lower_cpu.mathlib import MathCalls
from autojit.lower_cpu.partials_layout import (
    CARRY_BYTES,
    POSITION_OFFSET,
    RECORD_BYTES,
    carried,
    tree_sums,
)
from autojit.lower_cpu.reduce import Accumulator

I8 = ir.IntType(8)

#: emits one function's work at one outer index: ``emit(nest, offsets, indices)``
Emit = Callable[[LoopNest, Offsets, list[ir.Value]], None]


def _outer_linear(nest: LoopNest, indices: list[ir.Value]) -> ir.Value:
    """Return the C-order position of the current outer index (0 for a full reduction)."""
    return nest.linear(indices, range(nest.kernel.outer_rank))


def _address(b: ir.IRBuilder, block: ir.Value, record: ir.Value, size: int,
             offset: int) -> ir.Value:
    """Return ``block + record * size + offset`` (bytes)."""
    index = b.add(b.mul(record, i64(size), flags=("nsw",)), i64(offset), flags=("nsw",))
    return b.gep(block, [index], inbounds=True, source_etype=I8)


def _load_carried(nest: LoopNest, carry: ir.Value, linear: ir.Value, phase: int) -> None:
    """Make every value carried from an earlier phase available to this one."""
    slots = carried(nest.kernel)
    for j, ins in enumerate(slots):
        if ins.phase < phase:
            where = _address(nest.builder, carry, linear, CARRY_BYTES * len(slots),
                             CARRY_BYTES * j)
            nest.values[ins.id] = nest.builder.load(where, typ=llvm_type(ins.dtype))
            nest.dtypes[ins.id] = ins.dtype


def _store_carried(nest: LoopNest, carry: ir.Value, linear: ir.Value, phase: int) -> None:
    """Write this phase's values that a later phase reads to the carry block."""
    slots = carried(nest.kernel)
    for j, ins in enumerate(slots):
        if ins.phase == phase:
            where = _address(nest.builder, carry, linear, CARRY_BYTES * len(slots),
                             CARRY_BYTES * j)
            nest.builder.store(nest.values[ins.id], where)


def _emit_outer_loops(nest: LoopNest, depth: int, offsets: Offsets,
                      indices: list[ir.Value], at_rows: Emit) -> None:
    """Emit the outer loops (as the kernel does), then ``at_rows`` at the outer rank."""
    if depth == nest.kernel.outer_rank:
        at_rows(nest, offsets, indices)
        return

    def inner(index: ir.Value) -> None:
        _emit_outer_loops(nest, depth + 1, nest.move(offsets, depth, index),
                          indices + [index], at_rows)

    nest.loop(depth, f"{depth}o", inner)


def _begin_phase(nest: LoopNest, carry: ir.Value, indices: list[ir.Value],
                 phase: int) -> tuple[ir.Value, list[Accumulator]]:
    """At one outer index: load the values earlier phases carried, reset this phase's
    accumulators; return the outer index's linear position and those accumulators."""
    linear = _outer_linear(nest, indices)
    _load_carried(nest, carry, linear, phase)
    accumulators = nest.reductions(phase)
    for acc in accumulators:
        acc.reset(nest.builder)
    return linear, accumulators


def _part_rows(phase: int, block: ir.Value, carry: ir.Value, position_base: ir.Value) -> Emit:
    """Return the emitter of ``part<phase>`` at the outer rank: reduce the chunk's row,
    store the phase's accumulators."""
    def emit(nest: LoopNest, offsets: Offsets, indices: list[ir.Value]) -> None:
        b = nest.builder
        linear, accumulators = _begin_phase(nest, carry, indices, phase)
        nest.emit_loops(nest.kernel.outer_rank, offsets, indices, phase)
        size = RECORD_BYTES * max(len(accumulators), 1)
        for k, acc in enumerate(accumulators):
            b.store(b.load(acc.value), _address(b, block, linear, size, RECORD_BYTES * k))
            if acc.index is not None:
                position = acc.global_index(b, position_base)
                b.store(position, _address(b, block, linear, size,
                                           RECORD_BYTES * k + POSITION_OFFSET))
    return emit


def _tree_add(b: ir.IRBuilder, chunks: ir.Value, record: Callable[[ir.Value], ir.Value],
              typ: ir.Type) -> ir.Value:
    """Add the ``chunks`` (a power of two) subtree sums at ``record(chunk)`` as their tree
    does, in place: at level l, chunk ``i·2^(l+1)`` takes ``+`` chunk ``i·2^(l+1) + 2^l``.
    Return the root's sum."""
    bit = ir.IntType(1)
    try:
        cttz = b.module.get_global("llvm.cttz.i64")
    except KeyError:
        cttz = ir.Function(b.module, ir.FunctionType(I64, [I64, bit]), "llvm.cttz.i64")
    levels = b.call(cttz, [chunks, ir.Constant(bit, 1)])

    def level(lv: ir.Value) -> None:
        width = b.shl(i64(1), lv)
        pairs = b.ashr(chunks, b.add(lv, i64(1)))

        def pair(i: ir.Value) -> None:
            left = record(b.shl(i, b.add(lv, i64(1))))
            right = record(b.add(b.shl(i, b.add(lv, i64(1))), width))
            b.store(b.fadd(b.load(left, typ=typ), b.load(right, typ=typ)), left)
        counted_loop(b, pairs, "tree.pair", pair)
    counted_loop(b, levels, "tree.level", level)
    return b.load(record(i64(0)), typ=typ)


def _finish_rows(phase: int, block: ir.Value, carry: ir.Value, chunks: ir.Value) -> Emit:
    """Return the emitter of ``finish<phase>`` at the outer rank: combine the chunks'
    records in chunk order, run the phase's outer-level instructions, carry its values."""
    def emit(nest: LoopNest, offsets: Offsets, indices: list[ir.Value]) -> None:
        b = nest.builder
        linear, accumulators = _begin_phase(nest, carry, indices, phase)
        outer_count: ir.Value = i64(1)
        for d in range(nest.kernel.outer_rank):
            outer_count = b.mul(outer_count, nest.sizes[d], flags=("nsw",))
        size = RECORD_BYTES * max(len(accumulators), 1)
        tree = tree_sums(nest.kernel)
        for k, acc in enumerate(accumulators):
            if acc.ins.id in tree:
                def record(chunk: ir.Value, k: int = k) -> ir.Value:
                    at = b.add(b.mul(chunk, outer_count, flags=("nsw",)), linear,
                               flags=("nsw",))
                    return _address(b, block, at, size, RECORD_BYTES * k)
                acc.merge(b, _tree_add(b, chunks, record, llvm_type(acc.source)), None)

        def combine(chunk: ir.Value) -> None:
            record = b.add(b.mul(chunk, outer_count, flags=("nsw",)), linear, flags=("nsw",))
            for k, acc in enumerate(accumulators):
                if acc.ins.id in tree:
                    continue
                value = b.load(_address(b, block, record, size, RECORD_BYTES * k),
                               typ=llvm_type(acc.source))
                position = None
                if acc.index is not None:
                    position = b.load(_address(b, block, record, size,
                                               RECORD_BYTES * k + POSITION_OFFSET), typ=I64)
                acc.merge(b, value, position)

        if accumulators:
            counted_loop(b, chunks, "chunks", combine)
        for acc in accumulators:
            nest.values[acc.ins.id] = acc.result(b)
            nest.dtypes[acc.ins.id] = acc.ins.dtype
        nest.emit_level(offsets, Level.OUTER, phase, indices)
        _store_carried(nest, carry, linear, phase)
    return emit


def _emit_function(module: ir.Module, kernel: Kernel, math: MathCalls, name: str,
                   rows: Callable[[ir.Value, ir.Value, ir.Value], Emit]) -> None:
    """Emit ``name.loops`` (the kernel's arguments, two block pointers, an int64) and the
    entry ``name(data, meta)`` that reads them as the kernel's entry does."""
    loops, nest = LoopNest.declare(module, kernel, math, f"{name}.loops", [PTR, PTR, I64])
    nb, nm = len(kernel.buffers), kernel.rank + len(kernel.runtime_strides())
    args = list(loops.args)
    args[-3].add_attribute("noalias")
    args[-2].add_attribute("noalias")
    _emit_outer_loops(nest, 0, nest.start(), [], rows(*args[-3:]))
    nest.builder.ret_void()

    entry = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR]), name)
    entry.attributes.add("nounwind")
    data, meta = entry.args
    data.name, meta.name = "data", "meta"
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    ns = len(kernel.scalars)
    arguments = read_arguments(b, kernel, data, meta, lambda j: f"m{j}")
    block = load_slot(b, data, nb + ns, PTR, "partials")
    carry = load_slot(b, data, nb + ns + 1, PTR, "carry")
    extra = load_slot(b, meta, nm, I64, "extra")
    b.call(loops, arguments + [block, carry, extra])
    b.ret_void()


def render_partials(kernel: Kernel, symbol: str) -> str:
    """Return an LLVM module defining ``threads.partial_symbols`` for ``kernel`` (see the
    module docstring); the kernel must pass ``threads.partials_ok``."""
    check_kernel(kernel)
    module = ir.Module(name=f"{kernel.name}.partials")
    math = MathCalls(module)
    for p in range(kernel.phases):
        _emit_function(module, kernel, math, f"{symbol}.part{p}",
                       functools.partial(_part_rows, p))
        _emit_function(module, kernel, math, f"{symbol}.finish{p}",
                       functools.partial(_finish_rows, p))
    math.finish()
    return str(module)
