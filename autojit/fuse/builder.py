"""Build a Kernel's scalar body: loads, decomposed ops, constants folded once, stores."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from autojit.ir.decompose import decompose
from autojit.ir.evaluate import PRIMITIVE_REFS
from autojit.ir.kernel import Buffer, Instr, Kernel, Level, ScalarParam
from autojit.ir.ops import OP_TABLE, Op, reduce_result_dtype

_NOT_FOLDABLE = (Op.LOAD, Op.LOAD_SCALAR, Op.STORE, Op.CONST, Op.REDUCE, Op.SCAN, Op.RECUR,
                 Op.RECUR_SET)
_EFFECTS = (Op.STORE, Op.RECUR_SET)   # kept with what they read, though nothing reads them
_ANYWHERE = (Op.CONST, Op.LOAD_SCALAR)   # position-free: shared by every level and phase


class KernelBuilder:
    """Accumulates SSA instructions; identical constants and loads are emitted once.

    Implements the ``Builder`` protocol of ``autojit.ir.decompose``. Typical use::

        kb = KernelBuilder("k0_add", loop_sizes=(("n0",),))
        x = kb.load(kb.add_buffer("in0", f64, (1,)))
        y = kb.graph_op(Op.ADD, (x, kb.const(1.0, f64)), f64)
        kb.store(kb.add_buffer("out0", f64, (1,), is_output=True), y)
        kernel = kb.finish()
    """

    def __init__(self, name: str, loop_sizes: tuple[tuple[str, ...], ...]) -> None:
        self.name = name
        self.loop_sizes = loop_sizes
        self.buffers: list[Buffer] = []
        self.scalars: list[ScalarParam] = []
        self.body: list[Instr] = []
        self._dtypes: dict[int, np.dtype] = {}
        self._consts: dict[int, Any] = {}
        self._memo: dict[tuple, int] = {}
        self.current_node = -1
        self.level, self.phase = Level.ROW, 0
        self.pairwise: dict[int, int] = {}

    def position(self, level: Level, phase: int) -> None:
        """Emit the following instructions at ``level`` (row or outer) of ``phase``."""
        self.level, self.phase = level, phase

    # -- parameters -------------------------------------------------------------------
    def add_buffer(self, name: str, dtype: np.dtype, strides: tuple[int | None, ...],
                   is_output: bool = False, value: int = -1,
                   axes: tuple[int | None, ...] | None = None) -> int:
        """Declare a buffer; return its index."""
        self.buffers.append(Buffer(name, np.dtype(dtype), tuple(strides), is_output, value,
                                   axes))
        return len(self.buffers) - 1

    def add_scalar(self, name: str, dtype: np.dtype, value: int = -1) -> int:
        """Declare a runtime scalar parameter (once per graph value); return its index."""
        for index, param in enumerate(self.scalars):
            if value >= 0 and param.value == value:
                return index
        self.scalars.append(ScalarParam(name, np.dtype(dtype), value))
        return len(self.scalars) - 1

    # -- Builder protocol -------------------------------------------------------------
    def emit(self, op: Op, args: tuple[int, ...], dtype: np.dtype, attr: Any = None) -> int:
        dtype = np.dtype(dtype)
        if op is Op.SELECT and args[0] in self._consts:
            return args[1] if self._consts[args[0]] else args[2]
        if op not in _NOT_FOLDABLE and args and all(a in self._consts for a in args):
            return self._fold(op, args, dtype)
        where = () if op in _ANYWHERE else (self.level, self.phase)
        key = (op, args, dtype.str, repr(attr), where)
        if op not in _EFFECTS and key in self._memo:
            return self._memo[key]
        ins = Instr(len(self.body), op, tuple(args), dtype, attr, self.current_node,
                    self.level, self.phase)
        self.body.append(ins)
        self._dtypes[ins.id] = dtype
        if op not in _EFFECTS:
            self._memo[key] = ins.id
        return ins.id

    def _fold(self, op: Op, args: tuple[int, ...], dtype: np.dtype) -> int:
        """Evaluate an op on constants now, with the reference semantics renderers follow."""
        operands = [np.asarray(self._consts[a], dtype=self._dtypes[a]) for a in args]
        if op is Op.CAST:
            return self.const(operands[0].astype(dtype), dtype)
        reference = PRIMITIVE_REFS.get(op) or OP_TABLE[op].numpy_ref
        with np.errstate(all="ignore"):
            return self.const(np.asarray(reference(*operands)).astype(dtype), dtype)

    def const(self, value: Any, dtype: np.dtype) -> int:
        dtype = np.dtype(dtype)
        python_value = np.asarray(value).astype(dtype).item()
        ident = self.emit(Op.CONST, (), dtype, python_value)
        self._consts[ident] = python_value
        return ident

    def dtype_of(self, value: int) -> np.dtype:
        return self._dtypes[value]

    def const_value(self, value: int) -> Any | None:
        return self._consts.get(value)

    # -- conveniences -----------------------------------------------------------------
    def input_buffer(self, dtype: np.dtype, strides: tuple[int | None, ...], value: int,
                     axes: tuple[int | None, ...] | None = None) -> int:
        """Return the index of the input buffer holding ``value`` with these strides."""
        for index, buf in enumerate(self.buffers):
            if (not buf.is_output and buf.value == value and buf.strides == tuple(strides)
                    and buf.axes == axes):
                return index
        return self.add_buffer(f"in{len(self.buffers)}", dtype, strides, value=value,
                               axes=axes)

    def reduce(self, kind: str, value: int, dtype: np.dtype, pairwise: int | None = None
               ) -> int:
        """Accumulate ``value`` over the row with reduction ``kind``; return the result id.
        ``pairwise``: NumPy's pairwise sum along the innermost row loop, in chunks of that
        many elements (0: one chunk); see ``Kernel.pairwise``."""
        reduced = self.emit(Op.REDUCE, (value,), reduce_result_dtype(kind, dtype), kind)
        if pairwise is not None:
            self.pairwise[reduced] = pairwise
        return reduced

    def scan(self, kind: str, value: int, dtype: np.dtype) -> int:
        """Return the running ``kind`` of ``value`` along the row (a SCAN; see kernel.py)."""
        return self.emit(Op.SCAN, (value,), np.dtype(dtype), kind)

    def recur(self, init: int, dtype: np.dtype) -> int:
        """Return a RECUR starting at ``init`` (see kernel.py, "Recurrences"); each one
        is its own value (two recurrences with the same start are not one)."""
        ins = Instr(len(self.body), Op.RECUR, (init,), np.dtype(dtype), None,
                    self.current_node, self.level, self.phase)
        self.body.append(ins)
        self._dtypes[ins.id] = np.dtype(dtype)
        return ins.id

    def recur_set(self, recur: int, value: int) -> None:
        """The value ``recur`` carries into the next row iteration."""
        self.emit(Op.RECUR_SET, (recur, value), self._dtypes[recur])

    def load(self, buffer: int) -> int:
        return self.emit(Op.LOAD, (), self.buffers[buffer].dtype, buffer)

    def load_scalar(self, param: int) -> int:
        return self.emit(Op.LOAD_SCALAR, (), self.scalars[param].dtype, param)

    def cast(self, value: int, dtype: np.dtype) -> int:
        """Convert like NumPy's astype. Float to integer is what NumPy's C casts do on x86
        (out-of-range and NaN are undefined in C, so NumPy's answer is the instruction's):
        ``cvttsd2si`` truncation to int32 (int8/16, uint8/16 keep its low bits, so -1.0 ->
        uint8 255) or int64, with INT_MIN for NaN and out-of-range values; uint32 keeps the
        low 32 bits of the int64 truncation (NaN -> 0, -2**31 - 1 -> 2**31 - 1) and uint64
        is the compilers' form ``x >= 2**63 ? cvtt(x - 2**63) ^ 2**63 : cvtt(x)``.
        For uint32 that is NumPy's scalar loop (every element of a strided or short cast,
        the last ``n % 4`` of a contiguous one); its SIMD loop differs on NaN, below -2**31
        and from 2**32 (2**31 or 0), by the element's position, and only then raises the FP
        'invalid' flag, so NumPy's scalar answer is the one answer for every position."""
        dtype = np.dtype(dtype)
        source = self._dtypes[value]
        if source == dtype:
            return value
        if value in self._consts:
            return self.emit(Op.CAST, (value,), dtype)  # folded with NumPy's own astype
        if source.kind != "f" or dtype.kind not in "iu":
            return self.emit(Op.CAST, (value,), dtype)
        width = np.dtype(np.int64) if dtype.itemsize >= 4 and dtype != np.int32 \
            else np.dtype(np.int32)
        if dtype.kind == "i" or width.itemsize > dtype.itemsize:
            return self.cast(self._truncate_x86(value, source, width), dtype)
        half = 2.0 ** (8 * width.itemsize - 1)
        big = self.emit(Op.GE, (value, self.const(half, source)), np.dtype(bool))
        shifted = self.emit(Op.SELECT, (big, self.emit(Op.SUB, (value, self.const(
            half, source)), source), value), source)
        unsigned = self.emit(Op.CAST, (self._truncate_x86(shifted, source, width),), dtype)
        flipped = self.emit(Op.XOR, (unsigned, self.const(int(half), dtype)), dtype)
        return self.emit(Op.SELECT, (big, flipped, unsigned), dtype)

    def _truncate_x86(self, value: int, source: np.dtype, width: np.dtype) -> int:
        """``cvttsd2si`` to ``width`` (int32/int64): truncation toward zero inside the range,
        INT_MIN (the "integer indefinite") for NaN and everything outside it."""
        low = -(2.0 ** (8 * width.itemsize - 1))
        below = low - 1.0
        if float(np.asarray(below).astype(source)) == below:   # -2**31 - 1 in double
            low_ok = self.emit(Op.GT, (value, self.const(below, source)), np.dtype(bool))
        else:
            low_ok = self.emit(Op.GE, (value, self.const(low, source)), np.dtype(bool))
        high_ok = self.emit(Op.LT, (value, self.const(-low, source)), np.dtype(bool))
        in_range = self.emit(Op.AND, (low_ok, high_ok), np.dtype(bool))
        exact = self.emit(Op.CAST, (value,), width)      # the primitive saturates: exact here
        return self.emit(Op.SELECT, (in_range, exact, self.const(int(low), width)), width)

    def graph_op(self, op: Op, args: tuple[int, ...], dtype: np.dtype,
                 attrs: dict[str, Any] | None = None) -> int:
        """Emit a graph-level op through its decomposition; return the result id."""
        return decompose(self, op, args, np.dtype(dtype), attrs)

    def store(self, buffer: int, value: int) -> None:
        self.emit(Op.STORE, (value,), self.buffers[buffer].dtype, buffer)

    def finish(self, nodes: tuple[int, ...] = (), row_dims: int = 0, phases: int = 1,
               pairwise_from: int | None = None) -> Kernel:
        """Return the Kernel, without instructions no store depends on, renumbered densely."""
        live: set[int] = set()
        for ins in reversed(self.body):
            if ins.op in _EFFECTS or ins.id in live:
                live.update(ins.args)
                live.add(ins.id)
        renumber: dict[int, int] = {}
        body = []
        for ins in self.body:
            if ins.id in live:
                renumber[ins.id] = len(body)
                body.append(replace(ins, id=len(body),
                                    args=tuple(renumber[a] for a in ins.args)))
        pairwise = tuple((renumber[i], chunk) for i, chunk in self.pairwise.items()
                         if i in renumber)
        return Kernel(self.name, self.loop_sizes, tuple(self.buffers), tuple(self.scalars),
                      tuple(body), nodes, row_dims, phases, pairwise,
                      pairwise_from if pairwise else None)
