"""One process-wide LLVM JIT: optimise at O3 for the host CPU, compile, call through ctypes.

Every compiled module is added to one MCJIT engine, which owns it for the life of the
process, so a ``CpuProgram``'s address stays valid. Numba runs its own engine on the same
in-process LLVM; nothing here changes global LLVM options, so the two coexist.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import numpy as np

from autojit.errors import CompileError
from autojit.ir.kernel import Kernel
from autojit.lower_cpu.mathlib import load_math_libraries
from autojit.lower_cpu.render import render_llvm

log = logging.getLogger("autojit")

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


@dataclass(frozen=True)
class _Jit:
    """The process-wide target machine and execution engine."""

    target_machine: llvm.TargetMachine
    engine: llvm.ExecutionEngine
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: itertools.count = field(default_factory=itertools.count)


@functools.cache
def _jit() -> _Jit:
    """Return the JIT, initialising LLVM's native target and the math libraries once."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    load_math_libraries()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    # codemodel "jitdefault" (large) lets the JIT place code anywhere relative to libm.
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features,
                                      opt=3, jit=True)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    return _Jit(tm, engine)


@functools.cache
def _listing_machine() -> llvm.TargetMachine:
    """Return a second machine for assembly listings (the engine owns the first)."""
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, jit=True)


@dataclass(frozen=True)
class CpuProgram:
    """A compiled kernel: its entry point ``void name(void **data, const int64_t *meta)``.

    ``name`` is the kernel's name, ``symbol`` the unique symbol in the JIT, ``address`` the
    function pointer. ``asm`` (host assembly) is produced on first access.
    """

    name: str
    symbol: str
    address: int
    llvm_ir: str
    llvm_ir_optimized: str

    @functools.cached_property
    def _function(self) -> ctypes._CFuncPtr:
        return _KernelFn(self.address)

    @functools.cached_property
    def asm(self) -> str:
        """Return the host assembly of the optimised module."""
        with _jit().lock:
            module = llvm.parse_assembly(self.llvm_ir_optimized)
            return _listing_machine().emit_assembly(module)

    def call(self, data: Sequence[int], meta: Sequence[int]) -> None:
        """Call the kernel with plain ints: buffer then scalar addresses, and ``meta``."""
        pointers = (ctypes.c_void_p * max(len(data), 1))(*data)
        sizes = (ctypes.c_int64 * max(len(meta), 1))(*meta)
        self._function(pointers, sizes)

    def run(self, data: Sequence[int], meta: np.ndarray) -> None:
        """Call the kernel: ``data`` holds buffer then scalar addresses, ``meta`` the int64
        sizes and runtime strides (``autojit.ir.abi.pack_meta``). Returns when it is done."""
        pointers = (ctypes.c_void_p * max(len(data), 1))(*data)
        meta = np.ascontiguousarray(meta, dtype=np.int64)
        self._function(ctypes.addressof(pointers), meta.ctypes.data)


def _parse(text: str, what: str) -> llvm.ModuleRef:
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as exc:
        raise CompileError(f"LLVM rejected the {what} IR", source=text, log=str(exc)) from exc
    return module


def optimize_module(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Run LLVM's O3 pipeline on ``module`` in place, vectorisers on."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pass_builder = llvm.create_pass_builder(tm, pto)
    pass_builder.getModulePassManager().run(module, pass_builder)


def compile_kernel(kernel: Kernel) -> CpuProgram:
    """Render, optimise and JIT-compile ``kernel``; return the callable ``CpuProgram``.

    Raises ``CompileError`` carrying the numbered IR and LLVM's message."""
    jit = _jit()
    with jit.lock:
        symbol = f"{kernel.name}.{next(jit.counter)}"
        start = time.perf_counter()
        text = render_llvm(kernel, symbol)
        module = _parse(text, "generated")
        module.triple = jit.target_machine.triple
        module.data_layout = str(jit.target_machine.target_data)
        optimize_module(module, jit.target_machine)
        optimized = str(module)
        jit.engine.add_module(module)
        jit.engine.finalize_object()
        address = jit.engine.get_function_address(symbol)
    if not address:
        raise CompileError(f"JIT produced no code for {symbol}", source=text)
    log.debug("autojit: compiled %s in %.1f ms", symbol, 1e3 * (time.perf_counter() - start))
    return CpuProgram(kernel.name, symbol, address, text, optimized)
