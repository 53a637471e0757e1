"""The runtime packages import one way (docs/architecture.md):

    dispatch -> routing -> runtime -> lower_cpu / lower_gpu / cache -> fuse -> ir

with ``observe`` and ``config`` importable from any of them (``observe`` imports only
``config``; ``config`` only ``errors``). Every module of those packages is parsed with
``ast`` and every import counted, function-local and ``TYPE_CHECKING`` ones included: a
circle closed by an import inside a function is still a circle.

Run alone: ``python -m pytest tests/unit/test_package_layering.py -q``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AUTOJIT = ROOT / "autojit"

#: the packages (and top-level modules) whose imports are checked
CHECKED = ("dispatch", "routing", "runtime", "cache", "observe", "config")

#: what each may import besides itself (autojit's other packages; the standard library and
#: third-party modules are not listed). ``_native`` is the optional C extension, ``_version``
#: the version string.
ALLOWED: dict[str, frozenset[str]] = {
    "dispatch": frozenset({"routing", "runtime", "cache", "observe", "config", "errors",
                           "fuse", "ir", "lower_cpu", "lower_gpu", "tracer", "explain",
                           "_native"}),
    "routing": frozenset({"runtime", "cache", "observe", "config", "errors", "fuse", "ir",
                          "lower_cpu", "lower_gpu", "tracer"}),
    "runtime": frozenset({"cache", "observe", "config", "errors", "fuse", "ir", "lower_cpu",
                          "lower_gpu", "_native"}),
    "cache": frozenset({"config", "errors", "fuse", "ir", "lower_cpu", "lower_gpu",
                        "_version"}),
    "observe": frozenset({"config", "errors"}),
    "config": frozenset({"errors"}),
}


def _modules(unit: str) -> list[Path]:
    folder = AUTOJIT / unit
    return sorted(folder.glob("*.py")) if folder.is_dir() else [AUTOJIT / f"{unit}.py"]


def _package_of(module: str) -> str | None:
    """Return the autojit package (or top-level module) a dotted module name is in."""
    parts = module.split(".")
    if parts[0] != "autojit":
        return None
    return parts[1] if len(parts) > 1 else "autojit"


def _imports(path: Path) -> list[tuple[int, str]]:
    """Return (line, module) of every import in ``path``, at any depth (functions,
    ``if TYPE_CHECKING:`` blocks, ``try:``) and relative ones resolved."""
    inside = path.is_relative_to(ROOT)
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1]) if inside else ""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if module == "autojit":   # ``from autojit import config``: the names are modules
                found += [(node.lineno, f"autojit.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return found


def _graph() -> dict[str, dict[str, list[str]]]:
    """Return, per checked unit, the autojit packages it imports and where."""
    graph: dict[str, dict[str, list[str]]] = {}
    for unit in CHECKED:
        edges: dict[str, list[str]] = {}
        for path in _modules(unit):
            for line, module in _imports(path):
                target = _package_of(module)
                if target is not None and target != unit:
                    edges.setdefault(target, []).append(
                        f"{path.relative_to(ROOT)}:{line} imports {module}")
        graph[unit] = edges
    return graph


def test_every_checked_package_exists() -> None:
    for unit in CHECKED:
        assert _modules(unit) and all(p.exists() for p in _modules(unit)), unit


@pytest.mark.parametrize("unit", CHECKED)
def test_imports_point_down(unit: str) -> None:
    wrong = [where for target, lines in _graph()[unit].items()
             if target not in ALLOWED[unit] for where in lines]
    assert wrong == [], "\n".join(wrong)


def test_no_circle_among_the_runtime_packages() -> None:
    graph = {unit: {t for t in edges if t in CHECKED} for unit, edges in _graph().items()}
    circles = []

    def visit(unit: str, path: tuple[str, ...]) -> None:
        for target in sorted(graph[unit]):
            if target in path:
                circles.append(" -> ".join((*path[path.index(target):], target)))
            else:
                visit(target, (*path, target))

    for unit in CHECKED:
        visit(unit, (unit,))
    assert circles == []


def test_the_old_policy_package_is_gone_and_nothing_imports_it() -> None:
    """``autojit/policy`` was split up; an import left behind would not fail where an
    installed autojit still has it (an editable install's finder serves the stale copy)."""
    assert not (AUTOJIT / "policy").exists()
    stale = []
    for folder in ("autojit", "tests", "benchmarks", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, module in _imports(path):
                if module == "autojit.policy" or module.startswith("autojit.policy."):
                    stale.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert stale == [], "\n".join(stale)


def test_the_import_graph_sees_function_local_imports(tmp_path: Path) -> None:
    """The checker itself: an import inside a function counts."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from autojit.dispatch import dispatcher\n")
    assert _imports(module) == [(2, "autojit.dispatch")]
