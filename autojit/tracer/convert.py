"""The source converter: ``for``/``while``/``if`` statements become calls of
``tracer/control.py`` (TensorFlow AutoGraph's design), so the tracer sees each loop and
branch as one statement it may turn into a region (issue 15).

``convert_function(fn)`` parses ``fn``'s source (the whole file, so every node keeps the
user's line and column), converts each statement whose Python meaning a call keeps, inside
out, and rebuilds the function with ``fn``'s globals, defaults and closure cells. A
statement ``S`` becomes::

    def __aj_body_3(i, __aj_carried, __aj_captured):   # the body, a function of the values
        (x, acc) = __aj_carried                         # S rebinds (carried) and only
        (a,) = __aj_captured                            # reads (captured)
        ...S's statements...
        return (x, acc)
    (x, acc) = __aj_ctl.for_range((n,), __aj_body_3, (x, acc), (a,), __aj_names_3, range)

*carried*: the names S assigns that are live after it or read in it before being assigned
(a backward liveness and a forward definite-assignment pass over the function's AST);
*captured*: the function's other local names S reads (``symtable`` says which names are
the function's). A name S uses that may be unbound before it enters as
``control.UNDEFINED`` and is unbound again wherever the original would have it unbound,
so reading it raises UnboundLocalError as the original does; every local of the original
stays a local. Before that, as AutoGraph does, a ``return`` inside an ``if`` becomes an
assignment of ``__aj_ret`` (what follows an ``if`` one branch of which always leaves moves
into its other branch), ``continue`` and ``break`` become flags guarding the rest of the
body (``_Jumps``), ``t = a if c else b`` an ``if`` statement (``_choices``), and ``int()``,
``float()``, ``bool()``, ``len()``, ``max(a, b)``, ``min(a, b)`` calls of
``control.convert`` (``_Conversions``). A statement whose meaning a call would change is
left as it is (``_Converter.refusal`` says why: a return, yield or await inside,
global/nonlocal, a loop ``else``, a loop not over ``range(...)`` into a name, a name a
kept closure shares, inside ``try``/``with``); a function without source,
or one that reads its frame (``locals()``, ``super()``), is returned as it is. The source
found must compile to ``fn``'s own bytecode (an edited file is not converted).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import copy
import functools
import inspect
import itertools
import linecache
import os
import site
import symtable
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.tracer import control

#: Switch the converter off (debugging): ``trace_function`` then traces the original.
ENABLED = True

_PREFIX = "__aj_"
_CARRIED, _CAPTURED, _INDEX = "__aj_carried", "__aj_captured", "__aj_index"
_CTL, _UNDEF = "__aj_ctl", "__aj_UNDEF"
_TEMPS = itertools.count(1)   # the converter's temporaries in expressions (``__aj_c_7``)
#: Names whose use makes a function's locals observable or its frame matter.
_FRAME_NAMES = frozenset({"locals", "vars", "exec", "eval", "dir", "super", "__class__",
                          "breakpoint"})
_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_CO_NESTED = 0x10   # inspect.CO_NESTED: the factory nests every function
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

#: code object -> (converted code, helper values by name), or None (not converted)
_CACHE: dict[types.CodeType, tuple[types.CodeType, dict[str, Any]] | None] = {}
_CACHE_SIZE = 4096


def convert_function(fn: Callable) -> Callable:
    """Return ``fn`` with its loops and branches as control calls, or ``fn`` itself where
    there is nothing to convert or no source to convert from."""
    if not ENABLED:
        return fn
    wrapped = getattr(fn, "_autojit_specialised", None)   # dispatch/static_args.specialise
    if wrapped is not None:
        inner, rebind = wrapped
        converted = convert_function(inner)
        return fn if converted is inner else rebind(converted)
    if isinstance(fn, types.MethodType):
        converted = convert_function(fn.__func__)
        return fn if converted is fn.__func__ else types.MethodType(converted, fn.__self__)
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return fn
    if code not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:   # functions made by exec: a code object each
            _CACHE.clear()
        try:
            _CACHE[code] = _convert_code(fn)
        except Exception:  # noqa: BLE001 (a source that does not parse or compile, or a
            _CACHE[code] = None   # construct the converter does not know: trace as is
    found = _CACHE[code]
    if found is None:
        return fn
    new_code, helpers = found
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    try:
        closure = tuple(cells[name] if name in cells else types.CellType(helpers[name])
                        for name in new_code.co_freevars)
        new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                                 closure)
    except (KeyError, TypeError, ValueError):   # a closure unlike the code's: as it is
        return fn
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__annotations__ = fn.__annotations__
    new.__dict__.update(fn.__dict__)
    return new


# -- finding and checking the source ---------------------------------------------------------
def _find_def(fn: types.FunctionType) -> tuple[ast.FunctionDef, frozenset[str]] | None:
    """The ``def`` of ``fn`` in its file (the whole file parsed: the user's positions) and
    the names the file's module scope imports."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    if not lines:
        return None
    tree = ast.parse("".join(lines), code.co_filename)
    found = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
             and node.name == code.co_name
             and (node.decorator_list[0].lineno if node.decorator_list else node.lineno)
             == code.co_firstlineno]
    imported = frozenset().union(*(_binds(n) for n in _own_nodes(tree.body)
                                   if isinstance(n, (ast.Import, ast.ImportFrom))))
    return (found[0], imported) if len(found) == 1 else None


def _compile(fn: types.FunctionType, node: ast.FunctionDef, imported: frozenset[str],
             helpers: Iterable[str]) -> types.CodeType:
    """Compile ``node`` (decorators stripped) inside a factory whose parameters are the
    free variables and helpers, so names resolve as in ``fn``; return its code object.
    The module's imported names are declared in a block that never runs: CPython loads a
    method of an imported module as an attribute (``is_import_originated``)."""
    code = fn.__code__
    node = ast.copy_location(ast.FunctionDef(node.name, node.args, node.body, [],
                                             node.returns, node.type_comment), node)
    node.lineno = code.co_firstlineno
    params = [ast.arg(name) for name in (*code.co_freevars, *helpers)]
    # the def binds its name in the factory: a function calling itself by a global name
    # would read the factory's cell instead (the global, as the original reads it)
    own = [] if code.co_name in code.co_freevars else [ast.Global([code.co_name])]
    factory = ast.FunctionDef("__aj_factory", ast.arguments([], params, None, [], [], None,
                                                            []), [*own, node], [], None, None)
    imports = [ast.If(ast.Constant(0), [ast.Import([ast.alias(n)]) for n in sorted(imported)],
                      [])] if imported else []
    module = ast.fix_missing_locations(ast.copy_location(
        ast.Module([*imports, ast.copy_location(factory, node)], []), node))
    compiled = compile(module, code.co_filename, "exec",
                       flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    outer = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    return next(c for c in outer.co_consts
                if isinstance(c, types.CodeType) and c.co_name == code.co_name)


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """The source found compiles to ``fn``'s own code (not an edited file, another def)."""
    return (a.co_flags & ~_CO_NESTED) == (b.co_flags & ~_CO_NESTED) and all(
        getattr(a, f) == getattr(b, f) for f in (
            "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars",
            "co_argcount", "co_kwonlyargcount", "co_posonlyargcount"))


def _function_refusal(node: ast.FunctionDef) -> str | None:
    """Why none of the function's statements is converted, or None."""
    for sub in _own_nodes(node.body):
        if isinstance(sub, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "a generator"
    for sub in ast.walk(node):
        for field in ("id", "attr", "arg", "name", "asname"):
            name = getattr(sub, field, None)
            if not isinstance(name, str):
                continue
            if name.startswith(_PREFIX) or (name.startswith("__") and not name.endswith("__")):
                return f"the name {name} (reserved, or mangled in a class)"
            if field == "id" and name in _FRAME_NAMES:
                return f"{name} (sees the frame or the locals)"
    return None


def converted_tree(fn: types.FunctionType
                   ) -> tuple[ast.FunctionDef, dict[str, Any], frozenset[str]] | None:
    """The converted ``def``, the helper values it reads and the module's imported names,
    or None (nothing converted, no source, or a source that is not ``fn``'s code);
    ``ast.unparse`` shows it."""
    found = _find_def(fn)
    if found is None or _function_refusal(found[0]) is not None:
        return None
    node, imported = found
    if not _same_code(_compile(fn, node, imported, ()), fn.__code__):
        return None
    calls = _Conversions()
    callees = _Calls(fn, node)   # (after the conversions: int(v) is theirs)
    body = _Jumps().block(_lower_returns(_LoopReturns().function(
        _choices(callees.block(calls.block(node.body))))))
    node = ast.copy_location(ast.FunctionDef(node.name, node.args, body, [], node.returns,
                                             node.type_comment), node)
    converter = _Converter(fn, node)
    body = _exits(converter.block(node.body))
    if not converter.helpers and not calls.count and not callees.worth():
        return None
    # every local of the original stays one (a for target or temporary now bound only in a
    # body function, a name bound only in code after a return): a read elsewhere raises
    # UnboundLocalError as before, and never finds a global of that name
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                              + bool(code.co_flags & inspect.CO_VARARGS)
                              + bool(code.co_flags & inspect.CO_VARKEYWORDS)]
    kept = sorted(set(code.co_varnames + code.co_cellvars) - set(params))
    if kept:
        where = body[0]
        body = [ast.copy_location(ast.If(ast.copy_location(ast.Constant(False), where), [
            ast.copy_location(ast.Assign([ast.copy_location(ast.Name(n, ast.Store()), where)
                                          for n in kept], ast.copy_location(
                ast.Constant(None), where)), where)], []), where), *body]
    converted = ast.FunctionDef(node.name, node.args, body, [], node.returns,
                                node.type_comment)
    ast.copy_location(converted, node)
    helpers = {_CTL: control, _UNDEF: control.UNDEFINED, **converter.helpers}
    return ast.fix_missing_locations(converted), helpers, imported


def _convert_code(fn: types.FunctionType) -> tuple[types.CodeType, dict[str, Any]] | None:
    found = converted_tree(fn)
    if found is None:
        return None
    tree, helpers, imported = found
    return _compile(fn, tree, imported, helpers), helpers


# -- name analysis ---------------------------------------------------------------------------
def _own_nodes(stmts: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of ``stmts`` in their own scope (not inside a nested def, lambda or
    class body; a comprehension's nodes are included)."""
    stack = list(stmts)[::-1]
    while stack:
        sub = stack.pop()
        yield sub
        if isinstance(sub, _SCOPES):
            stack.extend(_scope_header(sub))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(sub))))


def _scope_header(node: ast.AST) -> list[ast.AST]:
    """The parts of a nested scope evaluated where it is defined."""
    if isinstance(node, ast.Lambda):
        return [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    return [*node.decorator_list, *node.args.defaults,
            *(d for d in node.args.kw_defaults if d)]


def _reads(*nodes: ast.AST | None) -> set[str]:
    """Names a part of the source may read (nested scopes included: an over-estimate is
    safe, as a name carried or captured too many is)."""
    found: set[str] = set()
    for node in nodes:
        if node is None:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Store):
                found.add(sub.id)
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                found.add(sub.target.id)
    return found


def _target_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts))
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a simple statement certainly binds (walrus targets are left out: they may not
    run, and leaving a name out only makes it carried or filled where it need not be)."""
    if isinstance(stmt, ast.Assign):
        return set().union(*(_target_names(t) for t in stmt.targets))
    if isinstance(stmt, ast.AugAssign):
        return _target_names(stmt.target)
    if isinstance(stmt, ast.AnnAssign):
        return _target_names(stmt.target) if stmt.value is not None else set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    return set()


class _Liveness:
    """Backward liveness over the function's statements: the names that may be read after
    each loop and branch before being rebound."""

    def __init__(self) -> None:
        self.live_out: dict[int, frozenset[str]] = {}
        self.loops: list[tuple[frozenset[str], frozenset[str]]] = []   # (after, head)

    def block(self, stmts: list[ast.stmt], out: frozenset[str]) -> frozenset[str]:
        live = out
        for stmt in reversed(stmts):
            live = self.stmt(stmt, live)
        return live

    def stmt(self, s: ast.stmt, out: frozenset[str]) -> frozenset[str]:
        if isinstance(s, (ast.For, ast.While, ast.If)):
            self.live_out[id(s)] = self.live_out.get(id(s), frozenset()) | out
        if isinstance(s, ast.If):
            return frozenset(_reads(s.test)) | self.block(s.body, out) | self.block(s.orelse,
                                                                                     out)
        if isinstance(s, (ast.For, ast.While)):
            head: frozenset[str] = frozenset()
            while True:
                self.loops.append((out, head))
                body = self.block(s.body, head)
                self.loops.pop()
                if isinstance(s, ast.For):
                    new = (body - _target_names(s.target)) | _reads(s.target)
                else:
                    new = body | _reads(s.test)
                new |= self.block(s.orelse, out)
                if new == head:
                    break
                head = new
            return head | (_reads(s.iter) if isinstance(s, ast.For) else frozenset())
        if isinstance(s, ast.Break):
            return self.loops[-1][0] if self.loops else out
        if isinstance(s, ast.Continue):
            return self.loops[-1][1] if self.loops else out
        if isinstance(s, (ast.Return, ast.Raise)):
            return frozenset(_reads(s))
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return frozenset(_reads(*s.items)) | self.block(s.body, out) | out
        if isinstance(s, (ast.Try, ast.Match, ast.AsyncFor, ast.TryStar)):
            return frozenset(_reads(s)) | out
        if isinstance(s, ast.Delete):
            return out | _reads(s)
        return (out - _binds(s)) | _reads(s)


class _Definite:
    """Forward definite assignment: the names surely bound before each loop and branch
    (``before``), and the names a statement reads before binding them (``exposed``)."""

    def __init__(self) -> None:
        self.before: dict[int, frozenset[str]] = {}

    def block(self, stmts: list[ast.stmt], bound: frozenset[str],
              exposed: set[str] | None) -> frozenset[str]:
        for stmt in stmts:
            bound = self.stmt(stmt, bound, exposed)
        return bound

    def stmt(self, s: ast.stmt, bound: frozenset[str], exposed: set[str] | None
             ) -> frozenset[str]:
        def read(*nodes: ast.AST | None) -> None:
            if exposed is not None:
                exposed.update(_reads(*nodes) - bound)

        if isinstance(s, (ast.For, ast.While, ast.If)) and exposed is None:
            self.before[id(s)] = bound
        if isinstance(s, ast.If):
            read(s.test)
            return (self.block(s.body, bound, exposed)
                    & self.block(s.orelse, bound, exposed))
        if isinstance(s, ast.For):
            read(s.iter, s.target)
            self.block(s.body, bound | _target_names(s.target), exposed)
            self.block(s.orelse, bound, exposed)
            return bound
        if isinstance(s, ast.While):
            read(s.test)
            self.block(s.body, bound, exposed)
            self.block(s.orelse, bound, exposed)
            return bound
        if isinstance(s, (ast.With, ast.AsyncWith, ast.Try, ast.Match, ast.AsyncFor,
                          ast.TryStar, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            read(s)
            return bound | _binds(s)
        if isinstance(s, ast.Delete):
            read(s)
            return bound - _reads(s)
        read(s)
        return bound | _binds(s)


def _closed_names(table: symtable.SymbolTable) -> set[str]:
    """The function's names some nested scope other than a list/set/dict comprehension
    (run at once, never kept) reads or rebinds: a body function's copy of them would
    differ from the closure's cell."""
    found: set[str] = set()
    stack = [(child, False) for child in table.get_children()]
    while stack:
        child, kept = stack.pop()
        kept = kept or child.get_name() not in _COMPREHENSIONS
        if kept:
            found.update(s.get_name() for s in child.get_symbols() if s.is_free())
        stack.extend((c, kept) for c in child.get_children())
    return found


def _function_table(fn: types.FunctionType, node: ast.FunctionDef) -> symtable.SymbolTable:
    params = ", ".join(fn.__code__.co_freevars)
    bare = ast.FunctionDef(node.name, node.args, node.body, [], None, None)
    source = f"def __aj_factory({params}):\n" + _indent(ast.unparse(ast.fix_missing_locations(
        ast.copy_location(bare, node))))
    factory = symtable.symtable(source, "<autojit>", "exec").get_children()[0]
    return next(t for t in factory.get_children() if t.get_name() == node.name)


def _indent(source: str) -> str:
    return "".join("    " + line + "\n" for line in source.splitlines())


def _assigned(stmts: list[ast.stmt], freevars: tuple[str, ...]) -> set[str]:
    """The names ``stmts`` bind in the function's scope (symtable: walrus targets in
    comprehensions, ``except ... as``, imports, nested def names)."""
    if not stmts:
        return set()
    params = ", ".join(freevars)
    module = ast.Module(list(stmts), [])
    source = (f"def __aj_factory({params}):\n    def __aj_probe():\n"
              + _indent(_indent(ast.unparse(ast.fix_missing_locations(module)))))
    factory = symtable.symtable(source, "<autojit>", "exec").get_children()[0]
    probe = factory.get_children()[0]
    return {s.get_name() for s in probe.get_symbols() if s.is_local()}


# -- return inside if (AutoGraph's way) ----------------------------------------------------
_RET = "__aj_ret"


def _lower_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with each ``return`` inside an ``if`` as ``__aj_ret = value``, the
    statements after an ``if`` one branch of which always leaves moved into its other
    branch, and one ``return __aj_ret`` at the end; ``body`` itself where a return is in a
    loop, ``try``, ``with`` or ``match``, or lowering would copy statements."""
    if not any(isinstance(s, ast.If) and _returns_in(s) for s in body):
        return body
    slots = _return_slots(body)
    try:
        lowered = _lowered(body, slots)
    except _NotLowered:
        return body
    where, last = body[0], body[-1]
    start = ast.copy_location(ast.Assign([ast.copy_location(ast.Name(n, ast.Store()), where)
                                          for n in slots],
                                         ast.copy_location(ast.Constant(None), where)), where)
    value: ast.expr = ast.copy_location(ast.Name(_RET, ast.Load()), last)
    if slots != [_RET]:
        value = ast.copy_location(ast.Tuple([ast.copy_location(ast.Name(n, ast.Load()), last)
                                             for n in slots], ast.Load()), last)
    return [start, *lowered, ast.copy_location(ast.Return(value), last)]


def _return_slots(body: list[ast.stmt]) -> list[str]:
    """``__aj_ret_0 ... __aj_ret_N`` where every return gives a tuple display of N + 1
    values (``return u, t`` / ``return u, steps``: each position is selected on its own,
    as a tuple of traced values cannot be), else ``[__aj_ret]``."""
    widths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) and not any(
        isinstance(e, ast.Starred) for e in r.value.elts) else -1
              for r in _own_nodes(body) if isinstance(r, ast.Return)}
    if len(widths) != 1 or min(widths) < 2:
        return [_RET]
    return [f"{_RET}_{k}" for k in range(min(widths))]


def _returns_in(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in _own_nodes([node]))


def _leaves(block: list[ast.stmt]) -> bool:
    """``block`` always ends in a return or raise."""
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _leaves(last.body) and _leaves(last.orelse)


def _lowered(block: list[ast.stmt], slots: list[str]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for n, s in enumerate(block):
        if isinstance(s, ast.Return):
            value = s.value or ast.copy_location(ast.Constant(None), s)
            names = [ast.copy_location(ast.Name(k, ast.Store()), s) for k in slots]
            target = names[0] if len(names) == 1 else ast.copy_location(
                ast.Tuple(names, ast.Store()), s)
            out.append(ast.copy_location(ast.Assign([target], value), s))
            return out   # what follows never runs
        if isinstance(s, ast.If) and _returns_in(s):
            rest = block[n + 1:]
            then_leaves, else_leaves = _leaves(s.body), _leaves(s.orelse)
            if rest and not then_leaves and not else_leaves:
                if not _small(rest):
                    raise _NotLowered   # the rest would be copied into both branches
                # a few simple statements (``return x + 0.5``): one copy in each branch
                new = ast.If(s.test, _lowered(s.body + rest, slots),
                             _lowered(s.orelse + copy.deepcopy(rest), slots))
                return [*out, ast.copy_location(new, s)]
            new = ast.If(s.test, _lowered(s.body + ([] if then_leaves else rest), slots),
                         _lowered(s.orelse + ([] if else_leaves else rest), slots))
            return [*out, ast.copy_location(new, s)]
        if _returns_in(s):
            raise _NotLowered   # a return in a loop, try, with or match
        out.append(s)
    return out


# -- return inside a loop: a flag and a break ---------------------------------------------------
_RD = f"{_PREFIX}rd_"   # a return's flag (control.Names.returns)


class _LoopReturns:
    """Rewrites each ``return E`` inside a loop into ``__aj_rd_K = ctl.flag(True)`` and a
    ``break`` (of its innermost loop; each loop around that one breaks too, ``if
    __aj_rd_K: break`` after the inner one), and puts ``if __aj_rd_K: return E`` after the
    outermost loop (``__aj_rd_K = False`` before it). ``E`` is evaluated after the loop
    instead of at the return: nothing runs in between (the flags guard the rest of each
    body, ``_Jumps``), so every name it reads is bound as it was at the return and ``E``
    means what it meant there. The flags and breaks then lower as any other (a region
    stops after the iteration that returns, ``Region.exit``), the ``if`` after the loop as
    a return inside an ``if`` (``_lower_returns``: one select of the two results, which
    declines where their types differ). A loop with a return inside a ``try`` or ``with``
    (a ``finally`` or ``__exit__`` would run between, ``E``'s context would change) or in
    a loop's ``else`` is left as it is."""

    def __init__(self) -> None:
        self.counter = itertools.count(1)

    def function(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """The function's body, its loops' returns lowered where every return of the
        function gives one structure (one value, or a tuple display of one length): where
        they differ (``return x`` in the loop, ``return x, n`` after it) no one compiled
        result fits, and the loop is left as Python's (a loop Python unrolls into the
        trace may still compile, its returns decided there)."""
        widths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1
                  for r in _own_nodes(body) if isinstance(r, ast.Return)
                  and not (isinstance(r.value, ast.Tuple)
                           and any(isinstance(e, ast.Starred) for e in r.value.elts))}
        starred = any(isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple)
                      and any(isinstance(e, ast.Starred) for e in r.value.elts)
                      for r in _own_nodes(body))
        return body if len(widths) > 1 or starred else self.block(body)

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, (ast.For, ast.While)) and _returns_in(s):
                out.extend(self.outermost(s))
                continue
            if isinstance(s, ast.If):
                s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            out.append(s)
        return out

    def outermost(self, s: ast.For | ast.While) -> list[ast.stmt]:
        sites: list[tuple[str, ast.Return]] = []
        try:
            loop = self.loop(s, sites)
        except _NotLowered:
            return [s]

        def at(node: ast.AST, where: ast.AST) -> Any:
            return ast.copy_location(node, where)

        before = [at(ast.Assign([at(ast.Name(flag, ast.Store()), s)],
                                at(ast.Constant(False), s)), s) for flag, _ in sites]
        after = [at(ast.If(at(ast.Name(flag, ast.Load()), r), [at(ast.Return(
            copy.deepcopy(r.value)), r)], []), r) for flag, r in sites]
        return [*before, loop, *after]

    def loop(self, s: ast.For | ast.While, sites: list[tuple[str, ast.Return]]
             ) -> ast.For | ast.While:
        """``s`` with its returns as flags and breaks (``sites``: each flag and return)."""
        if any(_returns_in(o) for o in s.orelse):
            raise _NotLowered
        new = type(s)(**{f: getattr(s, f) for f in s._fields})
        new.body = self.inner(s.body, sites)
        return ast.copy_location(new, s)

    def inner(self, stmts: list[ast.stmt], sites: list[tuple[str, ast.Return]]
              ) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, ast.Return):
                flag = f"{_RD}{next(self.counter)}"
                sites.append((flag, s))
                out.append(_flag_setting(flag, True, s))
                out.append(ast.copy_location(ast.Break(), s))
                return out   # what follows never runs
            if not _returns_in(s):
                out.append(s)
            elif isinstance(s, (ast.For, ast.While)):
                first = len(sites)
                out.append(self.loop(s, sites))
                flags = [ast.copy_location(ast.Name(f, ast.Load()), s)
                         for f, _ in sites[first:]]
                test = flags[0] if len(flags) == 1 else ast.copy_location(
                    ast.UnaryOp(ast.Not(), _ctl_call("unset", flags, s)), s)
                out.append(ast.copy_location(ast.If(test, [ast.copy_location(
                    ast.Break(), s)], []), s))
            elif isinstance(s, ast.If):
                new = ast.If(s.test, self.inner(s.body, sites), self.inner(s.orelse, sites))
                out.append(ast.copy_location(new, s))
            else:
                raise _NotLowered   # a return in a try, with or match
        return out


def _small(stmts: list[ast.stmt]) -> bool:
    """At most three statements, none compound: copied into both branches of an ``if``
    neither branch of which always leaves, the code grows by at most them (per ``if``)."""
    return len(stmts) <= 3 and not any(
        isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.TryStar, ast.Match,
                       ast.AsyncFor, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef,
                       ast.ClassDef)) for s in stmts)


# -- int(), float(), bool(), len() of traced values -------------------------------------------
def _rewrite_calls(node: ast.AST, rewrite: Callable[[ast.Call], ast.expr],
                   stop: tuple[type, ...], visit: Callable[[ast.AST], None] | None = None
                   ) -> None:
    """Replace each call under ``node`` by ``rewrite(call)``, in place, children first
    visited after their parent is rewritten (a stack: no recursion over the tree); nodes of
    a ``stop`` type (nested scopes) are left as they are. ``visit`` sees each node first."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if visit is not None:
            visit(sub)
        for field, value in ast.iter_fields(sub):
            items = value if isinstance(value, list) else [value]
            new = [rewrite(v) if isinstance(v, ast.Call) else v for v in items]
            if isinstance(value, list):
                value[:] = new
            elif new[0] is not value:
                setattr(sub, field, new[0])
            stack.extend(v for v in new if isinstance(v, ast.AST) and not isinstance(v, stop))


class _Conversions:
    """Rewrites ``int(v)``, ``float(v)``, ``bool(v)``, ``len(v)`` (one positional
    argument), ``max(a, b)`` and ``min(a, b)`` into ``__aj_ctl.convert(int, v)``: the name
    is still looked up where the call is (a user's own ``int`` stays theirs), and
    ``control.convert`` asks the tracer only when the callee is the builtin and an argument
    a traced value, else calls it as Python would. Nested scopes (defs, lambdas, classes,
    comprehensions) are left alone."""

    NAMES = frozenset({"int", "float", "bool", "len"})
    PAIRS = frozenset({"max", "min"})   # max(a, b), min(a, b): two positional arguments

    def __init__(self) -> None:
        self.count = 0

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        return [s if isinstance(s, _SCOPES) else self.node(s) for s in stmts]

    def node(self, node: Any) -> Any:
        """``node`` with its own scope's conversion calls rewritten (in place, walked with
        a stack: no recursion over the tree)."""
        _rewrite_calls(node, self.call, (*_SCOPES, *_COMPREHENSION_NODES))
        return node

    def call(self, c: ast.Call) -> ast.expr:
        if not (isinstance(c.func, ast.Name) and not c.keywords
                and ((c.func.id in self.NAMES and len(c.args) == 1)
                     or (c.func.id in self.PAIRS and len(c.args) == 2))
                and not any(isinstance(a, ast.Starred) for a in c.args)):
            return c
        self.count += 1
        func = ast.copy_location(ast.Attribute(ast.copy_location(ast.Name(_CTL, ast.Load()),
                                                                 c), "convert", ast.Load()), c)
        return ast.copy_location(ast.Call(func, [c.func, *c.args], []), c)


# -- a conditional expression assigned: an if statement -------------------------------------
def _choices(body: list[ast.stmt]) -> list[ast.stmt]:
    """``t = a if c else b`` (one target: a name, subscript or attribute) and ``n op= a if c
    else b`` (a name) as ``if c: t = a`` / ``else: t = b``, in every statement list of the
    function's own scope: Python evaluates the same parts in the same order (the test, one
    arm, then the target), and the ``if`` converts like any other (a select of the two
    values in a loop body, where a decision on the loop index holds for one iteration)."""
    lists = [body]
    while lists:
        stmts = lists.pop()
        for n, s in enumerate(stmts):
            stmts[n] = s = _choice(s)   # (an arm that is one again: its own list's turn)
            if isinstance(s, (ast.For, ast.While, ast.If, ast.With, ast.Try, ast.TryStar)):
                lists += [getattr(s, f) for f in ("body", "orelse", "finalbody")
                          if hasattr(s, f)]
                lists += [h.body for h in getattr(s, "handlers", ())]
    return body


def _choice(s: ast.stmt) -> ast.stmt:
    """The ``if`` statement of one assignment of a conditional expression, or ``s``."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.IfExp) \
            and isinstance(s.targets[0], (ast.Name, ast.Subscript, ast.Attribute)):
        target, value = s.targets[0], s.value

        def arm(v: ast.expr) -> ast.stmt:
            return ast.copy_location(ast.Assign([copy.deepcopy(target)], v), s)
    elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
            and isinstance(s.value, ast.IfExp):
        target, value = s.target, s.value

        def arm(v: ast.expr) -> ast.stmt:
            return ast.copy_location(ast.AugAssign(copy.deepcopy(target), s.op, v), s)
    else:
        return s
    return ast.copy_location(ast.If(value.test, [arm(value.body)], [arm(value.orelse)]), s)


# -- break and continue as flags (AutoGraph's way) --------------------------------------------
class _NotLowered(Exception):
    """A jump the flags cannot stand for (in a ``finally``, in a nested loop's ``else``)."""


class _Jumps:
    """Rewrites ``continue`` and ``break`` in a range or while loop into flags (``ctl.flag``:
    graph bools in a body the region tracer traces): ``continue`` sets ``__aj_cont_N``
    (cleared as each iteration starts), ``break`` sets ``__aj_brk_N`` (a while condition
    becomes ``not __aj_brk_N and (test)``; a range loop stops after
    the iteration that sets it: its target ``__aj_for_N``, see ``_own_break_flag``), and
    the statements after one that may set a flag run under ``if
    not flag`` (``control.unset``). Python's meaning is kept; the loop then has no jump of
    its own and converts."""

    def __init__(self) -> None:
        self.counter = itertools.count(1)

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.TryStar)):
                for field in ("body", "orelse", "finalbody"):
                    if hasattr(s, field):
                        setattr(s, field, self.block(getattr(s, field)))
                for handler in getattr(s, "handlers", ()):
                    handler.body = self.block(handler.body)
            out.extend(self.loop(s) if isinstance(s, (ast.For, ast.While)) else [s])
        return out

    def loop(self, s: ast.For | ast.While) -> list[ast.stmt]:
        """The loop with its jumps as flags; its ``else`` (which runs where no ``break``
        ended the loop) after it, under ``if ctl.unset(brk)`` where it has a break."""
        if isinstance(s, ast.For) and not _is_range_loop(s):
            return [s]
        kinds = {type(j) for j in _own_jumps(s.body)}
        if not kinds:
            if not s.orelse:
                return [s]
            plain = type(s)(**{f: getattr(s, f) for f in s._fields})
            plain.orelse = []
            return [ast.copy_location(plain, s), *s.orelse]
        k = next(self.counter)
        flags = {ast.Break: f"{_PREFIX}brk_{k}", ast.Continue: f"{_PREFIX}cont_{k}"}
        flags = {kind: flags[kind] for kind in kinds}
        try:
            body, _ = self.guarded(s.body, flags, s)
        except _NotLowered:
            return [s]

        def at(node: ast.AST, where: ast.AST = s) -> Any:
            return ast.copy_location(node, where)

        def setting(name: str, value: bool) -> ast.stmt:
            return at(ast.Assign([at(ast.Name(name, ast.Store()))], at(ast.Constant(value))))

        out: list[ast.stmt] = []
        if ast.Continue in flags:
            body = [_flag_setting(flags[ast.Continue], False, s), *body]
        new = type(s)(**{f: getattr(s, f) for f in s._fields})
        new.body, new.orelse = body, []
        if ast.Break in flags and isinstance(s, ast.For):
            # the loop stops after the iteration that sets the flag: the region's runners
            # (Region.exit), control.for_range where Python runs it (Names.flags), the
            # ``if flag: break`` of _exits where the loop stays Python's. Its target is
            # ``__aj_for_N`` (N: the flag's), bound to the user's name first
            out.append(setting(flags[ast.Break], False))
            index = f"{_PREFIX}for_{k}"
            new.target = at(ast.Name(index, ast.Store()), s.target)
            bind = at(ast.Assign([s.target], at(ast.Name(index, ast.Load()), s.target)),
                      s.target)
            # (its flag read last: live through the body, carried, what the loop stops on)
            new.body = [bind, *body, at(ast.Expr(at(ast.Name(flags[ast.Break], ast.Load()))))]
        elif ast.Break in flags:
            out.append(setting(flags[ast.Break], False))
            new.test = at(ast.BoolOp(ast.And(), [
                at(ast.UnaryOp(ast.Not(), at(ast.Name(flags[ast.Break], ast.Load())))),
                s.test]), s.test)   # type: ignore[union-attr]
        out.append(at(new))
        if s.orelse and ast.Break in flags:
            where = s.orelse[0]
            out.append(ast.copy_location(ast.If(_ctl_call("unset", [ast.copy_location(
                ast.Name(flags[ast.Break], ast.Load()), where)], where), s.orelse, []), where))
        else:
            out.extend(s.orelse)
        return out

    def guarded(self, stmts: list[ast.stmt], flags: dict[type, str], loop: ast.AST
                ) -> tuple[list[ast.stmt], bool]:
        """``stmts`` with the loop's jumps as flags; True where one may be set."""
        out: list[ast.stmt] = []
        for n, s in enumerate(stmts):
            new, sets = self.guarded_stmt(s, flags, loop)
            out.append(new)
            if sets:
                rest, _ = self.guarded(stmts[n + 1:], flags, loop)
                if rest:   # if __aj_ctl.unset(*flags): rest (not (f1 or f2) of bools)
                    names = [ast.copy_location(ast.Name(f, ast.Load()), rest[0])
                             for f in flags.values()]
                    out.append(ast.copy_location(ast.If(_ctl_call("unset", names, rest[0]),
                                                        rest, []), rest[0]))
                return out, True
        return out, False

    def guarded_stmt(self, s: ast.stmt, flags: dict[type, str], loop: ast.AST
                     ) -> tuple[ast.stmt, bool]:
        if isinstance(s, (ast.Continue, ast.Break)):
            return _flag_setting(flags[type(s)], True, s), True
        if isinstance(s, (ast.For, ast.While, ast.AsyncFor)):
            if _own_jumps(s.orelse):
                raise _NotLowered
            return s, False
        if isinstance(s, (ast.Try, ast.TryStar)) and _own_jumps(s.finalbody):
            raise _NotLowered
        if not isinstance(s, (ast.If, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)):
            return s, False
        new = type(s)(**{f: getattr(s, f) for f in s._fields})
        sets = False
        for field in ("body", "orelse"):
            if hasattr(s, field):
                block, found = self.guarded(getattr(s, field), flags, loop)
                setattr(new, field, block)
                sets = sets or found
        handlers = []
        for handler in getattr(s, "handlers", ()):
            block, found = self.guarded(handler.body, flags, loop)
            copy = ast.copy_location(ast.ExceptHandler(handler.type, handler.name, block),
                                     handler)
            handlers.append(copy)
            sets = sets or found
        if handlers:
            new.handlers = handlers
        return ast.copy_location(new, s), sets


def _exits(body: list[ast.stmt]) -> list[ast.stmt]:
    """A range loop with a break that stayed a Python ``for`` (the converter refused it, or
    it is inside a ``try``) stops as Python's does: ``if flag: break`` ends its body."""
    for node in ast.walk(ast.Module(body, [])):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                and node.target.id.startswith(f"{_PREFIX}for_"):
            flag = ast.Name(_break_flag(node.target.id), ast.Load())   # (_Jumps.loop)
            for sub in ast.walk(node):   # its flag a Python bool (not a region's graph one)
                if isinstance(sub, ast.Assign) and isinstance(sub.targets[0], ast.Name) \
                        and sub.targets[0].id == flag.id:
                    sub.value = ast.copy_location(ast.Constant(True), sub.value)
            node.body.append(ast.copy_location(ast.If(
                ast.copy_location(ast.Name(flag.id, ast.Load()), node),
                [ast.copy_location(ast.Break(), node)], []), node))
    return body


def _break_flag(target: str) -> str:
    """The break flag of the range loop whose target is ``__aj_for_N`` (``_Jumps.loop``)."""
    return f"{_PREFIX}brk_{target[len(_PREFIX) + 4:]}"


def _own_break_flag(s: ast.stmt, plan: _Plan) -> tuple[str, ...]:
    """A loop's own break flag, as ``Names.flags``: a range loop's (its target
    ``__aj_for_N``, ``_Jumps.loop``: the region stops after the iteration that sets it,
    Python's loop there breaks), a while loop's (its test ``not __aj_brk_N and ...``: a
    graph bool like the for loop's, the condition reads it). An inner loop's flag the
    body also rebinds is not it (an inner break leaves only the inner loop)."""
    if isinstance(s, ast.For) and isinstance(s.target, ast.Name) \
            and s.target.id.startswith(f"{_PREFIX}for_"):
        flag = _break_flag(s.target.id)
    elif isinstance(s, ast.While) and isinstance(s.test, ast.BoolOp) \
            and isinstance(s.test.op, ast.And) and isinstance(s.test.values[0], ast.UnaryOp) \
            and isinstance(s.test.values[0].op, ast.Not) \
            and isinstance(s.test.values[0].operand, ast.Name) \
            and s.test.values[0].operand.id.startswith(f"{_PREFIX}brk_"):
        flag = s.test.values[0].operand.id
    else:
        return ()
    return (flag,) if flag in plan.carried else ()


def _ctl_call(func: str, args: list[ast.expr], where: ast.AST) -> ast.Call:
    """``__aj_ctl.func(*args)`` at ``where``."""
    def at(node: ast.AST) -> Any:
        return ast.copy_location(node, where)
    return at(ast.Call(at(ast.Attribute(at(ast.Name(_CTL, ast.Load())), func, ast.Load())),
                       args, []))


def _flag_setting(name: str, value: bool, where: ast.AST) -> ast.stmt:
    """``name = __aj_ctl.flag(value)``: a graph bool in a body the region tracer traces (an
    ``if c: continue`` is then a select of two graph values), else the Python bool."""
    return ast.copy_location(ast.Assign([ast.copy_location(ast.Name(name, ast.Store()), where)],
                                        _ctl_call("flag", [ast.copy_location(
                                            ast.Constant(value), where)], where)), where)


def _own_jumps(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The break/continue statements of the loop whose body (or else) ``stmts`` is."""
    found: list[ast.stmt] = []
    stack: list[ast.AST] = list(stmts)
    while stack:
        sub = stack.pop()
        if isinstance(sub, (ast.Break, ast.Continue)):
            found.append(sub)
        elif isinstance(sub, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(sub.orelse)
        elif isinstance(sub, ast.stmt) and not isinstance(sub, _SCOPES):
            stack.extend(ast.iter_child_nodes(sub))
        elif isinstance(sub, ast.excepthandler):
            stack.extend(sub.body)
    return found


# -- the conversion --------------------------------------------------------------------------
@dataclass
class _Plan:
    """One statement's names (sorted) and which of them may be unbound before it."""

    carried: tuple[str, ...]
    captured: tuple[str, ...]
    maybe_unbound: frozenset[str]
    target_carried: bool = False


class _Converter:
    """Converts one function's statements inside out; ``helpers`` are the values the
    converted code reads by name (each statement's ``control.Names``)."""

    def __init__(self, fn: types.FunctionType, node: ast.FunctionDef) -> None:
        self.fn, self.node = fn, node
        self.file = fn.__code__.co_filename
        self.helpers: dict[str, Any] = {}
        self.counter = itertools.count(1)
        table = _function_table(fn, node)
        self.locals = frozenset(s.get_name() for s in table.get_symbols() if s.is_local())
        self.declared = frozenset(s.get_name() for s in table.get_symbols()
                                  if s.is_declared_global() or (s.is_free() and not
                                                                s.is_local()))
        self.closed = _closed_names(table)
        liveness = _Liveness()
        liveness.block(node.body, frozenset())
        self.live_out = liveness.live_out
        definite = _Definite()
        args = node.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        definite.block(node.body, frozenset(params), None)
        self.before = definite.before

    # -- walking -------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            out.extend(self.stmt(stmt))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if not isinstance(s, (ast.For, ast.While, ast.If)):
            # try/with bodies stay Python (an exception's locals are seen)
            return [s if isinstance(s, (ast.Try, ast.With)) else _MinMax().visit(s)]
        plan = self.plan(s)
        body, orelse = self.block(s.body), self.block(s.orelse)
        if plan is None:
            copy = type(s)(**{f: getattr(s, f) for f in s._fields})
            copy.body, copy.orelse = body, orelse
            return [ast.copy_location(copy, s)]
        return self.emit(s, plan, body, orelse)

    # -- deciding ------------------------------------------------------------------------
    def plan(self, s: ast.For | ast.While | ast.If) -> _Plan | None:
        """The statement's names, or None where a call would not keep its meaning."""
        if self.refusal(s) is not None:
            return None
        inner = s.body + s.orelse if isinstance(s, ast.If) else s.body
        exposed: set[str] = set()
        definite = _Definite()
        start = frozenset()
        if isinstance(s, ast.For):
            start = frozenset(_target_names(s.target))
        if isinstance(s, ast.While):
            exposed |= _reads(s.test)
        if isinstance(s, ast.If):
            definite.block(s.body, start, exposed)
            definite.block(s.orelse, start, exposed)
        else:
            definite.block(s.body, start, exposed)
        assigned = _assigned(inner, self.fn.__code__.co_freevars)
        if assigned & self.declared:
            return None
        live = self.live_out.get(id(s), frozenset())
        carried = assigned & (live | exposed)
        target_carried = False
        if isinstance(s, ast.For):
            target = s.target.id   # type: ignore[union-attr]
            carried.discard(target)
            target_carried = target in live
            assigned.add(target)
            if target.startswith(f"{_PREFIX}for_") and _break_flag(target) in assigned:
                carried.add(_break_flag(target))   # the loop stops on it (Names.flags)
        reads = _reads(*inner) | (_reads(s.test) if isinstance(s, ast.While) else set())
        captured = (reads & self.locals) - assigned
        if target_carried:
            carried.add(s.target.id)   # type: ignore[union-attr]
        if (assigned | captured) & self.closed:
            return None
        deleted = {n.id for n in _own_nodes(inner) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Del)}
        deleted |= {n.name for n in _own_nodes(inner) if isinstance(n, ast.ExceptHandler)
                    and n.name}
        if deleted & carried:
            return None
        bound = self.before.get(id(s), frozenset())
        names = carried | captured
        return _Plan(tuple(sorted(carried)), tuple(sorted(captured)),
                     frozenset(names - bound), target_carried)

    def refusal(self, s: ast.For | ast.While | ast.If) -> str | None:
        """Why a call would change the statement's meaning, or None."""
        if isinstance(s, (ast.For, ast.While)) and s.orelse:
            return "a loop with else"
        if isinstance(s, ast.For) and not _is_range_loop(s):
            return "not a loop over range(...) into a name"
        if isinstance(s, ast.While) and any(isinstance(n, ast.NamedExpr)
                                            for n in ast.walk(s.test)):
            return "an assignment in the loop condition"
        inner = s.body + s.orelse if isinstance(s, ast.If) else s.body
        for sub in _own_nodes(inner):
            if isinstance(sub, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await,
                                ast.Global, ast.Nonlocal, ast.Match, ast.AsyncFor,
                                ast.AsyncWith)):
                return f"{type(sub).__name__.lower()} inside"
        if _loose_jump(inner):
            return "break/continue inside"
        return None

    # -- emitting ------------------------------------------------------------------------
    def emit(self, s: ast.For | ast.While | ast.If, plan: _Plan, body: list[ast.stmt],
             orelse: list[ast.stmt]) -> list[ast.stmt]:
        k = next(self.counter)
        names_helper = f"{_PREFIX}names_{k}"
        flags = _own_break_flag(s, plan)
        returns = tuple(n for n in plan.carried if n.startswith(_RD))
        self.helpers[names_helper] = control.Names(plan.carried, plan.captured, self.file,
                                                   s.lineno, flags, returns)

        def at(node: ast.AST, where: ast.AST = s) -> Any:
            return ast.copy_location(node, where)

        def name(n: str, ctx: ast.expr_context | None = None) -> ast.Name:
            return at(ast.Name(n, ctx or ast.Load()))

        def tup(ns: Iterable[str], ctx: ast.expr_context | None = None) -> ast.Tuple:
            return at(ast.Tuple([name(n, ctx) for n in ns], ctx or ast.Load()))

        out: list[ast.stmt] = []
        call_args: list[ast.expr]
        if isinstance(s, ast.For):
            target = s.target.id   # type: ignore[union-attr]
            first = _INDEX if plan.target_carried else target
            prologue = [at(ast.Assign([name(target, ast.Store())], name(_INDEX)))] \
                if plan.target_carried else []
            out.append(self.function(f"{_PREFIX}body_{k}", [first, _CARRIED, _CAPTURED],
                                     plan, prologue + body, True, s))
            range_name, bounds = f"{_PREFIX}range_{k}", f"{_PREFIX}bounds_{k}"
            out.append(at(ast.Assign([name(range_name, ast.Store())], name("range")),
                          s.iter.func))   # type: ignore[attr-defined]
            out.append(at(ast.Assign([name(bounds, ast.Store())],
                                     at(ast.Tuple(list(s.iter.args),   # type: ignore
                                                  ast.Load()), s.iter)), s.iter))
            func = "for_range"
            call_args = [name(bounds), name(f"{_PREFIX}body_{k}")]
            tail = [name(range_name)]
            where: ast.AST = s.iter
        elif isinstance(s, ast.While):
            out.append(self.function(f"{_PREFIX}cond_{k}", [_CARRIED, _CAPTURED], plan,
                                     [at(ast.Return(self.truth(s.test)), s.test)], False, s))
            out.append(self.function(f"{_PREFIX}body_{k}", [_CARRIED, _CAPTURED], plan,
                                     body, True, s))
            func, tail, where = "while_loop", [], s.test
            call_args = [name(f"{_PREFIX}cond_{k}"), name(f"{_PREFIX}body_{k}")]
        else:
            out.append(self.function(f"{_PREFIX}then_{k}", [_CARRIED, _CAPTURED], plan,
                                     body, True, s))
            out.append(self.function(f"{_PREFIX}else_{k}", [_CARRIED, _CAPTURED], plan,
                                     orelse, True, s))
            pred = f"{_PREFIX}pred_{k}"
            out.append(at(ast.Assign([name(pred, ast.Store())], self.truth(s.test)), s.test))
            func, tail, where = "if_else", [], s.test
            call_args = [name(pred), name(f"{_PREFIX}then_{k}"), name(f"{_PREFIX}else_{k}")]
        for n in sorted(plan.maybe_unbound):   # enter as UNDEFINED
            out.append(at(ast.Try([at(ast.Expr(name(n)))], [at(ast.ExceptHandler(
                name("NameError"), None, [at(ast.Assign([name(n, ast.Store())],
                                                        name(_UNDEF)))]))], [], [])))
        call = at(ast.Call(at(ast.Attribute(name(_CTL), func, ast.Load()), where),
                           [*call_args, tup(plan.carried), tup(plan.captured),
                            name(names_helper), *tail], []), where)
        if plan.carried:
            out.append(at(ast.Assign([tup(plan.carried, ast.Store())], call), where))
        else:
            out.append(at(ast.Expr(call), where))
        out.extend(self.unbind(plan.maybe_unbound, s))
        return out

    def truth(self, test: ast.expr) -> ast.expr:
        """An ``if``/``while`` test whose ``and``/``or``/``not`` decide on traced values:
        ``A and B`` becomes ``ctl.and_(t, B) if ctl.and_left(t := A) else t`` (``or``
        likewise, ``not A`` ``ctl.not_(A)``): Python's meaning where ``A`` is not traced
        (``B`` evaluated only when Python would), one traced truth of both where it is
        (``tracer/regions.py``). Only the test's truth matters, so operands are tests too;
        a test with an assignment or a yield in it stays as it is."""
        if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda,
                              *_COMPREHENSION_NODES)) for n in ast.walk(test)):
            return _MinMax().visit(test)
        return self._truth(test)

    def _truth(self, test: ast.expr) -> ast.expr:
        def at(node: ast.AST) -> Any:
            return ast.copy_location(node, test)

        def ctl(func: str, *args: ast.expr) -> ast.Call:
            return at(ast.Call(at(ast.Attribute(at(ast.Name(_CTL, ast.Load())), func,
                                                ast.Load())), list(args), []))

        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ctl("not_", self._truth(test.operand))
        if not isinstance(test, ast.BoolOp):
            return _MinMax().visit(test)
        op = "and" if isinstance(test.op, ast.And) else "or"
        left = self._truth(test.values[0])
        for value in test.values[1:]:   # left to right: (A and B) and C
            temp = f"{_PREFIX}t_{next(self.counter)}"
            bound = at(ast.NamedExpr(at(ast.Name(temp, ast.Store())), left))
            left = at(ast.IfExp(ctl(f"{op}_left", bound),
                                ctl(f"{op}_", at(ast.Name(temp, ast.Load())),
                                    self._truth(value)),
                                at(ast.Name(temp, ast.Load()))))
        return left

    def unbind(self, names: Iterable[str], s: ast.AST) -> list[ast.stmt]:
        """``if n is UNDEFINED: del n``: unbound again where the original has it unbound."""
        def at(node: ast.AST) -> Any:
            return ast.copy_location(node, s)
        return [at(ast.If(at(ast.Compare(at(ast.Name(n, ast.Load())), [ast.Is()],
                                         [at(ast.Name(_UNDEF, ast.Load()))])),
                          [at(ast.Delete([at(ast.Name(n, ast.Del()))]))], []))
                for n in sorted(names)]

    def function(self, fname: str, params: list[str], plan: _Plan, body: list[ast.stmt],
                 returns: bool, s: ast.AST) -> ast.FunctionDef:
        """A body function: unpack carried and captured, run ``body``, return carried."""
        def at(node: ast.AST) -> Any:
            return ast.copy_location(node, s)

        def tup(ns: Iterable[str], ctx: ast.expr_context) -> ast.Tuple:
            return at(ast.Tuple([at(ast.Name(n, ctx)) for n in ns], ctx))

        stmts: list[ast.stmt] = []
        for group, param in ((plan.carried, _CARRIED), (plan.captured, _CAPTURED)):
            if group:
                stmts.append(at(ast.Assign([tup(group, ast.Store())],
                                           at(ast.Name(param, ast.Load())))))
        stmts.extend(self.unbind(sorted(plan.maybe_unbound), s))
        stmts.extend(body)
        if returns:
            for n in sorted(plan.maybe_unbound & set(plan.carried)):
                stmts.append(at(ast.Try([at(ast.Expr(at(ast.Name(n, ast.Load()))))],
                                        [at(ast.ExceptHandler(
                                            at(ast.Name("NameError", ast.Load())), None,
                                            [at(ast.Assign([at(ast.Name(n, ast.Store()))],
                                                           at(ast.Name(_UNDEF,
                                                                       ast.Load()))))]))],
                                        [], [])))
            stmts.append(at(ast.Return(tup(plan.carried, ast.Load()))))
        args = ast.arguments([], [at(ast.arg(p)) for p in params], None, [], [], None, [])
        return at(ast.FunctionDef(fname, args, stmts or [at(ast.Pass())], [], None, None))


class _MinMax(ast.NodeTransformer):
    """``max(a, b, ...)``/``min(a, b, ...)`` (two or more positional operands) become
    ``ctl.minmax(max, a, b, ...)``: the builtin compares the operands, which on traced
    scalars is a select (``control.minmax``); what the name is at the call is passed on,
    a user's own ``max`` is only called. Conditional expressions become selects where
    their test is traced (``visit_IfExp``). Nested scopes are left as they are."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in ("max", "min") and not node.keywords
                and len(node.args) >= 2
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return node
        ctl = ast.copy_location(ast.Attribute(ast.copy_location(ast.Name(_CTL, ast.Load()),
                                                                node), "minmax", ast.Load()),
                                node)
        return ast.copy_location(ast.Call(ctl, [func, *node.args], []), node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        """``A if C else B`` becomes ``ctl.select(t, A, B) if ctl.select_test(t := C) else
        (A if t else B)``: Python's lazy choice where ``C`` is not traced, a select of both
        sides where it is (``control.select``)."""
        if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
               for n in ast.walk(node)):   # the user's own (before the inner ones are ours)
            return node
        self.generic_visit(node)
        temp = f"{_PREFIX}c_{next(_TEMPS)}"

        def at(new: ast.AST) -> Any:
            return ast.copy_location(new, node)

        def ctl(func: str, *args: ast.expr) -> ast.Call:
            return at(ast.Call(at(ast.Attribute(at(ast.Name(_CTL, ast.Load())), func,
                                                ast.Load())), list(args), []))

        bound = at(ast.NamedExpr(at(ast.Name(temp, ast.Store())), node.test))
        plain = at(ast.IfExp(at(ast.Name(temp, ast.Load())), node.body, node.orelse))
        return at(ast.IfExp(ctl("select_test", bound),
                            ctl("select", at(ast.Name(temp, ast.Load())),
                                copy.deepcopy(node.body), copy.deepcopy(node.orelse)),
                            plain))

    def _keep(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _keep
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _keep


def _is_range_loop(s: ast.For) -> bool:
    """``for name in range(a[, b[, c]])`` (whether ``range`` is the builtin is asked when
    the loop starts: ``control.for_range``'s ``range_fn``)."""
    it = s.iter
    return (isinstance(s.target, ast.Name) and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range"
            and 1 <= len(it.args) <= 3 and not it.keywords
            and not any(isinstance(a, ast.Starred) for a in it.args))


def _loose_jump(stmts: list[ast.stmt]) -> bool:
    """A break/continue in ``stmts`` that leaves them (not inside a loop of their own)."""
    stack = list(stmts)
    while stack:
        sub = stack.pop()
        if isinstance(sub, (ast.Break, ast.Continue)):
            return True
        if isinstance(sub, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(sub.orelse)   # a loop's else belongs to the outside
            continue
        if isinstance(sub, (*_SCOPES, *_COMPREHENSION_NODES)):
            continue
        stack.extend(ast.iter_child_nodes(sub))
    return False


# -- calls of the user's own functions (AutoGraph's converted_call) ----------------------------
#: top-level packages whose functions are called as they are (AutoGraph's do-not-convert
#: list): autojit's own, NumPy's and the libraries a traced function may call
_DO_NOT_CONVERT = frozenset({"autojit", "numpy", "scipy", "numba", "llvmlite", "cupy", "jax",
                             "torch", "pandas", "pytest", "_pytest", "hypothesis"})
#: per thread, the code objects whose conversion is being decided (a function that calls
#: itself; another thread's decision is not this one's)
_DECIDING = threading.local()
_LOCAL_DEF = object()   # a callee the function defines itself (known only when it runs)


def _deciding() -> set[types.CodeType]:
    codes = getattr(_DECIDING, "codes", None)
    if codes is None:
        codes = _DECIDING.codes = set()
    return codes


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """The folders of the standard library, installed packages, autojit and NumPy (as
    ``cache/cache_key.py`` finds them: its user helpers are the ones converted here)."""
    folders = {os.path.dirname(os.__file__), os.path.dirname(np.__file__),
               os.path.dirname(os.path.dirname(os.path.abspath(__file__))),   # autojit
               site.getusersitepackages(), *site.getsitepackages()}
    folders.update(p for p in sys.path if os.path.basename(p) in ("site-packages",
                                                                  "dist-packages"))
    return tuple(os.path.join(os.path.abspath(f), "") for f in folders if f)


@functools.lru_cache(maxsize=1024)
def _library_file(filename: str) -> bool:
    """A file of the standard library (a frozen module's too), an installed package or
    autojit; a name in angle brackets is the user's own (a notebook cell, an exec)."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    return os.path.abspath(filename).startswith(_library_dirs())


def _user_function(fn: Any) -> bool:
    """``fn`` is a Python function of the user's own code (not a builtin, a class, a
    callable object, nor a function of the standard library, NumPy, autojit or another
    installed package): calling its converted self keeps Python's meaning."""
    if type(fn) is not types.FunctionType:
        return False
    module = fn.__module__ if isinstance(fn.__module__, str) else ""
    return (module.partition(".")[0] not in _DO_NOT_CONVERT
            and not _library_file(fn.__code__.co_filename))


def converted_callee(fn: Any) -> Any:
    """What ``control.call`` calls for ``fn``: the user's own function (a method of one,
    a ``functools.partial`` of one) with its loops and branches as control calls, anything
    else as it is."""
    if type(fn) is functools.partial:
        inner = converted_callee(fn.func)
        return fn if inner is fn.func else functools.partial(inner, *fn.args, **fn.keywords)
    target = fn.__func__ if type(fn) is types.MethodType else fn
    return convert_function(fn) if _user_function(target) else fn


class _Calls:
    """Rewrites each call whose callee is a name or an attribute (``helper(n, a)``,
    ``mod.step(a)``, ``self.step(a)``) into ``__aj_ctl.call(helper, n, a)`` (AutoGraph's
    ``converted_call``): the callee and then the arguments are evaluated as before, in the
    same order, starred and keyword arguments as written, and ``control.call`` converts a
    callee of the user's own code first (``converted_callee``), so a helper's loops and
    branches become regions of the same trace. The control calls the other rewrites made,
    a ``for`` loop's ``range(...)`` and nested defs, lambdas and classes are left alone."""

    def __init__(self, fn: types.FunctionType, node: ast.FunctionDef) -> None:
        self.fn, self.node = fn, node
        self.callees: list[ast.expr] = []
        self.kept: set[int] = set()   # the range(...) calls of for loops

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        for s in stmts:
            if not isinstance(s, _SCOPES):
                self.walk(s)
        return stmts

    def walk(self, node: ast.AST) -> None:
        """Rewrite ``node``'s own scope's calls in place (a stack: no recursion)."""
        def visit(sub: ast.AST) -> None:
            if isinstance(sub, ast.For) and _is_range_loop(sub):
                self.kept.add(id(sub.iter))
        _rewrite_calls(node, self.call, _SCOPES, visit)

    def call(self, c: ast.Call) -> ast.expr:
        f = c.func
        if id(c) in self.kept or not isinstance(f, (ast.Name, ast.Attribute)) or (
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == _CTL) or self._builtin(f):
            return c
        self.callees.append(f)
        func = ast.copy_location(ast.Attribute(ast.copy_location(ast.Name(_CTL, ast.Load()),
                                                                 c), "call", ast.Load()), c)
        return ast.copy_location(ast.Call(func, [f, *c.args], c.keywords), c)

    def _builtin(self, f: ast.expr) -> bool:
        """A name no scope of the function binds that is a builtin (``max``, ``len``): left
        as written, for the rewrites that follow (``_MinMax``: ``max(a, b)`` of traced
        scalars is a select), as ``control.call`` would call it unchanged anyway."""
        if not isinstance(f, ast.Name) or not hasattr(builtins, f.id):
            return False
        code = self.fn.__code__
        return f.id not in self.fn.__globals__ and f.id not in code.co_freevars and (
            f.id not in code.co_varnames and f.id not in code.co_cellvars)

    # -- is a call worth converting the function for? -----------------------------------
    def worth(self) -> bool:
        """True where a callee known now (a global, a closure's, an attribute of one,
        ``self``'s class's, a function the function defines) converts: the function must
        be converted for its calls alone. A function whose conversion is being decided (it
        calls itself, directly or not) does not count; a callee known only when the call
        runs (a local, ``a.sum``) does not either: a function whose loops all stay Python
        is left as it is."""
        if not self.callees:
            return False
        code = self.fn.__code__
        deciding = _deciding()
        deciding.add(code)
        try:
            return any(self._converts(self._known(f)) for f in self.callees)
        finally:
            deciding.discard(code)

    def _converts(self, value: Any) -> bool:
        if value is _LOCAL_DEF:
            return True
        if type(value) is functools.partial:
            value = value.func
        if isinstance(value, (staticmethod, classmethod, types.MethodType)):
            value = value.__func__
        return (_user_function(value) and value.__code__ not in _deciding()
                and convert_function(value) is not value)

    def _known(self, f: ast.expr) -> Any:
        try:
            return self._resolve(f)
        except Exception:  # noqa: BLE001 (an object whose attributes cannot be looked up
            return None    # statically: not known before the call)

    def _resolve(self, f: ast.expr) -> Any:
        """The value ``f`` (a name or a chain of attributes) has now, looked up without
        running code (``getattr_static``), or None where it is not known before the call."""
        if isinstance(f, ast.Attribute):
            base = self._resolve(f.value)
            return None if base is None or base is _LOCAL_DEF else inspect.getattr_static(
                base, f.attr, None)
        if not isinstance(f, ast.Name):
            return None
        code = self.fn.__code__
        if f.id in code.co_freevars:
            try:
                return (self.fn.__closure__ or ())[code.co_freevars.index(f.id)].cell_contents
            except (IndexError, ValueError):   # an empty cell
                return None
        if code.co_argcount and f.id == code.co_varnames[0] and self._owner() is not None:
            return self._owner()   # self (or cls) of a method: its class's attributes
        if f.id in code.co_varnames or f.id in code.co_cellvars:
            defined = any(isinstance(n, ast.FunctionDef) and n.name == f.id
                          for n in _own_nodes(self.node.body))
            return _LOCAL_DEF if defined else None
        return self.fn.__globals__.get(f.id)

    def _owner(self) -> type | None:
        """The class a method is defined in (found by its qualified name), or None."""
        parts = self.fn.__qualname__.split(".")
        if len(parts) < 2 or "<locals>" in parts:
            return None
        owner: Any = self.fn.__globals__.get(parts[0])
        for part in parts[1:-1]:
            owner = inspect.getattr_static(owner, part, None)
        return owner if isinstance(owner, type) else None
