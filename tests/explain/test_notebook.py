"""``examples/inspect.ipynb`` runs top to bottom (nbclient) and shows the HTML inspection
and the fusion graph picture."""

from __future__ import annotations

from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "inspect.ipynb"


def _outputs(cell: dict, mime: str) -> str:
    return "".join(str(o.get("data", {}).get(mime, "")) + str(o.get("text", ""))
                   for o in cell.get("outputs", []))


def test_notebook_runs_and_shows_inspection(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}})
    client.execute()   # "python3" is ipykernel's native kernel: this interpreter (the venv)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    html = _outputs(code[1], "text/html")
    assert "Escape report" in html and "moved to heap" in html and "<table" in html
    assert "Fusion graph" in html
    picture = _outputs(code[2], "text/html")
    assert "<svg" in picture or "[k0_reduce]" in picture
    assert "  why: " in _outputs(code[3], "text/plain")
