"""Vectorised transcendental math: scalar libm calls the loop vectoriser can widen to libmvec.

LLVM 22 ignores ``-vector-library``; what works is a call-site attribute naming the vector
variants of each scalar call (glibc's vector ABI mangling, ``_ZGV<isa>N<lanes><args>_<name>``)::

    %r = call double @sin(double %x) nounwind
        "vector-function-abi-variant"="_ZGV_LLVM_N2v_sin(_ZGVbN2v_sin),_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)"
    declare double @sin(double) nounwind readnone
    declare <4 x double> @_ZGVdN4v_sin(<4 x double>)
    @llvm.compiler.used = appending global [2 x ptr] [ptr @_ZGVbN2v_sin, ptr @_ZGVdN4v_sin],
        section "llvm.metadata"

The vector symbols must be declared and kept alive (``llvm.compiler.used``), and libmvec
must be loaded into the process so the JIT can resolve them. Without libmvec, or for a
function it lacks, autojit's own function (``own_math.py``) or the plain scalar libm call
remains: slower, never wrong, and within the measured ULP bounds (``ulp_bounds.py``,
docs/ulp.md). :func:`scalar_math_only` compiles that way on purpose (tests,
``benchmarks/ulp.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes.util
import functools
import logging
import platform
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
from llvmlite.ir.instructions import CallInstrAttributes

from autojit.ir.ops import OP_TABLE, PRIMITIVES
from autojit.lower_cpu.libm_symbols import glibc_address, private_name
from autojit.lower_cpu.own_math import own_available, own_function
from autojit.lower_cpu.svml_symbols import LANES
from autojit.lower_cpu.svml_symbols import private_name as svml_private_name

log = logging.getLogger("autojit")

#: libmvec ISA letters, weakest first, with the CPU feature each needs and its vector width.
_ISAS: tuple[tuple[str, str, int], ...] = (
    ("b", "sse4.1", 128),
    ("d", "avx2", 256),
    ("e", "avx512f", 512),
)
_LIBRARIES = ("libmvec.so.1", "libm.so.6")
_VARIANT_ATTR = "vector-function-abi-variant"
#: True inside scalar_math_only(): compile as if libmvec were absent
_SCALAR_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("autojit_scalar_math",
                                                                    default=False)


class _StringCallAttributes(CallInstrAttributes):
    """Call-site attributes that also accept LLVM string attributes (``"key"="value"``),
    which llvmlite's closed attribute sets refuse."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
            return
        super().add(name)


@functools.cache
def host_vector_isas() -> tuple[tuple[str, int], ...]:
    """Return the libmvec ISAs this CPU runs as (letter, vector bits): ``(('b', 128), ('d', 256))``
    on an AVX2 machine; empty when even SSE4.1 is missing."""
    features = llvm.get_host_cpu_features()
    return tuple((letter, bits) for letter, feature, bits in _ISAS if features.get(feature))


@functools.cache
def load_math_libraries() -> bool:
    """Load libmvec (and libm, for the scalar fallbacks) into the process, once.

    Returns True when libmvec is available to the JIT."""
    loaded = {}
    for name in _LIBRARIES:
        path = name if name != "libm.so.6" else (ctypes.util.find_library("m") or name)
        try:
            llvm.load_library_permanently(path)
            loaded[name] = True
        except RuntimeError as exc:   # absent library: scalar calls only
            log.info("autojit: cannot load %s (%s); vector math disabled", path, exc)
            loaded[name] = False
    return loaded["libmvec.so.1"]


#: log2 of the byte alignment of every innermost loop (LLVM's x86 default: 4, 16 bytes).
#: A loop of vector math calls runs up to 2.6x slower at some 16-byte offsets of its page on
#: the AVX-512 Xeon measured, never at a 64-byte one: ``tanh(exp(x))`` (10M float64, one
#: thread, glibc only) took 71 and 67 ms with its loop at page offsets 0xb0 and 0x150 and
#: 27-28 ms at the other 44 offsets from 0x60 to 0x360 (``python
#: benchmarks/bench_svml_chains.py --placement``); which offsets are slow differs per loop
#: (``sin(expm1(x))*0.5+x``: 0x60), so a module's layout decides it by chance: SVML's
#: wrappers put every SVML kernel 0x60 bytes later (issue 13's chain, 40 -> 53 ms).
#: Aligned, those kernels take 25-29 ms wherever they lie (``bench_svml_chains.py``).
LOOP_ALIGN_LOG2 = 6
_LOOP_ALIGN_OPTION = "-x86-experimental-pref-innermost-loop-alignment"


def set_loop_alignment(log2: int) -> None:
    """Align innermost loops of every later compile to ``2**log2`` bytes (x86 only: LLVM
    exits on an option its build lacks). Process-wide: LLVM reads it at code generation."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        llvm.set_option("", f"{_LOOP_ALIGN_OPTION}={log2}")


@functools.cache
def align_inner_loops() -> None:
    """Set ``LOOP_ALIGN_LOG2`` once, before any kernel is compiled."""
    set_loop_alignment(LOOP_ALIGN_LOG2)


@functools.cache
def bind_private_math() -> None:
    """Bind every private libm name kernels may call (``libm_symbols.py``) to glibc's
    function in LLVM's symbol table, once, before any kernel is linked: a cached object
    loaded into the JIT needs them as much as a fresh compile does."""
    names = {scalar_name(OP_TABLE[op].math_name, np.dtype(dtype))
             for op in PRIMITIVES if OP_TABLE[op].math_name for dtype in ("f4", "f8")}
    for name in sorted(names):
        address = glibc_address(name)
        if address:
            llvm.add_symbol(private_name(name), address)
    from autojit.lower_cpu.svml import bind_symbols
    bind_symbols()
    align_inner_loops()


def svml_routine(math_name: str, itemsize: int) -> str | None:
    """Return NumPy's SVML routine kernels call for ``math_name`` at ``itemsize`` (``svml.py``
    probes which give NumPy's bits), or None: glibc, as on machines without AVX-512, and
    inside :func:`scalar_math_only`."""
    if _SCALAR_ONLY.get():
        return None
    from autojit.lower_cpu.svml import routine
    return routine(math_name, itemsize)


def scalar_name(math_name: str, dtype: np.dtype) -> str:
    """Return the libm symbol for ``math_name`` at ``dtype``: ``sin`` or ``sinf``."""
    return math_name + ("f" if np.dtype(dtype).itemsize == 4 else "")


@contextlib.contextmanager
def scalar_math_only() -> Iterator[None]:
    """Within the block, compile as on a machine without libmvec: autojit's own function
    where ``own_math.py`` has one, else a plain scalar libm call.

    For checking that path (results, ULP bounds) where libmvec is present; code compiled
    inside stays scalar, so keep it out of shared caches (``cache_max_mb=0``)."""
    token = _SCALAR_ONLY.set(True)
    try:
        yield
    finally:
        _SCALAR_ONLY.reset(token)


def vector_variants(math_name: str, itemsize: int, arity: int) -> tuple[tuple[int, str], ...]:
    """Return (lanes, symbol) for each libmvec variant of a scalar function present in the
    process, one per lane count: ``((2, '_ZGVbN2v_sin'), (4, '_ZGVdN4v_sin'))`` on AVX2;
    ``()`` without libmvec, for a function it lacks, or inside :func:`scalar_math_only`."""
    return () if _SCALAR_ONLY.get() else _vector_variants(math_name, itemsize, arity)


@functools.cache
def _vector_variants(math_name: str, itemsize: int, arity: int) -> tuple[tuple[int, str], ...]:
    if not load_math_libraries():
        return ()
    name = scalar_name(math_name, np.dtype(f"f{itemsize}"))
    found: dict[int, str] = {}
    for letter, bits in host_vector_isas():
        lanes = bits // (8 * itemsize)
        symbol = f"_ZGV{letter}N{lanes}{'v' * arity}_{name}"
        if llvm.address_of_symbol(symbol):
            found[lanes] = symbol
    return tuple(sorted(found.items()))


def variant_attribute(math_name: str, itemsize: int, arity: int) -> str:
    """Return the call-site attribute text, or '' when no vector variant exists:
    ``"vector-function-abi-variant"="_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)"``."""
    name = private_name(scalar_name(math_name, np.dtype(f"f{itemsize}")))
    variants = vector_variants(math_name, itemsize, arity)
    mappings = ",".join(
        f"_ZGV_LLVM_N{lanes}{'v' * arity}_{name}({symbol})" for lanes, symbol in variants
    )
    return f'"{_VARIANT_ATTR}"="{mappings}"' if mappings else ""


def math_environment(names: Iterable[str] | None = None) -> tuple:
    """Return what, besides a kernel, decides the text ``MathCalls`` writes for it: per
    math function of ``names`` (default: every one), size and its arity, the vector variants
    present and whether an own function is used (``scalar_math_only``, ``libm_only`` and the
    libraries loaded), and the NumPy SVML routine called instead where one is bound.
    ``jit`` keys reuse without rendering by it, with ``names`` the kernel's own functions:
    asking for every one probed all 60 SVML routines (``svml.routine``) on the process's
    first compile, even of ``x + 1.0`` (~0.2-0.4 s of its first call)."""
    wanted = None if names is None else set(names)
    return tuple((info.math_name, itemsize, vector_variants(info.math_name, itemsize,
                                                            info.arity),
                  own_available(info.math_name), svml_routine(info.math_name, itemsize))
                 for info in OP_TABLE.values() if info.math_name
                 and (wanted is None or info.math_name in wanted) for itemsize in (4, 8))


@dataclass
class MathCalls:
    """Declares libm functions in one module and emits vectorisable calls to them."""

    module: ir.Module
    _vector_decls: dict[str, ir.Function] = field(default_factory=dict)
    #: scalar SVML wrapper of each routine called, with its narrower vector wrappers
    _svml: dict[str, ir.Function] = field(default_factory=dict)

    def _scalar(self, math_name: str, ty: ir.Type, arity: int) -> ir.Function:
        name = private_name(scalar_name(math_name, np.dtype(
            "f4" if isinstance(ty, ir.FloatType) else "f8")))
        bind_private_math()
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * arity), name)
        # readnone: autojit never reads errno (C's -fno-math-errno). Without it the call
        # may write errno memory and the loop vectoriser refuses the loop.
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        return fn

    def _declare_vectors(self, math_name: str, ty: ir.Type, arity: int) -> None:
        itemsize = 4 if isinstance(ty, ir.FloatType) else 8
        for lanes, symbol in vector_variants(math_name, itemsize, arity):
            if symbol not in self._vector_decls:
                vty = ir.VectorType(ty, lanes)
                self._vector_decls[symbol] = ir.Function(
                    self.module, ir.FunctionType(vty, [vty] * arity), symbol)

    def _svml_wrapper(self, symbol: str, ty: ir.Type, lanes: int, arity: int) -> ir.Function:
        """Define ``lanes`` of ``symbol`` (1: a scalar) as one call of the full-width routine:
        the lanes repeated to fill the register (real inputs: no padding value reaches the
        routine), the first ``lanes`` of its result kept. SVML computes each lane alone, so
        a value's result never depends on its position or its neighbours."""
        full = LANES[4 if isinstance(ty, ir.FloatType) else 8]
        name = f"{svml_private_name(symbol)}.{lanes}"
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        vfull = ir.VectorType(ty, full)
        routine = self.module.globals.get(svml_private_name(symbol))
        if routine is None:
            routine = ir.Function(self.module, ir.FunctionType(vfull, [vfull] * arity),
                                  svml_private_name(symbol))
            routine.attributes.add("nounwind")
            routine.attributes.add("readnone")
        part = ty if lanes == 1 else ir.VectorType(ty, lanes)
        fn = ir.Function(self.module, ir.FunctionType(part, [part] * arity), name)
        fn.linkage = "internal"
        # not inlined before the loop vectoriser, which would then see a vector call in the
        # scalar loop and repeat it per lane instead of widening the scalar call
        for attribute in ("noinline", "nounwind", "readnone"):
            fn.attributes.add(attribute)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        i32 = ir.IntType(32)
        repeat = ir.Constant(ir.VectorType(i32, full), [i % lanes for i in range(full)])
        widened = []
        for arg in fn.args:
            if lanes == 1:
                arg = b.insert_element(ir.Constant(ir.VectorType(ty, 1), None), arg,
                                       ir.Constant(i32, 0))
            widened.append(b.shuffle_vector(arg, ir.Constant(arg.type, None), repeat))
        result = b.call(routine, widened)
        if lanes == 1:
            b.ret(b.extract_element(result, ir.Constant(i32, 0)))
        else:
            keep = ir.Constant(ir.VectorType(i32, lanes), list(range(lanes)))
            b.ret(b.shuffle_vector(result, ir.Constant(vfull, None), keep))
        return fn

    def _svml_call(self, builder: ir.IRBuilder, symbol: str, args: list[ir.Value]) -> ir.Value:
        """Emit the scalar wrapper's call with every vector width mapped to SVML: the full
        register to the routine itself, narrower ones to wrappers (the vectoriser may pick
        them, e.g. for a loop mixing float32 and float64)."""
        ty, arity = args[0].type, len(args)
        full = LANES[4 if isinstance(ty, ir.FloatType) else 8]
        scalar = self._svml_wrapper(symbol, ty, 1, arity)
        self._svml[symbol] = scalar
        # kept "used", so no pass rewrites its signature (a constant argument dropped, fastcc)
        # away from the one the call site's vector variants name
        self._vector_decls[scalar.name] = scalar
        variants = []
        lanes = 2
        while lanes <= full:
            target = (self.module.globals[svml_private_name(symbol)] if lanes == full
                      else self._svml_wrapper(symbol, ty, lanes, arity))
            self._vector_decls[target.name] = target
            variants.append(f"_ZGV_LLVM_N{lanes}{'v' * arity}_{scalar.name}({target.name})")
            lanes *= 2
        inst = builder.call(scalar, args)
        attr = f'"{_VARIANT_ATTR}"="{",".join(variants)}"'
        inst.attributes = _StringCallAttributes(["nounwind", attr])
        return inst

    def call(self, builder: ir.IRBuilder, math_name: str, args: list[ir.Value]) -> ir.Value:
        """Emit ``call double @sin(double %x) "vector-function-abi-variant"="…"``; return it."""
        ty, arity = args[0].type, len(args)
        itemsize = 4 if isinstance(ty, ir.FloatType) else 8
        symbol = svml_routine(math_name, itemsize)
        if symbol is not None:
            return self._svml_call(builder, symbol, args)
        # where libmvec has no vector variant (or is absent), an own function inlined into
        # the loop keeps it vectorised (own_math.py); where it has one, libmvec is faster
        own = (own_function(self.module, math_name, ty)
               if not vector_variants(math_name, itemsize, arity) else None)
        if own is not None:
            return builder.call(own, args)
        fn = self._scalar(math_name, ty, arity)
        self._declare_vectors(math_name, ty, arity)
        inst = builder.call(fn, args)
        attr = variant_attribute(math_name, 4 if isinstance(ty, ir.FloatType) else 8, arity)
        inst.attributes = _StringCallAttributes(["nounwind"] + ([attr] if attr else []))
        return inst

    def _wrappers_last(self) -> None:
        """Move the SVML wrappers (``_svml_wrapper``) behind every other function, so a
        kernel's code lies as it does without SVML (LLVM lays functions out in module
        order; three wrappers first moved each SVML kernel 0x60 bytes into its section,
        where its loop's speed was a matter of chance before ``LOOP_ALIGN_LOG2``)."""
        prefix = svml_private_name("")
        names = [name for name, value in self.module.globals.items()
                 if name.startswith(prefix) and isinstance(value, ir.Function)
                 and not value.is_declaration]
        for name in names:
            self.module.globals.move_to_end(name)

    def finish(self) -> None:
        """Keep the declared vector symbols alive through optimisation (``llvm.compiler.used``),
        so the vectoriser finds them after dead declarations would have been dropped.

        Where SVML is called, every function takes 512-bit vectors in zmm registers (the
        routines' C ABI: without ``min-legal-vector-width`` LLVM splits them in two) and
        vectorises at that width (this CPU's tuning prefers 256 bits)."""
        if self._svml:
            for fn in self.module.functions:
                if not fn.is_declaration:
                    # string attributes: llvmlite's closed set refuses them (set.add does not)
                    set.add(fn.attributes, '"min-legal-vector-width"="512"')
                    set.add(fn.attributes, '"prefer-vector-width"="512"')
            self._wrappers_last()
        if not self._vector_decls:
            return
        ptr = ir.PointerType()
        array = ir.ArrayType(ptr, len(self._vector_decls))
        used = ir.GlobalVariable(self.module, array, "llvm.compiler.used")
        used.linkage = "appending"
        used.section = "llvm.metadata"
        # Spelled by hand: llvmlite writes a function's address as a typed pointer.
        refs = [ir.FormattedConstant(ptr, fn.get_reference()) for fn in self._vector_decls.values()]
        used.initializer = ir.Constant(array, refs)
