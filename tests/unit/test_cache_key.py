"""The disk-cache key of a function: what changes it and what does not (no compiler)."""

from __future__ import annotations

import functools
import sys
import types

import numpy as np
import pytest

from autojit import autoroute
from autojit.cache.cache_key import Unkeyable, function_fingerprint

TABLE = np.arange(4.0)
SETTINGS = {"gain": 2.0, "names": ("a", "b")}


def helper(x):
    return x * TABLE[1]


def uses_globals(x):
    return helper(x) + SETTINGS["gain"] + np.sin(x)


def _digest(fn) -> str:
    return function_fingerprint(fn).digest


def test_the_key_is_stable_and_follows_what_the_function_reads(monkeypatch):
    before = _digest(uses_globals)
    assert _digest(uses_globals) == before
    monkeypatch.setitem(SETTINGS, "gain", 3.0)
    assert _digest(uses_globals) != before
    monkeypatch.undo()
    assert _digest(uses_globals) == before
    TABLE[1] = 7.0                              # array contents, by bytes
    try:
        assert _digest(uses_globals) != before
    finally:
        TABLE[1] = 1.0
    monkeypatch.setattr(sys.modules[__name__], "helper", lambda x: x * 2.0)
    assert _digest(uses_globals) != before      # a called function, recursively


def test_defaults_closures_partials_and_autoroute_functions_are_hashed():
    def make(k, scale=1.0):
        def inner(x, s=scale):
            return x * k * s
        return inner

    assert _digest(make(2.0)) == _digest(make(2.0))
    assert _digest(make(2.0)) != _digest(make(3.0))
    assert _digest(make(2.0)) != _digest(make(2.0, scale=4.0))

    def calling(callee):
        return lambda x: callee(x)

    double, triple = (functools.partial(np.multiply, k) for k in (2.0, 3.0))
    assert _digest(calling(double)) == _digest(calling(functools.partial(np.multiply, 2.0)))
    assert _digest(calling(double)) != _digest(calling(triple))
    assert _digest(calling(autoroute(helper))) == _digest(calling(autoroute(helper)))
    assert _digest(calling(autoroute(helper))) != _digest(calling(autoroute(uses_globals)))


def test_user_modules_are_hashed_by_the_attributes_the_code_reads():
    config = types.ModuleType("runtime_config")
    config.SCALE, config.UNUSED = 2.0, 1
    sys.modules["runtime_config"] = config
    try:
        def f(x):
            return x * config.SCALE

        before = _digest(f)
        config.UNUSED = 5
        assert _digest(f) == before
        config.SCALE = 3.0
        assert _digest(f) != before
    finally:
        del sys.modules["runtime_config"]


def test_code_keys_ignore_paths_and_first_lines_but_report_them():
    source = "def g(x):\n    return x + 1.0\n"
    spaces = [{}, {}]
    exec(compile(source, "<cell-1>", "exec"), spaces[0])
    exec(compile("\n\n" + source, "<cell-2>", "exec"), spaces[1])
    first, second = (function_fingerprint(s["g"]) for s in spaces)
    assert first.digest == second.digest
    assert (first.origins, second.origins) == ((("<cell-1>", 1),), (("<cell-2>", 3),))


class _Opaque:
    pass


def test_values_without_a_faithful_digest_are_refused():
    thing = _Opaque()
    with pytest.raises(Unkeyable):
        function_fingerprint(lambda x: x * thing.factor)
    with pytest.raises(Unkeyable):
        function_fingerprint(np.sin)
