"""Split one kernel call across the thread pool, or run it on the calling thread.

Two ways to split, both without touching the kernel's own code:

* **outer split** (elementwise kernels; reductions with enough outer rows): chunk one
  outer loop dimension ``d``. Each chunk's buffer pointers are advanced by
  ``begin · stride[d] · itemsize`` and its ``meta`` carries the chunk length as size ``d``;
  the kernel then walks exactly that sub-box. Results are bit-identical to one thread
  (each element, and each row, is computed by the same code; see ``_chunks``).
* **partials** (full reductions; too few outer rows to share evenly): chunk the
  first row dimension the same way and, phase by phase, call the ``part`` entry, which
  stores each chunk's raw accumulators; ``finish`` then combines them in chunk order, runs
  the outer-level instructions and carries what later phases read (``partials.py``).
  A row is cut into chunks set by its size alone (``_partial_edges``: 16 for short rows;
  for long ones, big chunks first and small ones last), so a result is identical run to
  run and for every thread count. Float sums (NumPy's ``pairwise_sum`` tree, one run per
  row) are cut at the tree's own nodes instead (``_tree_edges``: 2^L subtrees, every
  node above them split as NumPy splits it) and ``finish`` adds the subtrees' sums back
  in tree order, so the result is NumPy's bit for bit for every thread count (phases
  without such a sum keep ``_partial_edges``: element code then meets its vectorised
  loop's scalar remainder where one thread's does). Other
  float sums (one element after another, or in 8192-element cast chunks) and float
  products are never cut along the row: only outer splits share them.

Each thread takes chunks in a native loop (``team.py``: an atomic counter, no Python
between chunks; workers wait for the next call spinning, for a while), and how a call
splits (the way, its chunk tables) is kept per program, sizes and settings (``_cached``):
right after a big call the CPU caches are cold and Python costs 3-5× its warm time.

A dimension is not split when a loop index of it is used (``arange``: the chunk would
restart at 0) or an output does not advance along it (stride 0: every chunk would write
the same element). Calls whose estimated work (loop iterations × per-iteration op cost)
is below ``min_work`` stay on the calling thread: waking a worker costs 15-100 µs.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from autojit.ir.kernel import Kernel, Level
from autojit.ir.ops import OP_TABLE, Op, ordered_reduction
from autojit.lower_cpu.partials_layout import (
    CARRY_BYTES,
    RECORD_BYTES,
    carried,
    partial_symbols,
    tree_sums,
)
from autojit.lower_cpu.pool import Task, pool
from autojit.lower_cpu.program import CpuProgram
from autojit.lower_cpu.team import SPIN_SECONDS, native, team

log = logging.getLogger("autojit")

_FuncPtr = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)

#: per-iteration cost of one instruction, in adds: the op table's cost column, plus one
#: for each element a load or store moves (the splitter has no separate bytes term)
_MEMORY_COST = {Op.LOAD: 1.0, Op.STORE: 1.0}
#: how many calls were split each way ("outer", "partials"), for tests and reports
SPLITS: collections.Counter[str] = collections.Counter()
#: chunks per thread of an outer split from 8 × ``min_work``: spare chunks for the threads
#: the OS runs while another waits (each chunk costs a few µs to hand out)
_CHUNKS_PER_THREAD = 4
#: chunks of a row shared through partials (``_partial_edges``): each takes 1/_PARTIAL_SHARE
#: of what is left, down to _PARTIAL_TAIL positions (or 1/_PARTIAL_CHUNKS of the row)
_PARTIAL_SHARE = 32
_PARTIAL_TAIL = 1 << 14
_PARTIAL_CHUNKS = 16
#: chunk edges along the innermost loop are multiples of this (vector width × unroll)
_ALIGN = 64
#: outer rows per thread below which a splittable reduction prefers partials (balance)
_ROWS_PER_THREAD = 4


def _instr_cost(op: Op) -> float:
    return OP_TABLE[op].cost + _MEMORY_COST.get(op, 0)


@dataclass(frozen=True)
class SplitPlan:
    """What may be split in one kernel, computed once per program.

    ``strides[b][d]`` is buffer ``b``'s element stride along loop ``d``: an int, or
    ``-1 - i`` for the runtime stride at ``meta[i]``. ``guarded[d]`` lists the ``meta``
    slots of runtime strides along ``d`` of the outputs that splitting ``d`` must see
    advance (a 0 there forbids the split for that call).
    """

    rank: int
    outer_rank: int
    cost: int
    outer_dims: tuple[int, ...]
    partials: bool
    strides: tuple[tuple[int, ...], ...]
    itemsizes: tuple[int, ...]
    guarded: tuple[tuple[int, ...], ...]
    reduces: tuple[int, ...] = ()    # accumulators per phase
    carried: int = 0                 # values carried between phases (``partials_layout.carried``)
    #: per phase: whether it holds a pairwise sum (its chunks are subtrees, ``_tree_edges``)
    tree_phases: tuple[bool, ...] = ()


def partials_ok(kernel: Kernel) -> bool:
    """Return True when the first row dimension may be split into chunks with partials
    (``partials.py``): no loop index of that dimension; values of 8 bytes at most; and
    each instruction reads only its own phase's row values, accumulators, outer-level
    results, constants and scalars (so phases can run as separate passes); and every float
    sum or product (``ops.ordered_reduction``) a pairwise sum of one run starting at that
    dimension (``tree_sums``): the others add one element after another."""
    if kernel.row_dims == 0:
        return False
    tree = tree_sums(kernel) if kernel.pairwise_dim == kernel.outer_rank else frozenset()
    if any(ins.op is Op.REDUCE and ordered_reduction(ins.attr, ins.dtype)
           and ins.id not in tree for ins in kernel.body):
        return False
    by_id = {ins.id: ins for ins in kernel.body}
    free = (Op.REDUCE, Op.CONST, Op.LOAD_SCALAR)
    for ins in kernel.body:
        if (ins.op is Op.INDEX and ins.attr == kernel.outer_rank) or ins.dtype.itemsize > 8:
            return False
        for a in ins.args:
            source = by_id[a]
            if source.level == Level.ROW and source.op not in free and (
                    ins.level == Level.OUTER or source.phase != ins.phase):
                return False
    return True


def plan_split(kernel: Kernel) -> SplitPlan:
    """Return the kernel's SplitPlan (see the class and module docstrings)."""
    from_meta = {bd: kernel.rank + i for i, bd in enumerate(kernel.runtime_strides())}
    strides = tuple(tuple(s if s is not None else -1 - from_meta[(b, d)]
                          for d, s in enumerate(buf.strides))
                    for b, buf in enumerate(kernel.buffers))
    indexed = {ins.attr for ins in kernel.body if ins.op is Op.INDEX}
    outputs = [b for b, buf in enumerate(kernel.buffers) if buf.is_output]
    # the chunks of a row dimension write only what the row level stores
    row_stored = sorted({ins.attr for ins in kernel.body
                         if ins.op is Op.STORE and ins.level == Level.ROW})
    writers = [outputs if d < kernel.outer_rank else row_stored for d in range(kernel.rank)]
    guarded = tuple(tuple(-1 - strides[b][d] for b in writers[d] if strides[b][d] < 0)
                    for d in range(kernel.rank))

    def safe(d: int) -> bool:
        return d not in indexed and all(strides[b][d] != 0 for b in writers[d])

    outer = tuple(d for d in range(kernel.outer_rank) if safe(d))
    # a scan restarts at every outer index (outer splits are safe) but runs in order
    # along its row, which partials would cut
    # a recurrence, or a row with no reduction (a native loop, ``fuse.native_loop``: its
    # iterations read what earlier ones stored) runs in order too
    scans = kernel.sequential or any(ins.op is Op.SCAN for ins in kernel.body)
    partials = (not scans and kernel.row_dims > 0 and safe(kernel.outer_rank)
                and partials_ok(kernel))
    cost = int(sum(_instr_cost(ins.op) for ins in kernel.body if ins.level == Level.ROW))
    reduces = tuple(sum(ins.op is Op.REDUCE and ins.phase == p for ins in kernel.body)
                    for p in range(kernel.phases))
    tree = tree_sums(kernel)
    return SplitPlan(kernel.rank, kernel.outer_rank, max(cost, 1), outer, partials, strides,
                     tuple(np.dtype(b.dtype).itemsize for b in kernel.buffers), guarded,
                     reduces, len(carried(kernel)),
                     tuple(any(ins.id in tree and ins.phase == p for ins in kernel.body)
                           for p in range(kernel.phases)))


def _split_plan(kernel: Kernel, program: CpuProgram) -> SplitPlan:
    found = program.threading.get("plan")
    if found is None:
        found = program.threading["plan"] = plan_split(kernel)
    return found


def _chunks(plan: SplitPlan, size: int, dim: int, count: int) -> np.ndarray:
    """Return the edges (int64, ascending, from 0 to ``size``) of up to ``count``
    near-equal chunks of ``range(size)`` along loop ``dim``. Along the innermost loop,
    chunk edges fall on multiples of ``_ALIGN`` elements: the vectorised loop then meets
    the same elements in its scalar remainder as on one thread (libmvec and scalar libm
    may differ by an ulp)."""
    return _edges(size, min(size, count), _ALIGN if dim == plan.rank - 1 else 1)


@functools.lru_cache(maxsize=256)
def _edges(size: int, count: int, align: int) -> np.ndarray:
    """Return ``_chunks``' edges, cached (a call repeats its shapes; building them costs
    ~20 µs); read-only, as callers share them."""
    edges = np.array(sorted({size * i // count // align * align for i in range(count)}
                            | {size}), np.int64)
    edges.flags.writeable = False
    return edges


@functools.lru_cache(maxsize=256)
def _partial_edges(size: int, later: int, align: int) -> np.ndarray:
    """Return the edges of the chunks partials cut a row dimension of ``size`` steps into
    (``later`` row positions per step; inner edges on multiples of ``align``, as in
    ``_chunks``). Each chunk takes 1/``_PARTIAL_SHARE`` of what is left, never less than
    ``_PARTIAL_TAIL`` positions or 1/``_PARTIAL_CHUNKS`` of the row: big chunks first,
    small ones last, so the threads finish close together (10M positions: ~125 chunks,
    the last 32 of 16K). Set by the sizes alone, never the thread count, so a result (its
    summation tree) is the same for every thread count and from run to run."""
    smallest = max(min(-(-_PARTIAL_TAIL // later), size // _PARTIAL_CHUNKS), 1)
    smallest = -(-smallest // align) * align
    edges = [0]
    while edges[-1] < size:
        left = size - edges[-1]
        end = (edges[-1] + max(left // _PARTIAL_SHARE, smallest)) // align * align
        edges.append(size if size - end < smallest // 2 else end)
    found = np.array(edges, np.int64)
    found.flags.writeable = False
    return found


#: NumPy's ``pairwise_sum`` adds runs of at most this many elements without splitting
_PAIRWISE_BLOCK = 128
#: positions per subtree a long pairwise sum is cut into, about (spare chunks for the
#: threads the OS delays: 10M positions make 256 subtrees)
_TREE_CHUNK = 1 << 16


@functools.lru_cache(maxsize=256)
def _tree_edges(size: int, later: int, wanted: int) -> np.ndarray | None:
    """Return the edges (in steps of ``later`` positions) of the 2^L subtrees NumPy's
    ``pairwise_sum`` over ``size * later`` positions has at depth L: every node above
    splits at ``n2 = n/2 - (n/2) % 8`` (so each must hold more than 128), L as deep as
    gives ``wanted`` subtrees or the tree allows. None when the tree does not split or
    an edge falls inside a step."""
    nodes = [(0, size * later)]
    while len(nodes) < wanted and all(n > _PAIRWISE_BLOCK for _, n in nodes):
        split = []
        for start, n in nodes:
            half = n // 2 - (n // 2) % 8
            split += [(start, half), (start + half, n - half)]
        nodes = split
    starts = [start for start, _ in nodes]
    if len(nodes) == 1 or any(start % later for start in starts):
        return None
    found = np.array([start // later for start in starts] + [size], np.int64)
    found.flags.writeable = False
    return found


@dataclass
class _Chunks:
    """Every chunk's ``data`` and ``meta`` rows, built with a few NumPy operations (a
    ctypes array per chunk cost ~8 µs each): chunk ``c`` reads row ``c`` of both."""

    pointers: np.ndarray        # int64 [chunks, data slots]
    metas: np.ndarray           # int64 [chunks, meta slots]

    def tasks(self, entry: int) -> list[Task]:
        """Return one call of the kernel at ``entry`` per chunk (the tables must outlive
        them)."""
        function = _FuncPtr(entry)
        p, m = self.pointers.ctypes.data, self.metas.ctypes.data
        ps, ms = self.pointers.strides[0], self.metas.strides[0]
        return [functools.partial(function, p + c * ps, m + c * ms)
                for c in range(len(self.metas))]

    def run(self, entry: int, threads: int, spin_s: float = SPIN_SECONDS) -> None:
        """Call the kernel at address ``entry`` on every chunk, on up to ``threads``
        threads. Each thread runs the native loop of ``team.py`` (chunks taken from an
        atomic counter, so no Python between chunks: a chunk then costs nanoseconds, not
        the ~4 µs of a pool task); the workers then wait ``spin_s`` for the next call
        before they sleep."""
        count = len(self.metas)
        crew = team()
        if crew is None:
            pool().run(self.tasks(entry), threads)
            return
        layout = (self.pointers.ctypes.data, self.pointers.strides[0],
                  self.metas.ctypes.data, self.metas.strides[0])
        helpers = min(threads, count) - 1
        if helpers <= 0 or not crew.run(count, entry, *layout, helpers, spin_s):
            state = np.zeros(2, np.int64)     # next chunk, chunks done: this thread alone
            native().drain(state.ctypes.data, count, entry, *layout)


def _tables(plan: SplitPlan, slots: int, meta: Sequence[int], dim: int, edges: np.ndarray,
            extra_data: int = 0, extra_meta: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Return the chunks' pointer offsets and ``meta`` rows for a call with ``slots`` data
    slots: each buffer's pointer advanced by ``begin · stride`` bytes along loop ``dim``,
    whose size becomes the chunk's length; then ``extra_data`` / ``extra_meta`` zeroed
    columns (the partials entries' own slots). ``edges`` is what ``_chunks`` returns.
    A chunk's pointers are its offsets plus the call's pointers (``_Chunks``)."""
    step = np.zeros(slots + extra_data, np.int64)
    for b, (strides, itemsize) in enumerate(zip(plan.strides, plan.itemsizes, strict=True)):
        stride = strides[dim]
        step[b] = (meta[-1 - stride] if stride < 0 else stride) * itemsize
    offsets = edges[:-1, None] * step
    metas = np.zeros((len(edges) - 1, len(meta) + extra_meta), np.int64)
    metas[:, :len(meta)] = meta
    metas[:, dim] = np.diff(edges)
    return offsets, metas


#: sizes of calls whose split a program keeps (``_cached``), at most
_LAYOUTS = 64
_T = TypeVar("_T")
_MISSING = object()


def _cached(program: CpuProgram, key: tuple[Any, ...], build: Callable[[], _T]) -> _T:
    """Return ``build()``, kept in ``program`` under ``key`` (a call's sizes and
    settings): right after a big call the CPU caches are cold, and choosing the split and
    building its tables cost 50-85 µs there against ~2 µs to offset cached ones. What is
    kept must not be written after."""
    cache = program.threading.get("layouts")
    if cache is None:
        cache = program.threading["layouts"] = {}
    found = cache.get(key, _MISSING)
    if found is _MISSING:
        if len(cache) >= _LAYOUTS:
            cache.clear()
        found = cache[key] = build()
    return found


def _addresses(data: Sequence[Any], *more: int) -> np.ndarray:
    """Return ``data`` (ints or ``ctypes.c_void_p``, as NumPy's ``ctypes`` gives) and
    ``more`` as one int64 row."""
    return np.array([p if p.__class__ is int else (p.value or 0) for p in data] + list(more),
                    np.int64)


def _dim_ok(plan: SplitPlan, meta: Sequence[int], dim: int) -> bool:
    return meta[dim] > 1 and all(meta[i] != 0 for i in plan.guarded[dim])


def _pick_outer(plan: SplitPlan, meta: Sequence[int], threads: int) -> int | None:
    """Return the outer dimension to split: the first long enough to balance the threads,
    else the longest; None when none may be split for this call."""
    usable = [d for d in plan.outer_dims if _dim_ok(plan, meta, d)]
    if not usable:
        return None
    long_enough = [d for d in usable if meta[d] >= _ROWS_PER_THREAD * threads]
    return long_enough[0] if long_enough else max(usable, key=lambda d: meta[d])


def _run_outer(program: CpuProgram, offsets: np.ndarray, metas: np.ndarray, threads: int,
               data: Sequence[Any], spin_s: float) -> None:
    """Run an outer split whose chunk tables (``_tables``) were chosen for these sizes."""
    _Chunks(offsets + _addresses(data), metas).run(program.address, threads, spin_s)
    SPLITS["outer"] += 1


_COMPILE_LOCK = threading.Lock()


def _partial_entries(kernel: Kernel, program: CpuProgram) -> tuple[int, ...]:
    """Return the addresses of the entries part0, finish0, part1, ... compiled on first
    use."""
    found = program.threading.get("partials")
    if found is None:
        with _COMPILE_LOCK:
            found = program.threading.get("partials")
            if found is None:
                found = program.threading["partials"] = _compile_partials(kernel, program)
    return found


def _compile_partials(kernel: Kernel, program: CpuProgram) -> tuple[int, ...]:
    """Return the partials' entries; ``()`` (one thread, then) when they do not compile:
    threads are an optimisation, never a reason for a call to fail."""
    from autojit.lower_cpu.entries import link_entries
    started = time.perf_counter()

    def render() -> str:
        from autojit.lower_cpu.partials import render_partials
        return render_partials(kernel, program.symbol)

    # the kernel's object code and symbol name fix the partials' text: no render to look up
    code = program.object_code
    key = (f"partials {program.symbol} {hashlib.blake2b(code).hexdigest()}" if code
           else render())
    try:
        found = link_entries(key, partial_symbols(program.symbol, kernel.phases), render)
    except Exception as exc:  # noqa: BLE001 — logged; the call runs on one thread
        log.warning("autojit: no thread partials for %s (%s: %s)", kernel.name,
                    type(exc).__name__, exc)
        return ()
    log.debug("autojit: compiled thread partials of %s in %.1f ms", program.symbol,
              1e3 * (time.perf_counter() - started))
    return tuple(found)


@dataclass(frozen=True)
class _PartialsLayout:
    """A partials call's tables for one set of sizes (cached: ``_cached``). A scratch
    buffer holds the partials blocks (reused by each phase), then the carry. A phase with
    a float sum is cut at its tree's nodes, the others as ``_partial_edges`` says."""

    offsets: tuple[np.ndarray, ...]      # per phase: [chunks, data slots + block + carry]
    metas: tuple[np.ndarray, ...]        # per phase: [chunks, meta slots + chunk start]
    finish_metas: tuple[np.ndarray, ...]  # per phase: meta..., number of chunks
    blocks_bytes: int
    scratch_bytes: int


def _partials_layout(plan: SplitPlan, slots: int, meta: Sequence[int],
                     threads: int) -> _PartialsLayout | None:
    """Return the tables of a partials call with these sizes (kept by ``call_kernel``);
    None when pairwise sums cannot be cut at their tree's nodes."""
    dim = plan.outer_rank
    outer_count = math.prod(meta[:dim])
    later = math.prod(meta[dim + 1:plan.rank])   # row positions per step along ``dim``
    plain = _partial_edges(meta[dim], later, _ALIGN if dim == plan.rank - 1 else 1)
    tree = None
    if any(plan.tree_phases):
        wanted = max(_CHUNKS_PER_THREAD * threads, meta[dim] * later // _TREE_CHUNK)
        tree = _tree_edges(meta[dim], later, 1 << (wanted - 1).bit_length())
        if tree is None:
            return None
    block_bytes = [RECORD_BYTES * max(r, 1) * outer_count for r in plan.reduces]
    offsets, metas, finishes, blocks_bytes = [], [], [], 0
    for size, cut in zip(block_bytes, plan.tree_phases, strict=True):
        edges = tree if cut and tree is not None else plain
        count = len(edges) - 1
        blocks_bytes = max(blocks_bytes, count * size)
        phase_offsets, phase_metas = _tables(plan, slots, meta, dim, edges, extra_data=2,
                                             extra_meta=1)
        phase_metas[:, -1] = edges[:-1] * later
        phase_offsets[:, slots] = size * np.arange(count)
        offsets.append(phase_offsets)
        metas.append(phase_metas)
        finishes.append(np.array([*meta, count], np.int64))
    return _PartialsLayout(tuple(offsets), tuple(metas), tuple(finishes), blocks_bytes,
                           blocks_bytes
                           + max(CARRY_BYTES * plan.carried * outer_count, CARRY_BYTES))


def _run_partials(kernel: Kernel, entries: tuple[int, ...], layout: _PartialsLayout,
                  threads: int, data: Sequence[Any], spin_s: float) -> None:
    """Run the kernel phase by phase: chunks of the row on the team, then the finish."""
    scratch = np.empty(layout.scratch_bytes, np.uint8)
    base = scratch.ctypes.data
    # part<phase> reads data..., its block, the carry; finish<phase>: data..., all the
    # blocks, the carry (the call's own pointers: this row)
    row = _addresses(data, base, base + layout.blocks_bytes)
    for phase in range(kernel.phases):
        chunks = _Chunks(layout.offsets[phase] + row, layout.metas[phase])
        chunks.run(entries[2 * phase], threads, spin_s)
        _FuncPtr(entries[2 * phase + 1])(row.ctypes.data,
                                         layout.finish_metas[phase].ctypes.data)
    SPLITS["partials"] += 1


def _directly(fn: Callable[..., _T], *args: Any) -> _T:
    return fn(*args)


def call_kernel(kernel: Kernel, program: CpuProgram, data: Sequence[Any],
                meta: Sequence[int], threads: int, min_work: int,
                spin_s: float = SPIN_SECONDS,
                within: Callable[..., Any] = _directly) -> None:
    """Run one kernel call: on ``threads`` threads when its work reaches ``min_work`` and
    it can be split (module docstring), else on the calling thread. Returns when done;
    the workers then wait ``spin_s`` seconds for the next call before they sleep. How a
    call splits is chosen once per program, sizes and settings (``_choose_split``).
    Choosing and running a split (which may link and store extra entry points) happen
    as ``within(fn, *args)``: the caller's context for them (the CPU target's place for
    entries); a call that runs on the calling thread needs none and pays nothing."""
    if threads > 1:
        split = split_of(kernel, program, meta, threads, min_work, within)
        if split is not None:
            within(split, data, spin_s)
            return
    program.call(data, meta)


def split_of(kernel: Kernel, program: CpuProgram, meta: Sequence[int], threads: int,
             min_work: int, within: Callable[..., Any] = _directly
             ) -> Callable[[Sequence[Any], float], None] | None:
    """Return how ``call_kernel`` runs a call with this ``meta`` on ``threads`` threads
    (``split(data, spin_s)``, run as ``within(split, data, spin_s)``), or None: on the
    calling thread. A loop body asks once per operand layout, not per iteration."""
    return _cached(program, (threads, min_work, *meta),
                   lambda: within(_choose_split, kernel, program, meta, threads, min_work))


def _choose_split(kernel: Kernel, program: CpuProgram, meta: Sequence[int], threads: int,
                  min_work: int) -> Callable[[Sequence[Any], float], None] | None:
    """Return how to split a call with these sizes (``split(data, spin_s)``), or None
    to run it on the calling thread: too little work, or no way applies."""
    plan = _split_plan(kernel, program)
    work = plan.cost * math.prod(meta[:plan.rank])
    if work < max(min_work, 1):
        return None
    slots = len(kernel.buffers) + len(kernel.scalars)
    dim = _pick_outer(plan, meta, threads)
    # an outer split is exact (each row reduced as on one thread): prefer it when balanced
    balanced = dim is not None and (meta[dim] >= _ROWS_PER_THREAD * threads
                                    or meta[dim] % threads == 0)
    if plan.partials and not balanced and _dim_ok(plan, meta, plan.outer_rank):
        entries = _partial_entries(kernel, program)
        layout = _partials_layout(plan, slots, meta, threads) if entries else None
        if layout is not None:
            return functools.partial(_run_partials, kernel, entries, layout, threads)
    if dim is None:
        return None
    # spare chunks (for threads the OS delays) only where they cost little
    count = (_CHUNKS_PER_THREAD if work >= 8 * min_work else 1) * threads
    offsets, metas = _tables(plan, slots, meta, dim, _chunks(plan, meta[dim], dim, count))
    return functools.partial(_run_outer, program, offsets, metas, threads)
