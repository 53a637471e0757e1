"""docs/architecture.md matches the code: its knobs table is the one generated from
``autojit/config.py`` (every knob, its default and meaning), and its package map names
every module of the runtime packages."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from autojit.config import KNOBS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def _generator():
    spec = importlib.util.spec_from_file_location("knobs_doc", ROOT / "docs" / "knobs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_knobs_table_is_the_generated_one() -> None:
    """Regenerate with ``PYTHONPATH=. python docs/knobs.py --write`` after changing a knob."""
    assert _generator().block() in DOC.read_text()


def test_every_knob_has_a_row() -> None:
    rows = re.findall(r"^\| `(AUTOJIT_[A-Z_]+)` \|", DOC.read_text(), re.M)
    assert rows == [knob.variable for knob in KNOBS]


def test_the_package_map_names_every_module() -> None:
    text = DOC.read_text()
    for package in ("dispatch", "routing", "runtime", "cache", "observe"):
        assert f"`autojit/{package}/`" in text, package
        for path in sorted((ROOT / "autojit" / package).glob("*.py")):
            if path.name != "__init__.py":
                assert f"`{path.name}`" in text, f"{package}/{path.name}"
    assert "`autojit/config.py`" in text
