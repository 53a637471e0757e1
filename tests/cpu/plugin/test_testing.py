"""autojit.testing.assert_backends_agree: passes on real programs, catches planted wrong
kernels with L∞ figures, reports skipped backends, and derives tolerances from the graph."""

from __future__ import annotations

import ast
import shutil
import warnings
from pathlib import Path

import llvmlite.ir as ir
import numpy as np
import pytest

from tests.support.corpus import all_cases

import autojit.testing as testing
from autojit import AutojitWarning, autoroute, config
from autojit.ir.graph import Node
from autojit.ir.ops import Op
from autojit.ir.types import TensorType
from autojit.lower_cpu.jit import forget_kernels
from autojit.lower_cpu.llvm_rules import LLVM_RULES
from autojit.lower_cpu.ulp_bounds import numpy_extra_ulps
from autojit.testing import assert_backends_agree
from autojit.testing.tolerance import Tolerance, compare_output

CASES = all_cases()
RNG = np.random.default_rng(7)
PACKAGE = Path(testing.__file__).resolve().parents[1]


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def add(a, b):
    return a + b


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make "gpu" unavailable whatever the machine, so reports are the same everywhere."""
    original = testing.backend_unavailable
    monkeypatch.setattr(testing, "backend_unavailable",
                        lambda n: "no usable CUDA device" if n == "gpu" else original(n))


# -- real programs agree --------------------------------------------------------------------
# every third case: each dtype and layout family appears
# (tests/cpu/semantics/test_elementwise_matrix.py runs them all against NumPy; compiling is what
# costs here)
SAMPLE = CASES[::3]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_corpus_agrees(case) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutojitWarning)  # a fallback would compare nothing
        report = assert_backends_agree(case.fn, *case.args)
    assert report.ran[:2] == ["python", "cpu"]


PROGRAMS = {
    "chain": (chain, (np.linspace(-3.0, 3.0, 20_001),)),
    "long_chain": (lambda x, y: np.sqrt(np.abs(np.log1p(x * x) - np.expm1(y) / (1 + y * y))),
                   (RNG.normal(size=(64, 33)), RNG.normal(size=33))),
    "broadcast": (lambda a, b, c: (a - b) * c + 1.5,
                  (RNG.normal(size=(5, 1, 7)), RNG.normal(size=(6, 1)), np.float32(2.0))),
    "mixed_dtypes": (lambda p, g, o: g * p + o,
                     (RNG.integers(0, 256, (16, 24), dtype=np.uint8),
                      RNG.random(24, dtype=np.float32),
                      RNG.integers(-9, 9, (16, 1), dtype=np.int16))),
    "int_wraps": (lambda a, b: (a * b + 7, a // np.maximum(b, 1), a > b),
                  (RNG.integers(-2**31, 2**31 - 1, 257, dtype=np.int32),
                   RNG.integers(-50, 50, 257, dtype=np.int32))),
    "strided_f32": (lambda x: np.exp(-x * x) * np.float32(3.0),
                    (RNG.normal(size=(40, 30)).astype(np.float32)[::-2, ::3],)),
    "cancellation": (lambda x: np.sin(x) - np.sin(x + 1e-9), (np.linspace(0, 10, 999),)),
    "scalar_result": (lambda x, y: np.hypot(x, y), (np.float64(3.0), 4.0)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_real_programs_agree(name: str) -> None:
    fn, args = PROGRAMS[name]
    report = assert_backends_agree(fn, *args)
    assert report.ok and "python" in report.ran and "cpu" in report.ran


def test_chain_allows_four_ulp_per_transcendental_op() -> None:
    report = assert_backends_agree(chain, np.linspace(-3.0, 3.0, 1001))
    # NumPy's AVX-512 loops add theirs, except where kernels call its SVML (ulp_bounds.py)
    allowed = sum(4 + numpy_extra_ulps(name, "float64") for name in ("tanh", "cos", "exp", "sin"))
    assert report.checks[0].allowed.startswith(f"{allowed:g} ULP")
    report = assert_backends_agree(add, np.ones(3), np.ones(3))
    assert report.checks[0].allowed == "exact"


def test_a_decorated_function_keeps_its_own_dispatcher() -> None:
    f = autoroute(chain)
    assert_backends_agree(f, np.linspace(0, 1, 100))
    assert f.stats()["routes"]["cpu"] == 1 and f.stats()["routes"]["python"] == 0


def test_same_exception_on_every_backend_agrees() -> None:
    report = assert_backends_agree(add, np.ones(3), np.ones(4))  # NumPy: ValueError
    assert report.ok and report.checks == []


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_cuda_emulated_backend_runs_the_generated_cuda_c() -> None:
    x = RNG.normal(size=(3, 50))
    report = assert_backends_agree(chain, x, backends=("python", "cpu", "cuda-emulated"))
    assert report.ran == ["python", "cpu", "cuda-emulated"]


def test_gpu_backend_runs_forced_and_a_silent_cpu_rerun_fails() -> None:
    from autojit.routing.route import use_router
    from autojit.routing.simulated import simulated_router
    x = np.linspace(-3.0, 3.0, 1001)
    with use_router(simulated_router(calibrate=False)) as router:  # a GPU on any machine
        assert assert_backends_agree(chain, x).ran == ["python", "cpu", "gpu"]
        router.devices["gpu"].fail("launch", times=None)
        with pytest.raises(AssertionError, match="gpu: the GPU run failed and reran on the "
                                                 "CPU: SimulatedLaunchError"):
            assert_backends_agree(chain, x)


# -- planted wrong kernels are caught --------------------------------------------------------
@pytest.fixture
def fresh_cache(tmp_path: Path):
    """An empty compile cache, on disk and in memory (kernels alike reuse compiled code
    without rendering): code compiled before a rule was planted cannot answer."""
    forget_kernels()
    with config(cache_dir=str(tmp_path / "cache")):
        yield
    forget_kernels()


def test_planted_wrong_rule_is_caught_with_linf_figures(monkeypatch, no_gpu,
                                                        fresh_cache) -> None:
    monkeypatch.setitem(LLVM_RULES, (Op.ADD, "f"), LLVM_RULES[(Op.SUB, "f")])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 4.0])
    with pytest.raises(AssertionError) as caught:
        assert_backends_agree(add, a, b)
    text = str(caught.value)
    assert "autojit backends disagree: add(float64[3], float64[3])" in text
    assert "output 0: cpu vs python: 2 of 3 values differ (allowed: exact)" in text
    assert "L∞ error: max abs 8, max rel 1.14286" in text       # 3-4 vs 3+4
    assert "first difference at index (1,): cpu 1.5, python 2.5" in text
    assert "skipped: gpu (no usable CUDA device)" in text


def test_planted_integer_bug_is_caught(monkeypatch, fresh_cache) -> None:
    monkeypatch.setitem(LLVM_RULES, (Op.MUL, "i"), LLVM_RULES[(Op.ADD, "i")])
    a = np.arange(-5, 5, dtype=np.int16)
    with pytest.raises(AssertionError, match=r"10 of 10 values differ \(allowed: exact\)"):
        assert_backends_agree(lambda x, y: x * y, a, a[::-1])


def _skewed_exp(factor: float):
    exact = LLVM_RULES[(Op.EXP, "f")]

    def rule(c, ins, a):
        value = exact(c, ins, a)
        return c.builder.fmul(value, ir.Constant(value.type, factor))
    return rule


def test_a_few_hundred_ulp_off_transcendental_is_caught(monkeypatch, fresh_cache) -> None:
    monkeypatch.setitem(LLVM_RULES, (Op.EXP, "f"), _skewed_exp(1 + 2.0**-44))  # ~256 ULP
    x = np.linspace(-2.0, 2.0, 64)
    with pytest.raises(AssertionError) as caught:
        assert_backends_agree(lambda v: np.exp(v), x)
    message = str(caught.value)
    allowed = 4 + numpy_extra_ulps("exp", "float64")
    assert f"allowed: {allowed:g} ULP" in message and "L∞ error: max abs" in message
    assert_backends_agree(lambda v: np.exp(v), x, rtol=1e-12)  # the caller may allow more


def test_one_ulp_off_transcendental_is_within_bounds(monkeypatch, fresh_cache) -> None:
    monkeypatch.setitem(LLVM_RULES, (Op.EXP, "f"), _skewed_exp(1 + 2.0**-52))
    assert_backends_agree(lambda v: np.exp(v) + 1.0, np.linspace(-2.0, 2.0, 64))


# -- skipped backends, fallbacks ------------------------------------------------------------
def test_unavailable_backend_is_reported_skipped(no_gpu) -> None:
    before = testing.tally()
    report = assert_backends_agree(add, np.ones(3), np.ones(3))
    assert report.skipped == {"gpu": "no usable CUDA device"}
    assert "gpu (no usable CUDA device)" in report.format()
    assert testing.tally()["skipped gpu: no usable CUDA device"] > before.get(
        "skipped gpu: no usable CUDA device", 0)


def test_only_unavailable_backends_fail_rather_than_pass(no_gpu) -> None:
    with pytest.raises(AssertionError, match="nothing to compare: only python ran"):
        assert_backends_agree(add, np.ones(3), np.ones(3), backends=("python", "gpu"))


def test_a_fallback_compares_nothing_and_fails() -> None:
    def flips(x):
        return x if x.sum() > 0 else -x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutojitWarning)
        with pytest.raises(AssertionError) as caught:
            assert_backends_agree(flips, np.ones(3))
    assert "cpu (runs as plain Python: test_testing.py:" in str(caught.value)


def test_disabled_autojit_skips_compiled_backends(no_gpu) -> None:
    with config(disable=True), pytest.raises(AssertionError, match="autojit is disabled"):
        assert_backends_agree(add, np.ones(3), np.ones(3))


def test_unknown_backend_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        assert_backends_agree(add, np.ones(3), np.ones(3), backends=("python", "tpu"))


# -- comparing one output ---------------------------------------------------------------------
@pytest.mark.parametrize("got, want, problem", [
    (np.ones(3, np.float32), np.ones(3), "float32[3] vs float64[3]"),
    (np.ones((3, 1)), np.ones(3), "float64[3, 1] vs float64[3]"),
    (np.array(1.0), np.float64(1.0), "result kind ndarray vs float64"),
])
def test_kind_dtype_and_shape_are_compared_first(got, want, problem: str) -> None:
    check = compare_output(0, got, want, Tolerance(), "cpu", "python")
    assert not check.ok and check.problem == problem


def test_exact_comparison_sees_signed_zeros_and_nan_positions() -> None:
    check = compare_output(0, np.array([0.0, np.nan, 1.0]), np.array([-0.0, np.nan, 1.0]),
                           Tolerance(), "cpu", "python")
    assert check.mismatches == 1 and check.first_index == (0,)
    check = compare_output(0, np.array([np.nan, 1.0]), np.array([2.0, 1.0]),
                           Tolerance(ulps=4, slack=np.ones(2)), "cpu", "python")
    assert check.mismatches == 1 and check.nan_mismatches == 1


def test_reduction_bound_is_pairwise_summation_of_magnitudes() -> None:
    node = Node(1, Op.REDUCE, (0,), TensorType(np.dtype("f8"), ("m",)),
                attrs=(("axes", (1,)), ("keepdims", False), ("kind", "add")))
    x = np.array([[1.0, -1.0, 2.0, -2.0], [3.0, 0.0, 0.0, 0.0]])
    error = testing.ERROR_RULES[Op.REDUCE](node, [x], x.sum(axis=1))
    assert error.ulps == 2 * (2 + 8)
    assert error.magnitude.tolist() == [6.0, 3.0]
    arg = Node(1, Op.REDUCE, (0,), TensorType(np.dtype("i8"), ("m",)),
               attrs=(("axes", (1,)), ("keepdims", False), ("kind", "argmax")))
    assert testing.ERROR_RULES[Op.REDUCE](arg, [x], x.argmax(axis=1)) is None


def test_registered_rule_widens_the_default_tolerance(monkeypatch) -> None:
    monkeypatch.setitem(testing.ERROR_RULES, Op.SQRT,
                        lambda node, inputs, result: testing.OpError(2, np.abs(result)))
    report = assert_backends_agree(lambda x: np.sqrt(x) * 2.0, np.linspace(0, 4, 9))
    assert report.checks[0].allowed.startswith("2 ULP")


# -- behaviour under test runners -----------------------------------------------------------
def test_results_are_deterministic_run_to_run() -> None:
    for case in CASES[::9]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AutojitWarning)
            first, second = autoroute(case.fn, force="cpu"), autoroute(case.fn, force="cpu")
            with np.errstate(all="ignore"):
                a, b = first(*case.args), second(*case.args)
        for x, y in zip(a, b):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), case.id


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)]


def test_every_warning_is_an_autojit_warning() -> None:
    import autojit.errors as errors
    for path in PACKAGE.rglob("*.py"):
        for call in _calls(ast.parse(path.read_text()), "warn"):
            category = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "category"), None)
            assert category is not None, f"{path}:{call.lineno}: warning without a category"
            cls = getattr(errors, getattr(category, "id", ""), None)
            assert cls is not None and issubclass(cls, AutojitWarning), f"{path}:{call.lineno}"


def _is_command_line(path: Path, tree: ast.Module) -> bool:
    """Return True for a command's module: ``__main__.py``, a top-level ``main()``, or an
    ``if __name__ == "__main__":`` block."""
    return path.name == "__main__.py" or any(
        (isinstance(n, ast.FunctionDef) and n.name == "main")
        or (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)) for n in tree.body)


def test_no_print_outside_the_command_line() -> None:
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        if not _is_command_line(path, tree):
            assert not _calls(tree, "print"), f"{path} prints (use logging or a warning)"


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(x):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


_RNG = np.random.default_rng(11)
COVERAGE_PROGRAMS = [
    ("softmax", _softmax, (_RNG.random((8, 33), dtype=np.float32),)),
    ("layer_norm", _layer_norm, (_RNG.random((6, 64)),)),
    ("mean_of_squares", lambda x, y: np.mean((x - y) ** 2), (_RNG.random(500), _RNG.random(500))),
    ("relu_dense", lambda x, w, b: np.maximum(x @ w + b, 0),
     (_RNG.random((16, 8)), _RNG.random((8, 4)), _RNG.random(4))),
    ("stencil", lambda a: a[1:-1] - 0.5 * (a[:-2] + a[2:]), (_RNG.random(50),)),
]


@pytest.mark.parametrize("name, fn, args", COVERAGE_PROGRAMS, ids=[p[0] for p in COVERAGE_PROGRAMS])
def test_backends_agree_on_reductions_views_and_products(name, fn, args):
    report = assert_backends_agree(fn, *args, backends=("python", "cpu", "cuda-emulated"))
    assert report.ran == ["python", "cpu", "cuda-emulated"]
