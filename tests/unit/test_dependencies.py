"""Every runtime dependency ``pyproject.toml`` declares is imported by the package: a
dependency nothing imports only costs every user an install (Numba and SciPy were declared
and never imported; Numba is a test and benchmark peer, in those extras)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: distribution name -> the module it installs, where they differ
MODULE_OF = {"nvidia-ml-py": "pynvml", "cupy-cuda13x": "cupy"}


def _distribution(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower()


def _imported_modules() -> set[str]:
    imports = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
    return {name for path in (ROOT / "autojit").rglob("*.py")
            for name in imports.findall(path.read_text())}


def test_every_runtime_dependency_is_imported_by_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [_distribution(r) for r in project["dependencies"]]
    imported = _imported_modules()
    unused = [d for d in declared if MODULE_OF.get(d, d.replace("-", "_")) not in imported]
    assert unused == []


def test_the_gpu_extra_is_imported_by_the_package() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    imported = _imported_modules()
    unused = [d for d in map(_distribution, extras["gpu"]) if MODULE_OF.get(d, d) not in imported]
    assert unused == []
