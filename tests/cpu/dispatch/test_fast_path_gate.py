"""The fast path's gate: one settings generation (``autojit.config.GENERATION``) and the
context's ``config()`` overrides, compared natively on every call; anything that changes
what a warm call's route was decided under bumps the generation, and the next call takes
the full path (which decides again and re-arms)."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from tests.support.oracle import compare_results

import autojit
from autojit import autoroute
from autojit.dispatch import fastpath
from autojit.routing.route import use_router
from autojit.routing.simulated import simulated_router

pytestmark = pytest.mark.skipif(not fastpath.available(),
                                reason="the native extension autojit._native.fastcall is not built")
config_module = sys.modules["autojit.config"]   # ``autojit.config`` is the config() function


def _armed() -> tuple:
    f = autoroute(lambda a: a * 2.0)
    x = np.arange(16.0)
    f(x)
    f(x)
    assert f.stats()["fast_calls"] == 1
    return f, x


def test_reloading_the_environment_closes_the_gate() -> None:
    f, x = _armed()
    before = config_module.generation()
    autojit.reload_environment()
    assert config_module.generation() > before
    compare_results(f(x), x * 2.0)          # the full path: decided again, re-armed
    assert f.stats()["fast_calls"] == 1
    f(x)
    assert f.stats()["fast_calls"] == 2


def test_swapping_the_router_closes_the_gate_and_routes_through_the_new_one() -> None:
    f, x = _armed()
    router = simulated_router()
    with use_router(router):
        compare_results(f(x), x * 2.0)     # (the first call calibrates the simulation)
        runs = router.devices["cpu"].runs
        compare_results(f(x), x * 2.0)
        assert f.stats()["fast_calls"] == 1   # a simulated CPU is not the host: never armed
        assert router.devices["cpu"].runs == runs + 1
    f(x)
    f(x)
    assert f.stats()["fast_calls"] == 2


@pytest.mark.parametrize("logger", ["autojit", ""], ids=["autojit", "root"])
def test_a_log_level_change_anywhere_closes_the_gate(logger: str) -> None:
    f, x = _armed()
    target = logging.getLogger(logger)
    saved = target.level
    before = config_module.generation()
    target.setLevel(logging.DEBUG if logger else saved)
    try:
        assert config_module.generation() > before
        f(x)
        assert f.stats()["fast_calls"] == 1
    finally:
        target.setLevel(saved)


def test_a_spec_of_another_layout_version_is_refused() -> None:
    f, x = _armed()
    entry = next(iter(f._cache.values()))[0]
    spec = fastpath.encode_spec(entry.plan, entry.signature,
                                [p.address for p in entry.programs("cpu")])
    assert spec[0] == fastpath.SPEC_VERSION
    stale = (fastpath.SPEC_VERSION + 1, *spec[1:])
    with pytest.raises(ValueError, match="spec version"):
        fastpath._native.Table((), 0, fastpath._SCRATCH, (stale,), 0, 0, 0)
    with pytest.raises(TypeError):
        fastpath._native.Table((), 0, fastpath._SCRATCH, (spec[1:],), 0, 0, 0)
