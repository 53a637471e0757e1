"""Which math functions kernels compute with NumPy's own SVML routines, decided by a probe.

NumPy's source says which ufunc loops call SVML (``loops_umath_fp.dispatch.c.src``), but the
source is not the wheel: a function is bound to SVML only when NumPy's results on a probe
set (specials, subnormals, random values of every magnitude, several lengths, offsets,
strides and in place) equal the SVML routine's bit for bit, both on a mixed vector and with
the value broadcast to every lane (how a kernel computes a scalar or a loop's tail element).
Anything else keeps glibc (``mathlib.py``). Where NumPy exports no SVML (AVX2 machines,
other builds) nothing is probed and nothing changes.

The probe calls each routine through a tiny JIT stub (one engine of its own)::

    define void @probe(ptr %x, ptr %y, ptr %out, i64 %chunks) "min-legal-vector-width"="512"
    ; out[i*8:(i+1)*8] = @autojit_svml___svml_pow8_ha(x[i*8:...], y[i*8:...])
"""

from __future__ import annotations

import ctypes
import functools
import logging

import llvmlite.binding as llvm
import numpy as np

from autojit.lower_cpu.svml_symbols import (
    BINARY,
    LANES,
    UNARY,
    candidates,
    exported,
    private_name,
)

log = logging.getLogger("autojit")

#: NumPy ufunc of each libm name
_UFUNCS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
           "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
           "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "exp": np.exp,
           "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
           "log10": np.log10, "log1p": np.log1p, "cbrt": np.cbrt, "pow": np.power,
           "atan2": np.arctan2}
_TYPES = {8: "double", 4: "float"}
#: a caller passing 512-bit vectors in zmm registers (else LLVM splits them in two)
_ABI = '"min-legal-vector-width"="512"'


@functools.cache
def bind_symbols() -> None:
    """Put every exported SVML routine in LLVM's symbol table under its private name."""
    for symbol, address in exported().items():
        llvm.add_symbol(private_name(symbol), address)


def _stub(symbol: str, itemsize: int, arity: int) -> str:
    ty = f"<{LANES[itemsize]} x {_TYPES[itemsize]}>"
    name = private_name(symbol)
    params = ", ".join([ty] * arity)
    loads = "\n".join(
        f"  %p{k} = getelementptr {ty}, ptr %in{k}, i64 %i\n  %v{k} = load {ty}, ptr %p{k}, align 1"
        for k in range(arity))
    args = ", ".join(f"{ty} %v{k}" for k in range(arity))
    return f"""
declare {ty} @"{name}"({params}) nounwind readnone
define void @"probe.{symbol}"(ptr %in0, ptr %in1, ptr %out, i64 %n) {_ABI} {{
entry:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
{loads}
  %r = call {ty} @"{name}"({args})
  %q = getelementptr {ty}, ptr %out, i64 %i
  store {ty} %r, ptr %q, align 1
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


def _probe_values(dtype: np.dtype) -> np.ndarray:
    """Return a few hundred values: specials, subnormals, extremes and random magnitudes."""
    info = np.finfo(dtype)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
               3.0, 10.0, -10.0, 0.1, np.pi, np.pi / 2, np.pi / 4, 1e-8, -1e-8, 0.999999,
               1.000001, -0.999999, 20.0, 88.0, 89.0, 100.0, 709.0, 710.0, -745.0, 1e5,
               1e22, -1e22, float(info.max), -float(info.max), float(info.tiny),
               float(info.smallest_subnormal), -float(info.smallest_subnormal),
               float(info.eps), 1.0 - float(info.epsneg)]
    rng = np.random.default_rng(20261201)
    magnitude = 10.0 ** rng.uniform(-40 if dtype.itemsize == 4 else -300,
                                    38 if dtype.itemsize == 4 else 300, 160)
    signs = rng.choice([-1.0, 1.0], 160)
    with np.errstate(all="ignore"):
        values = np.concatenate([np.array(special), magnitude * signs,
                                 rng.uniform(-1, 1, 120), rng.uniform(-10, 10, 120),
                                 rng.uniform(0, 2, 60)]).astype(dtype)
    return values


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, except that two NaNs of the same sign are equal."""
    nan = np.isnan(a) & np.isnan(b)
    same = (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))
    return bool(np.all(same | (nan & (np.signbit(a) == np.signbit(b)))))


def _numpy_layouts(ufunc: np.ufunc, inputs: list[np.ndarray]) -> list[tuple[np.ndarray,
                                                                               np.ndarray]]:
    """Return (NumPy's result, the indices of the probe values it is of) for each layout."""
    n = len(inputs[0])
    index = np.arange(n)
    runs = []
    with np.errstate(all="ignore"):
        runs.append((ufunc(*inputs), index))
        for length in (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100):
            for start in (0, 1, 5):
                part = slice(start, start + length)
                runs.append((ufunc(*(x[part] for x in inputs)), index[part]))
        for step in (2, 3):   # a negative stride makes NumPy call npy_*: not probed
            runs.append((ufunc(*(x[::step] for x in inputs)), index[::step]))
        out = np.empty(2 * n, inputs[0].dtype)[::2]
        runs.append((ufunc(*inputs, out=out), index))
        inplace = inputs[0].copy()
        runs.append((ufunc(inplace, *inputs[1:], out=inplace), index))
    return runs


def _matches(engine: llvm.ExecutionEngine, symbol: str, itemsize: int,
             inputs: list[np.ndarray], ufunc: np.ufunc) -> bool:
    lanes = LANES[itemsize]
    probe = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int64)(engine.get_function_address(f"probe.{symbol}"))

    def call(args: list[np.ndarray]) -> np.ndarray:
        chunks = -(-len(args[0]) // lanes)
        padded = [np.resize(a, chunks * lanes) for a in args] + [np.ones(1)] * 2
        out = np.empty(chunks * lanes, args[0].dtype)
        probe(padded[0].ctypes.data, padded[1].ctypes.data, out.ctypes.data, chunks)
        return out[:len(args[0])]

    mixed = call(inputs)
    shifted = np.roll(call([np.roll(x, 3) for x in inputs]), -3)
    broadcast = call([np.repeat(x, lanes) for x in inputs])[::lanes]
    if not (_equal(mixed, shifted) and _equal(mixed, broadcast)):
        return False
    return all(_equal(result, mixed[where]) for result, where in _numpy_layouts(ufunc, inputs))


def _probe_inputs(math_name: str, itemsize: int) -> list[np.ndarray]:
    values = _probe_values(np.dtype(f"f{itemsize}"))
    if math_name in UNARY:
        return [values]
    # binary: every special against every special, then random pairs
    head = values[:41]
    rng = np.random.default_rng(7)
    x = np.concatenate([np.repeat(head, len(head)), values, rng.permutation(values)])
    y = np.concatenate([np.tile(head, len(head)), rng.permutation(values), values])
    return [x, y]


@functools.cache
def _machine() -> llvm.TargetMachine | None:
    """Return the stubs' target machine, or None where nothing can be bound."""
    if not exported():
        return None
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    if not llvm.get_host_cpu_features().get("avx512f"):
        return None
    bind_symbols()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=0, jit=True)


@functools.cache
def routine(math_name: str, itemsize: int) -> str | None:
    """Return the SVML routine whose results are NumPy's for ``math_name`` at ``itemsize``
    here (``__svml_sinh8_ha``), or None: glibc. Probed on first use (a millisecond or two
    per function), so a process pays only for the functions its kernels call."""
    machine = _machine()
    if machine is None or math_name not in _UFUNCS:
        return None
    arity = 1 + (math_name in BINARY)
    tried = [s for s in candidates(math_name, itemsize) if s in exported()]
    if not tried:
        return None
    module = llvm.parse_assembly("".join(_stub(s, itemsize, arity) for s in tried))
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    # kept and never disposed: the engine owns the stubs' code, and every probe engine
    # shares ``_machine()``, which MCJIT takes as its own, so disposing two would free it
    # twice (a segfault when a re-import of this module dropped the list: pytester)
    engine._owned = True
    _ENGINES.append(engine)
    inputs = _probe_inputs(math_name, itemsize)
    for symbol in tried:
        if _matches(engine, symbol, itemsize, inputs, _UFUNCS[math_name]):
            log.debug("autojit: %s/f%d calls NumPy's %s", math_name, itemsize, symbol)
            return symbol
    log.debug("autojit: %s/f%d keeps glibc (NumPy's results are not SVML's)", math_name,
              itemsize)
    return None


def bound() -> dict[tuple[str, int], str]:
    """Return the SVML routine of every (libm name, itemsize) whose results are NumPy's here,
    ``{('sinh', 8): '__svml_sinh8_ha', ...}``; empty where NumPy exports none."""
    found = {(name, size): routine(name, size) for name in UNARY + BINARY for size in LANES}
    return {key: symbol for key, symbol in found.items() if symbol}


_ENGINES: list[llvm.ExecutionEngine] = []
