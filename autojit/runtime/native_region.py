"""The native driver of a CPU loop region: the whole loop in one C call (issue 15 point 5).

Once per call layout of a loop (argument shapes, strides, int values, trip range; the
program is kept and reused with a later call's addresses and float scalars) the body's
plan becomes a flat program of records that ``autojit._native.loops.run`` executes for
the whole loop, GIL released, no Python per iteration: each body kernel a call of its
entry (the kernel ABI ``fn(void **data, int64 *meta)``, on the calling thread: a split the
CPU target would make for a big kernel is not made here), each 1-d dot product NumPy's
own BLAS call (``cblas_?dot`` of the OpenBLAS NumPy loaded, summed as NumPy's
``DOUBLE_dot``/``FLOAT_dot`` do: bit for bit NumPy's result), each ``for`` loop inside
the body a nested loop record. What changes per iteration is affine in the enclosing
loops' indices: a view ``A[i, :j]`` is an address ``base + i * s0`` and a size ``j``; the
records' fields (data pointers, meta sizes, int64 scalars) are patched from those affine
forms before each call. Python's slices clamp and wrap: every bound the affine forms
assume inside its array is a check (``affine >= 0``), and a dry run of the nest (integer
arithmetic only, no kernel; an innermost loop at its two ends) proves them all before
anything runs; where one fails the host loop runs instead and does what NumPy does
(``RegionMiss`` included). A run then executes the program's run form (``_run_form``: no
checks, affine forms as wide as the nest, each innermost patch moved by its step after
the loop's first iteration): LU's 160,000 inner iterations cost little besides their BLAS
calls.

Two consecutive kernels of a stencil's evaluate-then-write (the right-hand side into a
temporary from row-shifted views of an array, then the temporary into it) run as row
strips where ``row_strips`` proves that computes the same: the first kernel on a few rows,
the second on the rows it may then write, a nested loop of the same kernels with their
row pointers moved and their first loop size set (the temporary's strip still in L1).

The body's temporaries are allocated once (their shapes must not change per iteration).
At the top of the nest, carried values live in buffers of their own (each iteration's
next version copied back) and a ``while`` runs its body while the condition byte its
last result is copied into is set; a ``for`` with a ``break`` (``Region.exit``), at any
depth of the nest, begins its body with an EXIT record on its break flag's buffer: the
loop stops after the iteration that sets it; its range is proven and run in doubling
pieces (``_pieces``: the iterations past the break need not be valid, and a dry run of a
top loop holding loops visits each of its iterations), the host loop running the rest
where a later piece is not proven (``Resumed``). Bodies the driver does
not take keep the host loop: carried values or ``while`` in an inner loop, host
decisions, sizes from Python ints, host prologue steps other than int ``+ - *``
(``x[i - 1]`` is affine), views whose bounds are not affine in the indices
(``u[t % 2]``), non-getitem views of moving arrays, library calls other than 1-d float
dot products on BLAS strides, kernels not compiled for the CPU, scalars other than int64
read per iteration, carried results that are views.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.fuse.plan import Plan, RegionCall
from autojit.ir.ops import Op
from autojit.ir.views import ScalarRef
from autojit.lower_cpu.program import CpuProgram
from autojit.runtime import row_strips
from autojit.runtime.binding import argument_overlaps

try:
    from autojit._native.loops import run as _native_run
except ImportError:   # not built: every loop keeps the host loop
    _native_run = None
try:   # (an extension built before these: the same in Python)
    from autojit._native.loops import bind as _native_bind
    from autojit._native.loops import layout as _native_layout
except ImportError:
    _native_bind = _native_layout = None

OP_LOOP, OP_KERNEL, OP_DOT, OP_CHECK, OP_COPY, OP_WHILE, OP_PCOPY, OP_EXIT = range(1, 9)
MAX_DEPTH = 4   # loops nested in one driver call (words per affine form after its base)
_WORDS_AT = 3 + 2 * (1 + MAX_DEPTH)   # a LOOP record's body length, after its bounds
_LIMIT = 1 << 62   # Python ints past this are not affine int64 values here

#: loops the native driver ran (tests read it: the driver, not the host loop, ran), and
#: why the last loop it did not run kept the host loop
RUNS = [0]
DECLINED = [""]
#: loops run with a row-strip schedule of a kernel pair (``row_strips``), and why the last
#: pair of consecutive kernels the driver built kept one launch after the other
STRIP_RUNS = [0]
STRIPS_DECLINED = [""]


class Declined(Exception):
    """This loop call keeps the host loop (the reason, for tests and reports); ``lasting``:
    every call of the same layout would (the answer is kept), else only this one's
    memory (arguments that overlap)."""

    def __init__(self, reason: str, lasting: bool = True) -> None:
        super().__init__(reason)
        self.lasting = lasting


class Aff:
    """An int affine in the loop indices: ``const + sum(coefs[d] * index_d)``, plus, for
    an address, the data address of the loop's argument ``root`` (the program is kept for
    later calls with other arrays of the same layout: their addresses are put in then)."""

    __slots__ = ("const", "coefs", "root")

    def __init__(self, const: int, coefs: dict[int, int] | None = None,
                 root: int | None = None) -> None:
        if abs(const) > _LIMIT:
            raise Declined("an int too large for the native driver")
        self.const, self.root = const, root
        self.coefs = {d: c for d, c in (coefs or {}).items() if c}

    @property
    def fixed(self) -> bool:
        """The same value at every iteration of every call with this layout."""
        return not self.coefs and self.root is None

    def __add__(self, other: Aff | int) -> Aff:
        other = _aff(other)
        if self.root is not None and other.root is not None:
            raise Declined("a sum of two addresses")
        coefs = dict(self.coefs)
        for d, c in other.coefs.items():
            coefs[d] = coefs.get(d, 0) + c
        return Aff(self.const + other.const, coefs,
                   self.root if other.root is None else other.root)

    def __sub__(self, other: Aff | int) -> Aff:
        return self + _aff(other) * -1

    def __mul__(self, other: Aff | int) -> Aff:
        other = _aff(other)
        if not other.fixed:
            if not self.fixed:
                raise Declined("a product of two sizes that change per iteration")
            return other * self.const
        k = other.const
        if self.root is not None and k != 1:
            raise Declined("a multiple of an address")
        return Aff(self.const * k, {d: c * k for d, c in self.coefs.items()}, self.root)

    def same(self, other: Aff) -> bool:
        return (self.const == other.const and self.coefs == other.coefs
                and self.root == other.root)

    def words(self, depth: int) -> list[int]:
        return [self.const, *(self.coefs.get(d, 0) for d in range(depth))]


def _aff(value: Aff | int) -> Aff:
    return value if value.__class__ is Aff else Aff(int(value))


@dataclass
class Arr:
    """An array operand: its address (affine), shape (affine per axis), byte strides
    (fixed), dtype, and the memory it lies in (held: its address stays valid)."""

    address: Aff
    shape: tuple[Aff, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    root: Any
    concrete: Any = None   # the NumPy array itself, where nothing about it moves
    frozen: bool = False   # its values are known now (a constant of the plan)


@dataclass
class Num:
    """A scalar operand: an int affine in the indices, or a Python value that stays
    (``source``: the loop's argument it is, rewritten into its holder at each call)."""

    aff: Aff | None
    value: Any = None
    source: int | None = None


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _of_array(array: np.ndarray, root: Any, frozen: bool = False) -> Arr:
    """Memory of the program's own (a temporary, a constant): its address as it is."""
    return Arr(Aff(_address(array)), tuple(Aff(s) for s in array.shape), array.strides,
               array.dtype, root, array, frozen)


def _view_of(view: np.ndarray, base: Arr) -> Arr:
    """A view NumPy took of ``base.concrete``: its address relative to ``base``'s."""
    return Arr(base.address + (_address(view) - _address(base.concrete)),
               tuple(Aff(s) for s in view.shape), view.strides, view.dtype, base.root, view,
               base.frozen)


def _of_value(value: Any, source: int | None = None) -> Arr | Num:
    """An operand given to the loop (``source``: which of its arguments; None: a constant
    of the plan)."""
    if isinstance(value, np.ndarray):
        if source is None:
            return _of_array(value, value, frozen=True)
        return Arr(Aff(0, root=source), tuple(Aff(s) for s in value.shape), value.strides,
                   value.dtype, value, value)
    if isinstance(value, bool | float | complex) or not isinstance(value, int | np.integer):
        return Num(None, value, source)
    return Num(Aff(operator.index(value)), value)


class Program:
    """The records being built (``code``), the work area's initial words (``work``) and
    the words that must hold an address inside the work area (``relocations``)."""

    def __init__(self) -> None:
        self.code: list[int] = []
        self.work: list[int] = []
        self.relocations: list[tuple[int, int]] = []   # (word, word it points to)
        self.work_roots: list[tuple[int, int]] = []    # (work word, argument): + its address
        self.code_roots: list[tuple[int, int]] = []    # (code word, argument): + its address
        self.rewrites: list[tuple[np.ndarray, int]] = []   # (holder, argument)
        self.overlaps: list[tuple[int, int]] = []   # arguments that must not overlap
        self.held: list[Any] = []
        self.depth = 0
        self.checks = 0
        self.dots = False
        self.strips = 0   # kernel pairs run as row strips
        self.backend: Any = None   # the CPU target (its thread split)

    def words(self, count: int) -> int:
        self.work.extend([0] * count)
        return len(self.work) - count

    def check(self, value: Aff) -> None:
        """``value >= 0`` at every iteration, or the host loop runs."""
        if value.root is not None:
            raise Declined("a bound on an address")
        if value.fixed:
            if value.const < 0:
                raise Declined("a bound outside its array")
            return
        self.code += [OP_CHECK, *value.words(MAX_DEPTH)]
        self.checks += 1

    def equal(self, a: Aff, b: Aff) -> None:
        if not a.same(b):
            self.check(a - b)
            self.check(b - a)

    def set_word(self, word: int, value: Aff, patches: list[tuple[list[int], Any]]) -> None:
        """``work[word]`` is ``value``: set now, or patched per iteration."""
        if value.coefs:
            patches.append(([word, *value.words(MAX_DEPTH)], value.root))
            return
        self.work[word] = value.const
        if value.root is not None:
            self.work_roots.append((word, value.root))

    def copy(self, target: Aff, source: Aff, size: int) -> None:
        """Copy ``size`` bytes (addresses fixed, or patched per iteration)."""
        if target.fixed and source.fixed:
            self.code += [OP_COPY, target.const, source.const, size]
            return
        fields = self.words(2)
        patches: list[tuple[list[int], Any]] = []
        self.set_word(fields, target, patches)
        self.set_word(fields + 1, source, patches)
        self.code += [OP_PCOPY, len(patches)]
        self.emit_patches(patches)
        self.code += [fields, fields + 1, size]

    def emit_patches(self, patches: Sequence[tuple[list[int], Any]]) -> None:
        for words, root in patches:
            if root is not None:
                self.code_roots.append((len(self.code) + 1, root))
            self.code += words


def _bound(source: tuple[str, Any], values: Sequence[Any]) -> Aff:
    kind, what = source
    value = values[what] if kind == "input" else _of_value(what)
    if value.__class__ is Arr and value.frozen and value.concrete.ndim == 0 \
            and value.dtype.kind in "iu":
        return Aff(operator.index(value.concrete[()]))
    if value.__class__ is not Num or value.aff is None:
        raise Declined("a loop bound that is not an int of the indices")
    return value.aff


def _step_view(program: Program, base: Arr, step: tuple[str, Any], values: Sequence[Any]
               ) -> Arr:
    """``base`` seen through one view step, as ``ir.views.apply_view`` takes it."""
    name, argument = step
    if base.concrete is not None and not _has_refs(step):
        from autojit.ir.views import apply_view
        view = apply_view(base.concrete, step)
        if view.size and not np.may_share_memory(view, base.concrete):
            raise Declined("a view that copies")
        return _view_of(view, base)
    if name != "getitem":
        raise Declined(f"a {name} of an array that moves per iteration")
    key = argument if isinstance(argument, tuple) else (argument,)
    if any(k is None or k.__class__ is bool or isinstance(k, np.bool_) for k in key):
        raise Declined("a newaxis or bool index")
    explicit = sum(k is not Ellipsis for k in key)
    if explicit > len(base.shape) or sum(k is Ellipsis for k in key) > 1:
        raise Declined("too many indices")
    if Ellipsis not in key:
        key = (*key, Ellipsis)
    parts: list[Any] = []
    for k in key:
        parts += [slice(None)] * (len(base.shape) - explicit) if k is Ellipsis else [k]
    address, shape, strides = base.address, [], []
    for part, size, stride in zip(parts, base.shape, base.strides):
        if part.__class__ is slice:
            start, stop, by = (_part(b, values) for b in (part.start, part.stop, part.step))
            if all(b is None or b.fixed for b in (start, stop, by)) and size.fixed:
                first, _, by_ = slice(*(None if b is None else b.const
                                        for b in (start, stop, by))).indices(size.const)
                length = len(range(*slice(*(None if b is None else b.const
                                             for b in (start, stop, by))).indices(size.const)))
                address = address + first * stride
                shape.append(Aff(length))
                strides.append(stride * by_)
                continue
            if by is not None and not (by.fixed and by.const == 1):
                raise Declined("a slice step that is not 1")
            start = Aff(0) if start is None else start
            stop = size if stop is None else stop
            if (start.fixed and start.const < 0) or (stop.fixed and stop.const < 0):
                raise Declined("a slice bound counted from the end of a moving size")
            program.check(start)
            program.check(stop - start)
            program.check(size - stop)
            address = address + start * stride
            shape.append(stop - start)
            strides.append(stride)
        else:
            index = _part(part, values)
            if index is None:
                raise Declined("an index that is not an int")
            if index.fixed and size.fixed:
                value = index.const + size.const if index.const < 0 else index.const
                if not 0 <= value < size.const:
                    raise Declined("an index out of range")
                index = Aff(value)
            elif index.fixed and index.const < 0:
                raise Declined("an index counted from the end of a moving size")
            else:
                program.check(index)
                program.check(size - index - 1)
            address = address + index * stride
    return Arr(address, tuple(shape), tuple(strides), base.dtype, base.root)


def _has_refs(step: tuple[str, Any]) -> bool:
    from autojit.ir.views import step_refs
    return bool(step_refs(step))


def _part(part: Any, values: Sequence[Any]) -> Aff | None:
    if part is None:
        return None
    if part.__class__ is ScalarRef:
        value = values[part.index]
        if value.__class__ is not Num or value.aff is None:
            raise Declined("an index or bound that is not an int of the indices")
        return value.aff
    if part.__class__ is int:
        return Aff(part)
    raise Declined("an index of another kind")


#: host prologue steps (``ir.host``) on ints that stay affine in the indices
_AFFINE_STEPS: dict[str, Any] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "neg": lambda a: a * -1, "pos": lambda a: a}


def _prologue(program: Program, body: Plan, params: list[Any]) -> list[Any]:
    """``params`` followed by the body's host prologue values (``x[i - 1]``: ``i - 1``),
    each an int affine in the indices; Python's replay checks each result's type is
    ``int`` (an operand of another type: Declined, the host loop replays it)."""
    values = list(params)
    for step in body.graph.prologue:
        operands = []
        for kind, v in step.operands:
            value = values[v] if kind == "ref" else _of_value(v)
            if (value.__class__ is not Num or value.aff is None
                    or (value.value is not None and value.value.__class__ is not int)):
                raise Declined("a host prologue step on a value that is not an int")
            operands.append(value.aff)
        values.append(Num(_AFFINE_STEPS[step.op](*operands)))
    return values


def _static_refusal(body: Plan) -> str:
    """Why a body never takes the driver ('' when it may), derived once per body."""
    found = body.schedule_cache.get("native_driver")
    if found is not None:
        return found
    graph = body.graph
    reason = ("a host prologue other than int arithmetic" if any(
                  step.op not in _AFFINE_STEPS or step.result_type != "int"
                  for step in graph.prologue) else
              "decisions on Python scalars" if graph.decisions else
              "sizes from Python ints" if graph.scalar_dims else
              "")
    if not reason:
        for call in body.regions:
            if call.region.kind != "for" or call.region.private:
                reason = "an inner while loop, or one writing a computed value"
                break
            reason = _static_refusal(call.body)
            if reason:
                break
    body.schedule_cache["native_driver"] = reason
    return reason


def _blas() -> tuple[int, int] | None:
    """The addresses of ``cblas_ddot``/``cblas_sdot`` in the BLAS NumPy loaded (cached)."""
    found = _BLAS.get("fns")
    if found is None and "fns" not in _BLAS:
        _BLAS["fns"] = found = _find_blas()
    return found


_BLAS: dict[str, Any] = {}


def _find_blas() -> tuple[int, int] | None:
    import glob
    import os
    here = os.path.dirname(os.path.dirname(np.__file__))
    names = [("scipy_cblas_ddot64_", "scipy_cblas_sdot64_")]
    for path in sorted(glob.glob(os.path.join(here, "numpy.libs", "libscipy_openblas64_*.so"))):
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        except OSError:
            continue
        for d, s in names:
            try:
                return (ctypes.cast(getattr(library, d), ctypes.c_void_p).value,
                        ctypes.cast(getattr(library, s), ctypes.c_void_p).value)
            except AttributeError:
                continue
    return None


@dataclass
class _Launch:
    """One kernel call's operands, as the records launching it are built from them."""

    kernel: Any
    compiled: CpuProgram
    arrays: list[Arr]
    scalars: list[Num]
    meta: list[Aff]   # loop sizes, then runtime element strides (``KernelCall.strides``)

    def loop_steps(self) -> list[tuple[int, ...]]:
        """Each operand's byte stride along each loop dimension (the kernel's addressing:
        compiled-in element strides, or the runtime ones in ``meta``)."""
        kernel, rank = self.kernel, self.kernel.rank
        runtime = {bd: rank + i for i, bd in enumerate(kernel.runtime_strides())}
        found = []
        for b, (buffer, array) in enumerate(zip(kernel.buffers, self.arrays)):
            found.append(tuple(
                (s if s is not None else self.meta[runtime[(b, d)]].const)
                * array.dtype.itemsize for d, s in enumerate(buffer.strides)))
        return found

    def row_steps(self) -> list[int]:
        return [steps[0] for steps in self.loop_steps()]


class _Body:
    """One body's records, built into ``program`` at loop depth ``depth``."""

    def __init__(self, program: Program, body: Plan, programs: Sequence[Any],
                 params: list[Any], sizes: dict[str, Aff], depth: int,
                 results: bool = False) -> None:
        from autojit.runtime.schedule import build_schedule
        self.program, self.body, self.programs = program, body, programs
        self.sizes = dict(sizes)
        self.depth = depth
        graph = body.graph
        params = _prologue(program, body, params)
        first = len(params)
        schedule = self.schedule = build_schedule(body, first)
        if schedule.owned_outputs or (schedule.outputs and not results):
            raise Declined("a body with results")
        self.params = params
        # pairs the host loop reads from a copy where they overlap (``overlaps``), or runs
        # as Python (``argument_overlaps(body).python``): here, memory that cannot overlap
        for written, other in (*schedule.overlaps, *argument_overlaps(body).python):
            roots = [getattr(params[p], "root", None) for p in (written, other)]
            if any(r is None for r in roots) or np.may_share_memory(*roots):
                raise Declined("a written argument that may overlap another", False)
            sources = [params[p].address.root for p in (written, other)]
            if None not in sources:   # arguments of the loop: checked again at each call
                program.overlaps.append((sources[0], sources[1]))
        values: list[Any] = [*params, *([None] * len(schedule.allocations)),
                             *(_of_array(c, c, frozen=True) for c in schedule.constants),
                             *([None] * len(schedule.views))]
        self.values = values
        for param, value in zip(graph.params, params):
            if param.kind == "array":
                if value.__class__ is not Arr:
                    raise Declined("an array parameter that is not an array")
                self.unify(param.type.shape, value.shape)
        for node in graph.nodes:   # NumPy refuses writes into read-only arrays
            if node.op is Op.WRITE and node.attr("root") is None:
                target = params[node.attr("param")]
                root = getattr(target, "root", None)
                if root is None or not getattr(root.flags, "writeable", False):
                    raise Declined("a write into a read-only array")
        view_nodes = self._view_nodes()
        first_view = first + schedule.view_offset
        pending = list(range(len(schedule.views)))
        for index, (shape, dtype) in enumerate(schedule.allocations):
            concrete = []
            for d in shape:
                size = self.sizes.get(d) if d.__class__ is str else Aff(d)
                if size is None:
                    self._views(pending, first_view, view_nodes, stop_at_allocation=True)
                    size = self.sizes.get(d)
                if size is None or not size.fixed:
                    raise Declined("a temporary whose size changes per iteration")
                concrete.append(size.const)
            buffer = np.empty(tuple(concrete), dtype)
            program.held.append(buffer)
            values[first + index] = _of_array(buffer, buffer)
        self._views(pending, first_view, view_nodes, stop_at_allocation=False)
        for symbol, value in graph.guards:
            if symbol in self.sizes:
                program.equal(self.sizes[symbol], Aff(value))
        for symbol in graph.nonempty:
            if symbol in self.sizes:
                program.check(self.sizes[symbol] - 1)

    def _view_nodes(self) -> list[Any]:
        """The graph's VIEW node of each of the schedule's views, in its order (the walk
        of ``schedule.build_schedule``: kernel operands, library operands, loop operands,
        results; a chain of views from its base up)."""
        body, graph = self.body, self.body.graph
        seen: set[int] = set(body.allocations)
        found: list[Any] = []

        def walk(node_id: int) -> None:
            chain = []
            while node_id not in seen and graph.node(node_id).op is Op.VIEW:
                chain.append(node_id)
                node_id = graph.node(node_id).inputs[0]
            node = graph.node(node_id)
            if node.op is Op.WRITE and node.attr("root") is not None:
                walk(node.attr("root"))
            for view in reversed(chain):
                seen.add(view)
                found.append(graph.node(view))

        for kernel in body.own_kernels:
            for b in kernel.buffers:
                walk(b.value)
        for call in body.libraries:
            for i in (*call.inputs, call.output):
                walk(i)
        for region in body.regions:
            for i in (*region.inputs, *region.carries):
                walk(i)
        for o in graph.outputs:
            walk(o)
        views = self.schedule.views
        if len(found) != len(views) or any(n.attr("step") is not v[1]
                                            for n, v in zip(found, views)):
            raise Declined("the body's views in another order than its schedule's")
        return found

    def _views(self, pending: list[int], first_view: int, nodes: list[Any],
               stop_at_allocation: bool) -> None:
        values, schedule = self.values, self.schedule
        while pending:
            v = pending[0]
            base_slot, step = schedule.views[v]
            base = values[base_slot]
            if base is None:
                if stop_at_allocation:
                    return
                raise Declined("a view of a value not in memory")
            if base.__class__ is not Arr:
                raise Declined("a view of a scalar")
            view = values[first_view + v] = _step_view(self.program, base, step, values)
            self.unify(nodes[v].type.shape, view.shape)
            pending.pop(0)

    def unify(self, dims: Sequence[Any], shape: Sequence[Aff]) -> None:
        """The sizes ``dims`` name are ``shape``'s (checked equal where named twice)."""
        if len(dims) != len(shape):
            raise Declined("a rank that differs from the trace's")
        for dim, size in zip(dims, shape):
            if dim.__class__ is not str:
                self.program.equal(size, Aff(int(dim)))
                continue
            known = self.sizes.get(dim)
            if known is None:
                self.sizes[dim] = size
            else:
                self.program.equal(known, size)

    def emit(self) -> None:
        schedule, body = self.schedule, self.body
        order, at = schedule.order, 0
        while at < len(order):
            kind, index = order[at]
            at += 1
            if kind == "kernel":
                first = self._launch(index)
                if at < len(order) and order[at][0] == "kernel" and self._strips(
                        first, self._launch(order[at][1])):
                    at += 1   # the pair ran as row strips
                    continue
                self._emit_kernel(first)
            elif kind == "library":
                self._library(*schedule.libraries[index])
            else:
                self._region(body.regions[index], schedule.regions[index])

    def results(self) -> list[tuple[Arr, bool, bool]]:
        """Each result of the body (a carried value's next version, a while's condition):
        (its operand, whether NumPy gives it as a scalar, whether it is a parameter). A
        result must be a temporary of the body or a parameter: a view of an argument is
        live memory the next iteration's writes may change, not a value to copy."""
        found = []
        first, count = len(self.params), len(self.schedule.allocations)
        for slot, scalar in self.schedule.outputs:
            value = self.values[slot]
            is_param = slot < first
            if value.__class__ is not Arr or not (is_param or first <= slot < first + count):
                raise Declined("a carried value that is not a temporary of the body")
            found.append((value, scalar, is_param))
        return found

    def _array(self, slot: int) -> Arr:
        value = self.values[slot]
        if value.__class__ is not Arr:
            raise Declined("an operand that is not an array")
        return value

    def _size(self, symbols: Sequence[str]) -> Aff:
        total = Aff(1)
        for s in symbols:
            size = self.sizes.get(s)
            if size is None:
                raise Declined(f"a size not bound: {s}")
            total = total * size
        return total

    def _launch(self, index: int) -> _Launch:
        """Kernel ``index``'s operands (a whole launch must not be split over threads)."""
        program, call = self.program, self.schedule.calls[index]
        kernel, compiled = self.body.kernels[index], self.programs[index]
        if not isinstance(compiled, CpuProgram):
            raise Declined("a kernel not compiled for this CPU")
        arrays = [self._array(s) for s in call.buffers]
        scalars = []
        for param, source in zip(kernel.scalars, call.scalars):
            value = (self.values[source] if source.__class__ is int
                     else Num(self._size(source)))
            if value.__class__ is not Num:
                raise Declined("a scalar operand that is an array")
            if value.aff is not None and not value.aff.fixed \
                    and np.dtype(param.dtype) != np.int64:
                raise Declined("an index read as a scalar of another dtype")
            scalars.append(value)
        meta_values = [self._size(product) for product in call.loop]
        for buffer, axis in call.strides:
            array = arrays[buffer]
            meta_values.append(Aff(array.strides[axis] // array.dtype.itemsize
                                   if axis is not None else 0))
        if all(v.fixed for v in meta_values) and _splits(program.backend, kernel, compiled,
                                                          [v.const for v in meta_values]):
            raise Declined("a kernel the CPU target splits over threads")
        return _Launch(kernel, compiled, arrays, scalars, meta_values)

    def _emit_kernel(self, launch: _Launch, first: Aff | None = None,
                     rows: int | None = None) -> None:
        """One KERNEL record of ``launch``: its whole loop nest, or (``first``, ``rows``)
        that many rows of its first loop dimension from row ``first`` on (a row strip)."""
        program, kernel, arrays = self.program, launch.kernel, launch.arrays
        data = program.words(len(arrays) + len(kernel.scalars))
        patches: list[tuple[list[int], Any]] = []
        steps = launch.row_steps() if first is not None else None
        for k, array in enumerate(arrays):
            address = array.address if steps is None else array.address + first * steps[k]
            program.set_word(data + k, address, patches)
        for k, (param, value) in enumerate(zip(kernel.scalars, launch.scalars)):
            if value.aff is not None and not value.aff.fixed:
                holder = program.words(1)
                program.set_word(holder, value.aff, patches)
                program.relocations.append((data + len(arrays) + k, holder))
                continue
            memory = np.empty((), param.dtype)
            memory[()] = value.value if value.value is not None else value.aff.const
            program.held.append(memory)
            if value.source is not None:
                program.rewrites.append((memory, value.source))
            program.work[data + len(arrays) + k] = memory.__array_interface__["data"][0]
        meta_values = list(launch.meta)
        if rows is not None:
            meta_values[0] = Aff(rows)
        meta = program.words(max(len(meta_values), 1))
        for k, value in enumerate(meta_values):
            program.set_word(meta + k, value, patches)
        program.code += [OP_KERNEL, launch.compiled.address, data, meta, len(patches)]
        program.emit_patches(patches)

    def _strips(self, first: _Launch, second: _Launch) -> bool:
        """Emit the pair as row strips (``row_strips``) where that is proven to compute
        what one launch after the other does; False (nothing emitted) where it is not."""
        plan = row_strips.plan_strips(*(self._side(launch, first, second)
                                        for launch in (first, second)))
        if plan.__class__ is str:
            STRIPS_DECLINED[0] = plan
            return False
        depth = self.depth + 1
        if depth >= MAX_DEPTH:
            STRIPS_DECLINED[0] = "loops nested too deep"
            return False
        program, rows, lag, total = self.program, plan.rows, plan.lag, plan.total
        program.depth = max(program.depth, depth + 1)
        self._emit_kernel(first, Aff(0), rows)
        self._emit_kernel(second, Aff(0), rows - lag)
        whole = total // rows * rows
        if whole > rows:   # strips [i, i + rows) of k0, [i - lag, i + rows - lag) of k1
            index = Aff(0, {depth: 1})
            head = len(program.code)
            program.code += [OP_LOOP, depth, *Aff(rows).words(MAX_DEPTH),
                             *Aff(whole).words(MAX_DEPTH), rows, 0, 1]
            begin = len(program.code)
            self._emit_kernel(first, index, rows)
            self._emit_kernel(second, index - lag, rows)
            program.code[head + _WORDS_AT] = len(program.code) - begin
        if total > whole:
            self._emit_kernel(first, Aff(whole), total - whole)
        if total - whole + lag:
            self._emit_kernel(second, Aff(whole - lag), total - whole + lag)
        program.strips += 1
        return True

    def _side(self, launch: _Launch, first: _Launch, second: _Launch
              ) -> row_strips.Side:
        """``launch`` as ``row_strips`` sees it: fixed loop sizes, each operand's root and
        place in it (a kernel whose sizes or addresses move per iteration: not plain)."""
        if not all(v.fixed for v in launch.meta) or not row_strips.plain_kernel(
                launch.kernel):
            return row_strips.Side((), (), False)
        rank = launch.kernel.rank
        sizes = tuple(v.const for v in launch.meta[:rank])
        written = second.arrays[[b.is_output for b in second.kernel.buffers].index(True)] \
            if any(b.is_output for b in second.kernel.buffers) else None
        operands = []
        for array, steps, buffer in zip(launch.arrays, launch.loop_steps(),
                                        launch.kernel.buffers):
            if array.address.coefs or any(not d.fixed for d in array.shape):
                return row_strips.Side((), (), False)
            root = array.root
            if array.address.root is not None:
                key, offset = ("argument", array.address.root), array.address.const
            else:
                offset = array.address.const - _address(root)
                kind = "constant" if array.frozen else "temporary" if any(
                    root is b for b in self.program.held) else "other"
                key = (kind, id(root))
                if kind != "temporary" and written is not None and np.may_share_memory(
                        root, written.root):
                    return row_strips.Side((), (), False)
            operands.append(row_strips.Operand(
                key, tuple(root.shape), tuple(root.strides), offset, steps,
                array.dtype.itemsize, buffer.is_output))
        return row_strips.Side(sizes, tuple(operands), True)

    def _library(self, name: str, inputs: Sequence[int], output: int) -> None:
        program = self.program
        if name != "matmul" or len(inputs) != 2:
            raise Declined(f"a library call {name}")
        x, y, out = (self._array(s) for s in (*inputs, output))
        kinds = {np.dtype(np.float64): 0, np.dtype(np.float32): 1}
        kind = kinds.get(x.dtype)
        if (kind is None or y.dtype != x.dtype or out.dtype != x.dtype or len(x.shape) != 1
                or len(y.shape) != 1 or out.shape):
            raise Declined("a library call that is not a 1-d dot product of floats")
        itemsize = x.dtype.itemsize
        if any(s <= 0 or s % itemsize or s // itemsize > 2**31 - 1
               for s in (x.strides[0], y.strides[0])):   # NumPy's own loop, not BLAS
            raise Declined("a dot product on strides NumPy does not pass to BLAS")
        fns = _blas()
        if fns is None:
            raise Declined("NumPy's BLAS dot not found")
        program.equal(x.shape[0], y.shape[0])
        fields = program.words(4)   # n, x, y, out
        patches: list[tuple[list[int], Any]] = []
        for k, value in enumerate((x.shape[0], x.address, y.address, out.address)):
            program.set_word(fields + k, value, patches)
        program.code += [OP_DOT, kind, fns[kind], len(patches)]
        program.emit_patches(patches)
        program.code += [fields, fields + 1, x.strides[0] // itemsize, fields + 2,
                         y.strides[0] // itemsize, fields + 3]
        program.dots = True

    def _region(self, call: RegionCall, slots: Any) -> None:
        region, program = call.region, self.program
        if region.kind != "for" or region.private:
            raise Declined("an inner while loop, or one writing a computed value")
        inputs = [self.values[s] for s in slots.inputs]
        start, stop, step = (_bound(b, inputs) for b in region.bounds)
        if not step.fixed or step.const == 0:
            raise Declined("an inner loop step that is not a fixed int")
        depth = self.depth + 1
        if depth >= MAX_DEPTH:
            raise Declined("loops nested too deep")
        program.depth = max(program.depth, depth + 1)
        params: list[Any] = [Num(Aff(0, {depth: 1}))]
        graph = call.body.graph
        for source, param in zip(region.sources, graph.params[1:]):
            value = inputs[source[1]] if source[0] == "input" else _of_value(source[1])
            if param.kind == "array" and value.__class__ is not Arr:
                raise Declined("an inner loop's array parameter from a scalar")
            params.append(value)
        carried = len(region.carried)
        starts, buffers = params[1:1 + carried], self._carried(call, slots, params)
        for k, (first, buffer) in enumerate(zip(starts, buffers)):
            if buffer is not None:   # its first value copied in as the loop starts
                params[1 + k] = self.values[slots.carries[k]]
                program.copy(params[1 + k].address, first.address, buffer.nbytes)
        head = len(program.code)
        program.code += [OP_LOOP, depth, *start.words(MAX_DEPTH), *stop.words(MAX_DEPTH),
                         step.const, 0, not call.body.regions]
        begin = len(program.code)   # (the body's checks come first, inside the loop)
        if region.exit >= 0:   # a break: the inner loop stops once its flag is set
            _exit(program, buffers[region.exit])
        inner = _Body(program, call.body,
                      self.programs[call.offset:call.offset + len(call.body.kernels)],
                      params, self.sizes, depth, results=bool(carried))
        inner.emit()
        if carried:
            results = inner.results()
            if len(results) != carried:
                raise Declined("an inner loop whose results are not its carried values")
            _copy_back(program, results, params[1:], buffers)
        program.code[head + _WORDS_AT] = len(program.code) - begin
        for k, (first, buffer) in enumerate(zip(starts, buffers)):
            if buffer is None:   # given back as itself: the loop's value is a copy of it
                target = self.values[slots.carries[k]]
                program.copy(target.address, first.address, target.concrete.nbytes)

    def _carried(self, call: RegionCall, slots: Any, params: Sequence[Any]
                 ) -> list[np.ndarray | None]:
        """Each carried value's buffer: the memory of its CARRY (a temporary of this body,
        which the host loop copies the last value into), or None where the body gives it
        back as itself (the value given is then the body's parameter: written in place)."""
        graph = call.body.graph
        outputs = _output_slots(call.body, len(params))
        written = {n.attr("param") for n in graph.nodes
                   if n.op is Op.WRITE and n.attr("root") is None}
        found: list[np.ndarray | None] = []
        first, count = len(self.params), len(self.schedule.allocations)
        for k in range(len(call.region.carried)):
            if not first <= slots.carries[k] < first + count:
                raise Declined("an inner loop's carried value that is not a temporary")
            start, carry = params[1 + k], self.values[slots.carries[k]]
            if (start.__class__ is not Arr or carry.__class__ is not Arr
                    or carry.concrete is None or not _contiguous(start)
                    or not _contiguous(carry) or start.dtype != carry.dtype
                    or tuple(d.const for d in start.shape) != carry.concrete.shape):
                raise Declined("an inner loop's carried value in another layout")
            for w in written:   # the host loop reads those writes through its first value
                if w != 1 + k and params[w].__class__ is Arr:
                    _apart(self.program, start, params[w])
            if k < len(outputs) and outputs[k] == 1 + k:
                found.append(None)
                continue
            if 1 + k in written:
                raise Declined("a carried value written in place and rebound")
            found.append(carry.concrete)
        return found


class Compiled:
    """One call layout's program, kept for the next calls of that layout (taken out of
    the cache while it runs: a call made meanwhile, another thread's, builds its own)."""

    def __init__(self, program: Program, programs: Sequence[Any]) -> None:
        self.program, self.programs = program, tuple(programs)
        self.code = np.array(program.code, dtype=np.int64)
        self.work = np.array(program.work, dtype=np.int64)
        address = _address(self.work)
        for word, target in program.relocations:
            self.work[word] = address + 8 * target
        self.depth = program.depth
        run, where = _run_form(program.code, program.depth)
        self.run_code = np.array(run, dtype=np.int64)
        self.run_base = self.run_code.copy()
        self.code_base, self.work_base = self.code.copy(), self.work.copy()
        self.code_at, self.code_from = _columns(program.code_roots)
        moved = np.array(where, dtype=np.intp)
        self.run_at = moved[self.code_at] if len(self.code_at) else self.code_at
        #: the trip range's bounds in the outer LOOP record of each program
        self.bounds_at = ((2, 3 + MAX_DEPTH), (where[2], where[3 + MAX_DEPTH])) \
            if program.code[:1] == [OP_LOOP] else ((0, 0), (0, 0))
        self.work_at, self.work_from = _columns(program.work_roots)
        # what ``bind`` patches per call, as ``loops.bind`` takes it: (words, their base
        # values, the words to patch, the argument whose address each adds)
        self.patches = tuple(
            (target, base, at.astype(np.int64), froms.astype(np.int64))
            for target, base, at, froms in (
                (self.code, self.code_base, self.code_at, self.code_from),
                (self.run_code, self.run_base, self.run_at, self.code_from),
                (self.work, self.work_base, self.work_at, self.work_from)) if len(at))
        self.overlaps = tuple((int(a), int(b)) for a, b in program.overlaps)
        #: ``bind`` is ``loops.bind`` alone: a for loop with no carried buffers and no
        #: scalars rewritten (set by ``_compile``)
        self.simple_bind = False
        # the dry run's answer per trip range (no checks: every range passes)
        self.passed: dict[tuple[int, int], bool] | None = {} if program.checks else None
        # the carried values' buffers, whether each is a scalar result, the condition
        # byte of a while loop, the work word counting its iterations
        self.carried: tuple[list[np.ndarray], list[bool], np.ndarray, int] = (
            [], [], np.zeros((), np.bool_), 0)

    def bind(self, current: Sequence[Any], condition: Any) -> bool:
        """Put this call's argument addresses, scalars, carried values and first condition
        in; False where two arguments it writes and reads overlap (the host loop reads
        from a copy)."""
        program = self.program
        buffers, _, flag, _ = self.carried
        for buffer, value in zip(buffers, current):
            if buffer is not None:
                buffer[...] = value
        if condition is not None:
            flag[()] = bool(_scalar(condition))
        if _native_bind is not None and current.__class__ is tuple:
            if not _native_bind(current, self.overlaps, self.patches):
                return False
            for holder, source in program.rewrites:
                holder[()] = current[source]
            return True
        for a, b in program.overlaps:
            if np.may_share_memory(current[a], current[b]):
                return False
        if len(self.code_at) or len(self.work_at):
            addresses = np.array([_address(v) if isinstance(v, np.ndarray) else 0
                                  for v in current], dtype=np.int64)
            if len(self.code_at):
                self.code[self.code_at] = self.code_base[self.code_at] + addresses[
                    self.code_from]
                self.run_code[self.run_at] = self.run_base[self.run_at] + addresses[
                    self.code_from]
            if len(self.work_at):
                self.work[self.work_at] = self.work_base[self.work_at] + addresses[
                    self.work_from]
        for holder, source in program.rewrites:
            holder[()] = current[source]
        return True

    def results(self, current: Sequence[Any], trip: range | None) -> list[Any]:
        """The carried values after the loop, as the host loop leaves them: the values
        given when no iteration ran, else each result as NumPy gives it (a scalar of a
        0-d result that is one, else an array of its own)."""
        buffers, scalars, _, count_word = self.carried
        ran = len(trip) if trip is not None else int(self.work[count_word])
        if not ran:
            return list(current[:len(buffers)])
        return [(value[()] if scalar and value.ndim == 0 else value) if b is None
                else b[()] if scalar and b.ndim == 0 else b.copy()
                for b, scalar, value in zip(buffers, scalars, current)]


#: the records with no body, as ``_run_form`` copies them: the words before their patches,
#: the word (from the record's start) holding their patch count (None: no patches), and the
#: words after the patches
_FLAT_RECORDS: dict[int, tuple[int, int | None, int]] = {
    OP_KERNEL: (5, 4, 0), OP_DOT: (4, 3, 6), OP_PCOPY: (2, 1, 3), OP_COPY: (4, None, 0),
    OP_EXIT: (2, None, 0)}


def _run_form(code: Sequence[int], depth: int) -> tuple[list[int], list[int]]:
    """The program a run (not a dry run) executes: no CHECK records (only a dry run reads
    them), each affine form ``1 + depth`` words wide (the nest's own depth, not
    ``MAX_DEPTH``: the C driver's affine sums unroll for it) and each patch
    ``word, step, affine``: in an innermost loop's body ``step`` is what its value moves by
    per iteration (the C driver evaluates the form at the loop's first iteration, then
    adds the step); and where each word of ``code`` went (-1: dropped), for the words
    patched per call."""
    out: list[int] = []
    where = [-1] * len(code)
    wide = 1 + MAX_DEPTH

    def keep(at: int, count: int) -> None:
        for k in range(at, at + count):
            where[k] = len(out)
            out.append(int(code[k]))

    def affine(at: int) -> None:
        if any(code[at + 1 + depth:at + wide]):
            raise AssertionError("an affine form deeper than its nest")
        keep(at, 1 + depth)

    def patches(at: int, count: int, inner: tuple[int, int] | None) -> int:
        for _ in range(count):   # word, its step per innermost iteration, affine form
            keep(at, 1)
            step = 0 if inner is None else int(code[at + 2 + inner[0]]) * inner[1]
            if abs(step) > _LIMIT:
                raise Declined("an int too large for the native driver")
            out.append(step)
            affine(at + 1)
            at += 1 + wide
        return at

    def block(at: int, end: int, inner: tuple[int, int] | None) -> None:
        while at < end:
            op = code[at]
            if op == OP_LOOP:
                keep(at, 2)
                affine(at + 2)
                affine(at + 2 + wide)
                head = len(out)
                keep(at + 2 + 2 * wide, 3)
                body = at + 5 + 2 * wide
                end_of = body + code[at + _WORDS_AT]
                begin = len(out)
                block(body, end_of, (int(code[at + 1]), int(code[at + 2 + 2 * wide]))
                      if code[at + 4 + 2 * wide] else None)
                out[head + 1] = len(out) - begin
                at = end_of
            elif op in _FLAT_RECORDS:
                head, count_at, tail = _FLAT_RECORDS[op]
                keep(at, head)
                if count_at is not None:
                    at = patches(at + head, code[at + count_at], inner)
                else:
                    at += head
                keep(at, tail)
                at += tail
            elif op == OP_CHECK:
                at += 1 + wide
            elif op == OP_WHILE:
                head = len(out)
                keep(at, 4)
                end_of = at + 4 + code[at + 3]
                begin = len(out)
                block(at + 4, end_of, None)
                out[head + 3] = len(out) - begin
                at = end_of
            else:
                raise AssertionError(f"a record of kind {op}")

    block(0, len(code), None)
    return out, where


def _columns(pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    at = np.array([p[0] for p in pairs], dtype=np.intp)
    return at, np.array([p[1] for p in pairs], dtype=np.intp)


def _layout(current: Sequence[Any], trip: range | None, sizes: dict[str, int]) -> tuple:
    """What a kept program depends on: the arguments' layouts and int values, the trip
    range's step and the outer sizes (a trip range's bounds and float scalars are put in
    at each call)."""
    parts: list[Any] = [None if trip is None else trip.step]   # (its bounds: put in)
    for value in current:
        if isinstance(value, np.ndarray):
            parts.append((value.shape, value.strides, value.dtype, value.flags.writeable,
                          value.__class__))
        elif value.__class__ is int or isinstance(value, np.integer):
            parts.append((value.__class__, int(value)))
        else:
            parts.append(value.__class__)
    return (*parts, *sizes.items())


#: programs kept per loop body (layouts of its calls)
_KEPT = 8


def _splits(backend: Any, kernel: Any, compiled: CpuProgram, meta: list[int]) -> bool:
    """Whether the CPU target would split this call over threads (the driver calls each
    kernel on the calling thread: a body of big kernels keeps the host loop's launches)."""
    threads = getattr(backend, "threads", None)
    if threads is None or threads.count <= 1:
        return False
    from autojit.lower_cpu.threads import split_of
    within = getattr(backend, "_within", None)
    extra = () if within is None else (within,)
    return split_of(kernel, compiled, meta, threads.count, threads.min_work,
                    *extra) is not None


def _output_slots(body: Plan, arguments: int) -> tuple[int, ...]:
    """The slots of ``body``'s results, called with ``arguments`` (its host prologue's
    values follow them)."""
    from autojit.runtime.schedule import build_schedule
    schedule = build_schedule(body, arguments + len(body.graph.prologue))
    return tuple(slot for slot, _ in schedule.outputs)


def _contiguous(array: Arr) -> bool:
    """Whether ``array`` is one block of memory of a fixed shape, in C order."""
    if not all(d.fixed for d in array.shape):
        return False
    expected, step = [], array.dtype.itemsize
    for size in reversed(array.shape):
        expected.append(step)
        step *= size.const
    return tuple(reversed(expected)) == tuple(array.strides) or step == 0


def _copy_back(program: Program, results: Sequence[tuple[Arr, bool, bool]],
               params: Sequence[Any], buffers: Sequence[np.ndarray | None]) -> list[bool]:
    """Emit the copies of each carried value's next version into its buffer (staged where
    it is another carried value's memory, which changes first); return which results
    NumPy gives as scalars. ``buffers[k]`` None: carried value k is given back as itself."""
    staged, direct, scalars = [], [], []
    for k, (value, scalar, is_param) in enumerate(results):
        target = buffers[k]
        scalars.append(scalar)
        if target is None or value is params[k]:
            if value is not params[k]:
                raise Declined("a carried value given back as another")
            continue   # the carried value unchanged
        if (not _contiguous(value) or not value.address.fixed or value.dtype != target.dtype
                or tuple(d.const for d in value.shape) != target.shape):
            raise Declined("a carried value's next version in another layout")
        if is_param:   # another carried value's memory: copied out before it changes
            stage = np.empty_like(target)
            program.held.append(stage)
            staged.append((stage, value.address.const, target))
        else:
            direct.append((_address(target), value.address.const, target.nbytes))
    for stage, source, target in staged:
        program.code += [OP_COPY, _address(stage), source, target.nbytes]
    for target, source, size in direct:
        program.code += [OP_COPY, target, source, size]
    for stage, _, target in staged:
        program.code += [OP_COPY, _address(target), _address(stage), target.nbytes]
    return scalars


def _apart(program: Program, a: Arr, b: Arr) -> None:
    """``a`` and ``b`` must share no memory: checked at each call where both are memory
    of the loop's arguments (``Compiled.bind``), now where either is the program's own."""
    if a.address.root is not None and b.address.root is not None:
        if a.address.root == b.address.root:
            raise Declined("a carried value in memory the loop writes")
        program.overlaps.append((a.address.root, b.address.root))
    elif a.root is b.root:
        raise Declined("a carried value in memory the loop writes")


def _exit(program: Program, flag: np.ndarray | None) -> None:
    """The EXIT record that begins a ``for`` body with a break (``Region.exit``): the
    loop ends before an iteration where its flag's buffer (a carried bool of its own,
    the first value copied in as the loop starts, each next one as an iteration ends) is
    set, that is after the iteration that set it."""
    if flag is None or flag.dtype != np.bool_ or flag.shape:
        raise Declined("a break flag that is not a bool buffer of its own")
    program.code += [OP_EXIT, _address(flag)]


def _compile(backend: Any, call: RegionCall, programs: Sequence[Any],
             current: Sequence[Any], trip: range | None, sizes: dict[str, int]) -> Compiled:
    region, body = call.region, call.body
    program = Program()
    program.backend = backend
    carried_count = len(region.carried)
    from autojit.runtime.schedule import build_schedule
    offset = 0 if trip is None else 1
    body_params = body.graph.params[offset:]
    outputs = build_schedule(body, offset + len(current) + len(body.graph.prologue)).outputs
    written = {n.attr("param") for n in body.graph.nodes
               if n.op is Op.WRITE and n.attr("root") is None}
    params: list[Any] = [] if trip is None else [Num(Aff(0, {0: 1}))]
    buffers: list[np.ndarray | None] = []   # each carried value's memory (None: its own)
    for k, value in enumerate(current):
        if k >= carried_count:
            params.append(_of_value(value, k))
            continue
        param = body_params[k]
        if (param.kind != "array" or not isinstance(value, np.ndarray)
                or value.dtype != param.type.dtype):
            raise Declined("a carried value that is not an array of its parameter's dtype")
        if k < len(outputs) and outputs[k][0] == offset + k:
            # the body gives it back as itself (``vel += dt * acc``: written in place):
            # the value given, as the host loop keeps it
            buffers.append(None)
            params.append(_of_value(value, k))
            continue
        if offset + k in written:
            raise Declined("a carried value written in place and rebound")
        buffers.append(np.empty(value.shape, value.dtype))
        params.append(_of_array(buffers[-1], buffers[-1]))
        # its first value is copied in once: memory the body writes must not hold it (the
        # host loop would read those writes through it)
        program.overlaps += [(k, w - offset) for w in sorted(written)
                             if 0 <= w - offset < len(current)]
    program.held += [b for b in buffers if b is not None]
    condition = np.zeros((), np.bool_)
    count_word = program.words(1)
    program.depth = 1
    if trip is None:
        program.code += [OP_WHILE, _address(condition), count_word, 0]
        at = 3
    else:
        program.code += [OP_LOOP, 0, *Aff(trip.start).words(MAX_DEPTH),
                         *Aff(trip.stop).words(MAX_DEPTH), trip.step, 0, not body.regions]
        at = _WORDS_AT
    known = {s: Aff(v) for s, v in sizes.items() if v.__class__ is int}
    begin = len(program.code)
    if trip is not None and region.exit >= 0:   # a break: stop once its flag is set
        _exit(program, buffers[region.exit])
    top = _Body(program, body, programs, params, known, 0, results=True)
    top.emit()
    results = top.results()
    if len(results) != carried_count + (trip is None):
        raise Declined("a body whose results are not its carried values")
    scalars = _copy_back(program, results[:carried_count], params[offset:], buffers)
    if trip is None:
        value, _, _ = results[-1]
        if value.dtype != np.bool_ or value.shape or not value.address.fixed:
            raise Declined("a while condition that is not a bool")
        program.code += [OP_COPY, _address(condition), value.address.const, 1]
    program.code[at] = len(program.code) - begin
    compiled = Compiled(program, programs)
    compiled.carried = (buffers, scalars, condition, count_word)
    compiled.simple_bind = (_native_bind is not None and trip is not None
                            and not program.rewrites and all(b is None for b in buffers))
    return compiled


def run_native_region(backend: Any, call: RegionCall, programs: Sequence[Any],
                      current: Sequence[Any], trip: range | None, sizes: dict[str, int],
                      condition: Any = None) -> list[Any] | None:
    """Run a loop's iterations with the native driver: a ``for`` over ``trip``, or (``trip``
    None) a ``while`` whose first condition is ``condition``; return the carried values
    after it, as the host loop leaves them, or None (nothing ran) where this call keeps
    the host loop. ``current``: the body's carried then captured values, ``programs``: the
    body's compiled kernels, ``sizes``: the outer call's. A ``Resumed`` answer: the driver
    ran a first part of a loop with a break, the host loop runs its ``rest``."""
    if _native_run is None or getattr(backend, "name", None) != "cpu":
        return None
    body = call.body
    cache = body.schedule_cache
    refusal = cache.get("native_driver")
    if refusal is None:
        refusal = _static_refusal(body)
    if refusal:
        DECLINED[0] = refusal
        return None
    kept = cache.get("native_programs")
    if kept is None:
        kept = cache["native_programs"] = {}
    current = tuple(current)
    key = (getattr(backend, "threads", None), row_strips.settings_key(),
           *(_layout(current, trip, sizes) if _native_layout is None else (
               None if trip is None else trip.step, _native_layout(current),
               *sizes.items())))
    entry = kept.pop(key, None)
    if entry.__class__ is str:   # this layout keeps the host loop
        kept[key] = DECLINED[0] = entry
        return None
    if entry is not None and not all(map(operator.is_, entry.programs, programs)):
        entry = None   # (other compiled kernels: built again)
    if entry is None:
        try:
            entry = _compile(backend, call, programs, current, trip, sizes)
        except Declined as why:
            DECLINED[0] = str(why)
            if why.lasting:
                _keep(kept, key, str(why))
            return None
        except Exception as error:  # noqa: BLE001 (a body not foreseen: the host loop)
            DECLINED[0] = f"internal: {error!r}"
            return None
    if not (_native_bind(current, entry.overlaps, entry.patches) if entry.simple_bind
            else entry.bind(current, condition)):
        DECLINED[0] = "a written argument that may overlap another"
        _keep(kept, key, entry)
        return None
    if trip is not None and max(abs(trip.start), abs(trip.stop)) > _LIMIT:
        _keep(kept, key, entry)
        return None
    flag = entry.carried[0][call.region.exit] if trip is not None and \
        call.region.exit >= 0 else None
    done, broke = 0, False   # the iterations of ``trip`` its pieces covered; the break
    try:
        for piece in _pieces(entry, call, trip):
            if trip is not None:   # the piece's bounds, into the outer loop's run record
                _, (c, d) = entry.bounds_at
                run_code = entry.run_code
                run_code[c] = piece.start
                run_code[d] = piece.stop
            if not _proven(entry, piece):
                if done:   # the rest of the range is the host loop's
                    break
                DECLINED[0] = "an iteration whose views the affine forms do not describe"
                return None
            if entry.program.dots and not done:
                getattr(backend, "before_library", _nothing)()
            _native_run(entry.run_code, entry.work, entry.depth, 0)
            done += 1 if trip is None else len(piece)
            if flag is not None and flag[()]:
                broke = True   # (no piece after it)
                break
        results = entry.results(current, None if trip is None else trip[:done])
    finally:
        _keep(kept, key, entry)
    RUNS[0] += 1
    if entry.program.strips:
        STRIP_RUNS[0] += 1
    if trip is not None and done < len(trip) and not broke:
        return Resumed(results, trip[done:])
    return results


class Resumed(list):
    """The carried values after the first pieces of a loop with a break (``_pieces``),
    where a later piece's dry run failed: the host loop runs the iterations ``rest`` from
    them (and does what NumPy does there)."""

    def __init__(self, values: list[Any], rest: range) -> None:
        super().__init__(values)
        self.rest = rest


#: the first piece of a loop with a break whose views are checked (``_pieces``)
_FIRST_PIECE = 8


def _pieces(entry: Compiled, call: RegionCall, trip: range | None) -> Any:
    """The parts of ``trip`` the driver runs one after the other: the whole range, or for
    a loop with a break whose views are checked pieces doubling in length, each proven
    before it runs. A dry run proves every iteration of its range: the iterations past
    the break need not be valid (``x[i]`` of ``range(max_iter)`` stops being one), and a
    top loop holding loops is visited at each of its iterations (an innermost one at its
    two ends): the proofs never walk much more than the iterations before the break
    (``range(10**9)``, a break at 100)."""
    if trip is None or call.region.exit < 0 or entry.passed is None:
        yield trip
        return
    done, size = 0, _FIRST_PIECE
    while done < len(trip):
        yield trip[done:done + size]
        done, size = done + size, size * 2


def _proven(entry: Compiled, piece: range | None) -> bool:
    """Whether a dry run proves every iteration's views in ``piece`` (its bounds put in),
    its answer kept per range."""
    if entry.passed is None:   # no checks
        return True
    bounds = (piece.start, piece.stop) if piece is not None else (0, 0)
    passed = entry.passed.get(bounds)
    if passed is None:   # (the dry run's program: the bounds put in only now)
        if piece is not None:
            (a, b), _ = entry.bounds_at
            entry.code[a], entry.code[b] = piece.start, piece.stop
        passed = not _native_run(entry.code, entry.work, MAX_DEPTH, 1)
        if len(entry.passed) >= 64:   # (a range's pieces: up to 60)
            entry.passed.clear()
        entry.passed[bounds] = passed
    return passed


def _keep(kept: dict, key: tuple, entry: Compiled | str) -> None:
    if len(kept) >= _KEPT:
        kept.pop(next(iter(kept)))
    kept[key] = entry


def _nothing() -> None:
    pass


def _scalar(value: Any) -> Any:
    """A 0-d array's value (``regions._scalar``: a condition read back)."""
    if getattr(value, "ndim", None) == 0:
        return value.item()
    return value
