"""Render a Kernel as an LLVM IR module; each instruction goes through ``rules.LLVM_RULES``.

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

from autojit.errors import CompileError
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.printer import format_kernel
from autojit.ir.zero_sign import zero_sign_blind
from autojit.lower_cpu.mathlib import MathCalls
from autojit.lower_cpu.reduce import Accumulator
from autojit.lower_cpu.rules import (
    I64,
    LLVM_RULES,
    BodyContext,
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
        if ins.op is Op.REDUCE:
            if nest.accumulators[ins.id].needs_position and position is None:
                position = _row_position(nest, indices)
            nest.accumulators[ins.id].update(b, nest.values[ins.args[0]], position)
            continue
        rule = LLVM_RULES.get((ins.op, rule_kind(ins, ctx.dtypes)))
        if rule is None:
            raise CompileError(f"no LLVM rule for {ins.op.value} on {ins.dtype}",
                               source=format_kernel(kernel))
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

    _emit_counted_loop(b, nest.sizes[depth], str(depth) if phase < 0 else f"{depth}p{phase}",
                       inner)


def _prepare(nest: _Nest) -> None:
    """Give constants and scalars their values, and every REDUCE/SCAN its accumulator, up
    front: both are used at several levels, and allocas belong in the entry block."""
    ctx = BodyContext(nest.builder, nest.math, nest.kernel, [], nest.scalars, nest.dtypes)
    for ins in nest.kernel.body:
        if ins.op in (Op.CONST, Op.LOAD_SCALAR):
            nest.values[ins.id] = LLVM_RULES[(ins.op, ins.dtype.kind)](ctx, ins, [])
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
    symbol = symbol or kernel.name
    module = ir.Module(name=kernel.name)
    math = MathCalls(module)
    loops = _emit_loops_function(module, kernel, math, f"{symbol}.loops")
    _emit_entry(module, kernel, loops, symbol)
    math.finish()
    return str(module)
