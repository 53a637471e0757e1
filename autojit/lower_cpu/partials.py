"""More entry points for one reduction Kernel, so threads can share each row.

A full reduction (``mean((x-y)**2)``: no outer dimension) or one with fewer outer rows than
threads cannot be split along its outer dimensions. Instead each thread takes a chunk of
the *first row dimension*, one phase at a time. For phase ``p``, ``part<p>`` reduces the
chunk and stores the phase's raw accumulators (value, and the global position for
argmax/argmin) in a partials block instead of running the outer-level instructions; then
``finish<p>`` combines the chunks' records **in chunk order** with the same update rule
the row loop uses (float sums NumPy adds pairwise, ``threads.tree_sums``: the chunks are
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
as the first row size (see ``threads.py``). A partials record is 16 bytes: the
accumulator at offset 0 (its LLVM type), the int64 position at offset 8, laid out
``[chunk][outer index][reduce of the phase]``; a carry slot is 8 bytes, laid out
``[outer index][carried value]`` (``threads.carried``). Which kernels qualify:
``threads.partials_ok``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import llvmlite.ir as ir

from autojit.ir.kernel import Kernel
from autojit.ir.verify import check_kernel
from autojit.lower_cpu.mathlib import MathCalls
from autojit.lower_cpu.reduce import Accumulator
from autojit.lower_cpu.render import (
    PTR,
    VOID,
    _advance,
    _emit_body,
    _emit_counted_loop,
    _emit_nest,
    _load_scalar_param,
    _load_slot,
    _loops_signature,
    _Nest,
)
from autojit.lower_cpu.rules import I64, llvm_type
from autojit.lower_cpu.threads import carried, tree_sums

RECORD_BYTES = 16
CARRY_BYTES = 8
I8 = ir.IntType(8)

Emit = Callable[[_Nest, list[ir.Value | None], list[ir.Value]], None]


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _outer_linear(nest: _Nest, indices: list[ir.Value]) -> ir.Value:
    """Return the C-order position of the current outer index (0 for a full reduction)."""
    b = nest.builder
    linear: ir.Value = _i64(0)
    for d in range(nest.kernel.outer_rank):
        linear = b.add(b.mul(linear, nest.sizes[d], flags=("nsw",)), indices[d],
                       flags=("nsw",))
    return linear


def _address(b: ir.IRBuilder, block: ir.Value, record: ir.Value, size: int,
             offset: int) -> ir.Value:
    """Return ``block + record * size + offset`` (bytes)."""
    index = b.add(b.mul(record, _i64(size), flags=("nsw",)), _i64(offset), flags=("nsw",))
    return b.gep(block, [index], inbounds=True, source_etype=I8)


def _phase_accumulators(nest: _Nest, phase: int) -> list[Accumulator]:
    """Return the phase's REDUCE accumulators, in body order."""
    return [acc for acc in nest.accumulators.values()
            if isinstance(acc, Accumulator) and acc.ins.phase == phase]


def _load_carried(nest: _Nest, carry: ir.Value, linear: ir.Value, phase: int) -> None:
    """Make every value carried from an earlier phase available to this one."""
    slots = carried(nest.kernel)
    for j, ins in enumerate(slots):
        if ins.phase < phase:
            where = _address(nest.builder, carry, linear, CARRY_BYTES * len(slots),
                             CARRY_BYTES * j)
            nest.values[ins.id] = nest.builder.load(where, typ=llvm_type(ins.dtype))
            nest.dtypes[ins.id] = ins.dtype


def _store_carried(nest: _Nest, carry: ir.Value, linear: ir.Value, phase: int) -> None:
    """Write this phase's values that a later phase reads to the carry block."""
    slots = carried(nest.kernel)
    for j, ins in enumerate(slots):
        if ins.phase == phase:
            where = _address(nest.builder, carry, linear, CARRY_BYTES * len(slots),
                             CARRY_BYTES * j)
            nest.builder.store(nest.values[ins.id], where)


def _emit_outer_loops(nest: _Nest, depth: int, offsets: list[ir.Value | None],
                      indices: list[ir.Value], at_rows: Emit) -> None:
    """Emit the outer loops (as the kernel does), then ``at_rows`` at the outer rank."""
    if depth == nest.kernel.outer_rank:
        at_rows(nest, offsets, indices)
        return
    b = nest.builder

    def inner(index: ir.Value) -> None:
        moved = [_advance(b, off, index, nest.stride(buf, depth))
                 for buf, off in enumerate(offsets)]
        _emit_outer_loops(nest, depth + 1, moved, indices + [index], at_rows)

    _emit_counted_loop(b, nest.sizes[depth], f"{depth}o", inner)


def _begin_phase(nest: _Nest, carry: ir.Value, indices: list[ir.Value],
                 phase: int) -> tuple[ir.Value, list[Accumulator]]:
    """At one outer index: load the values earlier phases carried, reset this phase's
    accumulators; return the outer index's linear position and those accumulators."""
    linear = _outer_linear(nest, indices)
    _load_carried(nest, carry, linear, phase)
    accumulators = _phase_accumulators(nest, phase)
    for acc in accumulators:
        acc.reset(nest.builder)
    return linear, accumulators


def _part_rows(phase: int, block: ir.Value, carry: ir.Value, position_base: ir.Value) -> Emit:
    """Return the emitter of ``part<phase>`` at the outer rank: reduce the chunk's row,
    store the phase's accumulators."""
    def emit(nest: _Nest, offsets: list[ir.Value | None], indices: list[ir.Value]) -> None:
        b = nest.builder
        linear, accumulators = _begin_phase(nest, carry, indices, phase)
        _emit_nest(nest, nest.kernel.outer_rank, offsets, indices, phase)
        size = RECORD_BYTES * max(len(accumulators), 1)
        for k, acc in enumerate(accumulators):
            b.store(b.load(acc.value), _address(b, block, linear, size, RECORD_BYTES * k))
            if acc.index is not None:
                position = acc.global_index(b, position_base)
                b.store(position, _address(b, block, linear, size, RECORD_BYTES * k + 8))
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
        width = b.shl(_i64(1), lv)
        pairs = b.ashr(chunks, b.add(lv, _i64(1)))

        def pair(i: ir.Value) -> None:
            left = record(b.shl(i, b.add(lv, _i64(1))))
            right = record(b.add(b.shl(i, b.add(lv, _i64(1))), width))
            b.store(b.fadd(b.load(left, typ=typ), b.load(right, typ=typ)), left)
        _emit_counted_loop(b, pairs, "tree.pair", pair)
    _emit_counted_loop(b, levels, "tree.level", level)
    return b.load(record(_i64(0)), typ=typ)


def _finish_rows(phase: int, block: ir.Value, carry: ir.Value, chunks: ir.Value) -> Emit:
    """Return the emitter of ``finish<phase>`` at the outer rank: combine the chunks'
    records in chunk order, run the phase's outer-level instructions, carry its values."""
    def emit(nest: _Nest, offsets: list[ir.Value | None], indices: list[ir.Value]) -> None:
        b = nest.builder
        linear, accumulators = _begin_phase(nest, carry, indices, phase)
        outer_count: ir.Value = _i64(1)
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
                    position = b.load(_address(b, block, record, size, RECORD_BYTES * k + 8),
                                      typ=I64)
                acc.merge(b, value, position)

        if accumulators:
            _emit_counted_loop(b, chunks, "chunks", combine)
        for acc in accumulators:
            nest.values[acc.ins.id] = acc.result(b)
            nest.dtypes[acc.ins.id] = acc.ins.dtype
        _emit_body(nest, offsets, "outer", phase, indices)
        _store_carried(nest, carry, linear, phase)
    return emit


def _emit_function(module: ir.Module, kernel: Kernel, math: MathCalls, name: str,
                   rows: Callable[[ir.Value, ir.Value, ir.Value], Emit]) -> None:
    """Emit ``name.loops`` (the kernel's arguments, two block pointers, an int64) and the
    entry ``name(data, meta)`` that reads them as the kernel's entry does."""
    loops, nest = _loops_signature(module, kernel, math, f"{name}.loops", [PTR, PTR, I64])
    nb, nm = len(kernel.buffers), kernel.rank + len(kernel.runtime_strides())
    args = list(loops.args)
    args[-3].add_attribute("noalias")
    args[-2].add_attribute("noalias")
    _emit_outer_loops(nest, 0, [None] * nb, [], rows(*args[-3:]))
    nest.builder.ret_void()

    entry = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR]), name)
    entry.attributes.add("nounwind")
    data, meta = entry.args
    data.name, meta.name = "data", "meta"
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    ns = len(kernel.scalars)
    bases = [_load_slot(b, data, i, PTR, f"{buf.name}.base")
             for i, buf in enumerate(kernel.buffers)]
    metas = [_load_slot(b, meta, j, I64, f"m{j}") for j in range(nm)]
    scalars = [_load_scalar_param(b, data, nb + j, kernel, j) for j in range(ns)]
    block = _load_slot(b, data, nb + ns, PTR, "partials")
    carry = _load_slot(b, data, nb + ns + 1, PTR, "carry")
    extra = _load_slot(b, meta, nm, I64, "extra")
    b.call(loops, bases + metas + scalars + [block, carry, extra])
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
