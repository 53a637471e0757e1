"""One process-wide LLVM JIT: optimise at O3 for the host CPU, compile, call through ctypes.

Every kernel is compiled to object code (``emit_object``, the bytes the disk cache keeps) and
linked into one MCJIT engine, which owns it for the life of the process, so a
``CpuProgram``'s address stays valid: even while the interpreter finalises (worker or daemon
threads may still run the code then), as llvmlite disposes of no object once its exit handler
has run, and the engine is only freed with this module.

``CpuProgram`` itself lives in ``program.py``, which does not import llvmlite (loading cached
code must not pay for LLVM); the engine both use lives in ``engine.py``. Numba runs its own
engine on the same in-process LLVM; nothing here changes global LLVM options, so the two
coexist.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import itertools
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import llvmlite.binding as llvm
import numpy as np

from autojit.errors import CompileError
from autojit.ir.kernel import Kernel
from autojit.ir.ops import OP_TABLE, Op
from autojit.lower_cpu.budget import LEAN_BODY
from autojit.lower_cpu.engine import Engine, add_object, engine, listing_machine
from autojit.lower_cpu.mathlib import math_environment
from autojit.lower_cpu.program import CpuProgram
from autojit.lower_cpu.render import render_llvm

log = logging.getLogger("autojit")

#: Symbols are unique across processes, not only within one: object code cached by one
#: process may be loaded into the engine of another, which must not see a name twice.
_PROCESS_TOKEN = secrets.token_hex(6)


@dataclass(frozen=True)
class _Jit:
    """The process-wide engine (``engine.py``) and the compiled kernels kept for reuse."""

    core: Engine
    counter: itertools.count = field(default_factory=itertools.count)
    #: compiled kernels by the digest of their module text (``_text_key``), newest last
    by_text: OrderedDict[bytes, CpuProgram] = field(default_factory=OrderedDict)
    #: the text digest of kernels by their structure (``_structure_key``), newest last
    by_structure: OrderedDict[tuple, bytes] = field(default_factory=OrderedDict)

    @property
    def target_machine(self) -> llvm.TargetMachine:
        return self.core.target_machine

    @property
    def engine(self) -> llvm.ExecutionEngine:
        return self.core.engine

    @property
    def lock(self) -> threading.Lock:
        return self.core.lock


@functools.cache
def _jit() -> _Jit:
    """Return the JIT, initialising LLVM's native target and the math libraries once."""
    return _Jit(engine())


def _parse(text: str, what: str) -> llvm.ModuleRef:
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as exc:
        raise CompileError(f"LLVM rejected the {what} IR", source=text, log=str(exc)) from exc
    return module


def optimize_module(module: llvm.ModuleRef, tm: llvm.TargetMachine, lean: bool = False) -> None:
    """Run LLVM's O3 pipeline on ``module`` in place, vectorisers on; ``lean``: without
    loop interleaving and unrolling (see ``LEAN_BODY``)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = not lean
    pto.loop_unrolling = not lean
    pass_builder = llvm.create_pass_builder(tm, pto)
    pass_builder.getModulePassManager().run(module, pass_builder)


#: where CPU compile time goes, summed over the process (benchmarks/cold_start.py reads it):
#: rendering and parsing the IR, LLVM's O3 pipeline, machine code and linking
COMPILE_PHASES = ("render", "optimise", "codegen")
COMPILE_SECONDS: dict[str, float] = dict.fromkeys(COMPILE_PHASES, 0.0)


T = TypeVar("T")

#: how often the main thread, waiting for LLVM, lets Python handle signals (Ctrl-C)
_SIGNAL_POLL_S = 0.02


def interruptible(work: Callable[[], T]) -> T:
    """Return ``work()``, run on a helper thread when called from the main thread.

    One LLVM call (the O3 pipeline, code generation) can run for a second without returning
    to Python, and Python only handles Ctrl-C between bytecodes of the main thread; waiting
    in short joins keeps KeyboardInterrupt prompt. An interrupted compile finishes on its
    thread (it holds the JIT's lock, so the next compile simply waits) and is dropped.
    The helper runs in a copy of the caller's context (context variables hold settings)."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 — handed back to the waiting thread
            outcome.append((False, exc))

    context = contextvars.copy_context()     # settings such as scalar_math_only() hold
    helper = threading.Thread(target=context.run, args=(run,), name="autojit-llvm",
                              daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(_SIGNAL_POLL_S)
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def compile_kernel(kernel: Kernel) -> CpuProgram:
    """Render, optimise and JIT-compile ``kernel``; return the callable ``CpuProgram``.

    The engine links the object code that ``emit_object`` produced, the same bytes the disk
    cache stores, so a cached kernel runs exactly the code a fresh compile does.
    Raises ``CompileError`` carrying the numbered IR and LLVM's message."""
    return interruptible(lambda: _compile_kernel(kernel))


#: how many distinct kernel modules ``compile_kernel`` keeps compiled code of for reuse
KERNEL_CACHE_SIZE = 512

#: kernels compiled by LLVM, those of them optimised lean (``LEAN_BODY``), and kernels that
#: reused the code of an identical one (tests and benchmarks/compile_scaling.py read it)
KERNEL_COUNTS: dict[str, int] = {"compiled": 0, "lean": 0, "reused": 0}


def forget_kernels() -> None:
    """Forget the kernels kept for reuse (their code stays linked): what benchmarks call
    to time each program's compile from cold, in one process."""
    jit = _jit()
    with jit.lock:
        jit.by_text.clear()
        jit.by_structure.clear()


def _text_key(text: str, symbol: str, lean: bool) -> bytes:
    """Return the digest of module ``text`` with its symbol (and the module name, the
    kernel's) blanked: kernels a Python loop makes differ only there, and the rest of the
    text and the pipeline (the target is the same for every kernel) fix the machine code."""
    body = text.split("\n", 1)[1] if text.startswith("; ModuleID") else text
    body = f"lean={lean}\n" + body.replace(symbol, "")
    return hashlib.blake2b(body.encode(), digest_size=32).digest()


class _Inexact(Exception):
    """An attribute without an exact key (``_exact``): the module text decides."""


_PLAIN = (bool, int, str, bytes, type(None), Op, np.dtype)


def _exact(value: Any) -> Any:
    """Return a key equal only for values rendered alike: floats by their bits (-0.0 is
    not 0.0, NaN payloads differ), arrays by their bytes, containers item by item.
    Raises ``_Inexact`` for anything else."""
    if isinstance(value, _PLAIN):
        return type(value), value
    if isinstance(value, (float, complex, np.generic)):
        return type(value), np.asarray(value).tobytes()
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, (tuple, list)):
        return type(value), tuple(_exact(v) for v in value)
    if isinstance(value, dict):
        return dict, tuple((_exact(k), _exact(v)) for k, v in value.items())
    raise _Inexact(type(value).__name__)


def _structure_key(kernel: Kernel, lean: bool) -> tuple | None:
    """Return a key equal only for kernels whose module texts differ at most in their
    names, without rendering: every field ``render_llvm`` reads (constants exactly) and the
    math environment (``mathlib.math_environment``), but neither the kernel's name nor the
    graph ids of its values (``Buffer.value``, ``ScalarParam.value``, ``Instr.node``,
    ``nodes``), which never reach the text. A Python loop's kernels differ only there;
    rendering each was most of a 10,000-op program's compile once LLVM ran for its few
    distinct kernels (0.8 of 2.2 s). The math environment is that of the functions the
    kernel calls (``_math_names``). None when an attribute has no exact key (then the
    text is rendered and compared)."""
    try:
        body = tuple((i.id, i.op, i.args, i.dtype.str, _exact(i.attr), i.level, i.phase)
                     for i in kernel.body)
    except _Inexact:
        return None
    buffers = tuple((b.name, b.dtype.str, b.strides, b.is_output, b.axes)
                    for b in kernel.buffers)
    scalars = tuple((p.name, p.dtype.str) for p in kernel.scalars)
    return (lean, math_environment(_math_names(kernel)), kernel.loop_sizes, kernel.row_dims,
            kernel.phases, buffers, scalars, body)


def _math_names(kernel: Kernel) -> tuple[str, ...]:
    """Return the math functions ``kernel`` calls (``llvm_rules``' math rules are the only
    callers of ``MathCalls.call``), sorted: the part of the math environment its text
    depends on."""
    names = {info.math_name for info in map(OP_TABLE.get, {i.op for i in kernel.body})
             if info is not None and info.math_name}
    return tuple(sorted(names))


def _compile_kernel(kernel: Kernel) -> CpuProgram:
    jit = _jit()
    with jit.lock:
        symbol = f"{kernel.name}.{_PROCESS_TOKEN}.{next(jit.counter)}"
        marks = [time.perf_counter()]
        lean = len(kernel.body) > LEAN_BODY
        structure = _structure_key(kernel, lean)
        key = jit.by_structure.get(structure) if structure is not None else None
        found = jit.by_text.get(key) if key is not None else None
        if found is None:
            text = render_llvm(kernel, symbol)
            key = _text_key(text, symbol, lean)
            found = jit.by_text.get(key)
        if structure is not None:
            jit.by_structure[structure] = key
            jit.by_structure.move_to_end(structure)
            if len(jit.by_structure) > KERNEL_CACHE_SIZE:
                jit.by_structure.popitem(last=False)
        if found is not None:
            # the same machine code serves both (LLVM time is most of a compile: a
            # 10,000-op program of a loop's few distinct kernels compiles those few)
            jit.by_text.move_to_end(key)
            KERNEL_COUNTS["reused"] += 1
            COMPILE_SECONDS["render"] += time.perf_counter() - marks[0]
            return dataclasses.replace(found, name=kernel.name, threading={})
        module = _parse(text, "generated")
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        marks.append(time.perf_counter())
        optimize_module(module, jit.target_machine, lean)
        optimized = str(module)
        marks.append(time.perf_counter())
        object_code = jit.target_machine.emit_object(module)
        address = add_object(jit.core, object_code, symbol)
        marks.append(time.perf_counter())
        if not address:
            raise CompileError(f"JIT produced no code for {symbol}", source=text)
        program = CpuProgram(kernel.name, symbol, address, text, optimized, object_code)
        jit.by_text[key] = program
        if len(jit.by_text) > KERNEL_CACHE_SIZE:
            jit.by_text.popitem(last=False)
        KERNEL_COUNTS["compiled"] += 1
        KERNEL_COUNTS["lean"] += lean
    for phase, begin, end in zip(COMPILE_PHASES, marks, marks[1:]):
        COMPILE_SECONDS[phase] += end - begin
    log.debug("autojit: compiled %s in %.1f ms", symbol, 1e3 * (marks[-1] - marks[0]))
    return program


def compile_entries(text: str, symbols: tuple[str, ...]) -> tuple[tuple[int, ...], bytes]:
    """Optimise and JIT-compile the module ``text``; return the address of each of
    ``symbols`` (extra entry points such as a kernel's thread partials, ``partials.py``)
    and the object code (for the disk cache, ``entries.py``).
    Raises ``CompileError`` when LLVM rejects the text or a symbol is missing."""
    return interruptible(lambda: _compile_entries(text, symbols))


def _compile_entries(text: str, symbols: tuple[str, ...]) -> tuple[tuple[int, ...], bytes]:
    jit = _jit()
    with jit.lock:
        module = _parse(text, "generated")
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        optimize_module(module, jit.target_machine)
        object_code = jit.target_machine.emit_object(module)
        jit.engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        jit.engine.finalize_object()
        addresses = tuple(jit.engine.get_function_address(s) for s in symbols)
    if not all(addresses):
        raise CompileError(f"JIT produced no code for one of {symbols}", source=text)
    return addresses, object_code


#: LLVM's remark switches for ``optimisation_remarks``, and the values that turn them off
#: again (a regex no pass name matches), so Numba's compiles in this process stay quiet.
_REMARK_OPTIONS = {
    "-pass-remarks": "loop-vectorize|slp-vectorizer",
    "-pass-remarks-missed": "loop-vectorize|inline",
    "-pass-remarks-analysis": "loop-vectorize",
}


def optimisation_remarks(ir_text: str) -> list[str]:
    """Return LLVM's optimisation remarks for optimising ``ir_text`` at O3, one per line:
    ``vectorized loop (vectorization width: 4, interleaved count: 4)``, ``loop not
    vectorized: ...``, ``'f' not inlined into 'g' because ...``.

    llvmlite has no remark API; LLVM prints remarks on file descriptor 2 once switched on
    with ``set_option``, so the module is re-optimised with fd 2 redirected to a file."""
    import os
    import tempfile

    jit = _jit()
    with jit.lock, tempfile.TemporaryFile() as captured:
        module = llvm.parse_assembly(ir_text)
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        saved = os.dup(2)
        try:
            for option, value in _REMARK_OPTIONS.items():
                llvm.set_option("", f"{option}={value}")
            os.dup2(captured.fileno(), 2)
            optimize_module(module, listing_machine())
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            for option in _REMARK_OPTIONS:
                llvm.set_option("", f"{option}=^$")
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    prefix = "remark: <unknown>:0:0: "
    return [line.removeprefix(prefix) for line in text.splitlines() if line.startswith("remark")]
