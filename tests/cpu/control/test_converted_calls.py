"""Calls of the user's own functions are converted too (AutoGraph's ``converted_call``): a
loop or branch inside a helper the traced function calls becomes a region of the same
trace, where it ran as Python and fell back on ``range(n)`` of a traced ``n`` or on a size
computed inside the function. NumPy's functions, builtins, classes, callable objects and
generators are called as they are; the calls keep Python's meaning (argument order,
``*args``/``**kwargs``, defaults, keyword-only arguments, closures, recursion, exceptions).
Every compiled call is compared with plain NumPy through the oracle."""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import random
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cpu.control import _convert_cases as cases
from tests.cpu.control._convert_cases import carried_scalar
from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

from autojit import autoroute
from autojit.tracer import control, convert


def _compiled(jitted: Any, compiles: int | None = 1) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    if compiles is not None:
        assert stats["compiles"] == compiles, stats["recompiles"]


def _steps(n: int, size: int) -> tuple:
    return (n, np.array(np.linspace(0.5, 2.0, size)))   # (an array owning its data)


STEPS = [_steps(3, 5), _steps(0, 4), _steps(7, 9), _steps(1, 2)]


# -- the repros: a loop in a helper, its trip count passed down ---------------------------------
def helper_loop(n, a):
    for _ in range(n):
        a[1:] = a[1:] + a[:-1]


def top_calls_helper(n, a):
    helper_loop(n, a)
    return a


def doubled(x):
    out = np.empty((x.shape[0],))
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    return out


def padded_then_helper(a):
    p = np.zeros((a.shape[0] + 2,))
    p[1:-1] = a
    return doubled(p)


def build_b(b, u, dt):
    b[1:-1] = (u[2:] - u[:-2]) / dt


def poisson(nit, p, b):   # npbench's pressure_poisson: writes into p, loops nit times
    for _ in range(nit):
        pn = p.copy()
        p[1:-1] = 0.5 * (pn[2:] + pn[:-2]) - b[1:-1]
        p[0] = p[1]
        p[-1] = 0.0


def cavity_like(nt, nit, u, p):
    b = np.zeros(u.shape[0])
    for _ in range(nt):
        build_b(b, u, 0.5)
        poisson(nit, p, b)
        u[1:-1] = u[1:-1] - 0.1 * (p[2:] - p[:-2])
    return u, p


def test_a_loop_in_a_helper_with_a_traced_trip_count_compiles() -> None:
    _compiled(assert_calls_match_numpy(top_calls_helper, STEPS))


def test_a_helper_looping_over_the_shape_of_a_computed_array_compiles() -> None:
    _compiled(assert_calls_match_numpy(padded_then_helper, [
        (np.arange(6.0),), (np.arange(3.0),), (np.linspace(-1, 1, 11),)]))


def test_a_time_step_calling_a_pressure_solver_compiles() -> None:
    def make(nt: int, nit: int, size: int) -> tuple:
        return (nt, nit, np.array(np.linspace(0.0, 1.0, size)),
                np.cos(np.arange(size) * 0.3))
    _compiled(assert_calls_match_numpy(cavity_like, [make(2, 3, 8), make(3, 5, 12),
                                                     make(1, 0, 5)], rtol=1e-12), None)


# -- nested helpers, defaults, keywords, *args and **kwargs --------------------------------------
def passes_on(n, a):   # no loop of its own: converted for the call below
    return deeper(n, a)


def deeper(n, a):
    return grows(a, n)


def grows(a, n, step=1.0, *, times=2.0):
    for i in range(n):
        a = a * times + step * i
    return a


def top_nested(n, a):
    return passes_on(n, a)


def top_keywords(n, a):
    return grows(a, n, step=0.25) + grows(times=0.5, n=n, a=a)


def top_star_args(n, a):
    args = (a, n)
    options = {"times": 1.5}
    return grows(*args, 2.0, **options)


def test_helpers_called_through_helpers_compile() -> None:
    assert convert.convert_function(passes_on) is not passes_on   # only calls, converted
    _compiled(assert_calls_match_numpy(top_nested, STEPS))


def test_defaults_keywords_and_starred_arguments_keep_their_meaning() -> None:
    _compiled(assert_calls_match_numpy(top_keywords, STEPS))
    _compiled(assert_calls_match_numpy(top_star_args, STEPS))


def order_logged(log, tag):
    log.append(tag)
    return tag


def evaluation_order(log):
    return grows(order_logged(log, 1.0) + np.zeros(2), order_logged(log, 2),
                 times=order_logged(log, 3.0), step=order_logged(log, 4.0))


def test_arguments_are_evaluated_in_python_order() -> None:
    converted = convert.convert_function(evaluation_order)
    assert converted is not evaluation_order
    log: list = []
    want = evaluation_order(log)
    got_log: list = []
    assert np.array_equal(converted(got_log), want) and got_log == log == [1.0, 2, 3.0, 4.0]


# -- recursion -----------------------------------------------------------------------------
def smooth_recursively(n, a, depth):
    for _ in range(n):
        a[1:-1] = 0.5 * (a[2:] + a[:-2])
    if depth > 0:
        smooth_recursively(n, a, depth - 1)
    return a


def top_recursion(n, a):
    return smooth_recursively(n, a, 2)


def calls_itself(a, k):   # no loop: converted only if something else is
    if k <= 0:
        return a
    return calls_itself(a + 1.0, k - 1)


def top_calls_itself(a):
    return calls_itself(a, 3)


def ping(a, k):
    return a if k == 0 else pong(a * 2.0, k - 1)


def pong(a, k):
    return a if k == 0 else ping(a + 1.0, k - 1)


def test_a_recursive_helper_converts_once_and_compiles() -> None:
    new = convert.convert_function(smooth_recursively)   # its own name is still the global
    assert new is not smooth_recursively and "smooth_recursively" not in new.__code__.co_freevars
    _compiled(assert_calls_match_numpy(top_recursion, [_steps(2, 6), _steps(4, 9),
                                                       _steps(0, 3)]))
    _compiled(assert_calls_match_numpy(top_calls_itself, [(np.arange(4.0),),
                                                          (np.ones(2),)]))
    _compiled(assert_calls_match_numpy(lambda a: ping(a, 5), [(np.arange(3.0),)]))
    assert convert.convert_function(ping)(np.ones(2), 3).tolist() == ping(np.ones(2), 3).tolist()


# -- lambdas, closures, methods, static and class methods -----------------------------------
triple = lambda x: x * 3.0   # noqa: E731 (a helper that is a lambda: called as it is)


def top_lambda(n, a):
    for _ in range(n):
        a = triple(a) - a
    return a


def make_scaler(k):
    def scale(n, a):
        for _ in range(n):
            a[1:] = a[1:] * k + a[:-1]
        return a
    return scale


scale_half = make_scaler(0.5)


def top_closure(n, a):
    return scale_half(n, a)


def top_local_def(n, a):
    c = 0.25

    def relax(m, b):
        for _ in range(m):
            b[1:] = b[1:] - c * b[:-1]
        return b
    return relax(n, a)


class Stepper:
    def __init__(self, rate: float) -> None:
        self.rate = rate

    def run(self, n, a):   # (a loop body reading self declines: a captured object)
        return self.advance(n, a, self.rate)

    def advance(self, n, a, rate):
        return advance(n, a, rate)

    @staticmethod
    def shift(n, a):
        for i in range(n):
            a[1:] = a[1:] + i
        return a

    @classmethod
    def scaled(cls, n, a):
        for _ in range(n):
            a = a * cls.FACTOR
        return a

    FACTOR = 1.5


def advance(n, a, rate):
    for _ in range(n):
        a = a + rate * a[::-1]
    return a


STEPPER = Stepper(0.25)


def top_method(n, a):
    return STEPPER.run(n, a)


def top_staticmethod(n, a):
    return Stepper.shift(n, a)


def top_classmethod(n, a):
    return Stepper.scaled(n, a) + STEPPER.scaled(n, a)


@pytest.mark.parametrize("fn", [top_lambda, top_closure, top_local_def, top_method,
                                top_staticmethod, top_classmethod],
                         ids=lambda f: f.__name__)
def test_lambdas_closures_and_methods(fn: Any) -> None:
    _compiled(assert_calls_match_numpy(fn, STEPS))


def test_a_lambda_helper_is_called_as_it_is() -> None:
    assert control.call(triple, 2.0) == 6.0
    assert convert.converted_callee(triple) is triple


# -- what is called as it is -------------------------------------------------------------
class Accumulator:
    def __init__(self) -> None:
        self.total = 0.0

    def __call__(self, x):
        self.total += 1.0
        return x + self.total


def counted(n):
    yield from range(n)


def numpy_and_builtins(n, a):
    acc = Accumulator()
    b = np.cumsum(a) + np.asarray(max(n, 1))
    for _ in range(n):
        b = acc(b)
    return b + float(sum(counted(3))), np.float64(len(a))


def test_numpy_builtins_classes_callables_and_generators_are_called_as_they_are() -> None:
    for fn in (np.cumsum, np.asarray, max, len, sum, Accumulator, Accumulator(), counted,
               convert.convert_function, inspect.getsource, print):
        assert convert.converted_callee(fn) is fn, fn
    assert list(control.call(counted, 3)) == [0, 1, 2]
    _compiled(assert_calls_match_numpy(numpy_and_builtins, [
        (3, np.arange(4.0)), (0, np.ones(2))], options={"static_argnames": ("n",)}), None)


def raises_inside(n, a):
    for _ in range(n):
        a = a + 1.0
    if a.ndim == 1:
        raise ValueError("one-dimensional")
    return a


def top_raises(n, a):
    return raises_inside(n, a)


def test_an_exception_the_helper_raises_is_the_users() -> None:
    with pytest.raises(ValueError, match="one-dimensional"):
        control.call(raises_inside, 2, np.ones(3))
    assert_matches_numpy(top_raises, 2, np.ones(3))
    _compiled(assert_calls_match_numpy(top_raises, [(2, np.ones((2, 3))), (0, np.ones((1, 4)))]),
              None)


# -- Python's meaning, called on plain values (no trace) --------------------------------------
LOG: list = []


def logged(tag, fn=None, **options):
    LOG.append((tag, fn, sorted(options)))
    return tag


def keyword_named_fn(n):
    total = 0
    for i in range(n):
        total += logged(i, fn=len, key=1)
    return total


def missing_arguments(n):
    for _ in range(n):
        grows()   # TypeError: the helper's own message
    return n


def undefined_callee(n):
    for _ in range(n):
        not_defined_anywhere(logged("argument"))   # noqa: F821 (NameError first)
    return n


def callee_computed_after(n):
    helpers = [logged]
    for i in range(n):
        helpers[logged(i) % 1](logged(-i))
    return n


def generator_helper(n):
    out = []
    for i in range(n):
        out.extend(counted(i))
    return out


SEMANTICS = [keyword_named_fn, missing_arguments, undefined_callee, callee_computed_after,
             generator_helper]


@pytest.mark.parametrize("fn", SEMANTICS, ids=lambda f: f.__name__)
def test_converted_calls_mean_what_the_calls_meant(fn: Any) -> None:
    def outcome(f: Any) -> tuple:
        LOG.clear()
        try:
            result: Any = f(3)
        except Exception as exc:  # the exception is part of the answer
            result = (type(exc), str(exc))
        return repr(result), list(LOG)
    new = convert.convert_function(fn)
    assert new is not fn and outcome(new) == outcome(fn)


# -- a helper's loop that still declines names the helper's line ----------------------------------
def shrinking(n, a):
    for _ in range(n):
        a = a[1:]
    return a


def top_shrinks(n, a):
    return shrinking(n, a) * 2.0


def test_a_declined_loop_in_a_helper_names_the_helpers_line() -> None:
    jitted = assert_matches_numpy(top_shrinks, 2, np.arange(5.0), compiled=False)
    reasons = jitted.stats()["fallbacks"]
    line = shrinking.__code__.co_firstlineno + 1
    assert reasons and all(f"test_converted_calls.py:{line}" in r for r in reasons), reasons


def test_the_helpers_loop_is_its_own_region_in_the_names() -> None:
    tree, helpers, _ = convert.converted_tree(helper_loop)
    names = [h for h in helpers.values() if isinstance(h, control.Names)]
    assert [(n.file, n.line) for n in names] == [(__file__, helper_loop.__code__.co_firstlineno
                                                  + 1)]
    top = ast.unparse(convert.converted_tree(top_calls_helper)[0])
    assert "__aj_ctl.call(helper_loop, n, a)" in top, top


def test_the_report_names_the_helpers_loop_where_it_is_written() -> None:
    text = str(autoroute(top_calls_helper, force="cpu").inspect(3, np.ones(5)))
    line = f"test_converted_calls.py:{helper_loop.__code__.co_firstlineno + 1}"
    assert re.search(rf"loop %\w+ in \[0, n\).*# loop0 %\d+, {line}", text), text


partial_grows = functools.partial(grows, times=3.0)


def top_partial(n, a):
    return partial_grows(a, n)


def top_other_module(n, a):
    return a * cases.carried_scalar(a, n) + carried_scalar(a, n)


def test_a_helper_of_another_user_module_converts() -> None:
    _compiled(assert_calls_match_numpy(top_other_module, [_steps(3, 5), _steps(0, 4),
                                                          _steps(6, 8)]), None)


def test_a_partial_of_a_helper_converts_the_helper() -> None:
    assert convert.converted_callee(partial_grows).func is not grows
    _compiled(assert_calls_match_numpy(top_partial, STEPS))


def test_a_function_with_no_call_worth_converting_is_left_as_it_is() -> None:
    def plain(a):
        return np.sin(a) + len(a)   # (len: a conversion, so look at a function without)

    def only_numpy(a):
        return np.cumsum(a).sum()
    assert convert.convert_function(only_numpy) is only_numpy
    assert convert.convert_function(plain) is not plain


# -- generated variants ------------------------------------------------------------------
BODIES = [
    "a[1:] = a[1:] + c * a[:-1]",
    "a = a * c + {i}",
    "a[{i} % a.shape[0]] = a[{i} % a.shape[0]] + c",
    "s = a.sum()\na = a - s * c / (1.0 + {i})",
    "if {i} % 2 == 0:\n    a = a + c\nelse:\n    a = a * c",
]
CALLS = [
    ("step(n, a, c)", "def step(n, a, c):"),
    ("step(a=a, n=n)", "def step(n, a, c=0.5):"),
    ("step(n, a, scale=c)", "def step(n, a, *, scale):\n    c = scale"),
    ("step(*(n, a), **{'c': c})", "def step(n, a, c):"),
]
KINDS = ["function", "staticmethod", "method", "closure"]


def _variant(rng: random.Random) -> tuple[str, bool]:
    """A module with a helper (``step``), the traced function ``top`` calling it (perhaps
    through ``middle``, perhaps inside a loop of its own) and ``top_inline``, the same
    program with the helper's loop written where the call is; and whether the call is in
    a loop."""
    body, (call, head), kind = rng.choice(BODIES), rng.choice(CALLS), rng.choice(KINDS)
    loop = "for i in range(n):" if rng.random() < 0.7 else "i = 0\nwhile i < n:"
    inner = body.format(i="i") + ("" if loop.startswith("for") else "\ni = i + 1")
    written = f"{textwrap.indent(loop, '    ')}\n{textwrap.indent(inner, ' ' * 8)}\n"
    helper = f"{head}\n{written}    return a\n"
    if kind == "function":
        defs, callee = helper, call
    elif kind == "staticmethod":
        defs = "class Box:\n    @staticmethod\n" + textwrap.indent(helper, "    ")
        callee = "Box." + call
    elif kind == "method":
        defs = "class Box:\n" + textwrap.indent(helper.replace("(n,", "(self, n,", 1),
                                                "    ") + "BOX = Box()\n"
        callee = "BOX." + call
    else:
        defs = "def make():\n" + textwrap.indent(helper, "    ") + "    return step\n" \
               "step = make()\n"
        callee = call
    through = rng.random() < 0.5
    middle = f"def middle(n, a, c):\n    return {callee}\n" if through else ""
    top_call = "middle(n, a, c)" if through else callee
    nested = rng.random() < 0.3   # the call inside a loop of the traced function
    outer = "    for _ in range(n % 3 + 1):\n" if nested else ""
    top = f"def top(n, a):\n    c = 0.5\n{outer}" + (
        f"        a = {top_call}\n" if nested else f"    a = {top_call}\n") + "    return a\n"
    inline = f"def top_inline(n, a):\n    c = 0.5\n{outer}" + (   # (a = step(...): a = a)
        textwrap.indent(written, "    ") + "        a = a\n" if nested else written) + \
        "    return a\n"
    return f"import numpy as np\n\n{defs}\n{middle}\n{top}\n{inline}", nested


@pytest.mark.parametrize("seed", range(40))
def test_generated_helpers_compile_where_the_inline_loop_does(seed: int,
                                                               tmp_path: Path) -> None:
    source, nested = _variant(random.Random(seed))
    path = tmp_path / f"calls_variant_{seed}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"calls_variant_{seed}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        called = assert_calls_match_numpy(module.top, STEPS, rtol=1e-12).stats()
        inline = assert_calls_match_numpy(module.top_inline, STEPS, rtol=1e-12).stats()
        compiled = called["routes"]["python"] == 0   # (inside a loop: where inline does)
        assert compiled or (nested and inline["routes"]["python"]), (
            source, called["fallbacks"], inline["fallbacks"])
    finally:
        del sys.modules[spec.name]
