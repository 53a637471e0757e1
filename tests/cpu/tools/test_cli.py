"""The ``autojit`` command line, in process (``main(argv)``) and as ``python -m autojit``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.nvrtc import stage_params

from autojit.explain.cli import STAGES, main

ROOT = Path(__file__).resolve().parents[3]

TARGET_SOURCE = textwrap.dedent('''
    import numpy as np

    from autojit import autoroute


    def chain(x):
        return np.tanh(np.cos(np.exp(np.sin(x))))


    @autoroute
    def axpy(a, x, y):
        return a * x + y


    def branchy(x):   # an if on a traced value leaving two dtypes: not a select
        if x.sum() > 0:
            x = x.astype(np.float32)
        return x - 1.0


    def inverse(a):
        return np.linalg.inv(a) + 1.0


    if __name__ == "__main__":
        raise SystemExit("the CLI must not run the __main__ block")
''')

#: Text each stage's dump must contain, for ``chain`` on f64[64].
STAGE_MARKERS = {
    "graph": "sin",
    "fused": "tanh",
    "llvm": "define",
    "llvm-opt": "define",
    "asm": "ret",
    "cuda": "__global__",
    "ptx": ".entry",
    "report": "fused into",
    "route": "cpu",
}


@pytest.fixture()
def target(tmp_path: Path) -> Path:
    """Return the path of a user module with traceable and untraceable functions."""
    path = tmp_path / "user_funcs.py"
    path.write_text(TARGET_SOURCE)
    return path


def run_inprocess(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Return (exit code, stdout, stderr) of ``main(argv)``."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_subprocess(*argv: str) -> tuple[int, str, str]:
    """Return (exit code, stdout, stderr) of ``python -m autojit argv``."""
    proc = subprocess.run([sys.executable, "-m", "autojit", *argv], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr


def assert_one_line_error(err: str, *words: str) -> None:
    """Check ``err`` is a single ``autojit: error:`` line containing ``words``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("autojit: error:"), err
    for word in words:
        assert word in lines[0], err


@pytest.mark.parametrize("stage", stage_params(STAGES))
def test_each_stage_inprocess(capsys, target: Path, stage: str) -> None:
    code, out, err = run_inprocess(capsys, "inspect", f"{target}:chain", "--args", "f64[64]",
                                   "--stage", stage)
    assert code == 0, err
    assert STAGE_MARKERS[stage] in out


@pytest.mark.nvrtc
def test_all_stages_is_the_default(capsys, target: Path) -> None:
    code, out, err = run_inprocess(capsys, "inspect", f"{target}:chain", "--args", "f64[64]")
    assert code == 0, err
    for marker in STAGE_MARKERS.values():
        assert marker in out
    code, out_all, _ = run_inprocess(capsys, "inspect", f"{target}:chain", "--args",
                                     "f64[64]", "--stage", "all")
    assert code == 0
    headings = [line for line in out.splitlines() if line.startswith("===")]
    assert len(headings) == len(STAGES)
    assert [line for line in out_all.splitlines() if line.startswith("===")] == headings


def test_several_stages(capsys, target: Path) -> None:
    code, out, err = run_inprocess(capsys, "inspect", f"{target}:chain", "--args", "f64[n], n=8",
                                   "--stage", "llvm", "--stage", "cuda")
    assert code == 0, err
    assert "define" in out and "__global__" in out


def test_decorated_function_and_symbolic_sizes(capsys, target: Path) -> None:
    code, out, err = run_inprocess(capsys, "inspect", f"{target}:axpy", "--args",
                                   "f64, f64[n], f64[n], n=100", "--stage", "route")
    assert code == 0, err
    assert "cpu" in out


def test_module_target(capsys) -> None:
    code, out, err = run_inprocess(capsys, "inspect", "autojit.demo:chain", "--args",
                                   "f64[32]", "--stage", "graph")
    assert code == 0, err
    assert "sin" in out


def test_file_module_is_not_left_in_sys_modules(capsys, target: Path) -> None:
    path_before = list(sys.path)
    code, _, err = run_inprocess(capsys, "inspect", f"{target}:chain", "--args", "f64[8]",
                                 "--stage", "route")
    assert code == 0, err
    assert not [name for name in sys.modules if name.startswith("_autojit_cli_target")]
    assert sys.path == path_before


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["inspect", "{target}:chain", "--args", "f64[10], f65[3]"], 2, ["f65", "unknown dtype"]),
        (["inspect", "{target}:chain", "--args", "f64[10"], 2, ["unclosed"]),
        (["inspect", "{target}:chain", "--args", "f64[4], f64[4]"], 2, ["argument"]),
        (["inspect", "{target}", "--args", "f64[4]"], 2, ["TARGET"]),
        (["inspect", "no/such/file.py:chain", "--args", "f64[4]"], 1, ["no such file"]),
        (["inspect", "{target}:chian", "--args", "f64[4]"], 1, ["no function", "'chain'"]),
        (["inspect", "no_such_pkg.mod:f", "--args", "f64[4]"], 1, ["no module"]),
        (["inspect", "{target}:branchy", "--args", "f64[16]"], 3, ["cannot trace branchy"]),
        (["inspect", "{target}:inverse", "--args", "f64[4,4]"], 3, ["cannot trace inverse"]),
        (["demo", "--size-scale", "0"], 2, ["positive"]),
    ],
    ids=["bad-dtype", "bad-bracket", "arity", "no-colon", "missing-file", "missing-func",
         "missing-module", "untraceable-branch", "unsupported-call", "bad-scale"],
)
def test_errors(capsys, target: Path, argv: list[str], code: int, words: list[str]) -> None:
    argv = [a.format(target=target) for a in argv]
    got, out, err = run_inprocess(capsys, *argv)
    assert got == code, err
    assert out == ""
    assert_one_line_error(err, *words)


def test_usage_errors_exit_2(capsys) -> None:
    assert main([]) == 2
    assert "choose a command" in capsys.readouterr().err
    assert main(["inspect", "x.py:f", "--stage", "bogus"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("autojit ")


# As a subprocess: every stage in one run, then each kind of failure.
@pytest.mark.nvrtc
def test_subprocess_all_stages(target: Path) -> None:
    code, out, err = run_subprocess("inspect", f"{target}:chain", "--args", "f64[64]",
                                    *[arg for stage in STAGES for arg in ("--stage", stage)])
    assert code == 0, err
    for marker in STAGE_MARKERS.values():
        assert marker in out


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["inspect", "{target}:chain", "--args", "f64[10], f65[3]"], 2, ["unknown dtype"]),
        (["inspect", "{tmp}/missing.py:chain", "--args", "f64[4]"], 1, ["no such file"]),
        (["inspect", "{target}:nothere", "--args", "f64[4]"], 1, ["no function"]),
        (["inspect", "{target}:branchy", "--args", "f64[16]"], 3, ["cannot trace branchy"]),
        (["inspect", "{target}:inverse", "--args", "f64[4,4]"], 3, ["cannot trace inverse"]),
    ],
    ids=["bad-spec", "missing-file", "missing-func", "untraceable-branch", "unsupported-call"],
)
def test_subprocess_errors(target: Path, argv: list[str], code: int, words: list[str]) -> None:
    argv = [a.format(target=target, tmp=target.parent) for a in argv]
    got, out, err = run_subprocess(*argv)
    assert got == code, err
    assert_one_line_error(err, *words)


def test_subprocess_version_and_usage() -> None:
    code, out, _ = run_subprocess("--version")
    assert code == 0 and out.startswith("autojit ")
    code, _, err = run_subprocess()
    assert code == 2 and "choose a command" in err
