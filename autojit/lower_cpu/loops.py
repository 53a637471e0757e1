"""IR building blocks every CPU loop emitter shares: a counted loop, an offset step, a slot
load. They know nothing of kernels (``loop_nest`` builds a kernel's loops from them), so
the pairwise-sum emitter, the thread partials and the nest itself use one spelling.

``counted_loop(b, n, "0", body)`` emits a guarded, rotated loop (``body(i)`` emits its
body at index ``%i0``)::

      %".5" = icmp sgt i64 %"n0", 0
      br i1 %".5", label %"loop0", label %"exit0"
    loop0:
      %"i0" = phi  i64 [0, %"entry"], [%"i0.next", %"loop0"]
      ...
      %"i0.next" = add nuw nsw i64 %"i0", 1
      %".10" = icmp slt i64 %"i0.next", %"n0"
      br i1 %".10", label %"loop0", label %"exit0"
    exit0:

The loops are scalar: LLVM's loop vectoriser widens them (and emits the remainder), which
the ``noalias`` outputs of the loops function let it do without overlap checks.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from autojit.lower_cpu.llvm_rules import I64

__all__ = ["I64", "PTR", "VOID", "advance", "counted_loop", "i64", "load_slot"]

PTR = ir.PointerType()
VOID = ir.VoidType()

#: ``body(index)`` emits one iteration at ``index`` (an ``i64`` value)
LoopBody = Callable[[ir.Value], None]


def i64(value: int) -> ir.Constant:
    """Return the ``i64`` constant ``value``."""
    return ir.Constant(I64, value)


def advance(b: ir.IRBuilder, offset: ir.Value | None, index: ir.Value,
            stride: int | ir.Value) -> ir.Value | None:
    """Return ``offset + index * stride`` (``None`` stands for 0); offsets are in elements
    inside one allocation, so the arithmetic cannot overflow (``nsw``)."""
    if isinstance(stride, int) and stride == 0:
        return offset
    if isinstance(stride, int) and stride == 1:
        step = index
    else:
        step = b.mul(index, i64(stride) if isinstance(stride, int) else stride, flags=("nsw",))
    return step if offset is None else b.add(offset, step, flags=("nsw",))


def counted_loop(b: ir.IRBuilder, size: ir.Value, tag: str, body: LoopBody) -> None:
    """Emit a guarded, rotated loop ``for i in range(size)`` (runs zero times for size <= 0);
    its blocks are ``loop<tag>``/``exit<tag>``, its index ``%i<tag>``."""
    fn = b.function
    loop, done = fn.append_basic_block(f"loop{tag}"), fn.append_basic_block(f"exit{tag}")
    preheader = b.block
    b.cbranch(b.icmp_signed(">", size, i64(0)), loop, done)
    b.position_at_end(loop)
    index = b.phi(I64, name=f"i{tag}")
    index.add_incoming(i64(0), preheader)
    body(index)
    following = b.add(index, i64(1), name=f"i{tag}.next", flags=("nuw", "nsw"))
    index.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, size), loop, done)
    b.position_at_end(done)


def load_slot(b: ir.IRBuilder, array: ir.Value, index: int, ty: ir.Type,
              name: str) -> ir.Value:
    """``%name = load <ty>, ptr (getelementptr <ty>, ptr %array, i64 index)``"""
    slot = b.gep(array, [i64(index)], inbounds=True, source_etype=ty)
    return b.load(slot, typ=ty, align=8, name=name)
