"""The walking skeleton end to end: one kernel, vector code, routes, caching, fallback."""

import re
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

import autojit
from autojit import FallbackWarning, autoroute
from autojit.runtime.devices import gpu_usable
from autojit.tracer.state import MAX_TRACE_NODES


@autoroute
def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def test_chain_is_one_vectorised_kernel_and_counts_a_cpu_route():
    x = np.random.default_rng(0).random(10_000)
    before = chain.stats()["routes"]["cpu"]
    # errors of the four functions compound (cos near its zero): compare with tolerances
    np.testing.assert_allclose(chain(x), np.tanh(np.cos(np.exp(np.sin(x)))),
                               rtol=1e-13, atol=1e-15)
    assert chain.stats()["routes"]["cpu"] == before + 1
    inspection = chain.inspect(x)
    assert len(inspection.kernels) == 1
    assert re.search(r"<(4|8|16) x double>", inspection.llvm_ir_optimized)


def test_one_compile_per_signature_not_per_size():
    f = autoroute(lambda a, b: a * b + 1.0)
    for n in (10, 1000, 0, 7):
        assert_equal_numpy(f, np.ones(n), np.full(n, 2.0))
    stats = f.stats()
    assert stats["compiles"] == 1 and stats["cache_misses"] == 1 and stats["cache_hits"] == 3


def assert_equal_numpy(f, *args):
    np.testing.assert_array_equal(f(*args), f.fn(*args))


def test_a_dtype_change_recompiles_and_says_why():
    f = autoroute(lambda a: a + 1)
    f(np.ones(3))
    f(np.ones(3, dtype=np.float32))
    stats = f.stats()
    assert stats["compiles"] == 2
    assert stats["recompiles"] == ["<lambda>: float64[1d,C] -> float32[1d,C]".replace(
        "<lambda>", "a")]


def test_reading_a_size_specialises_and_guards_the_trace():
    """A size used as a value of the call (issue 15: ``a * a.shape[0]``, a reshape to it)
    is read per call, one compile; a use that needs the concrete int (``str()``) still
    guards on it."""
    f = autoroute(lambda a: a * a.shape[0])
    for n in (3, 5, 3):
        np.testing.assert_array_equal(f(np.ones(n)), np.ones(n) * n)
    assert f.stats()["compiles"] == 1
    f = autoroute(lambda a: a.reshape(a.shape[0], 1) * 2.0)
    for n in (3, 5, 3):
        np.testing.assert_array_equal(f(np.ones(n)), np.ones((n, 1)) * 2.0)
    assert f.stats()["compiles"] == 1
    f = autoroute(lambda a: a * float(str(a.shape[0])))
    for n in (3, 5, 3):
        np.testing.assert_array_equal(f(np.ones(n)), np.ones(n) * n)
    assert f.stats()["compiles"] == 2
    assert "guard n0 == 3" in f.inspect(np.ones(3)).graph_text


def test_value_dependent_if_falls_back_with_one_warning_and_right_answer():
    def clipped(x):
        y = x.copy()
        if x.max() > 1:          # branches leaving two dtypes: cannot be traced
            y = (x / x.max()).astype(np.float32)
        return y

    f = autoroute(clipped)
    x = np.array([0.5, 2.0, 4.0])
    with pytest.warns(FallbackWarning, match=r"test_pipeline\.py:\d+:\d+"):
        np.testing.assert_array_equal(f(x), clipped(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(f(x), clipped(x))   # no second warning
    stats = f.stats()
    assert stats["routes"]["python"] == 2 and len(stats["fallbacks"]) == 1


def test_truth_test_on_traced_array_names_the_line():
    def branchy(x):           # branches leaving two dtypes (others are selects)
        y = -x
        if x[0] > 0:
            y = x.astype(np.float32)
        return y

    def branchy2(x):
        y = -x
        if (x > 0).all():
            y = x.astype(np.float32)
        return y

    for fn in (branchy, branchy2):
        f = autoroute(fn)
        with pytest.warns(FallbackWarning):
            np.testing.assert_array_equal(f(np.ones(2)), fn(np.ones(2)))


@pytest.mark.parametrize("value", [np.ones(3, complex), np.array([1, "a"], object),
                                   np.ones(3, np.float16), [1.0, 2.0]],
                         ids=["complex", "object", "float16", "list"])
def test_unsupported_arguments_fall_back(value):
    f = autoroute(lambda a: a * 2)
    with pytest.warns(FallbackWarning, match="runs as plain Python"):
        result = f(value)
    expected = np.asarray(value) * 2 if not isinstance(value, list) else value * 2
    np.testing.assert_array_equal(result, expected)
    assert f.stats()["routes"]["python"] == 1


def test_unsupported_numpy_function_falls_back():
    f = autoroute(lambda a: np.sort(a) * 2)
    with pytest.warns(FallbackWarning, match="np.sort is not supported"):
        np.testing.assert_array_equal(f(np.array([3.0, 1.0])), [2.0, 6.0])


def test_forced_routes_and_config_precedence(monkeypatch):
    f = autoroute(lambda a: a + 1)
    x = np.ones(4)
    with autojit.config(force="python"):
        f(x)
    assert f.stats()["routes"] == {"cpu": 0, "gpu": 0, "python": 1}
    monkeypatch.setenv("AUTOJIT_FORCE", "python")
    autojit.reload_environment()
    try:
        f(x)
        with autojit.config(force="cpu"):           # innermost wins over the environment
            f(x)
    finally:
        monkeypatch.delenv("AUTOJIT_FORCE")
        autojit.reload_environment()
    assert f.stats()["routes"] == {"cpu": 1, "gpu": 0, "python": 2}
    g = autoroute(force="python")(lambda a: a + 1)
    g(x)
    assert g.stats()["routes"]["python"] == 1


def test_disable_runs_plain_python(monkeypatch):
    monkeypatch.setenv("AUTOJIT_DISABLE", "1")
    autojit.reload_environment()
    try:
        f = autoroute(lambda a: a + 1)
        f(np.ones(2))
        assert f.stats()["routes"]["python"] == 1 and f.stats()["compiles"] == 0
    finally:
        monkeypatch.delenv("AUTOJIT_DISABLE")
        autojit.reload_environment()


def test_without_a_usable_gpu_large_calls_route_to_the_cpu():
    if gpu_usable():
        pytest.skip("this machine has a usable GPU")
    f = autoroute(lambda a: a * 2, gpu_min_elems=0)
    x = np.ones(1000)
    for _ in range(3):
        f(x)
    assert f.stats()["routes"] == {"cpu": 3, "gpu": 0, "python": 0}
    assert gpu_usable.cache_info().misses <= 1      # probed once per process
    with pytest.raises(autojit.AutojitError, match="no usable CUDA device"):
        autoroute(lambda a: a * 2, force="gpu")(x)


def test_fusion_max_ops_bounds_kernel_size():
    x = np.linspace(0, 1, 100)
    f = autoroute(lambda a: np.tanh(np.cos(np.exp(np.sin(a)))), fusion_max_ops=2)
    assert len(f.inspect(x).kernels) == 2
    assert_matches_numpy(f.fn, x, rtol=1e-13, atol=1e-15)


def test_inspect_exposes_every_stage():
    x = np.ones(8)
    inspection = chain.inspect(x)
    assert "trace chain(x: f64[n0])" in inspection.graph_text
    assert "kernel k0_sin" in inspection.kernels_text
    assert "define" in inspection.llvm_ir and "define" in inspection.llvm_ir_optimized
    assert inspection.asm.strip()
    assert "__global__" in inspection.cuda_source
    text = str(inspection)
    for stage in ("graph", "fused", "llvm", "llvm-opt", "asm", "cuda", "route"):
        assert f"=== {stage} ===" in text
    assert inspection.route == "cpu"


def test_inspect_of_a_fallback_says_why():
    f = autoroute(lambda a: np.sort(a))
    with pytest.warns(FallbackWarning):
        inspection = f.inspect(np.ones(3))
    assert inspection.route == "python" and "np.sort" in inspection.fallback_reason
    assert inspection.kernels == []


def test_unaligned_arrays_fall_back_correctly():
    raw = np.zeros(8 * 5 + 1, dtype=np.uint8)[1:]
    unaligned = raw.view(np.float64)
    unaligned[:] = np.arange(5.0)
    assert not unaligned.flags.aligned
    f = autoroute(lambda a: a * 2)
    with pytest.warns(FallbackWarning):
        np.testing.assert_array_equal(f(unaligned), np.arange(5.0) * 2)


def test_static_python_loops_unroll_into_one_kernel():
    def steps(x, n):
        for _ in range(n):          # n is a Python int: the trace specialises on nothing
            x = x * 0.5 + 1.0
        return x
    f = autoroute(lambda x: steps(x, 20))
    x = np.linspace(0, 1, 50)
    np.testing.assert_array_equal(f(x), steps(x, 20))
    assert len(f.inspect(x).kernels) == 1


def test_a_loop_too_long_to_compile_falls_back_with_the_reason():
    def long_loop(x):
        for _ in list(range(30_000)):   # (a list: unrolled; a range loop is a region)
            x = x + 1.0
        return x
    f = autoroute(long_loop)
    with pytest.warns(FallbackWarning, match=f"exceeds {MAX_TRACE_NODES} operations"):
        np.testing.assert_array_equal(f(np.zeros(3)), np.full(3, 30_000.0))
