"""The fuzzer's own checks (fast): programs are reproducible from their seed, repros run,
the comparison sees what it must (types, zero signs, NaN, tolerances), the shrinker shrinks,
and a worker that dies or hangs is reported as a failure of its program."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fuzz import pool, runner
from tests.fuzz.compare import compare
from tests.fuzz.gen import generate
from tests.fuzz.pool import Pool, summary
from tests.fuzz.program import EXACT, Program, Taint
from tests.fuzz.shrink import shrink, well_formed
from tests.fuzz.values import ArgSpec

ROOT = Path(__file__).resolve().parents[2]


def test_a_seed_always_gives_the_same_program() -> None:
    first, again, other = generate("h:1"), generate("h:1"), generate("h:2")
    assert first.source() == again.source()
    assert first.calls_source() == again.calls_source()
    assert (first.source(), first.calls_source()) != (other.source(), other.calls_source())
    assert len(first.calls) == 4


def test_generated_programs_are_valid_python_with_data_flow() -> None:
    programs = [generate(f"h:{i}") for i in range(40)]
    for p in programs:
        compile(p.source(), "<p>", "exec")
        compile(p.calls_source(), "<c>", "exec")
        assert well_formed(p)
    flows = sum(any(f"v{i}" in line.split("=", 1)[-1] for i in range(1, 13) for line in p.body)
                for p in programs)
    assert flows > 20, "statements should read earlier statements' values"


@pytest.mark.parametrize(("actual", "expected", "kind"), [
    (1.0, np.float64(1.0), "result-type"),
    (np.array(1.0), np.float64(1.0), "result-type"),
    (np.bool_(True), True, "result-type"),
    (np.float64(-0.0), np.float64(0.0), "values"),
    (np.array([np.nan, 1.0]), np.array([1.0, 1.0]), "values"),
    (np.zeros(2, np.float32), np.zeros(2), "dtype"),
    (np.zeros((2, 1)), np.zeros((1, 2)), "shape"),
    ((np.zeros(1),), np.zeros(1), "result-type"),
])
def test_comparison_sees_each_kind_of_difference(actual: Any, expected: Any, kind: str) -> None:
    found = compare(actual, expected, EXACT, 1.0, 16)
    assert found is not None and found[0] == kind


def test_comparison_is_exact_unless_tainted() -> None:
    e = np.array([np.nan, -0.0, 1.0])
    assert compare(e.copy(), e, EXACT, 1.0, 16) is None
    near = np.nextafter(e, 2.0)
    near[:2] = e[:2]
    assert compare(near, e, EXACT, 1.0, 16) is not None
    assert compare(near, e, Taint(1.0), 1.0, 16) is None          # one ULP: a sin's bound
    far = e + np.array([0.0, 0.0, 1e-3])
    assert compare(far, e, Taint(4.0), 1.0, 16) is not None
    assert compare(np.array([np.nan]), np.array([1.0]), Taint(4.0, True), 1.0, 16) is not None


class _Wrong:
    """Stands in for a dispatcher: answers like NumPy, except that it adds 1 to every result
    of a program whose source mentions ``np.sin``."""

    def __init__(self, fn: Any, **options: Any) -> None:
        import inspect
        self.fn = fn
        self.bad = "np.sin" in inspect.getsource(fn)

    def __call__(self, *args: Any) -> Any:
        out = self.fn(*args)
        return out + 1 if self.bad and isinstance(out, np.ndarray) else out

    def stats(self) -> dict[str, Any]:
        return {"routes": {"python": 0}, "fallbacks": []}


def _program(body: list[str], ret: list[str]) -> Program:
    call = [ArgSpec("array", "float64", (3,), (1.0, 2.0, 3.0))]
    return Program(["a0"], body, ret, False, [call, call], {}, "test")


def test_the_shrinker_keeps_only_what_the_failure_needs(monkeypatch: Any) -> None:
    import autojit
    monkeypatch.setattr(autojit, "autoroute", _Wrong)
    program = _program(["v1 = a0 * 2", "v2 = np.cos(v1)", "v3 = np.sin(a0) + v2",
                        "v4 = v3[::-1]"], ["v4"])
    outcome = runner.run_program(program)
    assert outcome.failure is not None and outcome.failure.kind == "values"
    small, failure, runs = shrink(program, outcome.failure, seconds=30)
    assert failure.kind == "values" and runs > 0
    assert len(small.body) <= 2 and any("np.sin" in line for line in small.body)
    assert len(small.calls) == 1


def test_a_repro_runs_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "repro.py"
    path.write_text(_program(["v1 = a0 + 1"], ["v1"]).repro("a passing program"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), AUTOJIT_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "OK: autojit agrees with NumPy" in done.stdout


def misbehaving_worker(conn: Any, cache_dir: str, shrink_seconds: float, warn: bool) -> None:
    """A worker that dies on seed t:1, hangs on t:2 and passes everything else."""
    conn.send(("ready", None, None))
    while True:
        message = conn.recv()
        if message is None:
            return
        seed = message[0]
        conn.send(("program", seed, {"repro": f'"""seed {seed}"""\ndef f(): pass\n',
                                     "ops": [], "statements": 0}))
        if seed == "t:1":
            os._exit(11)
        if seed == "t:2":
            time.sleep(60)
        conn.send(("done", seed, {"seed": seed, "calls": 8, "numpy_raised": 0,
                                  "fallback_calls": 2, "reasons": {"why": 2},
                                  "failure": None}))


def test_a_worker_that_dies_or_hangs_is_a_failure_of_its_program() -> None:
    pool = Pool(2, timeout=5.0, shrink_seconds=0.0, worker=misbehaving_worker)
    results = pool.run(f"t:{i}" for i in range(5))
    assert results.programs == 5
    kinds = sorted(f["kind"] for f in results.failures)
    assert kinds == ["crash:exit", "timeout"], summary(results)
    assert all("def f(" in f["repro"] for f in results.failures)
    assert results.fallback_calls == 6 and results.calls == 24


def test_generation_is_bounded() -> None:
    """Python ints make ``2 ** 2**63`` possible; the generator must never build one."""
    started = time.monotonic()
    for i in range(150):
        program = generate(f"bounded:{i}")
        assert not re.search(r"\*\*=? *\d{3,}|<<=? *\d{3,}", program.source())
    assert time.monotonic() - started < 60


def test_a_reduction_of_integer_inputs_is_allowed_its_rounding() -> None:
    """np.var(np.sqrt(ints)) is 0 in NumPy and 2e-31 summed in another order: both right."""
    from tests.fuzz.compare import magnitude
    scale = magnitude([np.full((8, 1), 7)])
    assert scale == 7.0
    assert compare(np.float64(1.97e-31), np.float64(0.0), Taint(0.0, True), scale, 16) is None
    assert compare(np.float64(1e-3), np.float64(0.0), Taint(0.0, True), scale, 16) is not None


def test_numpys_position_dependent_uint32_casts_are_not_compared() -> None:
    """NumPy casts NaN to uint32 as 2**31 in its vector loop and 0 in its scalar tail, in
    one call: those values are not one answer, so only their types and shapes count;
    another dtype's invalid cast is still compared value for value."""
    def to_uint32(a):
        return a.astype(np.uint32)

    nan5 = np.full(5, np.nan)
    assert runner.check_repro(to_uint32, [lambda: (nan5.copy(),)])
    with np.errstate(invalid="ignore"):
        assert set(nan5.astype(np.uint32)) == {0, 2**31}   # NumPy's own two answers

    fn = runner.compile_function("def g(a):\n    return a.astype(np.int32) + 1\n", "g")
    outcome = runner.run_calls(fn, [lambda: (nan5.copy(),)], ["r"], {}, ["a"],
                               "a.astype(np.int32) + 1")
    assert outcome.failure is None
    assert runner._position_dependent({runner.INVALID_CAST}, "np.uint32", [])
    assert not runner._position_dependent({runner.INVALID_CAST}, "np.int32", [nan5])
    assert not runner._position_dependent(set(), "np.uint32", [])


def test_numpys_fmax_zero_ties_are_not_compared_and_everything_else_is() -> None:
    """np.fmax(0.0, -0.0) is the first operand in NumPy's scalar remainder loop and the
    second in its vector loop, in one call: a call whose NumPy answer changes with the tie
    rule is unspecified; one without such a tie is compared value for value."""
    zeros = np.zeros(9)
    with np.errstate(all="ignore"):
        signs = np.signbit(np.fmax(zeros, -zeros))
    assert signs.any() and not signs.all()                  # NumPy's own two answers

    def tied(a):
        return 1.0 / np.fmax(a, -a)

    def untied(a):
        return np.fmax(a, a[::-1]) + 1

    assert runner._tie_dependent(tied, lambda: (zeros.copy(),), "np.fmax(a, -a)")
    ramp = np.arange(9.0) - 4
    assert not runner._tie_dependent(untied, lambda: (ramp.copy(),), "np.fmax(a, a[::-1])")
    assert not runner._tie_dependent(tied, lambda: (zeros.copy(),), "no ufunc named")

    def wrong(a):                     # what a broken autojit would answer: still caught
        return np.fmax(a, a[::-1]) + 2

    fn = runner.compile_function("def g(a):\n    return np.fmax(a, a[::-1]) + 1\n", "g")
    outcome = runner.run_calls(fn, [lambda: (ramp.copy(),)], ["r"], {}, ["a"],
                               "np.fmax(a, a[::-1]) + 1")
    assert outcome.failure is None
    assert runner.compare(wrong(ramp), untied(ramp), runner.EXACT, 1.0, 1) is not None

    def column_max(a):               # NumPy: -0.0 here, 0.0 for the same pair strided
        return np.nanmax(a, axis=-2)

    pair = np.array([[1.0, -0.0], [0.0, 0.0]])
    assert runner._tie_dependent(column_max, lambda: (pair.copy(),), "np.nanmax(a, axis=-2)")
    assert not runner._tie_dependent(column_max, lambda: (pair + 1,), "np.nanmax(a, axis=-2)")


def _scalar_loop_uint32(x: float) -> int:
    """NumPy's scalar loop: the low 32 bits of an int64 truncation (INT64_MIN outside)."""
    return 0 if x != x or not -2.0**63 <= x < 2.0**63 else int(x) % 2**32


def test_numpys_uint32_casts_leave_its_scalar_loop_only_with_the_invalid_flag() -> None:
    """The premise of ``_position_dependent``: wherever NumPy's float -> uint32 answer is
    not its scalar loop's (the one autojit gives), NumPy warned 'invalid value' in that
    call, through astype, writes, copyto, ufunc ``out=``/``dtype=`` and reductions."""
    values = [np.nan, np.inf, -np.inf, -2.0**31 - 1, -3e9, -1e20, 2.0**32 + 4096, 5e9,
              2.0**63 - 1024, 1e20, -0.5, 3e9]
    rng = np.random.default_rng(3)
    def write(b: np.ndarray) -> np.ndarray:
        out = np.zeros(b.size, np.uint32)
        out[...] = b
        return out

    methods = {
        "astype": lambda b: b.astype(np.uint32), "write": write,
        "out": lambda b: np.positive(b, out=np.zeros(b.size, np.uint32), casting="unsafe"),
        "sum": lambda b: np.add.accumulate(b, dtype=np.uint32),
    }
    for source in (np.float32, np.float64):
        for n in (1, 3, 4, 5, 8, 13, 64):
            for strided in (False, True):
                x = np.array(rng.choice(values, n)).astype(source)
                b = np.stack([x, x], -1)[..., 0] if strided else x
                scalar = np.array([_scalar_loop_uint32(float(v)) for v in x], np.uint64)
                for name, method in methods.items():
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        got = method(b)
                    want = np.cumsum(scalar) % 2**32 if name == "sum" else scalar
                    warned = any(runner.INVALID_CAST in str(w.message) for w in caught)
                    assert warned or np.array_equal(got, want), (source, n, strided, name)


def test_clips_bound_operand_taints_its_result_and_bounds_include_numpys_avx512() -> None:
    """``np.clip(x, low, v)`` may return ``v``: an inexact ``v`` (expm1) makes it inexact;
    each op's bound adds what NumPy's own AVX-512 loops add on such a machine."""
    from tests.fuzz.gen import op_ulps

    from autojit.lower_cpu.ulp_bounds import numpy_extra_ulps, ulp_bound
    program = generate("ci-20261201:2512")
    clipped = next(line.split(" = ")[0] for line in program.body if "np.clip(" in line)
    assert not program.taint[clipped].exact
    assert op_ulps("expm1", np.float64(1.0)) == ulp_bound("expm1", "float64") + \
        numpy_extra_ulps("expm1", "float64")


def test_a_program_that_hangs_in_plain_numpy_is_no_test_case() -> None:
    """A worker that hangs is a failure of autojit's only if the program finishes in plain
    NumPy: ``2 ** (a 39-digit Python int)`` (a 'nansum' of a huge Python int stays one)
    never does, in one C call no signal interrupts (seed final13c:25670)."""
    hangs = ('"""seed x"""\nimport numpy as np\n\n\ndef f(a0):\n'
             '    return a0 ** np.nansum(a0 * a0)\n\n\ndef call_1():\n'
             '    return (18446744073709551615,)\n\n\nCALLS = [call_1]\n'
             "\nif __name__ == '__main__':\n    pass\n")
    assert pool.numpy_hangs(hangs, 3.0)
    finishes = hangs.replace("18446744073709551615", "3")
    assert not pool.numpy_hangs(finishes, 3.0)
