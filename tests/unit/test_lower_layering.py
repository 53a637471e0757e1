"""The renderers' modules import one another one way: no import circle inside
``autojit/lower_cpu`` or ``autojit/lower_gpu`` (function-local imports count: a local import
that closes a circle is a circle all the same), and no module imports another's private
names (what one emitter needs of another is its public seam: ``loop_nest``, ``rows``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGES = ("lower_cpu", "lower_gpu")
ROOT = Path(__file__).resolve().parents[2] / "autojit"


def _imports(package: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Return, per module of ``package``, the sibling modules it imports (anywhere in the
    file) with the names imported from each."""
    modules = {p.stem for p in (ROOT / package).glob("*.py")}
    prefix = f"autojit.{package}"
    found: dict[str, list[tuple[str, list[str]]]] = {m: [] for m in modules}
    for module in modules:
        tree = ast.parse((ROOT / package / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(prefix + "."):
                        found[module].append((alias.name.split(".")[2], []))
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [alias.name for alias in node.names]
                if node.module == prefix:       # from autojit.lower_cpu import svml_symbols
                    found[module] += [(name, []) for name in names if name in modules]
                elif node.module.startswith(prefix + "."):
                    found[module].append((node.module.split(".")[2], names))
    return found


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one import circle of ``graph`` (module -> modules it imports), or None."""
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_inside_a_renderer(package):
    graph = {m: {target for target, _ in edges if target != m}
             for m, edges in _imports(package).items()}
    assert _circle(graph) is None, " -> ".join(_circle(graph) or [])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_a_siblings_private_names(package):
    private = sorted(f"{m} imports {name} from {target}"
                     for m, edges in _imports(package).items() for target, names in edges
                     for name in names if name.startswith("_") and target != m)
    assert private == []


def test_the_circle_finder_finds_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


def test_team_job_block_offsets_come_from_its_table():
    """Every job-block address in the team's native code is its field's slot in
    ``JOB_FIELDS``, and drain's and begin's ctypes signatures match their IR parameters."""
    import ctypes
    import re

    from autojit.lower_cpu import team

    text = team.native_ir()
    assert not re.search(r"\b(JOB|BOX)\.", text)
    aliases = {"caller": "cpu", "fresh": "spins"}      # IR names of two loaded fields
    seen = re.findall(r"%([\w.]+)\.p = getelementptr i8, ptr %job, i64 (\d+)", text)
    assert seen
    for name, offset in seen:
        assert int(offset) == 8 * team.JOB_SLOT[aliases.get(name, name)], name
    assert team.JOB_FIELDS[0].name == "next"          # drain's state: the block itself
    for symbol, fn in (("drain", team._DrainFn), ("begin", team._BeginFn)):
        params = re.search(rf"define \w+ @autojit\.{symbol}\(([^)]*)\)", text)[1]
        kinds = [p.split()[0] for p in params.split(",")]
        assert [{"ptr": ctypes.c_void_p, "i64": ctypes.c_int64}[k] for k in kinds] == list(
            fn._argtypes_), symbol
