"""The dispatcher's front end: how a call reaches the trace (keyword arguments, static values,
callables without a name), which arguments it refuses to compile (ndarray subclasses), what it
raises when NumPy would refuse the sizes, and which changes of the function's environment
(globals, closures, defaults, helpers) it sees on the next call (guards)."""

from __future__ import annotations

import functools
import types
import warnings
from typing import Any

import numpy as np
import pytest

from tests.support.oracle import (
    assert_calls_match_numpy,
    assert_matches_numpy,
    assert_same_types,
    call_numpy,
    compare_results,
)

import autojit
from autojit import autoroute


def _keyword_calls_match(fn: Any, calls: list[tuple[tuple, dict]]) -> Any:
    """Call one compiled ``fn`` with (args, kwargs) per call and compare with plain Python:
    the oracle helpers take positional arguments only."""
    jitted = autoroute(fn, force="cpu")
    for number, (args, kwargs) in enumerate(calls, 1):
        expected, error = call_numpy(lambda *a, kw=kwargs: fn(*a, **kw), args)
        if error is not None:
            with pytest.raises(type(error)):
                jitted(*args, **kwargs)
            continue
        actual = jitted(*args, **kwargs)
        assert_same_types(actual, expected, f"call {number}")
        compare_results(actual, expected)
    return jitted


# -- keyword arguments ---------------------------------------------------------------------------
def _scaled(x, scale=2.0, *, shift=1):
    return x * scale + shift


def _shifted(x, *, shift):
    return x + shift


def _mixed(x, a=1.0, b=2.0, *, c=3.0):
    return x * a + b * c


def test_keyword_only_arguments_reach_the_trace():
    x = np.ones(3)
    f = _keyword_calls_match(_scaled, [((x,), {"scale": 4.0, "shift": -1}),
                                       ((x,), {"shift": 7}), ((x,), {}), ((x, 3.0), {})])
    assert not f.stats()["fallbacks"] and f.stats()["routes"]["cpu"] == 4


def test_a_required_keyword_only_argument_is_bound():
    f = _keyword_calls_match(_shifted, [((np.ones(2),), {"shift": 5}),
                                        ((np.arange(3.0),), {"shift": 2.5}),
                                        ((np.ones(2),), {})])   # TypeError, as in Python
    assert f.stats()["routes"]["cpu"] == 2 and not f.stats()["fallbacks"]


def test_keywords_out_of_order_and_after_a_skipped_default_are_kept():
    x = np.arange(4.0)
    _keyword_calls_match(_mixed, [((x,), {"b": 5.0}), ((x,), {"c": 0.5, "a": 2.0}),
                                  ((x, 3.0), {"c": -1.0}), ((), {"x": x, "b": 1.0})])


def test_repeated_keyword_calls_are_served_by_the_fast_path_and_bad_ones_raise():
    f = autoroute(_scaled, force="cpu")
    x = np.arange(3.0)
    for _ in range(20):
        compare_results(f(x, shift=3.0), _scaled(x, shift=3.0))
        compare_results(f(x, scale=0.5), _scaled(x, scale=0.5))
    if _fast_path_built():
        assert f.stats()["fast_calls"] >= 30
    for _ in range(2):
        with pytest.raises(TypeError):
            f(x, x=x)
        with pytest.raises(TypeError):
            f(x, nope=1.0)


def test_static_keyword_only_argument_specialises():
    def power(x, *, n):
        return x ** n
    f = autoroute(power, static_argnames=("n",), force="cpu")
    x = np.arange(4.0)
    for n in (2, 3):
        compare_results(f(x, n=n), power(x, n=n))
    assert f.stats()["compiles"] == 2 and not f.stats()["fallbacks"]


# -- static values -------------------------------------------------------------------------------
def test_static_values_of_different_types_do_not_share_a_specialisation():
    def times(x, n):
        return x * n
    x = np.ones(2, np.int8)
    f = autoroute(times, static_argnames=("n",), force="cpu")
    for n in (2, 2.0, True, 2, -0.0, 0.0, 2.0):
        expected, got = times(x, n), f(x, n)
        assert_same_types(got, expected, repr(n))
        compare_results(got, expected)
    assert f.stats()["compiles"] == 5

    def second(x, pair):
        return x * pair[1]
    g = autoroute(second, static_argnames=("pair",), force="cpu")
    for pair in ((1, 2.0), (1, 2), (1.0, 2)):
        compare_results(g(x, pair), second(x, pair))


def test_a_python_int_beyond_int64_does_not_stop_later_calls_compiling():
    def add(x, k):
        return x + k
    x = np.arange(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = assert_calls_match_numpy(add, [(x, 2 ** 70), (x, 3), (x, -4), (x, -(2 ** 64))])
    assert f.stats()["routes"]["cpu"] == 2


# -- callables without a name or code ------------------------------------------------------------
def test_a_functools_partial_is_compiled():
    f = assert_matches_numpy(functools.partial(np.add, 1.0), np.ones(3))
    assert "partial" in repr(f)
    g = assert_matches_numpy(functools.partial(_scaled, shift=3), np.arange(3.0), 0.5)
    assert g.stats()["routes"]["cpu"] == 1


def test_a_callable_instance_and_a_ufunc_are_compiled():
    class Twice:
        def __call__(self, x):
            return x * 2
    assert_matches_numpy(Twice(), np.arange(3.0))
    assert_matches_numpy(np.add, np.arange(3.0), 2.0)


def test_a_callable_objects_own_attributes_do_not_replace_the_dispatchers():
    class Scaler:
        def __init__(self):
            self.options, self.fn, self.scale = {"x": 1}, None, 3.0

        def __call__(self, x):
            return x * self.scale
    scaler = Scaler()
    f = assert_matches_numpy(scaler, np.arange(3.0))
    scaler.scale = -1.0               # an attribute its __call__ reads: guarded
    compare_results(f(np.arange(3.0)), np.arange(3.0) * -1.0)


def test_an_autoroute_helper_called_while_tracing_joins_the_trace():
    helper = autoroute(_global_scale)

    def outer(x):
        return helper(x) + 1.0
    with autojit.config(strict=True):
        f = assert_matches_numpy(outer, np.arange(3.0))
    assert f.stats()["routes"]["cpu"] == 1
    assert not helper.stats()["fallbacks"]


def test_a_non_callable_is_refused_at_decoration():
    with pytest.raises(TypeError, match="callable"):
        autoroute(3)


# -- ndarray subclasses --------------------------------------------------------------------------
class _Plain(np.ndarray):
    """A subclass overriding nothing: still not known to be safe, so not compiled."""


def _affine(a, b):
    return a * b + 1


@pytest.mark.parametrize("make", [
    lambda: (np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.matrix([[1.0, 0.0], [1.0, 1.0]])),
    lambda: (np.ma.array(np.arange(4.0), mask=[0, 1, 0, 1]), 2.0),
    lambda: (np.arange(4.0).view(_Plain), np.float64(3)),
], ids=["matrix", "masked", "subclass"])
def test_ndarray_subclasses_run_as_plain_python(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = assert_calls_match_numpy(_affine, [make])
    assert f.stats()["routes"]["cpu"] == 0 and f.stats()["fallbacks"]
    expected = _affine(*make())
    assert type(f(*make())) is type(expected)
    if np.ma.isMaskedArray(expected):
        np.testing.assert_array_equal(np.ma.getmaskarray(f(*make())),
                                      np.ma.getmaskarray(expected))


# -- sizes NumPy refuses -------------------------------------------------------------------------
def test_an_allocation_that_cannot_succeed_raises_memory_error():
    def huge(x):
        return np.zeros((10 ** 6, 10 ** 6)) + x
    assert_calls_match_numpy(huge, [(np.ones(1),)])
    with pytest.raises(MemoryError, match="Unable to allocate"):
        autoroute(huge, force="cpu")(np.ones(1))


def test_a_broadcast_too_large_to_address_raises_value_error():
    def product(x, y):
        return x * y
    # the arguments are compared after the call: broadcast views of 2**66 elements cannot
    # be, so this calls the oracle pieces directly
    x = np.broadcast_to(np.ones((1, 1)), (2 ** 33, 1))
    y = np.broadcast_to(np.ones((1, 1)), (1, 2 ** 33))
    _, error = call_numpy(product, [x, y])
    assert isinstance(error, ValueError)
    f = autoroute(product, force="cpu")
    for _ in range(3):   # the fast path, once armed, must refuse them too
        with pytest.raises(ValueError):
            f(x, y)
        compare_results(f(np.ones((2, 1)), np.ones((1, 3))), np.ones((2, 3)))
    with pytest.raises(ValueError):
        autoroute(lambda a, b: (a * b).sum(), force="cpu")(x, y)


# -- guards: the function's environment, read again on every call --------------------------------
SCALE = 2.0
FN = np.negative
WEIGHTS = [1.0, 2.0]
PARAMS = {"gain": 2.0}
OFFSET = np.array(1.5)
SETTINGS = types.SimpleNamespace(bias=1.0)
CONFIG = types.ModuleType("autojit_test_config")   # a user module (not installed)
CONFIG.FACTOR = 3


def _set(name: str, value: Any) -> None:
    globals()[name] = value


def _global_scale(x):
    return x * SCALE


def _helper(x):
    return x + SCALE


def _calls_helper(x):
    return _helper(x) * 2.0


def _aliased(x):
    return FN(x) + 1.0


def _weighted(x):
    total = x * 0.0
    for w in WEIGHTS:
        total = total + x * w
    return total * PARAMS["gain"]


def _zero_d(x):
    return x + OFFSET


def _settings(x):
    return x * CONFIG.FACTOR + SETTINGS.bias


def _calls(changes: list[tuple[str, Any]], make: Any = lambda: (np.arange(4.0),)) -> list:
    """One call per change: the change is made, then the call's arguments (the oracle
    makes them twice, for NumPy and for autojit, so both see the same environment)."""
    def call(name: str, value: Any) -> Any:
        return lambda: (_set(name, value), make())[1]
    return [call(name, value) for name, value in changes]


@pytest.mark.parametrize("fn, changes", [
    (_global_scale, [("SCALE", 2.0), ("SCALE", 2.0), ("SCALE", 3.0), ("SCALE", -0.0),
                     ("SCALE", 3), ("SCALE", np.float32(3)), ("SCALE", 2.0)]),
    (_calls_helper, [("SCALE", 2.0), ("SCALE", 5.0)]),
    (_aliased, [("FN", np.negative), ("FN", np.negative), ("FN", np.abs),
                ("FN", np.negative)]),
    (_calls_helper, [("_helper", _helper), ("_helper", lambda x: x - 1.0),
                     ("_helper", _global_scale)]),
    (_zero_d, [("OFFSET", np.array(1.5)), ("OFFSET", np.array(-2.0)), ("OFFSET", np.array(7))]),
], ids=["global", "helper-reads-global", "alias", "helper-redefined", "zero-d-array"])
def test_a_changed_global_is_seen_on_the_next_call(fn, changes):
    saved = {name: globals()[name] for name, _ in changes}
    try:
        # repeat each call: the second one is served by the fast path once it is armed
        f = assert_calls_match_numpy(fn, [c for c in _calls(changes) for _ in range(3)])
        assert "a global, closure variable, default or helper it reads changed" in \
            f.stats()["recompiles"]
    finally:
        globals().update(saved)


def test_values_changed_in_place_are_seen():
    f = autoroute(_weighted, force="cpu")
    g = autoroute(_zero_d, force="cpu")
    x = np.arange(3.0)
    try:
        for change in (lambda: None, lambda: WEIGHTS.append(0.5),
                       lambda: WEIGHTS.__setitem__(0, -1.0), lambda: PARAMS.update(gain=0.25),
                       lambda: OFFSET.__setitem__((), -4.0), lambda: None):
            change()
            for _ in range(3):
                compare_results(f(x), _weighted(x))
                compare_results(g(x), _zero_d(x))
    finally:
        WEIGHTS[:] = [1.0, 2.0]
        PARAMS["gain"] = 2.0
        OFFSET[()] = 1.5


def test_module_and_object_attributes_are_guarded():
    f = autoroute(_settings, force="cpu")
    x = np.arange(3.0)
    try:
        for factor, bias in ((3, 1.0), (3, 1.0), (4, 1.0), (4, -2.5), (3, 1.0)):
            CONFIG.FACTOR, SETTINGS.bias = factor, bias
            for _ in range(3):
                compare_results(f(x), _settings(x))
    finally:
        CONFIG.FACTOR, SETTINGS.bias = 3, 1.0


class _Slotted:
    __slots__ = ("gain",)

    def __init__(self, gain: float) -> None:
        self.gain = gain


SLOTTED = _Slotted(2.0)


def _slotted(x):
    return x * SLOTTED.gain


def test_slot_attributes_are_guarded():
    f = autoroute(_slotted, force="cpu")
    x = np.arange(3.0)
    try:
        for gain in (2.0, 2.0, -3.0):
            SLOTTED.gain = gain
            for _ in range(3):
                compare_results(f(x), x * gain)
    finally:
        SLOTTED.gain = 2.0


def test_closure_cells_and_defaults_are_guarded():
    k = 2.0

    def scaled(x):
        return x * k

    def with_defaults(x, scale=2.0, *, shift=1.0):
        return x * scale + shift

    f, g = autoroute(scaled, force="cpu"), autoroute(with_defaults, force="cpu")
    x = np.arange(3.0)
    for step in range(4):
        for _ in range(3):
            compare_results(f(x), scaled(x))
            compare_results(g(x), with_defaults(x))
            compare_results(g(x, 3.0), with_defaults(x, 3.0))
        k = [9.0, 9.0, -1.0, 2.0][step]
        with_defaults.__defaults__ = ((10.0,), (10.0,), (0.5,), (2.0,))[step]
        with_defaults.__kwdefaults__["shift"] = [-3.0, 5.0, 5.0, 1.0][step]


def test_changed_defaults_of_static_parameters_are_used():
    def positional(x, n=2):
        return x * n

    def keyword(x, *, n=2):
        return x * n
    f = autoroute(positional, static_argnames=("n",), force="cpu")
    g = autoroute(keyword, static_argnames=("n",), force="cpu")
    x = np.arange(3.0)
    for n in (2, 5, 2.5):
        positional.__defaults__ = (n,)
        keyword.__kwdefaults__["n"] = n
        for _ in range(2):
            compare_results(f(x), positional(x))
            compare_results(g(x), keyword(x))
    positional.__defaults__ = None
    with pytest.raises(TypeError):
        f(x)


def test_an_equal_value_does_not_retrace_and_the_fast_path_keeps_serving():
    f = autoroute(_global_scale, force="cpu")
    x = np.arange(4.0)
    saved = SCALE
    try:
        for step in range(40):
            if step % 10 == 0:
                _set("SCALE", float("2.0"))      # a new float object, equal bits
            compare_results(f(x), x * 2.0)
        stats = f.stats()
        assert stats["compiles"] == 1
        if stats.get("fast_calls") is not None and _fast_path_built():
            assert stats["fast_calls"] >= 30
    finally:
        _set("SCALE", saved)


def _fast_path_built() -> bool:
    from autojit.dispatch import fastpath
    return fastpath.available()


def test_a_global_changing_on_every_call_stops_compiling_and_stays_right():
    from autojit.dispatch.dispatcher import MAX_GUARD_RETRACES
    f = autoroute(_global_scale, force="cpu")
    x = np.arange(4.0)
    saved = SCALE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for step in range(MAX_GUARD_RETRACES + 6):
                _set("SCALE", float(step))
                compare_results(f(x), x * float(step))
        stats = f.stats()
        assert stats["compiles"] <= MAX_GUARD_RETRACES + 1
        assert any("changed more than" in reason for reason in stats["fallbacks"])
    finally:
        _set("SCALE", saved)


COUNTER = 0


def _counts(x):
    global COUNTER
    COUNTER += 1
    return x + COUNTER


def test_a_function_assigning_a_global_runs_as_python():
    f = autoroute(_counts, force="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, second = f(np.zeros(2)), f(np.zeros(2))
    assert second[0] == first[0] + 1
    assert any("assigns the global COUNTER" in r for r in f.stats()["fallbacks"])


def test_static_specialisations_and_autoroute_helpers_see_changes():
    helper = autoroute(_global_scale, force="cpu")

    def outer(x, n):
        return helper(x) + n

    f = autoroute(outer, static_argnames=("n",), force="cpu")
    x = np.arange(3.0)
    saved = SCALE
    try:
        for scale in (2.0, 2.0, 7.0, 7.0):
            _set("SCALE", scale)
            compare_results(f(x, 1), x * scale + 1)
            compare_results(f(x, n=2), x * scale + 2)
    finally:
        _set("SCALE", saved)


CYCLE: list = [2.0]
CYCLE.append(CYCLE)


def _reads_cycle(x):
    return x * CYCLE[0]


def test_a_self_referencing_global_is_guarded_without_looping():
    f = autoroute(_reads_cycle, force="cpu")
    x = np.arange(3.0)
    try:
        for value in (2.0, 2.0, 5.0):
            CYCLE[0] = value
            compare_results(f(x), x * value)
    finally:
        CYCLE[0] = 2.0


INNER = types.ModuleType("autojit_test_inner")
INNER.VALUE = 2.0
MIDDLE = types.ModuleType("autojit_test_middle")
OUTER = types.ModuleType("autojit_test_outer")


def _inner_helper(x):
    return x * INNER.VALUE


def _middle_helper(x):
    return MIDDLE.inner(x) + 1.0


MIDDLE.inner = _inner_helper
OUTER.middle = _middle_helper


def _through_modules(x):
    return OUTER.middle(x)


def test_helpers_reached_through_module_attributes_are_guarded():
    f = autoroute(_through_modules, force="cpu")
    x = np.arange(3.0)
    try:
        for value in (2.0, 2.0, 5.0):
            INNER.VALUE = value
            for _ in range(2):
                compare_results(f(x), x * value + 1.0)
    finally:
        INNER.VALUE = 2.0
