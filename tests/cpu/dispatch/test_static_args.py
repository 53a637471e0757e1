"""Static arguments: ``static_argnames``/``static_argnums`` values are seen by the trace as
Python objects (loops unroll, branches pick), are part of the signature (one compile per
value), and results still match NumPy."""

import numpy as np
import pytest

import autojit
from autojit import FallbackWarning, autoroute
from autojit.dispatch.static_args import MAX_SPECIALISATIONS


def relax(x, steps, rate=0.5):
    for _ in range(steps):              # steps must be a Python int: it is static
        x = x + rate * (np.abs(x) - x * x)
    return x


def scheme(x, mode):
    if mode == "explicit":               # a Python branch on a static string
        return x * 2.0
    return x / 2.0


def test_a_static_loop_count_unrolls_into_one_kernel_per_value():
    f = autoroute(relax, static_argnames=("steps",))
    x = np.linspace(0, 1, 101)
    for steps in (1, 5, 20):
        np.testing.assert_array_equal(f(x, steps), relax(x, steps))
        assert len(f.inspect(x, steps).kernels) == 1
    np.testing.assert_array_equal(f(x, steps=5, rate=0.25), relax(x, 5, 0.25))
    stats = f.stats()
    assert stats["calls"] == 4 and stats["routes"]["cpu"] == 4
    assert stats["compiles"] == 3            # steps 1, 5, 20; rate is a traced scalar


def test_static_argnums_and_keyword_calls_agree():
    f = autoroute(scheme, static_argnums=1)
    x = np.arange(6.0)
    np.testing.assert_array_equal(f(x, "explicit"), x * 2.0)
    np.testing.assert_array_equal(f(x, mode="implicit"), x / 2.0)
    np.testing.assert_array_equal(f(x, "implicit"), x / 2.0)
    stats = f.stats()
    assert stats["routes"]["cpu"] == 3 and stats["compiles"] == 2 and not stats["fallbacks"]


def test_bad_static_declarations_and_values_raise_type_errors():
    with pytest.raises(TypeError, match="no parameter named step"):
        autoroute(relax, static_argnames="step")
    with pytest.raises(TypeError, match="out of range"):
        autoroute(relax, static_argnums=7)
    with pytest.raises(TypeError, match="without \\*args"):
        autoroute(lambda *xs: xs[0], static_argnums=0)
    f = autoroute(scheme, static_argnames="mode")
    with pytest.raises(TypeError, match="must be hashable"):
        f(np.ones(3), ["explicit"])


def test_too_many_static_values_fall_back_to_python_with_the_reason():
    f = autoroute(lambda x, k: x * k, static_argnames="k")
    x = np.ones(3)
    for k in range(MAX_SPECIALISATIONS):
        f(x, k)
    with pytest.warns(FallbackWarning, match="distinct values of the static arguments"):
        np.testing.assert_array_equal(f(x, 1000), x * 1000)
    assert f.stats()["routes"]["python"] == 1


def test_specialisations_are_cached_on_disk_apart(tmp_path):
    x = np.linspace(0, 1, 17)
    with autojit.config(cache_dir=str(tmp_path / "cache")):
        for _ in range(2):                  # second round: fresh dispatchers, disk hits
            f = autoroute(relax, static_argnames="steps")
            np.testing.assert_array_equal(f(x, 2), relax(x, 2))
            np.testing.assert_array_equal(f(x, 3), relax(x, 3))
        assert f.stats()["disk_hits"] == 2
