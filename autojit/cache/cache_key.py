"""What a compiled version depends on, as digests: the function's code and everything it reads.

A disk-cache key must change whenever the trace or the code could, and otherwise stay put.
The trace depends on the function's code and on the globals it *reads*, so
:func:`function_fingerprint` hashes code objects recursively and resolves each global name
the code mentions (``co_names``) in the function's own ``__globals__``:

* scalars, strings, bytes, tuples, lists, dicts and sets by value — they can be baked into
  the trace as constants;
* NumPy arrays by dtype, shape and a hash of their bytes, NumPy scalars and dtypes by value;
* Python functions defined outside installed packages — the user's helpers, in any module
  or notebook cell — recursively by their own code, globals, defaults and closure, so editing
  a helper in another module changes the key (Numba's per-file cache misses that);
* modules and callables of installed packages (NumPy, the standard library, ...) by name and
  the package version: their code changes only when the version does, and hashing NumPy's
  own source on every key would cost far more than the trace it saves;
* a user module by name plus those of its attributes the code mentions (``helpers.f``);
* ``@autoroute`` functions by their wrapped function and options, ``functools.partial`` by
  its parts, closure cells by their contents.

Anything else — instances of arbitrary classes, user-defined classes, bound methods — has
no value we can hash faithfully, so the function is not cached on disk at all (it still has
its in-memory cache): a missed cache costs a compile, a wrong hit would run stale code.

Paths and first line numbers are *not* part of the key (a notebook cell gets a new file name
every session; an edit above a function moves it): they are returned as ``origins`` so the
disk cache can move the source locations of a cached trace to where the code is now.
Relative line positions and columns (``co_linetable``) are hashed: they are what the trace
records as source locations.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import os
import site
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit._version import __version__

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))
_MAX_ITEMS = 100_000          # elements of containers hashed by value before giving up
_AUTOJIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unkeyable(Exception):
    """A value the function reads cannot be hashed faithfully; the message names it."""


@dataclass(frozen=True)
class Fingerprint:
    """A function's digest (hex) and the (file, first line) of each code object hashed."""

    digest: str
    origins: tuple[tuple[str, int], ...]


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Return the folders of installed code: the standard library, site-packages, autojit.

    (``sysconfig.get_paths()`` would say the same at 2-7 ms on first use; this is ~0.05.)"""
    folders = {os.path.dirname(os.__file__), _AUTOJIT_DIR}
    folders.update(p for p in sys.path if os.path.basename(p) in ("site-packages",
                                                                  "dist-packages"))
    if hasattr(site, "getsitepackages"):
        folders.update(site.getsitepackages())
    folders.add(site.getusersitepackages())
    return tuple(os.path.join(os.path.abspath(f), "") for f in folders if f)


def _is_library_file(path: str) -> bool:
    return path.startswith("<frozen") or os.path.abspath(path).startswith(_library_dirs())


def _is_installed(module: types.ModuleType) -> bool:
    """Return True when ``module``'s files (or a namespace package's folders) are installed."""
    file = getattr(module, "__file__", None)
    if file is not None:
        return _is_library_file(file)
    folders = list(getattr(module, "__path__", None) or ())
    return bool(folders) and all(_is_library_file(f) for f in folders)


@functools.cache
def library_version(module_name: str) -> str | None:
    """Return the version of the installed package that defines ``module_name``, "" for
    the standard library and builtins, or None when the module is user code."""
    top = module_name.partition(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return ""
    module = sys.modules.get(module_name) or sys.modules.get(top)
    if module is None or not _is_installed(module):
        return None
    version = getattr(sys.modules.get(top), "__version__", None)
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version
        try:
            version = dist_version(top)
        except (PackageNotFoundError, ValueError):
            version = "unknown"
    return str(version)


class _Walk:
    """One fingerprint computation: a running hash plus what it has already visited."""

    def __init__(self) -> None:
        self.hash = hashlib.blake2b(digest_size=20)
        self.seen: set[int] = set()
        self.origins: list[tuple[str, int]] = []
        self.budget = _MAX_ITEMS
        self.open: set[int] = set()      # containers being fed (one inside itself: a cycle)

    def feed(self, *parts: object) -> None:
        for part in parts:
            data = part if isinstance(part, bytes) else str(part).encode("utf-8",
                                                                         "surrogatepass")
            self.hash.update(len(data).to_bytes(8, "little"))
            self.hash.update(data)

    def spend(self, count: int) -> None:
        self.budget -= count
        if self.budget < 0:
            raise Unkeyable(f"a global holds more than {_MAX_ITEMS} items")

    # -- code and functions -------------------------------------------------------------------
    def code(self, code: types.CodeType) -> None:
        self.origins.append((code.co_filename, code.co_firstlineno))
        self.feed("code", code.co_code, code.co_name, code.co_qualname, code.co_argcount,
                  code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
                  code.co_varnames, code.co_freevars, code.co_cellvars, code.co_names,
                  code.co_linetable, code.co_exceptiontable, len(code.co_consts))
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                self.code(constant)
            else:
                self.value(constant, frozenset())

    def function(self, fn: types.FunctionType) -> None:
        if id(fn) in self.seen:      # recursion, or a helper reached twice
            self.feed("again", fn.__qualname__)
            return
        self.seen.add(id(fn))
        self.code(fn.__code__)
        names = _global_names(fn.__code__)
        scope, builtin = fn.__globals__, getattr(fn, "__builtins__", builtins.__dict__)
        for name in sorted(names):
            if name in scope:
                self.feed("global", name)
                self.value(scope[name], names, name)
            elif name not in builtin:
                self.feed("undefined", name)   # defining it later changes the function
        self.value(fn.__defaults__, names, "defaults")
        self.value(fn.__kwdefaults__, names, "keyword defaults")
        for cell, free in zip(fn.__closure__ or (), fn.__code__.co_freevars):
            try:
                contents = cell.cell_contents
            except ValueError:
                self.feed("empty cell", free)
                continue
            self.feed("cell", free)
            self.value(contents, names, free)

    # -- values --------------------------------------------------------------------------------
    def value(self, value: Any, names: frozenset[str], label: str = "") -> None:
        """Feed ``value``; raise Unkeyable when it has no faithful digest. Containers are
        walked from an explicit stack in the order a recursive walk takes (a global nested
        thousands deep must not exhaust Python's recursion limit)."""
        pending: list[tuple[Any, bool]] = [(value, False)]
        while pending:
            value, closing = pending.pop()
            if closing:   # every item of this container is fed
                self.open.discard(id(value))
                continue
            kind = type(value)
            if kind in _SCALARS:
                self.feed(kind.__name__, repr(value))
            elif kind in (tuple, list, dict):
                if id(value) in self.open:
                    raise Unkeyable(f"{label}: a {kind.__name__} that contains itself")
                self.open.add(id(value))
                self.spend(len(value))
                self.feed(kind.__name__, len(value))
                items = ([part for item in value.items() for part in item] if kind is dict
                         else list(value))
                pending.append((value, True))
                pending.extend((item, False) for item in reversed(items))
            elif kind in (set, frozenset):
                self.spend(len(value))
                if not all(type(item) in _SCALARS for item in value):
                    raise Unkeyable(f"{label}: a set of non-scalar values")
                self.feed(kind.__name__, *sorted(f"{type(i).__name__}:{i!r}" for i in value))
            else:
                self.other(value, names, label)

    def other(self, value: Any, names: frozenset[str], label: str) -> None:
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise Unkeyable(f"{label}: a NumPy array of Python objects")
            digest = hashlib.blake2b(np.ascontiguousarray(value).data, digest_size=20)
            self.feed("ndarray", value.dtype.str, value.shape, digest.digest())
        elif isinstance(value, np.generic):
            self.feed("npscalar", value.dtype.str, value.tobytes())
        elif isinstance(value, np.dtype):
            self.feed("dtype", value.str, repr(value))
        elif isinstance(value, types.ModuleType):
            self.module(value, names)
        elif isinstance(value, types.FunctionType):
            self.callable_or_function(value, names, label)
        elif isinstance(value, functools.partial):
            self.feed("partial")
            self.value((value.func, value.args, value.keywords), names, label)
        elif _is_dispatcher(value):
            self.feed("autoroute", repr(value.options))
            self.value(value.fn, names, label)
        else:
            self.library_object(value, label)

    def callable_or_function(self, fn: types.FunctionType, names: frozenset[str],
                             label: str) -> None:
        if _is_library_file(fn.__code__.co_filename):
            self.library_object(fn, label)
        else:
            self.function(fn)

    def module(self, module: types.ModuleType, names: frozenset[str]) -> None:
        version = library_version(module.__name__)
        self.feed("module", module.__name__, version)
        if version is not None or id(module) in self.seen:
            return
        self.seen.add(id(module))
        for name in sorted(module.__dict__.keys() & names):   # helpers.f, cfg.SCALE
            self.feed("attribute", name)
            self.value(module.__dict__[name], names, f"{module.__name__}.{name}")

    def library_object(self, value: Any, label: str) -> None:
        """Feed a class, ufunc or builtin of an installed package by name and version."""
        owner = getattr(value, "__module__", None) or type(value).__module__
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        version = library_version(owner) if isinstance(owner, str) else None
        if version is None or name is None or not (callable(value) or isinstance(value, type)):
            raise Unkeyable(f"{label}: {type(value).__name__} {value!r:.60} has no "
                            "value-based digest")
        self.feed("library", owner, name, version)


def _is_dispatcher(value: Any) -> bool:
    return type(value).__module__ == "autojit.dispatch.dispatcher" and hasattr(value, "fn")


def _global_names(code: types.CodeType) -> frozenset[str]:
    """Return the global (and attribute) names of ``code`` and the code nested in it."""
    names: set[str] = set()
    pending = [code]   # nested code from a list, not recursion
    while pending:
        code = pending.pop()
        names.update(code.co_names)
        pending.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return frozenset(names)


def function_fingerprint(fn: Any) -> Fingerprint:
    """Return the digest of everything ``fn``'s trace can depend on, and its code origins.

    Raises Unkeyable when ``fn`` (or something it reads) cannot be hashed faithfully."""
    walk = _Walk()
    if not isinstance(fn, types.FunctionType):
        raise Unkeyable(f"{type(fn).__name__} objects are not plain Python functions")
    walk.function(fn)
    return Fingerprint(walk.hash.hexdigest(), tuple(walk.origins))


def _digest(*parts: object) -> str:
    walk = _Walk()
    walk.feed(*parts)
    return walk.hash.hexdigest()


@functools.cache
def _autojit_sources() -> str:
    """Return a digest of autojit's own files (path, size, mtime) in a source checkout: an
    edited checkout of the same version must not reuse what the old code generated. An
    installed autojit changes only with its version, so it is not walked ("")."""
    if any(_AUTOJIT_DIR.startswith(d) for d in _library_dirs() if d != _AUTOJIT_DIR + os.sep):
        return ""
    rows = []
    for folder, subfolders, files in os.walk(_AUTOJIT_DIR):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith((".py", ".h")):
                info = os.stat(os.path.join(folder, name))
                rows.append((os.path.relpath(os.path.join(folder, name), _AUTOJIT_DIR),
                             info.st_size, info.st_mtime_ns))
    return _digest(*rows)


@functools.cache
def environment_digest() -> str:
    """Return the digest of what every trace depends on besides the function: autojit
    (version and sources), the Python bytecode format and NumPy."""
    return _digest("autojit", __version__, _autojit_sources(), sys.version,
                   sys.implementation.cache_tag, "numpy", np.__version__)


_CPUINFO_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags",
                   "CPU implementer", "CPU architecture", "CPU variant", "CPU part",
                   "CPU revision", "Features", "isa")


def _cpuinfo() -> str | None:
    """Return the identity fields of the first CPU in /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            first = handle.read(65536).split("\n\n", 1)[0]
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    chosen = [(k.strip(), v.strip()) for k, v in fields.items() if k.strip() in _CPUINFO_FIELDS]
    return repr(sorted(chosen)) if chosen else None


@functools.cache
def cpu_tag() -> str:
    """Return a short digest of what CPU object code depends on: llvmlite (which pins its
    LLVM), the CPU's name and features, and the NumPy SVML routines kernels may call
    (``lower_cpu/svml_symbols.svml_tag``: the NumPy build and whether its AVX-512 loops run).

    On Linux the name and features come from /proc/cpuinfo (model name, family, flags): the
    same facts LLVM's host detection reads, without importing ``llvmlite.binding``, which
    alone costs three times a warm start's budget. Elsewhere LLVM is asked."""
    import llvmlite

    from autojit.lower_cpu.svml_symbols import svml_tag
    identity = _cpuinfo() if sys.platform == "linux" else None
    if identity is None:
        import llvmlite.binding as llvm
        identity = repr((llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()))
    # and which NumPy SVML routines kernels may call (none where NumPy runs no AVX-512 loops)
    return _digest("llvmlite", llvmlite.__version__, identity, svml_tag())[:16]


def gpu_tag(arch: str, nvrtc: tuple[int, int] | None) -> str:
    """Return a short digest of what a cubin depends on: the NVRTC version and ``sm_XX``."""
    return _digest("nvrtc", nvrtc, arch)[:16]


def key_digest(*parts: object) -> str:
    """Return the hex digest of ``parts`` (each fed as text, length-prefixed)."""
    return _digest(*parts)
