"""Pieces of CUDA C shared by the elementwise and the reduction emitters: parameter names,
the ``__global__`` signature, element offsets, index decoding and one line per instruction.

For buffer ``x`` (strides ``(None, 1)``) of a rank-2 kernel, ``offset`` gives
``i0 * st0_0 + i1`` and ``render_instr`` of its load gives::

    const double v0 = x[i0 * st0_0 + i1];
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autojit.errors import InternalError
from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import Op, rule_kind
from autojit.lower_gpu.cuda_rules import CALLED_NAMES, CUDA_RULES, Operands, c_type

IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Names the emitter itself declares inside the kernel, C/C++ words and the math functions
# the rules call (a parameter called `fmod` would hide fmod()); such a parameter is renamed.
_INTERNAL = re.compile(r"(v\d+|i\d*|n|step|rest|size\d+|st\d+_\d+|aj_\w*|(u?int\d+_t))\Z")
_C_WORDS_TEXT = """
    bool char short int long float double signed unsigned void const volatile return for
    if else while do switch case default break continue true false auto static extern
    struct union enum sizeof typedef goto register inline template typename class new
    delete this operator namespace using private public protected virtual friend throw try
    catch explicit mutable export constexpr nullptr decltype noexcept static_assert
    thread_local alignas alignof wchar_t char16_t char32_t asm and or not xor bitand bitor
    compl and_eq or_eq xor_eq not_eq restrict gridDim blockDim blockIdx threadIdx"""
_C_WORDS = frozenset(_C_WORDS_TEXT.split()) | CALLED_NAMES


@dataclass(frozen=True)
class Names:
    """The C parameter names of a kernel's buffers and scalars."""

    buffers: tuple[str, ...]
    scalars: tuple[str, ...]


def _safe_names(raw: list[str], prefix: str, taken: set[str]) -> tuple[str, ...]:
    """Return C identifiers for ``raw``: the name itself when usable, else ``<prefix><i>``."""
    names = []
    for i, name in enumerate(raw):
        usable = (IDENTIFIER.match(name) and not _INTERNAL.match(name)
                  and name not in _C_WORDS and name not in taken)
        chosen = name if usable else f"{prefix}{i}"
        taken.add(chosen)
        names.append(chosen)
    return tuple(names)


def param_names(kernel: Kernel) -> Names:
    """Return the kernel's parameter names (clashing or invalid ones renamed)."""
    taken: set[str] = set()
    buffers = _safe_names([b.name for b in kernel.buffers], "aj_buf", taken)
    scalars = _safe_names([s.name for s in kernel.scalars], "aj_arg", taken)
    return Names(buffers, scalars)


def coord(kernel: Kernel, dim: int) -> str:
    """Return the name of loop dimension ``dim``'s index: ``i`` (rank 1) or ``i<dim>``."""
    return "i" if kernel.rank == 1 else f"i{dim}"


def offset(kernel: Kernel, b: int, dims: Sequence[int] | None = None) -> str:
    """Return the element offset of buffer ``b``: ``i0 * st0_0 + i1 * 3LL + i2``, summed
    over ``dims`` (default: every loop dimension; the others count as index 0)."""
    terms = []
    for d, stride in enumerate(kernel.buffers[b].strides):
        if dims is not None and d not in dims:
            continue
        name = coord(kernel, d)
        terms += {None: [f"{name} * st{b}_{d}"], 0: [], 1: [name]}.get(
            stride, [f"{name} * {stride}LL"])
    return " + ".join(terms) or "0"


def pointer_types(kernel: Kernel) -> list[str]:
    """Return each buffer's pointer type: ``const double *`` unless the kernel writes it."""
    written = {ins.attr for ins in kernel.body if ins.op is Op.STORE}
    return [f"{'' if buf.is_output or b in written else 'const '}{c_type(buf.dtype)} *"
            for b, buf in enumerate(kernel.buffers)]


def signature(kernel: Kernel, names: Names, extra: Sequence[str] = ()) -> str:
    """Return ``extern "C" __global__ void k(const double *__restrict__ x, ...)``: buffers,
    scalars, loop sizes, runtime strides, then ``extra`` parameters."""
    aliased = kernel.aliased_buffers     # restrict (and the read-only cache) would be a lie
    params = [f"{pointer}{'' if b in aliased else '__restrict__ '}{name}"
              for b, (pointer, name) in enumerate(zip(pointer_types(kernel), names.buffers,
                                                      strict=True))]
    params += [f"{c_type(p.dtype)} {name}"
               for p, name in zip(kernel.scalars, names.scalars, strict=True)]
    params += [f"long long size{d}" for d in range(kernel.rank)]
    params += [f"long long st{b}_{d}" for b, d in kernel.runtime_strides()]
    params += list(extra)
    return f'extern "C" __global__ void {kernel.name}(\n    ' + ",\n    ".join(params) + ")"


def size_product(dims: Sequence[int]) -> str:
    """Return ``size0 * size1`` over ``dims`` (``1LL`` when there are none)."""
    return " * ".join(f"size{d}" for d in dims) or "1LL"


def decode(kernel: Kernel, flat: str, dims: Sequence[int], indent: str) -> list[str]:
    """Return the lines that split the C-order index ``flat`` over loop ``dims``::

        long long rest = i;
        const long long i1 = rest % size1; rest /= size1;
        const long long i0 = rest;
    """
    dims = list(dims)
    if not dims:
        return []
    if len(dims) == 1:
        return [f"{indent}const long long {coord(kernel, dims[0])} = {flat};"]
    lines = [f"{indent}long long rest = {flat};"]
    lines += [f"{indent}const long long {coord(kernel, d)} = rest % size{d}; rest /= size{d};"
              for d in reversed(dims[1:])]
    lines.append(f"{indent}const long long {coord(kernel, dims[0])} = rest;")
    return lines


def render_instr(kernel: Kernel, names: Names, ins: Instr, dtypes: dict[int, np.dtype],
                 dims: Sequence[int] | None = None) -> str:
    """Return one body line: ``const float v4 = sinf(v3);`` or ``out[i] = v4;`` (no
    indent). Loads and stores address the buffer over ``dims`` (default: all)."""
    operand = dtypes[ins.args[0]] if ins.args else None
    key = (ins.op, rule_kind(ins.op, ins.dtype, operand))
    if key not in CUDA_RULES:
        raise InternalError.no_rule("CUDA", ins.op, ins.dtype)
    attr = {
        Op.LOAD: lambda: f"{names.buffers[ins.attr]}[{offset(kernel, ins.attr, dims)}]",
        Op.STORE: lambda: f"{names.buffers[ins.attr]}[{offset(kernel, ins.attr, dims)}]",
        Op.LOAD_SCALAR: lambda: names.scalars[ins.attr],
        Op.INDEX: lambda: f"(long long){coord(kernel, ins.attr)}",
    }.get(ins.op, lambda: ins.attr)()
    args = tuple(f"v{a}" for a in ins.args)
    expr = CUDA_RULES[key](Operands(ins.dtype, operand or ins.dtype, args, attr))
    if ins.op is Op.STORE:
        return f"{expr};"
    return f"const {c_type(ins.dtype)} v{ins.id} = {expr};"


def emulate_call(kernel: Kernel, extra: tuple[str, ...] = ()) -> str:
    """Return the host call of the kernel from ``(data, meta)``, ``extra`` arguments last:
    ``k((const double *)data[0], (double *)data[1], meta[0]);``."""
    nb = len(kernel.buffers)
    args = [f"({pointer})data[{i}]" for i, pointer in enumerate(pointer_types(kernel))]
    args += [f"*(const {c_type(p.dtype)} *)data[{nb + i}]" for i, p in enumerate(kernel.scalars)]
    args += [f"meta[{m}]" for m in range(kernel.rank + len(kernel.runtime_strides()))]
    return f"{kernel.name}(" + ", ".join([*args, *extra]) + ");"
