"""The README's two quick-start commands and .ci/run agree (text only: nothing installed)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_SEPARATORS = {"&&", "||", ";", "|"}


def _readme_commands() -> list[list[list[str]]]:
    """Return each README line starting with ``python3.11 -m venv``, split on ``&&``."""
    lines = (ROOT / "README.md").read_text().splitlines()
    commands = [line.strip() for line in lines if line.strip().startswith("python3.11 -m venv")]
    return [[shlex.split(part) for part in command.split("&&")] for command in commands]


def _after(words: list[str], program: str, first: str) -> list[str] | None:
    """Return the words after ``<...>/program first`` up to a shell separator, or None."""
    for i, word in enumerate(words[:-1]):
        if (word == program or word.endswith("/" + program)) and words[i + 1] == first:
            rest = words[i + 2:]
            stop = next((j for j, w in enumerate(rest) if w in _SEPARATORS), len(rest))
            return rest[:stop]
    return None


def _find(parts: list[list[str]], program: str, first: str) -> list[str] | None:
    """Return the first match of :func:`_after` over the parts of one command."""
    found = (_after(words, program, first) for words in parts)
    return next((words for words in found if words is not None), None)


def test_readme_has_exactly_two_setup_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    demo, tests = commands
    assert _find(demo, "pip", "install") == ["."]
    assert demo[-1][0].endswith("/autojit") and demo[-1][1:] == ["demo"]
    assert _find(tests, "pip", "install") == ["-e", ".[test]"]
    assert _find(tests, "python", "-m") == ["pytest"]


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = _readme_commands()
    ci = ROOT / ".ci" / "run"
    text = ci.read_text()
    lines = [shlex.split(line) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert _find(lines, "pip", "install") == _find(tests, "pip", "install")
    assert _find(lines, "python", "-m") == _find(tests, "python", "-m")
    assert "python3.11 -m venv" in text
    assert "set -euo pipefail" in text


def test_ci_script_is_executable_bash() -> None:
    ci = ROOT / ".ci" / "run"
    assert ci.read_text().startswith("#!/usr/bin/env bash")
    assert os.access(ci, os.X_OK)
