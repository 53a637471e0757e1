"""Random loop programs, written as source text, checked against plain NumPy.

    python -m tests.fuzz.loopgen --seed 1 --count 300            # from the repo root
    python -m tests.fuzz.loopgen --seed 1 --count 100 --require-compiled --out /tmp/lg

The generator knows Python and NumPy, not autojit: it writes ``for`` loops over ``range``
with bounds from int arguments (``range(steps)``, ``range(1, n - 1)``, steps of 2,
reversed, triangular ``range(i)``), in-place stencils (1-D and five-point 2-D), carried
scalars and carried arrays rebound, index-dependent slices and elements (``x[i]``,
``x[:i]``, ``g[i, :j]``, ``w[t % 2]``), scratch arrays (``np.zeros``/``np.empty`` sized by
arguments, filled row by row), branches on scalars (``if``/``elif``/``else``), ``while``
loops on traced conditions (each with an iteration cap), ``break``/``continue``, f64/f32/i64
mixes and edge trip counts (0, 1, 2). It replays each candidate in NumPy and keeps one that
NumPy rejects only now and then (autojit must raise the same exception type).

Every program is called five times on ONE dispatcher per variant (``tests/fuzz/runner``'s
machinery: ``auto``, ``force="cpu"`` and a fresh dispatcher per call over the warm cache):
three sets of sizes and trip counts, an edge set, then the first again; results, types,
dtypes, shapes, exceptions, warning categories and the arguments after the call are
compared. Exactness: a value is compared bit for bit unless it went through a float
reduction, a matmul or a transcendental ufunc (then the fuzzer's tolerance for reduced
values); the generator keeps those in names of their own (``s``, ``r``, the matrix ``A``)
and never lets them decide a branch, a loop or an index, so an ULP cannot flip control flow.

The run reports programs, wrong answers, internal exceptions, how many compiled
(``routes["python"] == 0`` for every call), compiles per program (and the programs compiled
more than once other than for a size 1, which is specialised for broadcasting), fallback
and recompile reasons by count and first-call time percentiles, and writes each failure as
a shrunk standalone repro.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.program import Program, Taint
from tests.fuzz.runner import VARIANTS, Failure, Outcome, _run, builders, compile_function
from tests.fuzz.values import ArgSpec, random_values

from autojit.dispatch.signature import SIZE_ONE_CHANGE

#: the taint of every inexact name (reductions, matmul, transcendentals: program.py)
INEXACT = Taint(ulps=8.0, reduced=True)
#: the fallback reasons, first-call times and compile counts a run reports, by record key
EXTRA = ("compiled", "compiles", "first_call_s", "warnings", "recompiles")
#: failure kinds that are an exception of autojit's own reaching the caller
INTERNAL = ("internal-error", "crash", "timeout")
#: seconds the generator's NumPy replay of one candidate may take
REPLAY_S = 2.0

IND = "    "


# -- programs --------------------------------------------------------------------------------
@dataclass
class LoopProgram(Program):
    """A generated loop program; its repro runs the loop runner (``check_loop_repro``)."""

    require_compiled: bool = False

    def repro(self, header: str = "") -> str:
        calls = ", ".join(f"call_{i + 1}" for i in range(len(self.calls)))
        return (f'"""{header}"""\n' if header else "") + (
            "import numpy as np\n\n\n" + self.source() + "\n\n" + self.calls_source() +
            "\n\n\nCALLS = [" + calls + "]\n"
            f"RETURNS = {self.ret!r}\n"
            f"TAINT = {self.taint_table()!r}\n\n"
            "if __name__ == '__main__':\n"
            "    # PYTHONPATH=<autojit checkout> python this_file.py\n"
            "    from tests.fuzz.loopgen import check_loop_repro\n"
            f"    check_loop_repro(f, CALLS, RETURNS, TAINT, "
            f"require_compiled={self.require_compiled!r})\n")


@dataclass
class Var:
    """A name the program reads: an array (``ndim``) or a scalar (``ndim`` None)."""

    ndim: int | None
    exact: bool = True
    writable: bool = True
    kind: str = "f"          # the dtype kind: f (float), i (integer)
    length: str = "L"        # what bounds its first axis: "L" (arguments' length), "n"
    top: bool = True         # bound on every path to the return (not only inside a loop)


@dataclass
class Scope:
    """What a statement may use: the variables, the loop indices (innermost last, each
    with the size that bounds it), whether it is inside a loop."""

    vars: dict[str, Var]
    indices: list[tuple[str, str]] = field(default_factory=list)
    depth: int = 0
    in_loop: bool = False
    no_empty_fill: bool = False


class LoopGenerator:
    """Draws one loop program from ``rng``."""

    def __init__(self, rng: random.Random, max_depth: int = 3) -> None:
        self.rng = rng
        self.max_depth = max_depth
        self.lines: list[str] = []
        self.counter = 0

    # -- the signature -------------------------------------------------------------------
    def _dtype(self) -> str:
        return self.rng.choices(("float64", "float32", "int64"), (6, 2.5, 1.5))[0]

    def _signature(self) -> None:
        rng = self.rng
        self.dtypes = {"x": self._dtype(), "y": self._dtype(), "g": self._dtype(),
                       "A": rng.choice(("float64", "float64", "float32"))}
        self.use = {"x"} | {p for p in ("y", "g", "A") if rng.random() < 0.5}
        #: no int argument now and then: every bound is then an array's length
        self.ints = [p for p in ("steps", "n", "k") if rng.random() < 0.6]
        self.use_c = rng.random() < 0.7
        self.layouts = {p: rng.choice(("C", "C", "C", "C", "rev", "step", "F", "T"))
                        for p in ("x", "y", "g", "A")}
        #: y passed as x itself or x reversed (writes through one are read through the other)
        self.alias = rng.choice(("same", "rev")) if rng.random() < 0.1 else ""
        if self.alias:
            self.dtypes["y"] = self.dtypes["x"]
        #: NumPy scalars for c and steps now and then (NEP 50: a float32 c is not weak)
        self.np_c = rng.choice(("float32", "float64")) if rng.random() < 0.2 else ""
        self.np_steps = rng.random() < 0.1

    @property
    def params(self) -> list[str]:
        arrays = [p for p in ("x", "y", "g", "A") if p in self.use]
        return arrays + self.ints + (["c"] if self.use_c else [])

    def _scope(self) -> Scope:
        kind = {d: "i" if d.startswith("int") else "f" for d in ("int64", "float64",
                                                                    "float32")}
        vs: dict[str, Var] = {}
        for p in ("x", "y", "g", "A"):
            if p in self.use:
                vs[p] = Var(2 if p in ("g", "A") else 1, exact=p != "A",
                            kind=kind[self.dtypes[p]])
        for p in self.ints:
            vs[p] = Var(None, kind="i")
        if self.use_c:
            vs["c"] = Var(None)
        return vs

    # -- holes ------------------------------------------------------------------------------
    def _fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def _arrays(self, scope: Scope, ndim: int | None = None, exact: bool | None = True,
                writable: bool = False, kind: str | None = None) -> list[str]:
        return [n for n, v in scope.vars.items() if v.ndim is not None
                and (ndim is None or v.ndim == ndim) and (exact is None or v.exact == exact)
                and (not writable or v.writable) and (kind is None or v.kind == kind)]

    def _scalars(self, scope: Scope, exact: bool = True, kind: str | None = None) -> list[str]:
        return [n for n, v in scope.vars.items() if v.ndim is None and v.exact == exact
                and (kind is None or v.kind == kind)]

    def _int(self, scope: Scope) -> str:
        """An int: an argument, a loop index or a literal."""
        names = self._scalars(scope, kind="i") + [i for i, _ in scope.indices]
        if names and self.rng.random() < 0.8:
            return self.rng.choice(names)
        return str(self.rng.choice((0, 1, 2, 3)))

    def _coef(self, scope: Scope, kind: str) -> str:
        """A coefficient fitting an array of ``kind`` (a float one would not cast to int)."""
        if kind == "i":
            return self.rng.choice(("2", "-1", "3") + (("k",) if "k" in scope.vars else ()))
        pool = ("0.25", "0.5", "0.125", "-0.5", "1.5") + (("c",) if "c" in scope.vars else ())
        return self.rng.choice(pool)

    def _len(self, scope: Scope, name: str | None = None) -> str:
        arrays = self._arrays(scope, exact=None)
        a = name or (self.rng.choice(arrays) if arrays else "x")
        return self.rng.choice((f"{a}.shape[0]", f"len({a})"))

    def _bound(self, scope: Scope) -> tuple[str, str]:
        """A loop bound and what it bounds: ``L`` (an array length) or ``T`` (steps)."""
        rng = self.rng
        options = [(self._len(scope), "L")]
        if "n" in scope.vars:
            options += [("n", "n")] * 2
        if "steps" in scope.vars:
            options += [("steps", "T")] * 2
        return rng.choice(options)

    def _range(self, scope: Scope) -> tuple[str, str]:
        """``range(...)`` text and the size its index stays under."""
        rng = self.rng
        inner = [i for i, size in scope.indices if size in ("L", "n")]
        if inner and rng.random() < 0.5:
            i = inner[-1]
            size = dict(scope.indices)[i]
            bound = "n" if size == "n" else self._len(scope)
            return rng.choice((f"range({i})", f"range({i}, {bound})", f"range({i} + 1, {bound})",
                               f"range(0, {i}, 2)", f"range({i} - 1, -1, -1)")), size
        bound, size = self._bound(scope)
        return rng.choice((f"range({bound})", f"range({bound})", f"range(1, {bound} - 1)",
                           f"range(0, {bound}, 2)", f"range({bound} - 1, -1, -1)",
                           f"range(1, {bound})", f"range({bound} // 2)")), size

    def _index(self, scope: Scope) -> str | None:
        """A loop index that stays inside an array's first axis (L- or n-bounded)."""
        ok = [i for i, size in scope.indices if size in ("L", "n")]
        return self.rng.choice(ok) if ok else None

    def _cond(self, scope: Scope) -> str:
        """A condition on exact values only (ints, indices, exact scalars and arrays)."""
        rng = self.rng
        options: list[str] = []
        for i, _ in scope.indices:
            options += [f"{i} % 2 == 0", f"{i} % 3 == 1", f"{i} > {self._int(scope)}"]
        for s in self._scalars(scope):
            if s not in ("c",):
                options += [f"{s} > 0", f"{s} < {rng.choice((-1, 2, 4))}"]
        for p in ("n", "k", "steps"):
            if p in scope.vars:
                options.append(f"{p} > {rng.choice((1, 2, 3))}")
        a = self._arrays(scope)
        i = self._index(scope)
        if a and i:
            arr = rng.choice(a)
            sub = f"{arr}[{i}]" if scope.vars[arr].ndim == 1 else f"{arr}[{i}, 0]"
            options.append(f"{sub} > 0")
        if a:
            arr = rng.choice(a)
            options += [f"np.max(np.abs({arr})) > 1", f"np.any({arr} < 0)"]
        return rng.choice(options) if options else "True"

    # -- statements ----------------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        """One line at ``depth`` (1: the function's body)."""
        self.lines.append(IND * (depth - 1) + text)

    def simple(self, scope: Scope) -> None:
        """One simple statement (an update of something the loop carries)."""
        rng = self.rng
        makers = [self._stencil, self._scalar_update, self._element_write, self._rebind,
                  self._slice_update, self._int_mix, self._inexact_update]
        weights = [2, 3, 3, 2, 1.5, 1, 1.5]
        for _ in range(6):
            if rng.choices(makers, weights)[0](scope):
                return
        self.emit(scope.depth, "pass")

    def _stencil(self, scope: Scope) -> bool:
        rng = self.rng
        ones = self._arrays(scope, 1, writable=True)
        twos = self._arrays(scope, 2, writable=True)
        if twos and (not ones or rng.random() < 0.4):
            g = rng.choice(twos)
            c = self._coef(scope, scope.vars[g].kind)
            self.emit(scope.depth, f"{g}[1:-1, 1:-1] += {c} * ({g}[2:, 1:-1] + {g}[:-2, 1:-1] "
                                   f"+ {g}[1:-1, 2:] + {g}[1:-1, :-2] - 4 * {g}[1:-1, 1:-1])")
            return True
        if not ones:
            return False
        u = rng.choice(ones)
        c = self._coef(scope, scope.vars[u].kind)
        self.emit(scope.depth, rng.choice((
            f"{u}[1:-1] += {c} * ({u}[2:] - 2 * {u}[1:-1] + {u}[:-2])",
            f"{u}[1:-1] = {u}[1:-1] + {c} * ({u}[2:] - 2 * {u}[1:-1] + {u}[:-2])",
            f"{u}[1:] = {u}[1:] - {c} * ({u}[1:] - {u}[:-1])",
        )))
        return True

    def _scalar_update(self, scope: Scope) -> bool:
        rng = self.rng
        acc = self._scalars(scope, kind="f")
        acc = [a for a in acc if a != "c" and not a.startswith("it")]
        if not acc:
            return False
        s = rng.choice(acc)
        i = self._index(scope)
        ones = self._arrays(scope, 1)
        twos = self._arrays(scope, 2)
        terms = [f"{rng.choice(('0.5', '1.0', '2'))}"]
        if scope.indices:
            any_i = rng.choice(scope.indices)[0]
            terms += [any_i, f"{any_i} * 0.5", f"{any_i} // 2"]
        if i and ones:
            a = rng.choice(ones)
            terms += [f"{a}[{i}]", f"{a}[{i}] * {a}[{i}]", f"np.max({a}[:{i} + 1])",
                      f"{a}[{i}] - {a}[{i} - 1]"]
        if i and twos:
            g = rng.choice(twos)
            terms += [f"np.max({g}[{i}])", f"{g}[{i}, {i} % {g}.shape[1]]"]
        t = rng.choice(terms)
        self.emit(scope.depth, rng.choice((
            f"{s} += {t}", f"{s} += {t}", f"{s} = {s} * 0.5 + {t}", f"{s} -= {t}",
            f"{s} = max({s}, {t})", f"{s} = {s} + {t} if {self._cond(scope)} else {s} - 1")))
        return True

    def _element_write(self, scope: Scope) -> bool:
        rng = self.rng
        i = self._index(scope)
        if i is None:
            return False
        ones = self._arrays(scope, 1, writable=True)
        twos = self._arrays(scope, 2, writable=True)
        if twos and (not ones or rng.random() < 0.4):
            g = rng.choice(twos)
            js = [j for j, _ in scope.indices if j != i]
            j = js[-1] if js else i
            col = f"{j} % {g}.shape[1]"
            c = self._coef(scope, scope.vars[g].kind)
            self.emit(scope.depth, rng.choice((
                f"{g}[{i}, {col}] = {g}[{i}, {col}] + {c}", f"{g}[{i}, {col}] = {i} - {j}",
                f"{g}[{i}, :{j}] += 1", f"{g}[{i}] = {g}[{i}] * {c} + {g}[{i} - 1]",
                f"{g}[{i}, {j}:] = {g}[{i}, {j}:] - {g}[{i} - 1, {j}:]")))
            return True
        if not ones:
            return False
        a = rng.choice(ones)
        b = rng.choice(self._arrays(scope, 1) or [a])
        c = self._coef(scope, scope.vars[a].kind)
        accs = [s for s in self._scalars(scope) if s != "c"]
        rhs = [f"{a}[{i} - 1] * {c} + {b}[{i}]", f"0.5 * ({a}[{i}] + {b}[{i}])", f"{i} * {c}",
               f"{a}[{i}] + {b}[{i} - 1]"]
        if accs:
            rhs.append(f"{a}[{i}] + {rng.choice(accs)}")
        self.emit(scope.depth, rng.choice((f"{a}[{i}] = {rng.choice(rhs)}",
                                           f"{a}[{i}] += {rng.choice(rhs)}")))
        return True

    def _rebind(self, scope: Scope) -> bool:
        rng = self.rng
        zs = [n for n in self._arrays(scope, 1) if n.startswith("z")]
        if not zs:
            return False
        z = rng.choice(zs)
        others = self._arrays(scope, 1)
        y = rng.choice(others)
        self.emit(scope.depth, rng.choice((
            f"{z} = 0.5 * {z} + {y}", f"{z} = np.maximum({z}, {y}) - 1",
            f"{z} = {z}[::-1] + {y}", f"{z} = {z} * {self._coef(scope, 'f')} + {y} * 2",
            f"{z} = np.where({z} > 0, {z} - {y}, {y})")))
        return True

    def _slice_update(self, scope: Scope) -> bool:
        rng = self.rng
        i = self._index(scope)
        ones = self._arrays(scope, 1, writable=True)
        if i is None or not ones:
            return False
        a = rng.choice(ones)
        b = rng.choice(self._arrays(scope, 1))
        c = self._coef(scope, scope.vars[a].kind)
        self.emit(scope.depth, rng.choice((
            f"{a}[:{i}] += {b}[:{i}]", f"{a}[{i}:] = {a}[{i}:] * {c}",
            f"{a}[:{i}] = {a}[1:{i} + 1]", f"{a}[{i}::2] -= {c}")))
        return True

    def _int_mix(self, scope: Scope) -> bool:
        rng = self.rng
        ints = [s for s in self._scalars(scope, kind="i") if s.startswith("cnt")]
        if not ints:
            return False
        cnt = rng.choice(ints)
        i = self._int(scope)
        self.emit(scope.depth, rng.choice((f"{cnt} += 1", f"{cnt} += {i} % 3",
                                           f"{cnt} = {cnt} * 2 - {i}", f"{cnt} += {i} // 2")))
        return True

    def _inexact_update(self, scope: Scope) -> bool:
        """Reductions, matmul and transcendentals: into inexact names only."""
        rng = self.rng
        ss = self._scalars(scope, exact=False)
        rs = self._arrays(scope, exact=False, writable=True)
        i = self._index(scope)
        arrays = self._arrays(scope, exact=None)
        if not arrays:
            return False
        a = rng.choice(arrays)
        row = f"{a}[{i}]" if i else a
        options: list[str] = []
        if ss:
            s = rng.choice(ss)
            terms = [f"np.sum({row})", f"np.tanh({a}[{i}]).sum()" if i else f"np.mean({a})"]
            if i and scope.vars[a].ndim == 1:
                terms += [f"np.sum({a}[:{i}])", f"{a}[:{i}] @ {a}[:{i}]",
                          f"np.tanh({a}[{i}])"]
            if i and scope.vars[a].ndim == 2:
                terms += [f"np.tanh({a}[{i}, {i} % {a}.shape[1]])", f"np.sum({a}[{i}, :{i}])"]
            options += [f"{s} += {rng.choice(terms)}", f"{s} = {s} * 0.5 + {rng.choice(terms)}"]
        A = [r for r in rs if scope.vars[r].ndim == 2]
        inner = [j for j, _ in scope.indices if j != i]
        if A and i:
            m = rng.choice(A)
            j = inner[-1] if inner else i
            options += [f"{m}[{i}, {j}] = ({m}[{i}, {j}] - {m}[{i}, :{j}] @ {m}[:{j}, {j}]) "
                        f"/ {m}[{j}, {j}]",
                        f"{m}[{i}, {j}] -= {m}[{i}, :{i}] @ {m}[:{i}, {j}]",
                        f"{m}[{i}] = {m}[{i}] * 0.5 + np.exp(-np.abs({m}[{i}]))"]
        ones = [r for r in rs if scope.vars[r].ndim == 1]
        if ones:
            r = rng.choice(ones)
            options += [f"{r} = {r} * 0.5 + np.sum({a}) * 0.25", f"{r} += np.cos({r})"]
            if i:
                options.append(f"{r}[{i}] = np.sum({row}) - {r}[{i} - 1]")
        if not options:
            return False
        self.emit(scope.depth, rng.choice(options))
        return True

    # -- compound statements -------------------------------------------------------------
    def block(self, scope: Scope, count: int) -> None:
        for _ in range(count):
            self.statement(scope)

    def statement(self, scope: Scope) -> None:
        rng = self.rng
        roll = rng.random()
        deep = scope.depth >= self.max_depth
        if not deep and roll < 0.22:
            self.for_loop(scope)
        elif not deep and roll < 0.3:
            self.while_loop(scope)
        elif not deep and roll < 0.42:
            self.if_stmt(scope)
        elif scope.in_loop and not scope.no_empty_fill and roll < 0.5:
            self.emit(scope.depth, f"if {self._cond(scope)}:")
            self.emit(scope.depth + 1, rng.choice(("break", "continue", "break")))
        elif roll < 0.52 and scope.depth > 1:
            self.emit(scope.depth, f"if {self._cond(scope)}:")
            self.emit(scope.depth + 1, f"return {self._early_return(scope)}")
        else:
            self.simple(scope)

    def _child(self, scope: Scope, index: tuple[str, str] | None = None,
               loop: bool = True) -> Scope:
        indices = scope.indices + ([index] if index else [])
        return Scope(scope.vars, indices, scope.depth + 1, scope.in_loop or loop,
                     scope.no_empty_fill)

    def for_loop(self, scope: Scope) -> None:
        rng = self.rng
        var = rng.choice([v for v in ("i", "j", "t", "p") if v not in dict(scope.indices)]
                         or ["q"])
        text, size = self._range(scope)
        self.emit(scope.depth, f"for {var} in {text}:")
        self.block(self._child(scope, (var, size)), rng.choice((1, 1, 2, 2, 3)))

    def while_loop(self, scope: Scope) -> None:
        rng = self.rng
        it = self._fresh("it")
        self.emit(scope.depth, f"{it} = 0")
        scope.vars[it] = Var(None, kind="i", top=scope.depth == 1)
        cap = rng.choice(("5", "20", "steps" if "steps" in scope.vars else "3",
                          "n" if "n" in scope.vars else "8"))
        cond = rng.choice((self._cond(scope), f"{it} < {rng.choice(('3', 'k + 1'))}"
                           if "k" in scope.vars else self._cond(scope)))
        if rng.random() < 0.3:
            self.emit(scope.depth, f"while {it} < {cap}:")
        else:
            self.emit(scope.depth, f"while {cond} and {it} < {cap}:")
        child = self._child(scope, (it, "T"))
        self.emit(child.depth, f"{it} += 1")
        self.block(child, rng.choice((1, 2, 2)))

    def if_stmt(self, scope: Scope) -> None:
        rng = self.rng
        self.emit(scope.depth, f"if {self._cond(scope)}:")
        child = self._child(scope, loop=False)
        self.block(child, rng.choice((1, 1, 2)))
        if rng.random() < 0.3:
            self.emit(scope.depth, f"elif {self._cond(scope)}:")
            self.block(child, 1)
        if rng.random() < 0.6:
            self.emit(scope.depth, "else:")
            self.block(child, rng.choice((1, 1, 2)))

    # -- templates: whole-program shapes people write ----------------------------------------
    def _empty_fill(self, scope: Scope) -> None:
        """``np.empty`` sized by arguments, every row filled (no break: rows stay defined)."""
        rng = self.rng
        e = self._fresh("e")
        bound = "n" if "n" in scope.vars else self._len(scope, "x")
        ones = self._arrays(scope, 1)
        a = rng.choice(ones)
        if rng.random() < 0.5:
            self.emit(scope.depth, f"{e} = np.empty(({bound}, {a}.shape[0]))")
            rows = [f"{a} * i", f"np.abs({a} - {a}[i % {a}.shape[0]])", f"{a}[::-1] + i"]
            scope.vars[e] = Var(2, length=bound)
        else:
            self.emit(scope.depth, f"{e} = np.empty({bound}, dtype={a}.dtype)")
            rows = [f"{a}[i % {a}.shape[0]] * 2", "i", f"np.max({a}[:i + 1]) if i < "
                    f"{a}.shape[0] else 0"]
            scope.vars[e] = Var(1, length=bound, kind=scope.vars[a].kind)
        self.emit(scope.depth, f"for i in range({bound}):")
        self.emit(scope.depth + 1, f"{e}[i] = {rng.choice(rows)}")

    def _double_buffer(self, scope: Scope) -> None:
        """``w[t % 2]`` ping-pong buffers over steps."""
        w = self._fresh("w")
        steps = "steps" if "steps" in scope.vars else "3"
        self.emit(scope.depth, f"{w} = np.zeros((2, x.shape[0]), dtype=x.dtype)")
        self.emit(scope.depth, f"{w}[0] = x")
        self.emit(scope.depth, f"for t in range({steps}):")
        self.emit(scope.depth + 1, self.rng.choice((
            f"{w}[(t + 1) % 2, 1:-1] = 0.5 * ({w}[t % 2, 2:] + {w}[t % 2, :-2])",
            f"{w}[1 - t % 2] = {w}[t % 2] * 2 - 1")))
        scope.vars[w] = Var(2, kind=scope.vars["x"].kind)
        self.final.append(f"{w}[{steps} % 2]")

    def _relax(self, scope: Scope) -> None:
        """``while err > tol``: a traced convergence test, capped."""
        it = self._fresh("it")
        tol = "c" if "c" in scope.vars else "0.5"
        self.emit(scope.depth, f"err = abs({tol}) + 1.0")
        self.emit(scope.depth, f"{it} = 0")
        self.emit(scope.depth, f"while err > abs({tol}) and {it} < 50:")
        self.emit(scope.depth + 1, "new = 0.5 * (x[:-2] + x[2:])")
        self.emit(scope.depth + 1, "err = np.max(np.abs(new - x[1:-1]), initial=0.0)")
        self.emit(scope.depth + 1, "x[1:-1] = new")
        self.emit(scope.depth + 1, f"{it} += 1")
        scope.vars[it] = Var(None, kind="i")
        scope.vars["err"] = Var(None)
        self.final.append(it)

    # -- the program ------------------------------------------------------------------------
    def _prelude(self, scope: Scope) -> None:
        """The carried values, bound before the loops."""
        rng = self.rng
        vs = scope.vars
        for _ in range(rng.choice((1, 1, 2))):
            acc = self._fresh("acc")
            self.emit(1, f"{acc} = {rng.choice(('0.0', '0', '0.0', 'np.float32(0)', '1.5'))}")
            vs[acc] = Var(None)
        if rng.random() < 0.5:
            cnt = self._fresh("cnt")
            self.emit(1, f"{cnt} = 0")
            vs[cnt] = Var(None, kind="i")
        if rng.random() < 0.5:
            z = self._fresh("z")
            self.emit(1, f"{z} = {rng.choice(('x.copy()', 'np.zeros_like(x)', 'x * 1.0', 'x'))}")
            vs[z] = Var(1, writable=False, kind=vs["x"].kind)
        if rng.random() < 0.4 or "A" in vs:
            s = self._fresh("s")
            self.emit(1, f"{s} = 0.0")
            vs[s] = Var(None, exact=False)
        if rng.random() < 0.3:
            r = self._fresh("r")
            bound = "n" if "n" in vs else "x.shape[0]"
            self.emit(1, f"{r} = np.zeros({bound})")
            vs[r] = Var(1, exact=False, length="n" if "n" in vs else "L")
        if rng.random() < 0.3:
            o = self._fresh("o")
            bound = "n" if "n" in vs else "x.shape[0]"
            self.emit(1, f"{o} = np.{rng.choice(('zeros', 'ones'))}(({bound}, x.shape[0]))")
            vs[o] = Var(2, length="n" if "n" in vs else "L")

    def _ret_expr(self, scope: Scope) -> str:
        rng = self.rng
        names = [n for n, v in scope.vars.items() if n not in ("c", "steps", "n", "k", "err")
                 and not n.startswith("e") and v.top]
        touched = [n for n in names if any(
            line.lstrip().startswith((f"{n} ", f"{n}[")) for line in self.lines[self.prelude:])]
        pool = touched if touched and rng.random() < 0.85 else names
        picked = rng.sample(pool, min(len(pool), rng.choice((1, 1, 2, 3))))
        if len(picked) == 1 and rng.random() < 0.3:
            other = rng.choice([n for n in names if scope.vars[n].ndim is None] or ["1"])
            return f"{picked[0]} + {other}"
        return ", ".join(picked)

    def _early_return(self, scope: Scope) -> str:
        """A return inside an ``if`` (kept: its value may be what a call returns)."""
        text = self._ret_expr(scope)
        self.early.append(text)
        return text

    def program(self, seed: str) -> LoopProgram:
        rng = self.rng
        self._signature()
        scope = Scope(self._scope(), depth=1)
        self.final: list[str] = []
        self.early: list[str] = []
        self._prelude(scope)
        self.prelude = len(self.lines)
        templates = [self._double_buffer, self._relax, self._empty_fill]
        if rng.random() < 0.35:
            rng.choice(templates)(scope)
        for _ in range(rng.choice((1, 1, 2))):
            if rng.random() < 0.8:
                self.for_loop(scope)
            else:
                self.statement(scope)
        if rng.random() < 0.15:
            rng.choice(templates)(scope)
        if rng.random() < 0.1:
            self.emit(1, f"if {self._cond(scope)}:")
            self.emit(2, f"return {self._early_return(scope)}")
        ret = self._ret_expr(scope)
        ret_items = [ret] if "," not in ret else [t.strip() for t in ret.split(",")]
        ret_items += [f for f in self.final if rng.random() < 0.7]
        ret_items += [e for e in scope.vars if e.startswith("e") and e != "err"
                      and rng.random() < 0.7]
        ret_items = list(dict.fromkeys(ret_items))
        names = [n for n, v in scope.vars.items() if not v.exact]
        taint = {n: INEXACT for n in names}
        # an early return's value is compared against the final return's items: where one
        # reads an inexact name, every item may be that inexact value
        early_inexact = any(_reads(e, n) for e in self.early for n in names)
        for item in ret_items:
            if early_inexact or any(_reads(item, n) for n in names):
                taint[item] = INEXACT
        calls = self._calls()
        return LoopProgram(self.params, self.lines, ret_items, len(ret_items) > 1, calls,
                           taint, seed)

    # -- calls -------------------------------------------------------------------------------
    def _calls(self) -> list[list[ArgSpec]]:
        """Three size sets (trip counts growing), one of edge sizes, then the first again."""
        rng = self.rng
        sets = [dict(L=rng.randint(3, 7), M=rng.randint(2, 5), T=rng.randint(2, 5)),
                dict(L=rng.randint(5, 11), M=rng.randint(1, 7), T=rng.randint(6, 40)),
                dict(L=rng.choice((0, 1, 2, 3)), M=rng.choice((0, 1, 2)),
                     T=rng.choice((0, 1, 2))),
                dict(L=rng.randint(2, 9), M=rng.randint(2, 6), T=rng.randint(1, 12))]
        calls = [self._call(s) for s in sets]
        return calls + [calls[0]]

    def _call(self, size: dict[str, int]) -> list[ArgSpec]:
        rng = self.rng
        L, M, T = size["L"], size["M"], size["T"]
        specs: list[ArgSpec] = []
        for p in self.params:
            if p == "y" and self.alias and "x" in self.params:
                specs.append(ArgSpec("alias", self.dtypes["x"], alias_of=0, view=self.alias))
            elif p in ("x", "y", "g", "A"):
                shape = {"x": (L,), "y": (L,), "g": (L, M), "A": (L, L)}[p]
                dtype = self.dtypes[p]
                count = int(np.prod(shape))
                values = random_values(rng, dtype, count)
                if p == "A":          # diagonally dominant: the solves stay well-conditioned
                    values = [rng.randint(-4, 4) / 4 for _ in range(count)]
                    for d in range(L):
                        values[d * L + d] = 8.0 + d
                layout = self.layouts[p] if count else "C"
                if layout == "T" and len(shape) < 2:
                    layout = "C"
                specs.append(ArgSpec("array", dtype, shape, tuple(values), layout,
                                     filler=(0,)))
            elif p == "steps":
                specs.append(ArgSpec("scalar", "int64" if self.np_steps else "int", values=(T,),
                                     npscalar=self.np_steps))
            elif p == "n":
                n = rng.choice((L, L, L, max(L - 1, 0), min(L, 2), 0 if L < 3 else L - 2))
                specs.append(ArgSpec("scalar", "int", values=(n,)))
            elif p == "k":
                specs.append(ArgSpec("scalar", "int", values=(rng.choice((0, 1, 2, 3)),)))
            else:
                specs.append(ArgSpec("scalar", self.np_c or "float",
                                     values=(rng.choice((0.25, 0.5, -0.5, 0.125, 1.5)),),
                                     npscalar=bool(self.np_c)))
        return specs


def plain_reason(reason: str) -> str:
    """A counted fallback reason without the generated program's name and location."""
    return re.sub(r"^<loopgen[^>]*>:N:N: ", "", reason)


def _reads(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _replay(program: Program) -> BaseException | None:
    """Run the program in NumPy on its first call; the exception it raised, or None."""
    fn = compile_function(program.source(), tag="loopgen-replay")
    args = builders(program)[0]()
    with np.errstate(all="ignore"), warnings.catch_warnings(), _time_limit(REPLAY_S):
        warnings.simplefilter("ignore")
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - NumPy's (or Python's) answer
            return exc
    return None


class _Slow(BaseException):
    """A time limit fired (a BaseException: the runner's ``except Exception`` would take it
    for the program's answer)."""


def _time_limit(seconds: float) -> Any:
    """A SIGALRM time limit (main thread only; elsewhere none)."""
    import contextlib
    import threading

    @contextlib.contextmanager
    def limit() -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def fire(signum: int, frame: object) -> None:
            raise _Slow()
        old = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return limit()


def generate_loop(seed: int | str, require_compiled: bool = False) -> LoopProgram:
    """The loop program of ``seed`` (the same seed always gives the same program): a
    candidate NumPy rejects is kept one time in six, else another is drawn."""
    rng = random.Random(f"loopgen {seed}")
    program = None
    for _attempt in range(12):
        program = LoopGenerator(rng).program(str(seed))
        try:
            compile(program.source(), "<loopgen>", "exec")
            error = _replay(program)
        except (SyntaxError, _Slow):
            continue
        if error is None or rng.random() < 1 / 6:
            break
    assert program is not None
    program.require_compiled = require_compiled
    return program


# -- running ---------------------------------------------------------------------------------
class _Timed:
    """A dispatcher whose calls are timed (the first call: trace, compile and run)."""

    def __init__(self, jitted: Any) -> None:
        self.jitted = jitted
        self.seconds: list[float] = []

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.jitted(*args)
        finally:
            self.seconds.append(time.perf_counter() - start)

    def stats(self) -> dict[str, Any]:
        return self.jitted.stats()


@dataclass
class LoopOutcome(Outcome):
    """What one loop program's run found, with what the report adds."""

    compiled: bool = False
    compiles: int = 0
    #: the ``auto`` dispatcher's recompile reasons (``stats()["recompiles"]``)
    recompiles: list[str] = field(default_factory=list)
    first_call_s: float = 0.0
    #: the first call whose warning categories differ from NumPy's (reported apart: compiled
    #: kernels raise no floating-point warnings today; the values were then compared again)
    warnings: str = ""


def run_loop_calls(fn: Any, calls: list[Any], returns: list[str] | None,
                   taint: dict[str, Taint], params: list[str], text: str = "",
                   warn: bool = True, require_compiled: bool = False) -> LoopOutcome:
    """Every call through NumPy and the runner's variants (one dispatcher each), compared;
    then whether every call compiled and how many compiles the ``auto`` dispatcher (the
    first to see each call) made. A difference in warnings alone is kept in
    ``outcome.warnings`` and the calls are compared again without them."""
    outcome = _run_variants(fn, calls, returns, taint, params, text, warn)
    if warn and outcome.failure is not None and outcome.failure.kind == "warnings":
        again = _run_variants(fn, calls, returns, taint, params, text, False)
        again.warnings = outcome.failure.text()
        outcome = again
    if outcome.failure is None and require_compiled and not outcome.compiled:
        reason = outcome.reasons.most_common(1)[0][0] if outcome.reasons else \
            "a call ran as Python"
        reason = plain_reason(reason)
        # the reason is part of the key: shrinking keeps this fallback, not any fallback
        outcome.failure = Failure("fell-back", reason[:300], 0, "auto", reason[:60])
    return outcome


def _run_variants(fn: Any, calls: list[Any], returns: list[str] | None,
                  taint: dict[str, Taint], params: list[str], text: str,
                  warn: bool) -> LoopOutcome:
    from autojit import autoroute
    outcome = LoopOutcome()
    cache_dir = tempfile.mkdtemp(prefix="autojit-loopgen-")
    try:
        dispatchers: dict[str, Any] = {name: autoroute(fn, cache_dir=cache_dir, **options)
                                       for name, options in VARIANTS.items()}
        timed = dispatchers["auto"] = _Timed(dispatchers["auto"])

        def warm() -> Any:
            return autoroute(fn, cache_dir=cache_dir)
        _run(fn, calls, returns, taint, params, text, warn, dispatchers, warm, outcome)
        stats = {name: d.stats() for name, d in dispatchers.items()}
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    outcome.compiles = stats["auto"]["compiles"]
    outcome.recompiles = list(stats["auto"]["recompiles"])
    outcome.compiled = outcome.calls > 0 and outcome.fallback_calls == 0 and all(
        s["routes"]["python"] == 0 for s in stats.values())
    outcome.first_call_s = timed.seconds[0] if timed.seconds else 0.0
    return outcome


def run_loop_program(program: LoopProgram, warn: bool = True) -> LoopOutcome:
    """Run ``program``'s calls; its first failure (if any) is in ``outcome.failure``."""
    fn = compile_function(program.source(), tag=f"loopgen {program.seed}")
    return run_loop_calls(fn, builders(program), program.ret, program.taint, program.params,
                          program.source(), warn, program.require_compiled)


def check_loop_repro(fn: Any, calls: list[Any], returns: list[str] | None = None,
                     taint: dict[str, tuple[float, bool]] | None = None,
                     require_compiled: bool = False) -> bool:
    """What a repro script runs: print the first failure (or ``OK``); True when none."""
    import inspect
    params = list(inspect.signature(fn).parameters)
    table = {n: Taint(u, r) for n, (u, r) in (taint or {}).items()}
    outcome = run_loop_calls(fn, calls, returns, table, params, inspect.getsource(fn),
                             require_compiled=require_compiled)
    print("OK: autojit agrees with NumPy" if outcome.failure is None
          else "FAIL " + outcome.failure.text())
    return outcome.failure is None


# -- shrinking -------------------------------------------------------------------------------
def _indent(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 4


def _blocks(p: Program) -> Iterator[Program]:
    """Drop one statement with the block under it (a block left empty gets ``pass``), or
    keep a compound statement's body without its ``else``/``elif`` part."""
    body = p.body
    for i in reversed(range(len(body))):
        end = i + 1
        while end < len(body) and _indent(body[end]) > _indent(body[i]):
            end += 1
        new = body[:i] + body[end:]
        if i > 0 and body[i - 1].rstrip().endswith(":") and \
                (i >= len(new) or _indent(new[i]) <= _indent(body[i - 1])):
            new = new[:i] + [IND * (_indent(body[i - 1]) + 1) + "pass"] + new[i:]
        stripped = body[i].strip()
        if stripped.startswith(("else:", "elif ")):
            yield p.with_(body=new)
            continue
        if new != body:
            yield p.with_(body=new)


def _fills_its_empties(p: Program) -> bool:
    """Every ``eN = np.empty(...)`` still has its row fill (a shrunk candidate returning
    uninitialised memory would 'reproduce' a wrong answer by chance)."""
    empties = [m.group(1) for line in p.body
               if (m := re.match(r"\s*(e\d+) = np\.empty\(", line))]
    return all(any(line.lstrip().startswith(f"{e}[i] = ") for line in p.body)
               for e in empties)


def _return_items(p: Program) -> Iterator[Program]:
    if p.ret and len(p.ret) > 1:
        for i in range(len(p.ret)):
            ret = p.ret[:i] + p.ret[i + 1:]
            yield p.with_(ret=ret, ret_tuple=len(ret) > 1)


def _passes() -> tuple[Callable[[Program], Iterator[Program]], ...]:
    from tests.fuzz.shrink import _arrays, _call_sets, _literals, _params, _values
    return (_call_sets, _blocks, _return_items, _params, _arrays, _values, _literals)


def shrink_loop(program: LoopProgram, failure: Failure, seconds: float = 60.0,
                max_runs: int = 300) -> tuple[LoopProgram, Failure, int]:
    """The smallest program found in ``seconds`` that still fails with ``failure.key``."""
    deadline = time.monotonic() + seconds
    start = time.monotonic()
    try:
        with _time_limit(30.0):
            run_loop_program(program)
    except _Slow:
        pass
    #: a candidate may loop for ever (a ``while`` without its counter): a time limit
    limit = 2.0 + 3 * (time.monotonic() - start)
    #: a program NumPy runs stays one NumPy runs (``return it7`` of a removed ``it7``
    #: would 'reproduce' most failures)
    runs_in_numpy = _replay(program) is None
    runs, best, best_failure = 0, program, failure
    progress = True
    while progress and time.monotonic() < deadline and runs < max_runs:
        progress = False
        for make in _passes():
            for candidate in make(best):
                if time.monotonic() > deadline or runs >= max_runs:
                    break
                try:
                    ast.parse(candidate.source())
                except SyntaxError:
                    continue
                if not _fills_its_empties(candidate):
                    continue
                runs += 1
                try:
                    if runs_in_numpy and _replay(candidate) is not None:
                        continue
                    with _time_limit(limit):
                        outcome = run_loop_program(candidate)
                except (Exception, _Slow):  # noqa: BLE001 - one the harness cannot build
                    continue
                if outcome.failure is not None and outcome.failure.key == failure.key:
                    best, best_failure, progress = candidate, outcome.failure, True
                    break
            if progress:
                break
    return best, best_failure, runs


# -- the pool worker and the report ----------------------------------------------------------
def loop_worker_main(conn: Any, cache_dir: str, shrink_seconds: float, warn: bool,
                     require_compiled: bool = False) -> None:
    """``tests/fuzz/pool.worker_main`` for loop programs (the record adds EXTRA)."""
    import os

    from tests.fuzz.pool import _record
    os.environ["AUTOJIT_CACHE_DIR"] = cache_dir
    warnings.simplefilter("ignore")
    conn.send(("ready", None, None))
    while True:
        message = conn.recv()
        if message is None:
            return
        seed, budget = message
        try:
            program = generate_loop(seed, require_compiled)
            conn.send(("program", seed, {"repro": program.repro(f"seed {seed}"),
                                         "ops": sorted(program.ops()),
                                         "statements": len(program.body)}))
            outcome = run_loop_program(program, warn)
        except Exception:  # noqa: BLE001 - the harness itself failed: say so, go on
            import traceback
            conn.send(("error", seed, traceback.format_exc()))
            continue
        extra = {key: getattr(outcome, key) for key in EXTRA}
        if outcome.failure is None:
            conn.send(("done", seed, {**_record(seed, outcome, program, None, False), **extra}))
            continue
        conn.send(("found", seed, {**_record(seed, outcome, program, outcome.failure, False),
                                   **extra}))
        small, failure, runs = program, outcome.failure, 0
        if budget > 0:
            small, failure, runs = shrink_loop(program, outcome.failure, budget)
        conn.send(("done", seed, {**_record(seed, outcome, small, failure, True, runs),
                                  **extra}))


@dataclass
class LoopReport:
    """The per-program figures the pool's Results does not keep."""

    compiled: int = 0
    compiles: Counter = field(default_factory=Counter)
    first_call_s: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: recompile reasons (counted once per program, as the fallback reasons per call)
    recompiles: Counter = field(default_factory=Counter)
    #: programs compiled more than once for another reason than a size 1
    recompiled: int = 0

    def add(self, record: dict[str, Any]) -> None:
        if "compiled" not in record:
            return
        if record["warnings"]:
            self.warnings.append(f"{record['seed']}: {record['warnings']}")
        self.compiled += bool(record["compiled"])
        self.compiles[record["compiles"]] += 1
        self.first_call_s.append(record["first_call_s"])
        reasons = record.get("recompiles", [])
        for reason in reasons:
            self.recompiles[plain_reason(reason)] += 1
        self.recompiled += record["compiles"] > 1 and not all(
            size_one_only(reason) for reason in reasons)


def size_one_only(reason: str) -> bool:
    """Whether a recompile's reason is only arguments whose axes of size 1 changed (a size 1
    is specialised for broadcasting: one more compile by design)."""
    return all(SIZE_ONE_CHANGE in part for part in reason.split("; "))


def _pool_class() -> Any:
    from tests.fuzz.pool import Pool

    class LoopPool(Pool):
        """The fuzzer's pool, keeping the loop figures of every finished program."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.report = LoopReport()

        def _handle(self, w: Any, message: tuple, results: Any, progress: Any) -> None:
            tag, _seed, payload = message
            if tag == "done":
                self.report.add(payload)
            super()._handle(w, message, results, progress)
    return LoopPool


def is_internal(kind: str) -> bool:
    return kind.split(":")[0] in INTERNAL


def report_text(results: Any, report: LoopReport) -> str:
    """Programs, wrong answers, internal exceptions, compiled, compiles, reasons, times."""
    failures = results.failures
    internal = [f for f in failures if is_internal(f["kind"])]
    fell = [f for f in failures if f["kind"] == "fell-back"]
    wrong = [f for f in failures if f not in internal and f not in fell]
    done = max(results.programs - len(results.harness_errors), 0)
    times = sorted(report.first_call_s)

    def pct(q: float) -> str:
        return f"{1000 * times[min(len(times) - 1, int(q * len(times)))]:.0f}" if times else "-"
    lines = [
        f"programs {results.programs} ({results.calls} calls, {results.numpy_raised} where "
        f"NumPy raised), {results.seconds:.0f} s" + (" (interrupted)" if results.interrupted
                                                     else ""),
        f"wrong answers: {len(wrong)}",
        f"internal exceptions reaching the user: {len(internal)}",
        f"compiled (routes['python'] == 0 on every call): {report.compiled} of {done}"
        + (f" ({100 * report.compiled / done:.0f}%)" if done else ""),
        "compiles per program (the auto dispatcher): " + ", ".join(
            f"{k}: {v}" for k, v in sorted(report.compiles.items())),
        f"compiled more than once other than for a size 1 (specialised for broadcasting): "
        f"{report.recompiled}",
        f"first call ms: p50 {pct(0.5)}, p90 {pct(0.9)}, p99 {pct(0.99)}, "
        f"max {pct(1.0)}"]
    lines.append(f"programs whose warnings differ from NumPy's (values compared again, not "
                 f"counted above): {len(report.warnings)}")
    lines += [f"  {w[:160]}" for w in report.warnings[:5]]
    if fell:
        lines.append(f"fell back (--require-compiled): {len(fell)}")
    if results.harness_errors:
        lines.append(f"harness errors: {len(results.harness_errors)} (first below)")
        lines.append(results.harness_errors[0])
    if results.numpy_hangs:
        lines.append(f"do not finish in NumPy either: {', '.join(results.numpy_hangs)}")
    classes = Counter(f"{f['kind']}" + (f" [{f['where']}]" if f.get("where") else "")
                      for f in failures)
    if classes:
        lines.append("failures by class:")
        lines += [f"  {n:4d}  {c}" for c, n in classes.most_common()]
    if results.reasons:
        lines.append("fallback reasons (calls):")
        reasons: Counter = Counter()
        for r, n in results.reasons.items():
            reasons[plain_reason(r)] += n
        lines += [f"  {n:5d}  {r}" for r, n in reasons.most_common(20)]
    if report.recompiles:
        lines.append("recompile reasons of the auto dispatcher (programs):")
        lines += [f"  {n:5d}  {r[:160]}" for r, n in report.recompiles.most_common(20)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", default="0", help="run seed; program i is SEED:i")
    parser.add_argument("--count", type=int, default=100, help="number of programs")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="stop starting programs after this many seconds")
    parser.add_argument("--require-compiled", action="store_true",
                        help="a program with a call that ran as Python is a failure")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds one program's calls may take (then: a failure)")
    parser.add_argument("--shrink-seconds", type=float, default=30.0,
                        help="time to shrink each failure (0: do not shrink)")
    parser.add_argument("--max-shrinks", type=int, default=30)
    parser.add_argument("--no-warnings", action="store_true",
                        help="do not compare the warning categories of the calls")
    parser.add_argument("--out", default=None, help="folder for the repros")
    parser.add_argument("--json", default=None, help="write every failure record here")
    parser.add_argument("--show", default=None, help="print one seed's repro and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        print(generate_loop(args.show, args.require_compiled).repro(f"seed {args.show}"))
        return 0
    from tests.fuzz.pool import write_repro
    out = Path(args.out) if args.out else Path(f"/tmp/autojit-loopgen-{args.seed}")
    out.mkdir(parents=True, exist_ok=True)

    def progress(record: dict) -> None:
        path = write_repro(record, out)
        print(f"FAIL {record['failure']['text'][:200]}\n     -> {path}", flush=True)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupt)
    worker = functools.partial(loop_worker_main, require_compiled=args.require_compiled)
    pool = _pool_class()(args.jobs, args.timeout, args.shrink_seconds,
                         not args.no_warnings, worker=worker, max_shrinks=args.max_shrinks)
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    results = pool.run((f"{args.seed}:{i}" for i in range(args.count)), deadline, progress)
    print(report_text(results, pool.report))
    if results.failures:
        print(f"{len(results.failures)} repros in {out}")
    if args.json:
        Path(args.json).write_text(json.dumps({"records": results.records,
                                               "reasons": results.reasons.most_common()},
                                              indent=1))
    return 1 if results.failures or results.harness_errors else 0


if __name__ == "__main__":
    sys.exit(main())
