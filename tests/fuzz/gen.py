"""Random NumPy programs, written as source text.

The generator knows NumPy, not autojit: it draws statements from NumPy's API (ufuncs,
reductions with every axis form, scans, views, writes into arguments, matmul, casts,
creation, Python scalar arithmetic) over the values computed so far, and runs each candidate
statement in plain NumPy on the first call's inputs to learn the shapes and dtypes it made, so
later statements combine earlier ones (data flow). A statement NumPy rejects is kept now and
then, as the program's last: autojit must raise the same exception type.
"""

from __future__ import annotations

import contextlib
import random
import re
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tests.fuzz.program import EXACT, Program, Taint
from tests.fuzz.values import (
    ARRAY_DTYPES,
    DTYPE_WEIGHTS,
    LAYOUTS,
    PY_KINDS,
    ArgSpec,
    bcast_values,
    call_text,
    one_python,
    one_value,
    py_literal,
    random_array_spec,
    random_values,
)

from autojit.lower_cpu.ulp_bounds import numpy_extra_ulps, ulp_bound

#: transcendental unary ufuncs (inexact: docs/ulp.md)
UNARY_INEXACT = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                 "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2",
                 "log10", "log1p", "cbrt")
#: exact unary ufuncs (IEEE-exact or integer)
UNARY_EXACT = ("negative", "absolute", "square", "sqrt")
UNARY_EXACT_RARE = ("positive", "fabs", "reciprocal", "conjugate", "degrees", "radians",
                    "deg2rad", "rad2deg")
#: discontinuous unary ops: only ever applied to exact values
UNARY_DISCRETE = ("floor", "ceil", "isnan", "isfinite", "logical_not", "sign", "round")
UNARY_DISCRETE_RARE = ("trunc", "rint", "isinf", "signbit", "invert", "bitwise_not", "fix")
BINARY_INEXACT = ("power", "arctan2", "hypot")
BINARY_INEXACT_RARE = ("logaddexp", "logaddexp2", "float_power")
BINARY_EXACT = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
BINARY_EXACT_RARE = ("true_divide", "fmax", "fmin", "nextafter")
BINARY_DISCRETE = ("floor_divide", "remainder", "equal", "less", "greater", "less_equal",
                   "logical_and", "bitwise_and")
BINARY_DISCRETE_RARE = ("mod", "fmod", "not_equal", "greater_equal", "logical_or",
                        "logical_xor", "bitwise_or", "bitwise_xor", "left_shift",
                        "right_shift", "heaviside", "copysign", "gcd", "lcm")
OPERATORS_EXACT = ("+", "-", "*", "/")
OPERATORS_DISCRETE = ("//", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=")
#: bounds not in the table: compositions of exp and log1p (see program.py)
COMPOSED_ULPS = {"logaddexp": 8.0, "logaddexp2": 8.0}

#: (common, rare) per group: NumPy's everyday functions, and the rest of the family
REDUCTIONS_INEXACT = (("sum", "mean", "prod", "std", "var"), ("nansum", "nanmean"))
REDUCTIONS_EXACT = (("max", "min"), ("amax", "amin", "nanmax", "nanmin", "ptp"))
REDUCTIONS_DISCRETE = (("any", "all", "argmax", "argmin"), ("count_nonzero",))
METHOD_REDUCTIONS = {"sum", "prod", "mean", "std", "var", "max", "min", "any", "all",
                     "argmax", "argmin", "ptp"} - {"ptp"}
TAKES_DTYPE = {"sum", "prod", "mean", "std", "var", "nansum", "nanmean"}
SIZE_CHOICES = (0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 11)
MAX_SIZE = 3000
#: seconds the generator's NumPy run of a candidate program may take
REPLAY_S = 2.0


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float, np.generic)) and not isinstance(v, np.ndarray)


def _is_float(v: Any) -> bool:
    return (isinstance(v, float) or
            (isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype.kind == "f"))


def _float_dtype(v: Any) -> str | None:
    if isinstance(v, float):
        return "float64"
    if isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype.kind == "f":
        return np.asarray(v).dtype.name
    return None


def op_ulps(name: str, result: Any) -> float:
    """The documented bound of one inexact elementwise op at the result's dtype (0 when
    the result is not a float: the op was exact on it), plus what NumPy's AVX-512 loops
    add where this NumPy runs them (the table is against its AVX2 loops: ulp_bounds.py)."""
    dtype = _float_dtype(result)
    if dtype is None:
        return 0.0
    if name in COMPOSED_ULPS:
        return COMPOSED_ULPS[name] + numpy_extra_ulps()
    lookup = "power" if name == "float_power" else name
    bound = ulp_bound(lookup, dtype)
    if bound is None:        # float16: computed in float32, rounded once more
        return (ulp_bound(lookup, "float32") or 4.0) + 1.0 + numpy_extra_ulps()
    return float(bound) + numpy_extra_ulps(lookup, dtype)


class Generator:
    """Draws one program from ``rng``."""

    def __init__(self, rng: random.Random, max_statements: int = 12) -> None:
        self.rng = rng
        self.max_statements = max_statements
        self.body: list[str] = []
        self.taint: dict[str, Taint] = {}
        self.counter = 0
        self.stopped = False

    def choose(self, common: tuple, rare: tuple, p_rare: float = 0.15) -> Any:
        """One of NumPy's everyday functions, or now and then one of the rest."""
        return self.rng.choice(rare if rare and self.rng.random() < p_rare else common)

    # -- signature and calls -----------------------------------------------------------------
    def _signature(self) -> None:
        rng = self.rng
        self.symbols = {s: rng.choice(SIZE_CHOICES[1:]) for s in "nmk"}
        count = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        self.param_kinds: list[dict[str, Any]] = []
        for _i in range(count):
            roll = rng.random()
            arrays = [j for j, p in enumerate(self.param_kinds) if p["kind"] == "array"]
            if roll < 0.08 and arrays:
                j = rng.choice(arrays)
                nd = len(self.param_kinds[j]["dims"])
                views = ["same"] + (["rev"] if nd else []) + (["T"] if nd >= 2 else [])
                self.param_kinds.append({"kind": "alias", "of": j, "view": rng.choice(views)})
            elif roll < 0.28:
                if rng.random() < 0.6:
                    self.param_kinds.append({"kind": "py", "type": rng.choice(PY_KINDS)})
                else:
                    self.param_kinds.append({"kind": "np", "dtype": self._dtype()})
            else:
                nd = rng.choice((0, 1, 1, 1, 2, 2, 2, 3))
                dims = [self._dim() for _ in range(nd)]
                self.param_kinds.append({"kind": "array", "dtype": self._dtype(),
                                         "dims": dims})
        self.params = [f"a{i}" for i in range(count)]

    def _dtype(self) -> str:
        return self.rng.choices(ARRAY_DTYPES, DTYPE_WEIGHTS)[0]

    def _dim(self) -> Any:
        roll = self.rng.random()
        if roll < 0.7:
            return self.rng.choice("nnmk")
        if roll < 0.85:
            return 1
        return ("lit", self.rng.choice(SIZE_CHOICES))

    def make_call(self, symbols: dict[str, int], layouts: list[str] | None,
                  independent: bool = False) -> list[ArgSpec]:
        """One call's arguments for ``symbols`` (sizes) and ``layouts`` (None: random)."""
        rng = self.rng
        specs: list[ArgSpec] = []
        for i, p in enumerate(self.param_kinds):
            if p["kind"] == "py":
                specs.append(ArgSpec("scalar", p["type"], values=(one_python(rng, p["type"]),)))
            elif p["kind"] == "np":
                specs.append(ArgSpec("scalar", p["dtype"], values=(one_value(rng, p["dtype"],
                                                                             0.2),),
                                     npscalar=True))
            elif p["kind"] == "alias":
                base = specs[p["of"]]
                specs.append(ArgSpec("alias", base.dtype, alias_of=p["of"], view=p["view"]))
            else:
                shape = []
                for d in p["dims"]:
                    if independent and d != 1:
                        shape.append(rng.choice(SIZE_CHOICES))
                    elif isinstance(d, str):
                        shape.append(symbols[d])
                    elif isinstance(d, tuple):
                        shape.append(d[1] if not independent else rng.choice(SIZE_CHOICES))
                    else:
                        shape.append(d)
                layout = layouts[i] if layouts else rng.choice(LAYOUTS)
                specs.append(random_array_spec(rng, p["dtype"], tuple(shape), layout))
        return specs

    def _revalue(self, specs: list[ArgSpec]) -> list[ArgSpec]:
        """Same shapes and layouts, new values."""
        rng = self.rng
        out = []
        for s in specs:
            if s.kind == "array":
                if s.layout == "bcast":
                    out.append(s.with_(values=bcast_values(rng, s.dtype, s.shape, s.bcast_axis)))
                else:
                    out.append(s.with_(values=tuple(random_values(rng, s.dtype, len(s.values)))))
            elif s.kind == "scalar":
                value = one_python(rng, s.dtype) if not s.npscalar else one_value(rng, s.dtype,
                                                                                    0.2)
                out.append(s.with_(values=(value,)))
            else:
                out.append(s)
        return out

    # -- running candidates ------------------------------------------------------------------
    def _replay(self, lines: list[str]) -> tuple[dict[str, Any], BaseException | None, int]:
        """Run ``lines`` on fresh first-call arguments; return the namespace, the first
        exception and the index of the line that raised."""
        ns: dict[str, Any] = {"np": np}
        exec(self.first_call_code, ns)
        args = ns["call_1"]()
        ns.update(zip(self.params, args))
        with np.errstate(all="ignore"), warnings.catch_warnings(), _time_limit(REPLAY_S):
            warnings.simplefilter("ignore")
            for i, line in enumerate(lines):
                try:
                    exec(line, ns)
                except Exception as exc:  # noqa: BLE001 - NumPy's answer
                    return ns, exc, i
        return ns, None, len(lines)

    def values(self, ns: dict[str, Any]) -> list[tuple[str, Any]]:
        names = self.params + [f"v{i}" for i in range(1, self.counter + 1)]
        return [(n, ns[n]) for n in names if n in ns]

    def pick(self, ns: dict[str, Any], pred: Callable[[Any], bool],
             exact: bool = False) -> str | None:
        """A name whose value satisfies ``pred`` (exact values only for discrete ops)."""
        names = [n for n, v in self.values(ns)
                 if pred(v) and (not exact or self.taint.get(n, EXACT).exact)]
        return self.rng.choice(names) if names else None

    def literal(self) -> str:
        rng = self.rng
        if rng.random() < 0.7:
            return py_literal(one_python(rng, rng.choice(("int", "int", "float", "float",
                                                          "bool"))))
        dtype = self._dtype()
        value = one_value(rng, dtype, 0.3)
        return f"np.{dtype if dtype != 'bool' else 'bool_'}({py_literal(value)})"

    def operand(self, ns: dict[str, Any], exact: bool = False,
                pred: Callable[[Any], bool] | None = None) -> str:
        """A value name or a literal scalar."""
        if self.rng.random() < 0.8:
            name = self.pick(ns, pred or (lambda v: _is_array(v) or _is_scalar(v)), exact)
            if name is not None:
                return name
        return self.literal()

    def taint_of(self, text: str) -> Taint:
        """The taint of an expression: the join of the names it mentions."""
        out = EXACT
        for name, t in self.taint.items():
            if name in _words(text):
                out = out.join(t)
        return out

    # -- statements --------------------------------------------------------------------------
    def _axis(self, nd: int, allow_tuple: bool = True) -> str | None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25 or nd == 0:
            return None if rng.random() < 0.7 or nd else "None"
        if roll < 0.3:
            return "None"
        if roll < 0.75 or not allow_tuple:
            axis = rng.randrange(-nd, nd) if rng.random() > 0.03 else nd
            return str(axis)
        k = rng.randint(1, nd)
        axes = rng.sample(range(nd), k)
        axes = [a - nd if rng.random() < 0.3 else a for a in axes]
        if rng.random() < 0.03:
            axes.append(axes[0])
        return "(" + ", ".join(map(str, axes)) + ("," if len(axes) == 1 else "") + ")"

    def st_unary(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        group = rng.choices(("inexact", "exact", "discrete", "op"), (4, 3, 3, 2))[0]
        if group == "discrete":
            x = self.operand(ns, exact=True)
            name = self.choose(UNARY_DISCRETE, UNARY_DISCRETE_RARE)
            if name == "round" and rng.random() < 0.5:
                return f"np.round({x}, {rng.randint(-1, 3)})", EXACT
            return f"np.{name}({x})", EXACT
        if group == "op":
            x = self.operand(ns, exact=rng.random() < 0.5)
            form = rng.choice(("-{}", "+{}", "~{}", "abs({})"))
            if form == "~{}" and not self.taint_of(x).exact:
                form = "-{}"
            return form.format(x), self.taint_of(x)
        x = self.operand(ns)
        name = rng.choice(UNARY_INEXACT) if group == "inexact" else \
            self.choose(UNARY_EXACT, UNARY_EXACT_RARE)
        return self._with_op(f"np.{name}({x})", x, name if group == "inexact" else None)

    def _bounded(self, op: str, exponent: str, ns: dict[str, Any]) -> str:
        """A small exponent/shift for ``**`` and ``<<`` on Python ints: ``2 ** 2**63`` never
        finishes, in NumPy or anywhere (arrays and NumPy scalars are fixed-width: kept)."""
        if op.rstrip("=") not in ("**", "<<"):
            return exponent
        try:
            value = eval(exponent, dict(ns))
        except Exception:  # noqa: BLE001 - not a value: keep it
            return exponent
        if isinstance(value, (bool, int)) and not isinstance(value, np.generic):
            return str(self.rng.randint(0, 4))
        return exponent

    def _dtype_kwarg(self, x: str) -> list[str]:
        """``dtype=`` for a reduction or scan of ``x``: not an integer or bool one for an
        inexact ``x`` (that casts each term to an integer, where an ULP can flip it)."""
        dtype = self._dtype()
        if np.dtype(dtype).kind in "biu" and not self.taint.get(x, EXACT).exact:
            return []
        return [f"dtype=np.{dtype}"]

    def _with_op(self, expr: str, operands: str, inexact_name: str | None,
                 reduced: bool = False) -> tuple[str, Taint]:
        """``expr`` and its taint: the operands' plus the op's own (the op's bound is
        resolved once the result's dtype is known, in ``program``)."""
        t = self.taint_of(operands)
        self._operand_taint = t
        if inexact_name is not None or reduced:
            t = t.join(Taint(0.0, reduced))
            self._pending_op = inexact_name
        return expr, t

    def st_binary(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        group = rng.choices(("inexact", "exact", "discrete", "op", "opd", "pow"),
                            (2, 4, 3, 4, 3, 1))[0]
        exact = group in ("discrete", "opd")
        x = self.operand(ns, exact)
        y = self.operand(ns, exact)
        if rng.random() < 0.15:
            x = self.pick(ns, _is_array, exact) or x
        if group == "discrete":
            return f"np.{self.choose(BINARY_DISCRETE, BINARY_DISCRETE_RARE)}({x}, {y})", EXACT
        if group == "opd":
            op = rng.choice(OPERATORS_DISCRETE)
            return f"{x} {op} {self._bounded(op, y, ns)}", EXACT
        if group == "op":
            return self._with_op(f"{x} {rng.choice(OPERATORS_EXACT)} {y}", f"{x} {y}", None)
        if group == "pow":
            y = self._bounded("**", y, ns)
            return self._with_op(f"{x} ** {y}", f"{x} {y}", "power")
        name = self.choose(BINARY_INEXACT, BINARY_INEXACT_RARE) if group == "inexact" else \
            self.choose(BINARY_EXACT, BINARY_EXACT_RARE)
        return self._with_op(f"np.{name}({x}, {y})", f"{x} {y}",
                             name if group == "inexact" else None)

    def st_where(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        cond = self.pick(ns, lambda v: np.asarray(v).dtype == bool, exact=True)
        if cond is None or rng.random() < 0.4:
            x = self.operand(ns, exact=True)
            cond = f"{x} {rng.choice(('>', '<', '==', '!=', '>='))} {self.literal()}"
        x, y = self.operand(ns), self.operand(ns)
        if rng.random() < 0.3:   # a_max is clip's third operand (and taints its result)
            low = rng.choice((self.literal(), "None"))
            high = self.operand(ns)
            return self._with_op(f"np.clip({x}, {low}, {high})", f"{x} {high}", None)
        if rng.random() < 0.05:
            return f"np.where({cond})[0]", EXACT
        return self._with_op(f"np.where({cond}, {x}, {y})", f"{x} {y}", None)

    def st_reduce(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        group = rng.choices(("inexact", "exact", "discrete"), (5, 2, 2))[0]
        x = self.pick(ns, lambda v: _is_array(v) or rng.random() < 0.1, group == "discrete")
        if x is None:
            return None
        nd = np.ndim(ns[x])
        name = self.choose(*{"inexact": REDUCTIONS_INEXACT, "exact": REDUCTIONS_EXACT,
                             "discrete": REDUCTIONS_DISCRETE}[group])
        kwargs = []
        axis = self._axis(nd, allow_tuple=name not in ("argmax", "argmin"))
        if axis is not None:
            kwargs.append(f"axis={axis}")
        if name not in ("count_nonzero",) and rng.random() < 0.3:
            kwargs.append(f"keepdims={rng.random() < 0.7}")
        if name in TAKES_DTYPE and rng.random() < 0.25:
            kwargs += self._dtype_kwarg(x)
        if name in ("std", "var") and rng.random() < 0.3:
            kwargs.append(f"ddof={rng.choice((0, 1, 2))}")
        method = name in METHOD_REDUCTIONS and rng.random() < 0.4 and _is_array(ns[x])
        text = (f"{x}.{name}({', '.join(kwargs)})" if method
                else f"np.{name}({', '.join([x] + kwargs)})")
        if group == "discrete":
            return text, EXACT
        return self._with_op(text, x, None, reduced=group == "inexact")

    def st_scan(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        x = self.pick(ns, _is_array)
        if x is None:
            return None
        nd = ns[x].ndim
        name = rng.choice(("cumsum", "cumprod", "cumsum"))
        kwargs = []
        if nd and rng.random() < 0.7:
            kwargs.append(f"axis={rng.randrange(-nd, nd)}")
        if rng.random() < 0.2:
            kwargs += self._dtype_kwarg(x)
        if rng.random() < 0.3:
            return self._with_op(f"{x}.{name}({', '.join(kwargs)})", x, None, True)
        return self._with_op(f"np.{name}({', '.join([x] + kwargs)})", x, None, True)

    def _slice(self, n: int) -> str:
        rng = self.rng
        step = rng.choice((None, None, 1, 2, -1, -2, 3))
        start = rng.choice((None, 0, 1, -1, rng.randint(-n - 1, n + 1)))
        stop = rng.choice((None, None, -1, rng.randint(-n - 1, n + 1)))
        text = f"{'' if start is None else start}:{'' if stop is None else stop}"
        return text + (f":{step}" if step is not None else "")

    def _index(self, shape: tuple[int, ...]) -> str:
        """A basic index: slices with steps, integers, None, Ellipsis."""
        rng = self.rng
        parts: list[str] = []
        dims = list(shape)
        if rng.random() < 0.2 and dims:
            parts.append("...")
            dims = dims[-rng.randint(0, len(dims)):] if rng.random() < 0.5 else []
        for n in dims[: rng.randint(1, max(1, len(dims)))]:
            roll = rng.random()
            if roll < 0.55:
                parts.append(self._slice(n))
            elif roll < 0.85:
                parts.append(str(rng.randint(-n, n - 1) if n else rng.choice((0, -1))))
            else:
                parts.append("None")
        if rng.random() < 0.15:
            parts.insert(rng.randint(0, len(parts)), "None")
        if not parts:
            parts = ["..."]
        return ", ".join(parts)

    def st_view(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        x = self.pick(ns, _is_array)
        if x is None:
            return None
        v = ns[x]
        nd, size = v.ndim, v.size
        forms: list[str] = [f"{x}[{self._index(v.shape)}]", f"{x}[{self._index(v.shape)}]",
                            f"{x}[{self._index(v.shape)}]", f"{x}.T", f"{x}.ravel()",
                            f"{x}[::-1]", f"{x}[None]", f"{x}[..., None]", f"np.squeeze({x})",
                            f"{x}.reshape(-1)",
                            f"np.expand_dims({x}, {rng.randint(-nd - 1, nd)})"]
        rare = [f"{x}.flatten()", f"np.ravel({x}, order='F')", f"{x}.copy()",
                f"np.ascontiguousarray({x})"]
        if nd >= 2:
            perm = list(range(nd))
            rng.shuffle(perm)
            forms += [f"np.transpose({x}, {tuple(perm)})"]
            rare += [f"np.swapaxes({x}, {rng.randrange(nd)}, {rng.randrange(-nd, nd)})",
                     f"np.moveaxis({x}, 0, -1)"]
        if nd:
            forms += [f"{x}[{rng.randint(-3, 3)}]"]
            rare += [f"np.flip({x}, {rng.randrange(-nd, nd)})", f"{x}[[0, -1]]"]
        divisors = [d for d in range(1, size + 1) if size % d == 0] or [1]
        d = rng.choice(divisors)
        shapes = [(size,), (d, size // d), (size // d, 1, d), (-1, d) if d else (size,)]
        forms.append(f"{x}.reshape({rng.choice(shapes)!r})")
        forms.append(f"np.reshape({x}, {rng.choice(shapes)!r})")
        rare.append(f"np.broadcast_to({x}, (2,) + {x}.shape)")
        mask = self.pick(ns, lambda m: _is_array(m) and m.dtype == bool and m.shape == v.shape,
                         exact=True)
        if mask is not None:
            rare.append(f"{x}[{mask}]")
        return self._with_op(self.choose(tuple(forms), tuple(rare)), x, None)

    def st_write(self, ns: dict[str, Any]) -> str | None:
        rng = self.rng
        target = self.pick(ns, lambda v: _is_array(v))
        if target is None:
            return None
        t = ns[target]
        extra = EXACT
        value = self.operand(ns)
        if rng.random() < 0.3:
            value = f"{value} {rng.choice(('*', '+', '-'))} {self.operand(ns)}"
        roll = rng.random()
        if roll < 0.3:
            line = f"{target}[{self._index(t.shape)}] = {value}"
        elif roll < 0.4:
            line = f"{target}[...] = {value}"
        elif roll < 0.5 and t.ndim:
            idx = ", ".join(str(rng.randint(-n, n - 1) if n else 0) for n in t.shape)
            line = f"{target}[{idx}] = {value}"
        elif roll < 0.75:
            op = rng.choice(("+=", "-=", "*=", "+=", "/=", "//=", "%=", "**=", "&=", "|=",
                             "^=", "<<=", ">>="))
            exact = op not in ("+=", "-=", "*=", "/=", "**=")
            if exact:
                value = self.operand(ns, exact=True)
                if not self.taint.get(target, EXACT).exact:
                    op = "+="
            if op == "**=":
                extra = Taint(op_ulps("power", t), False)
            line = f"{target} {op} {self._bounded(op, value, ns)}"
        elif roll < 0.88:
            name = rng.choice(BINARY_EXACT + BINARY_EXACT_RARE +
                              ("sin", "exp", "negative", "sqrt", "floor"))
            out = target if rng.random() < 0.8 else f"{target}[::-1]"
            if name in BINARY_EXACT + BINARY_EXACT_RARE:
                line = f"np.{name}({self.operand(ns)}, {self.operand(ns)}, out={out})"
            elif name == "floor":
                line = f"np.floor({self.operand(ns, exact=True)}, out={out})"
            else:
                x = self.operand(ns)
                line = f"np.{name}({x}, out={out})"
                if name in UNARY_INEXACT:
                    extra = Taint(op_ulps(name, t), False)
        else:
            mask = self.pick(ns, lambda m: _is_array(m) and m.dtype == bool and
                             m.shape == t.shape, exact=True)
            if mask is None:
                mask = f"{self.pick(ns, lambda m: m is t, exact=True) or target} > 0"
                if not self.taint.get(target, EXACT).exact:
                    return None
            line = f"{target}[{mask}] = {self.operand(ns)}"
        self._write_taint = (target, self.taint_of(line).join(extra))
        return line

    def st_matmul(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        x = self.pick(ns, lambda v: _is_array(v) and v.ndim >= 1)
        if x is None:
            return None
        xv = ns[x]
        fits = [n for n, v in self.values(ns) if _is_array(v) and v.ndim >= 1 and
                (v.shape[0] if v.ndim == 1 else v.shape[-2]) == xv.shape[-1]]
        y = rng.choice(fits) if fits and rng.random() < 0.85 else \
            (f"{x}.T" if rng.random() < 0.6 else self.pick(ns, _is_array) or x)
        form = self.choose(("{} @ {}", "np.matmul({}, {})", "np.dot({}, {})", "{} @ {}"),
                           ("np.inner({}, {})", "np.outer({}, {})", "np.vdot({}, {})"))
        return self._with_op(form.format(x, y), f"{x} {y}", None, reduced=True)

    def st_astype(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        dtype = self._dtype()
        to_float = np.dtype(dtype).kind == "f"
        x = self.pick(ns, lambda v: _is_array(v) or _is_scalar(v), exact=not to_float)
        if x is None:
            return None
        common = [f"{x}.astype(np.{dtype})"]
        rare = [f"np.asarray({x}, dtype=np.{dtype})",
                f"np.{dtype}({x})" if dtype != "bool" else f"np.bool_({x})",
                f"{x}.astype(np.{dtype}, copy=False)", f"np.array({x}, dtype=np.{dtype})",
                f"{x}.astype(np.{dtype}, casting='safe')"]
        if not _is_array(ns[x]):
            common, rare = [f"np.{dtype}({x})" if dtype != "bool" else f"np.bool_({x})"], []
        return self._with_op(self.choose(tuple(common), tuple(rare), 0.2), x, None)

    def _shape_text(self, ns: dict[str, Any]) -> str:
        rng = self.rng
        x = self.pick(ns, lambda v: _is_array(v) and v.ndim >= 1, exact=False)
        roll = rng.random()
        if x is not None and roll < 0.35:
            return f"{x}.shape"
        if x is not None and roll < 0.6:
            return f"{x}.shape[{rng.randrange(-ns[x].ndim, ns[x].ndim)}]"
        if x is not None and roll < 0.7:
            return f"len({x})"
        if x is not None and roll < 0.75:
            return f"({x}.size, 2)"
        return repr(tuple(rng.choice(SIZE_CHOICES) for _ in range(rng.randint(0, 3))))

    def st_create(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        shape = self._shape_text(ns)
        dtype = f", dtype=np.{self._dtype()}" if rng.random() < 0.5 else ""
        x = self.pick(ns, _is_array) or "a0"
        n = shape if "shape[" in shape or "len(" in shape else str(rng.choice(SIZE_CHOICES))
        lit = self.literal()
        forms = [f"np.zeros({shape}{dtype})", f"np.ones({shape}{dtype})",
                 f"np.full({shape}, {lit}{dtype})", f"np.zeros_like({x}{dtype})",
                 f"np.ones_like({x}{dtype})",
                 f"np.arange({n}{dtype})",
                 f"np.arange({rng.randint(-3, 3)}, {n}, {rng.choice((1, 2, -1, 0.5))})",
                 f"np.linspace({self.literal()}, {self.literal()}, {n})",
                 f"np.linspace(0.0, 1.0, {n}, endpoint={rng.random() < 0.5})",
                 f"np.eye({n}{dtype})", f"np.eye({n}, {rng.choice(SIZE_CHOICES)}, "
                                        f"k={rng.randint(-2, 2)})"]
        return self.choose(tuple(forms), (f"np.identity({n})", f"np.full_like({x}, {lit})")), \
            EXACT

    def st_python(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        scalar = self.pick(ns, lambda v: isinstance(v, (bool, int, float)), exact=True)
        arr = self.pick(ns, lambda v: _is_array(v) and v.ndim >= 1)
        sources = [self.literal()]
        if scalar is not None:
            sources += [scalar, scalar]
        if arr is not None:
            sources += [f"{arr}.shape[{rng.randrange(ns[arr].ndim)}]", f"{arr}.ndim",
                        f"{arr}.size", f"len({arr})"]
        one = self.pick(ns, lambda v: np.size(v) == 1 and np.asarray(v).dtype.kind in "biuf",
                        exact=True)
        if one is not None:
            sources += [f"float({one})", f"int({one})", f"bool({one})",
                        f"{one}.item()" if hasattr(ns[one], "item") else f"float({one})"]
        a, b = rng.choice(sources), rng.choice(sources)
        op = rng.choice(("+", "-", "*", "/", "//", "%", "**", ">", "==", "<", "and", "or"))
        b = self._bounded(op, b, ns)
        forms = [f"{a} {op} {b}", f"-{a}", f"not {a}", f"min({a}, {b})", f"max({a}, {b})",
                 f"abs({a})", f"{a} {op} {b} {rng.choice(('+', '*'))} {self.literal()}"]
        return rng.choice(forms), EXACT

    def st_concat(self, ns: dict[str, Any]) -> tuple[str, Taint] | None:
        rng = self.rng
        x = self.pick(ns, lambda v: _is_array(v) and v.ndim >= 1)
        if x is None:
            return None
        nd = ns[x].ndim
        same = [n for n, v in self.values(ns) if _is_array(v) and v.ndim == nd]
        y = rng.choice(same)
        form = rng.choice((f"np.concatenate([{x}, {y}], axis={rng.randrange(-nd, nd)})",
                           f"np.stack([{x}, {y}])", f"np.hstack([{x}, {y}])",
                           f"np.concatenate([{x}, {y}])"))
        return self._with_op(form, f"{x} {y}", None)

    # -- the program -------------------------------------------------------------------------
    def program(self, seed: str = "") -> Program:
        rng = self.rng
        self._signature()
        first = self.make_call(self.symbols, None)
        self.first_call_code = call_text(first, "call_1")
        ns, _, _ = self._replay([])
        templates = [(self.st_unary, 10), (self.st_binary, 14), (self.st_where, 3),
                     (self.st_reduce, 10), (self.st_scan, 2), (self.st_view, 10),
                     (self.st_write, 7), (self.st_matmul, 3), (self.st_astype, 3),
                     (self.st_create, 3), (self.st_python, 3), (self.st_concat, 1)]
        funcs, weights = zip(*templates)
        wanted = rng.randint(3, self.max_statements)
        wrote = False
        for _ in range(wanted * 4):
            if len(self.body) >= wanted or self.stopped:
                break
            func = rng.choices(funcs, weights)[0]
            self._pending_op = None
            self._operand_taint = EXACT
            self._write_taint = None
            made = func(ns)
            if made is None:
                continue
            if isinstance(made, str):
                line, taint, target = made, None, None
            else:
                self.counter += 1
                target = f"v{self.counter}"
                line, taint = f"{target} = {made[0]}", made[1]
            new_ns, error, _ = self._replay(self.body + [line])
            if error is not None:
                if target:
                    self.counter -= 1
                if rng.random() < 0.08 and len(self.body) >= 2 and \
                        not isinstance(error, TooSlow):
                    self.body.append(line)      # NumPy rejects it: autojit must too
                    self.stopped = True
                continue
            if any(_is_array(v) and v.size > MAX_SIZE for _, v in self.values(new_ns)):
                if target:
                    self.counter -= 1
                continue
            self.body.append(line)
            ns = new_ns
            if target is not None and taint is not None:
                if self._pending_op:
                    taint = taint.join(Taint(op_ulps(self._pending_op, ns[target]), False))
                if _float_dtype(ns[target]) is None and self._operand_taint.exact:
                    taint = EXACT       # the op's inexactness is in floats only
                self.taint[target] = taint
            elif self._write_taint is not None:
                wrote = True
                name, t = self._write_taint
                if not t.exact:         # everything sharing memory with the target
                    for other, v in self.values(ns):
                        if other == name or (_is_array(v) and _is_array(ns[name]) and
                                             np.shares_memory(v, ns[name])):
                            self.taint[other] = self.taint.get(other, EXACT).join(t)
        ret, ret_tuple = self._return(ns, wrote)
        calls = self._calls(first)
        taint = {n: t for n, t in self.taint.items() if not t.exact}
        return Program(self.params, self.body, ret, ret_tuple, calls, taint, seed)

    def _return(self, ns: dict[str, Any], wrote: bool) -> tuple[list[str] | None, bool]:
        rng = self.rng
        made = [f"v{i}" for i in range(1, self.counter + 1) if f"v{i}" in ns]
        if (wrote and rng.random() < 0.25) or not (made or self.stopped):
            return None, False
        pool = made or self.params
        if rng.random() < 0.05:
            pool = self.params
        k = rng.choices((1, 2, 3), (6, 3, 1))[0]
        names = [rng.choice(pool) for _ in range(k)]
        if k == 1 and rng.random() > 0.1:
            return [pool[-1] if rng.random() < 0.6 else names[0]], False
        return names, True

    def _calls(self, first: list[ArgSpec]) -> list[list[ArgSpec]]:
        """First inputs; same shapes, new values; new sizes and layouts; first shapes again."""
        rng = self.rng
        second = self._revalue(first)
        symbols = {s: rng.choice(SIZE_CHOICES) for s in "nmk"}
        third = self.make_call(symbols, None, independent=rng.random() < 0.2)
        fourth = self._revalue(first)
        return [first, second, third, fourth]


class TooSlow(Exception):
    """A candidate statement ran past REPLAY_S (it is dropped, never kept)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise TooSlow in the main thread after ``seconds`` (no limit in other threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TooSlow(f"statement ran past {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


#: words of a statement that make its value inexact (for ``retaint``)
_INEXACT_WORDS = set(UNARY_INEXACT + BINARY_INEXACT + BINARY_INEXACT_RARE)
_REDUCED_WORDS = set(REDUCTIONS_INEXACT[0] + REDUCTIONS_INEXACT[1]) | {
    "cumsum", "cumprod", "matmul", "dot", "inner", "outer", "vdot"}
_ASSIGN = re.compile(r"^(v\d+) = ")
_WRITE = re.compile(r"^(a\d+|v\d+)\s*(\[|[-+*/%&|^<>]+=)|out=(a\d+|v\d+)")


def _word_ulps(name: str) -> float:
    if name in COMPOSED_ULPS:
        return COMPOSED_ULPS[name] + numpy_extra_ulps()
    lookup = "power" if name == "float_power" else name
    bounds = [ulp_bound(lookup, d) or 0.0 for d in ("float32", "float64")]
    return max(bounds) + 1.0 + numpy_extra_ulps()      # float16: one more rounding


def retaint(program: Program) -> dict[str, Taint]:
    """The program's taint, recomputed from its text, never below what it had: a shrunk
    program may compute in floats what the original computed in ints (a dropped
    ``dtype=``, an argument made float64), and must not then fail on a rounding."""
    taint = dict(program.taint)
    for line in program.body:
        words = _words(line)
        t = EXACT
        for name in words:
            if name in taint:
                t = t.join(taint[name])
        for name in words & _INEXACT_WORDS:
            t = t.join(Taint(_word_ulps(name), False))
        if "**" in line:
            t = t.join(Taint(_word_ulps("power"), False))
        if words & _REDUCED_WORDS or "@" in line:
            t = t.join(Taint(0.0, True))
        if t.exact:
            continue
        target = _ASSIGN.match(line)
        write = _WRITE.search(line)
        names = [target.group(1)] if target else []
        if write:       # a write: everything that may share the target's memory
            names += [n for n in program.params] + [f"v{i}" for i in range(1, 64)]
        for name in names:
            taint[name] = taint.get(name, EXACT).join(t)
    text = " ".join(program.body + (program.ret or []) + program.params)
    return {n: t for n, t in taint.items() if not t.exact and re.search(rf"\b{n}\b", text)}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))


def generate(seed: int | str) -> Program:
    """The program of ``seed`` (the same seed always gives the same program)."""
    rng = random.Random(str(seed))
    return Generator(rng).program(str(seed))
