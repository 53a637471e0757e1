"""``autojit inspect``: every stage flag, -m / -m -m, --json, --gpu-arch, and each bad input
with its message and exit code."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.support.nvrtc import stage_params

from autojit.explain.cli import EXIT_FAILURE, EXIT_UNTRACEABLE, EXIT_USAGE, STAGES, main

PROGRAMS = Path(__file__).with_name("inspect_programs.py")
TARGET = f"{PROGRAMS}:normalise_stack"
SPEC = "f32[B,H,W], B=4, H=32, W=32"

#: a marker each stage's text starts with (or contains)
STAGE_MARKERS = {
    "graph": "trace normalise_stack(", "fused": "kernel k0_", "llvm": "define ",
    "llvm-opt": "define ", "asm": "k0_", "cuda": "__global__", "ptx": ".entry",
    "report": "moved to heap", "route": "route: ",
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("stage", stage_params(STAGES))
def test_each_stage(capsys: pytest.CaptureFixture[str], stage: str) -> None:
    code, out, err = _run(capsys, TARGET, "--args", SPEC, "--stage", stage)
    assert code == 0, err
    assert out.startswith(f"=== {stage} ===")
    assert STAGE_MARKERS[stage] in out


def test_all_stages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "--stage", "all")
    assert code == 0
    assert [line[4:-4] for line in out.splitlines() if line.startswith("=== ")] == list(STAGES)


def test_m_prints_bare_report_with_spec_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "-m")
    assert code == 0 and not out.startswith("===")
    assert all(re.match(r"inspect_programs\.py:\d+:\d+: ", line) for line in out.splitlines())
    assert "f32[B,H,W] 4·B·H·W bytes (16,384 B here)" in out
    assert "peak memory" in out and "why:" not in out


def test_m_m_adds_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "-m", "-m")
    assert code == 0
    assert "  why: " in out and "  flow: " in out
    assert "O3 redundancy (before -> after): loads" in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "--json", "--stage", "report",
                        "--stage", "graph")
    assert code == 0
    data = json.loads(out)
    assert set(data["stages"]) == {"report", "graph"}
    kinds = {fact["kind"] for fact in data["stages"]["report"]}
    assert {"summary", "peak", "fused", "heap", "escapes"} <= kinds
    first = data["stages"]["report"][0]
    assert first["file"].endswith("inspect_programs.py") and first["line"] > 0
    returned = [b for b in data["buffers"] if b["escape"] == "returned as result 0"]
    assert returned[0]["type"] == "f32[n0,n1,n2]" and returned[0]["bytes"] == 4 * 4 * 32 * 32


@pytest.mark.nvrtc
def test_gpu_arch(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "--stage", "ptx", "--gpu-arch", "sm_80")
    assert code == 0 and ".target sm_80" in out
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "-m", "--gpu-arch", "sm_80")
    assert re.search(r"k0_reduce: sm_80 \d+ registers, \d+ B spill stores", out)


def test_measure(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, TARGET, "--args", SPEC, "-m", "--measure")
    assert code == 0 and "(NumPy measured, tracemalloc)" in out


def test_module_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "autojit.demo:chain" if _has_demo_chain() else "numpy:sin",
                        "--args", "f64[100]", "--stage", "graph")
    assert code in (0, EXIT_UNTRACEABLE)


def _has_demo_chain() -> bool:
    import autojit.demo
    return callable(getattr(autojit.demo, "chain", None))


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["--args", "f99[3]"], EXIT_USAGE, "unknown dtype 'f99'"),
    (["--args", "f32[B,H"], EXIT_USAGE, "unclosed '['"),
    (["--args", "f32[4,4]:Z"], EXIT_USAGE, "unknown layout 'Z'"),
    (["--args", "f32[4], f32[4]"], EXIT_USAGE, "cannot take the 2 argument(s)"),
    (["--args", SPEC, "--gpu-arch", "volta"], EXIT_USAGE, "is not sm_XX"),
])
def test_bad_spec(capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                  message: str) -> None:
    got, out, err = _run(capsys, TARGET, *argv)
    assert got == code and message in err and out == ""


def test_bad_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, TARGET, "--args", SPEC, "--stage", "sass")[0] == EXIT_USAGE


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, f"{tmp_path}/nope.py:f", "--args", "f64[3]")
    assert code == EXIT_FAILURE and "no such file" in err


def test_missing_function(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, f"{PROGRAMS}:softmaks", "--args", "f64[3]")
    assert code == EXIT_FAILURE and "no function 'softmaks'" in err and "softmax" in err


def test_missing_module(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "no_such_module_here:f", "--args", "f64[3]")
    assert code == EXIT_FAILURE and "no module named" in err


def test_untraceable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "branchy.py"
    source.write_text(textwrap.dedent("""
        def branchy(x):   # an if on a traced value whose branches return values of
            if x.sum() > 0:   # different types: no select (a branch that writes is one)
                return 1.0
            return x - 1.0
    """))
    code, out, err = _run(capsys, f"{source}:branchy", "--args", "f64[8]", "-m")
    assert code == EXIT_UNTRACEABLE and "cannot trace branchy" in err and out == ""


def test_spec_size_names() -> None:
    from autojit.explain.argspec import spec_size_names
    assert spec_size_names("f32[B,3]:F, i64, f64[], n=4, u8[n]") == [
        ("B", None), None, (), ("n",)]
