"""The process's one LLVM engine (MCJIT) and target machine, below both the compiler
(``jit.py``) and the programs it makes (``program.py``).

``program.py`` imports this module only when it needs LLVM (a listing that was not cached,
an object the fast loader declines), so loading cached code never pays for llvmlite, and
the programs need not import the compiler that builds them. Every object linked here stays
for the life of the process (see ``jit.py``).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from autojit.errors import CompileError
from autojit.lower_cpu.mathlib import bind_private_math, load_math_libraries

__all__ = ["Engine", "add_object", "assembly_of", "engine", "listing_machine", "load_object"]


@dataclass(frozen=True)
class Engine:
    """The process-wide target machine and execution engine."""

    target_machine: llvm.TargetMachine
    engine: llvm.ExecutionEngine
    lock: threading.Lock = field(default_factory=threading.Lock)
    loaded: dict[str, int] = field(default_factory=dict)   # symbol -> address


@functools.cache
def engine() -> Engine:
    """Return the engine, initialising LLVM's native target and the math libraries once."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    load_math_libraries()
    bind_private_math()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    # codemodel "jitdefault" (large) lets the JIT place code anywhere relative to libm.
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features,
                                      opt=3, jit=True)
    return Engine(tm, llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm))


@functools.cache
def listing_machine() -> llvm.TargetMachine:
    """Return a second machine for assembly listings (the engine owns the first)."""
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, jit=True)


def add_object(core: Engine, object_code: bytes, symbol: str) -> int:
    """Link ``object_code`` into the engine (once per symbol); return ``symbol``'s address.
    The caller holds ``core.lock``."""
    address = core.loaded.get(symbol)
    if address is None:
        core.engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        core.engine.finalize_object()
        address = core.loaded[symbol] = core.engine.get_function_address(symbol)
    return address


def load_object(object_code: bytes, symbol: str) -> int:
    """Link cached ``object_code`` into the JIT; return the address of ``symbol``.

    Raises ``CompileError`` when the object does not define it."""
    core = engine()
    with core.lock:
        address = add_object(core, object_code, symbol)
    if not address:
        raise CompileError(f"cached object code does not define {symbol}")
    return address


def assembly_of(optimized_ir: str) -> str:
    """Return the host assembly listing of an optimised module's text."""
    core = engine()
    with core.lock:
        module = llvm.parse_assembly(optimized_ir)
        return listing_machine().emit_assembly(module)
