"""Guards: what a trace read from the function's environment, checked again on every call.

A trace bakes in whatever the Python code read besides its arguments: globals
(``x * SCALE``), closure cells, ``__defaults__``/``__kwdefaults__``, the helpers it calls
(and what *they* read), module attributes (``cfg.SCALE``, ``np.sin``). Like torch.compile's
guards, :func:`collect` records before each trace where each such value lives and which
object it was; a compiled entry answers a call only while :meth:`Guards.hold`. A change is
seen on the next call, which traces again (a new entry; the old one still answers when
the old values come back).

What is read is found from the bytecode (``LOAD_GLOBAL``, ``LOAD_ATTR``/``LOAD_METHOD``
names, closure cells), recursively through the user's helper functions, ``functools.partial``
parts, ``@autoroute`` helpers, user modules and instances. How each value is compared:

* every value by identity first (one dict lookup and a pointer compare, also natively in
  the fast path); Python scalars that are equal by type and bits (a re-assigned ``2.0``)
  count as unchanged, and the guard then takes the new object so the fast path hits again;
* lists by length and their items' identity, dicts by length and each item, sets by
  equality: a mutation in place is seen (lists of more than ``MAX_LIST_ITEMS`` and dicts of
  more than ``MAX_ITEMS`` items by identity and length only);
* NumPy arrays by identity, and those of at most ``ARRAY_BYTES`` bytes also by their bytes
  (a 0-d array read as a constant, ``W[0] = 5``). A bigger array changed *in place* is not
  seen (NumPy has no version counter and hashing it on every call would cost more than the
  kernel): replace it (``W = new``) or pass it as an argument;
* library modules and functions (NumPy, the standard library) by identity only: their
  contents are the package's code.

Not seen: ``fn.__code__`` re-assigned, attributes reached through a property or
``__getattr__``, objects reached other than by a name in the code. A function that assigns a
global or a ``nonlocal`` cannot be compiled faithfully (the compiled code would skip the
assignment): :func:`collect` raises :class:`Unguardable` and it runs as plain Python.
"""

from __future__ import annotations

import builtins
import dis
import functools
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.cache.cache_key import _is_library_file, library_version

#: arrays up to this many bytes are also compared by content on every call
ARRAY_BYTES = 4096
#: lists beyond this many items are guarded by identity and length only (a list's items
#: are one native check: a pointer compare each)
MAX_LIST_ITEMS = 4096
#: dicts beyond this many items (one check each) are guarded by identity and length only
MAX_ITEMS = 256
#: a function whose environment needs more checks than this runs as plain Python
MAX_GUARDS = 2048

# guard kinds: how the current value is read from (holder, key); the native fast path
# (fastcall.c) reads the same kinds with the same numbers
DICT, CELL, DEFAULTS, KWDEFAULTS, LENGTH, ITEMS, BYTES, SET, ATTR = range(9)

#: what a missing value (a global not defined, an empty cell) reads as
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()

try:   # the identity pass in C (the fast path's own check); Python compares values after
    from autojit._native import fastcall as _native
    _native.set_absent(ABSENT)
    _identical = _native.guards_hold
except (ImportError, AttributeError):
    _identical = None

_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_ATTRIBUTE_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR"})
_WRITE_OPS = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL"})
_CELL_WRITE_OPS = frozenset({"STORE_DEREF", "DELETE_DEREF"})


class Unguardable(Exception):
    """The function changes its own environment (assigns a global or a nonlocal), or reads
    more of it than is worth checking on every call."""


def _cell_contents(cell: Any, _key: Any = None) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return ABSENT


def _array_bytes(array: np.ndarray, _key: Any = None) -> bytes:
    return array.tobytes()


#: kind -> read(holder, key): the value the guard compares
_READ = {
    DICT: lambda holder, key: holder.get(key, ABSENT),
    CELL: _cell_contents,
    DEFAULTS: lambda holder, key: holder.__defaults__,
    KWDEFAULTS: lambda holder, key: holder.__kwdefaults__,
    LENGTH: lambda holder, key: len(holder),
    ITEMS: lambda holder, key: tuple(holder),
    BYTES: _array_bytes,
    SET: lambda holder, key: frozenset(holder),
    ATTR: lambda holder, key: getattr(holder, key, ABSENT),
}


def same_value(current: Any, expected: Any) -> bool:
    """Return True when ``current`` may stand for ``expected`` in a trace: the same object,
    or equal Python scalars of one type and the same bits (``-0.0`` is not ``0.0``)."""
    if current is expected:
        return True
    kind = type(current)
    if kind is not type(expected):
        return False
    if kind is float:
        return current.hex() == expected.hex()
    if kind is complex:
        return (current.real.hex(), current.imag.hex()) == (expected.real.hex(),
                                                             expected.imag.hex())
    if kind is tuple:
        return len(current) == len(expected) and all(map(same_value, current, expected))
    if kind in _SCALARS or kind is frozenset:
        return current == expected
    if isinstance(current, np.generic):      # a NumPy scalar: same dtype (the type), bits
        return current.tobytes() == expected.tobytes()
    return False


@dataclass(frozen=True, eq=False)
class Guards:
    """The checks of one trace: each a list ``[kind, holder, key, expected]`` (a list so a
    value-equal refresh is seen by the native table holding the same lists)."""

    checks: tuple[list, ...]

    def hold(self) -> bool:
        """Return True when every value the trace read is still the one it read."""
        if _identical is not None and _identical(self.checks):
            return True
        for check in self.checks:
            kind, holder, key, expected = check
            current = _READ[kind](holder, key)
            if current is expected:
                continue
            if not same_value(current, expected):
                return False
            check[3] = current      # equal: the next (native) identity check hits again
        return True

    def describe(self) -> list[str]:
        """Return one line per check, for debugging a retrace."""
        names = ["dict", "cell", "defaults", "kwdefaults", "len", "items", "bytes", "set",
                 "attr"]
        return [f"{names[k]} {key!r}: {type(v).__name__}" for k, _, key, v in self.checks]


NO_GUARDS = Guards(())


@functools.lru_cache(maxsize=4096)
def _code_names(code: types.CodeType) -> tuple[frozenset[str], frozenset[str], str | None]:
    """Return (global names, attribute names, a global/nonlocal the code assigns or None)
    of ``code`` and the code nested in it (comprehensions, inner functions)."""
    globals_: set[str] = set()
    attributes: set[str] = set()
    written = None
    for instruction in dis.get_instructions(code):
        name = instruction.opname
        if name in _GLOBAL_OPS:
            globals_.add(instruction.argval)
        elif name in _ATTRIBUTE_OPS:
            attributes.add(instruction.argval)
        elif name in _WRITE_OPS:
            written = f"the global {instruction.argval}"
        elif name in _CELL_WRITE_OPS and instruction.argval in code.co_freevars:
            written = f"the nonlocal {instruction.argval}"
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            inner_globals, inner_attributes, inner_written = _code_names(constant)
            globals_ |= inner_globals
            attributes |= inner_attributes
            written = written or inner_written
    return frozenset(globals_), frozenset(attributes), written


class _Walk:
    """One collection: the checks so far and what was visited (by id: cycles, repeats)."""

    def __init__(self) -> None:
        self.checks: list[list] = []
        self.seen: set[int] = set()
        self.attributes: set[str] = set()   # attribute names any visited code reads

    def add(self, kind: int, holder: Any, key: Any, value: Any) -> None:
        if len(self.checks) >= MAX_GUARDS:
            raise Unguardable(f"it reads more than {MAX_GUARDS} values from its globals, "
                              "closures and defaults (each checked on every call)")
        self.checks.append([kind, holder, key, value])

    def first_visit(self, value: Any) -> bool:
        if id(value) in self.seen:
            return False
        self.seen.add(id(value))
        return True

    def root(self, fn: Any) -> None:
        """Walk the decorated callable: a function always by its code (even one defined in
        autojit, such as a static specialisation's wrapper), anything else as a value."""
        if isinstance(fn, types.FunctionType):
            self.function(fn)
        else:
            self.value(fn)

    # -- functions ----------------------------------------------------------------------------
    def function(self, fn: types.FunctionType) -> None:
        if not self.first_visit(fn):
            return
        code = fn.__code__
        names, attributes, written = _code_names(code)
        if written is not None:
            raise Unguardable(f"{fn.__qualname__} assigns {written}: the compiled code "
                              "would skip the assignment")
        self.attributes |= attributes
        scope = fn.__globals__
        builtin = scope.get("__builtins__", builtins.__dict__)
        builtin = builtin if isinstance(builtin, dict) else vars(builtin)
        for name in sorted(names):
            value = scope.get(name, ABSENT)
            self.add(DICT, scope, name, value)      # absent: a global defined later shadows
            if value is ABSENT:
                builtin_value = builtin.get(name, ABSENT)
                self.add(DICT, builtin, name, builtin_value)
                value = builtin_value
            self.value(value)
        # no defaults: nothing was read from them (a call leaving an argument out raised
        # TypeError in the trace, and that fallback runs the function as it is now)
        if fn.__defaults__ is not None:
            self.add(DEFAULTS, fn, None, fn.__defaults__)
            self.value(fn.__defaults__)
        if fn.__kwdefaults__ is not None:
            self.add(KWDEFAULTS, fn, None, fn.__kwdefaults__)
            self.value(fn.__kwdefaults__)
        for cell in fn.__closure__ or ():
            contents = _cell_contents(cell)
            self.add(CELL, cell, None, contents)
            self.value(contents)

    # -- values --------------------------------------------------------------------------------
    def value(self, value: Any) -> None:
        """Add the checks that see a change *inside* ``value`` (its identity is guarded by
        whoever holds it) and walk what it leads to: containers from an explicit stack, in
        the order a recursive walk takes (a global nested thousands deep must not exhaust
        Python's recursion limit)."""
        pending: list[tuple[Any, Any, Any]] = [(None, None, value)]   # (dict, key, value)
        while pending:
            holder, key, value = pending.pop()
            if holder is not None:   # a dict's item: checked where a recursive walk checks it
                self.add(DICT, holder, key, value)
            kind = type(value)
            if kind in _SCALARS or value is ABSENT or kind is frozenset:
                continue
            if kind is tuple:
                pending.extend((None, None, item) for item in reversed(value[:MAX_ITEMS]))
            elif kind is list:
                if not self.first_visit(value):
                    continue
                self.add(LENGTH, value, None, len(value))
                if len(value) <= MAX_LIST_ITEMS:
                    self.add(ITEMS, value, None, tuple(value))
                    pending.extend((None, None, item) for item in reversed(value))
            elif kind is dict:
                self.add(LENGTH, value, None, len(value))
                if len(value) <= MAX_ITEMS and self.first_visit(value):
                    pending.extend((value, k, item) for k, item in reversed(value.items()))
            elif kind is set:
                self.add(SET, value, None, frozenset(value))
            elif kind is np.ndarray or isinstance(value, np.ndarray):
                if value.nbytes <= ARRAY_BYTES and not value.dtype.hasobject:
                    self.add(BYTES, value, None, value.tobytes())
            else:
                self.other(value)

    def other(self, value: Any) -> None:
        if isinstance(value, types.FunctionType):
            if not _is_library_file(value.__code__.co_filename):
                self.function(value)
        elif isinstance(value, types.ModuleType):
            self.module(value)
        elif isinstance(value, functools.partial):
            if self.first_visit(value):
                self.value(value.func)
                self.value(value.args)
                self.value(value.keywords)
        elif isinstance(value, types.MethodType):
            self.value(value.__func__)
            self.value(value.__self__)
        elif type(value).__module__ == "autojit.dispatch.dispatcher" and hasattr(value, "fn"):
            self.value(value.fn)       # an @autoroute helper: what its function reads
        elif isinstance(value, type):
            if not _is_library_object(value):
                self.user_class(value)
        else:
            self.instance(value)

    def module(self, module: types.ModuleType) -> None:
        """Guard the module's attributes the code names (``cfg.SCALE``, ``np.sin``); walk
        them only in user modules (a library's contents are its code)."""
        if not self.first_visit(module):
            return
        user = library_version(module.__name__) is None
        namespace = module.__dict__
        for name in sorted(self.attributes & namespace.keys()):
            item = namespace[name]
            self.add(DICT, namespace, name, item)
            if user:
                self.value(item)

    def user_class(self, value: type) -> None:
        """Guard the class attributes the code names (stable objects only: a classmethod
        binds anew on each read) and walk them (methods are helpers)."""
        if not self.first_visit(value):
            return
        for name in sorted(self.attributes):
            if any(name in vars(k) for k in value.__mro__ if k is not object):
                item = getattr(value, name, ABSENT)
                if item is getattr(value, name, ABSENT):
                    self.add(ATTR, value, name, item)
                    self.value(item)

    def instance(self, value: Any) -> None:
        """An object (a SimpleNamespace of settings, a user instance): guard the attributes
        the code names that live in its own ``__dict__``; a user class's own attributes
        and ``__call__`` too."""
        if not self.first_visit(value):
            return
        namespace = getattr(value, "__dict__", None)
        if type(namespace) is dict:
            for name in sorted(self.attributes & namespace.keys()):
                self.add(DICT, namespace, name, namespace[name])
                self.value(namespace[name])
        kind = type(value)
        for name in sorted(self.attributes):   # __slots__ attributes
            if isinstance(getattr(kind, name, None), types.MemberDescriptorType):
                item = getattr(value, name, ABSENT)
                self.add(ATTR, value, name, item)
                self.value(item)
        if not _is_library_object(kind):
            self.user_class(kind)
            call = next((vars(k)["__call__"] for k in kind.__mro__ if "__call__" in vars(k)),
                        None)
            if isinstance(call, types.FunctionType):     # a callable instance
                self.value(call)


def _is_library_object(kind: type) -> bool:
    """Return True for a class defined by an installed package (or builtins)."""
    owner = kind.__module__
    return not isinstance(owner, str) or owner == "builtins" \
        or library_version(owner) is not None


def collect(fn: Any) -> Guards:
    """Return the guards of everything ``fn`` reads besides its arguments, as it is now.
    Raises Unguardable when ``fn`` (or a helper) assigns a global or a nonlocal, or when
    something it reads cannot be inspected (an attribute that raises)."""
    try:
        walk = _Walk()
        walk.root(fn)
        # module and instance attributes are found by name: the names of every visited code
        # object count, so walk again until no new name turns up (one more walk, usually)
        known: set[str] = set()
        while walk.attributes != known:
            known = set(walk.attributes)
            walk = _Walk()
            walk.attributes = set(known)
            walk.root(fn)
    except Unguardable:
        raise
    except Exception as exc:  # user objects may raise anything from an attribute read
        raise Unguardable(f"what it reads could not be inspected ({type(exc).__name__}: "
                          f"{exc}); its changes could not be seen") from exc
    return Guards(tuple(walk.checks)) if walk.checks else NO_GUARDS


def iter_checks(guards: Guards) -> Iterator[tuple]:
    """Yield each check as a tuple (for tests and debugging)."""
    for check in guards.checks:
        yield tuple(check)
