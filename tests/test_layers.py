"""The folder is the layer (DESIGN §11, docs/design.md "The map"): the import graph of
src/ledgit, read from the packages themselves.

Each package of ``ledgit`` (and the two root modules, ``ledgit`` and ``ledgit.__main__``)
says in its docstring which packages it may import, on a line ``May import: ledgit.core,
ledgit.git.`` (``nothing`` for none). The layers are derived from those lines: they must form
a DAG, and its order is the layering. Every import is read with :mod:`ast` -- at module level,
inside functions and under ``if TYPE_CHECKING:`` alike -- and held to two rules:

* a module imports only its own package, a package its docstring names, or ``ledgit`` itself
  (which holds only the version);
* no cycle between modules, counting every import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MAY_IMPORT = re.compile(r"^May import:(.*?)(?:\.[ \t]*$|\Z)", re.M | re.S)


def module_files() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in sorted((SRC / "ledgit").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def package_of(module: str) -> str:
    """The layer unit a module belongs to: ``ledgit.X`` for anything under the package
    ``ledgit/X/``; a module directly under ``ledgit/`` is its own unit."""
    return ".".join(module.split(".")[:2])


def declared() -> dict[str, set[str]]:
    """Each unit -> the units its docstring says it may import (read from the source)."""
    modules = module_files()
    units = {package_of(m) for m in modules}
    found: dict[str, set[str]] = {}
    for unit in sorted(units):
        doc = ast.get_docstring(ast.parse(modules[unit].read_text(encoding="utf-8"))) or ""
        match = MAY_IMPORT.search(doc)
        assert match, f"{modules[unit]}: its docstring has no 'May import: ...' line"
        text = " ".join(match.group(1).split())
        found[unit] = (set() if text.startswith("nothing")
                       else {w.strip() for w in text.split(",") if w.strip()})
    return found


def layers(allowed: dict[str, set[str]]) -> list[list[str]]:
    """The units in layers, lowest first (Kahn): a unit stands above all it may import.
    Raises AssertionError when the declarations form a cycle."""
    left = {unit: set(deps) - {unit} for unit, deps in allowed.items()}
    out: list[list[str]] = []
    while left:
        floor = sorted(u for u, deps in left.items() if not deps & set(left))
        assert floor, f"the 'May import' lines form a cycle among {sorted(left)}"
        out.append(floor)
        for u in floor:
            del left[u]
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks (``typing.TYPE_CHECKING`` too)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def imports(name: str, path: Path, modules: dict[str, Path]
            ) -> list[tuple[str, int, bool]]:
    """(imported ledgit module, line, only under TYPE_CHECKING) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            # `from ledgit.git import objects` imports the module ledgit.git.objects
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                       for a in node.names]
        for target in targets:
            if target in modules and target != name:
                found.append((target, node.lineno, id(node) in typing_only))
    return found


def graph() -> dict[str, list[tuple[str, int, bool]]]:
    modules = module_files()
    return {name: imports(name, path, modules) for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_packages_declare_a_layering() -> None:
    """Every unit declares what it may import, the declarations name real units and form a
    DAG, and its layers are the ones DESIGN §11 and §13 draw: core, Git, storage, a task's
    life (operations), Git's paths (integration), the faces, the command line over them, the
    entry point on top."""
    allowed = declared()
    units = set(allowed)
    unknown = {u: sorted(deps - units) for u, deps in allowed.items() if deps - units}
    assert unknown == {}
    floors = layers(allowed)
    assert floors == [["ledgit", "ledgit.core"], ["ledgit.git"], ["ledgit.storage"],
                      ["ledgit.operations"], ["ledgit.integration"],
                      ["ledgit.boardpage", "ledgit.hooks", "ledgit.interop", "ledgit.mcp"],
                      ["ledgit.cli"], ["ledgit.__main__"]]


def test_no_import_leaves_its_layer_upward_or_sideways() -> None:
    """Each import stays in its package or goes to one the package's docstring names
    (counting imports inside functions and under TYPE_CHECKING)."""
    allowed = declared()
    wrong = [f"{name} line {line} imports {target}"
             for name, found in graph().items()
             for target, line, _ in found
             if package_of(target) not in {package_of(name), "ledgit"}
             | allowed[package_of(name)]]
    assert wrong == []


def test_no_import_cycle() -> None:
    """No cycle between modules, counting every import: function-level and type-only too."""
    edges = {name: {t for t, _, _ in found} for name, found in graph().items()}
    found = cycles(edges)
    detail = [f"{a} -> {b} (line {line})" for component in found for a in component
              for b, line, _ in graph()[a] if b in component]
    assert found == [], detail


def test_the_graph_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The reader itself: module level, function level, relative, ``from ledgit.git import
    x``; TYPE_CHECKING imports are marked; a cycle is found; a declared cycle is refused."""
    source = tmp_path / "ledgit" / "interop" / "probe.py"
    source.parent.mkdir(parents=True)
    source.write_text("from typing import TYPE_CHECKING\n"
                      "import ledgit.core.record\n"
                      "from . import common\n"
                      "if TYPE_CHECKING:\n    from ledgit.storage.board import Board\n"
                      "def f():\n    from ledgit.git import objects\n    import json\n",
                      encoding="utf-8")
    modules = {m: Path() for m in ("ledgit", "ledgit.core.record", "ledgit.interop",
                                   "ledgit.interop.common", "ledgit.storage.board",
                                   "ledgit.git", "ledgit.git.objects", "ledgit.interop.probe")}
    assert imports("ledgit.interop.probe", source, modules) == [
        ("ledgit.core.record", 2, False), ("ledgit.interop.common", 3, False),
        ("ledgit.storage.board", 5, True), ("ledgit.git.objects", 7, False)]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert package_of("ledgit.storage.board") == "ledgit.storage"
    assert package_of("ledgit.__main__") == "ledgit.__main__"
    assert layers({"a": set(), "b": {"a"}, "c": {"a", "b"}}) == [["a"], ["b"], ["c"]]
    with pytest.raises(AssertionError, match="cycle"):
        layers({"a": {"b"}, "b": {"a"}})


@pytest.mark.parametrize("module", sorted(m for m in module_files()
                                          if package_of(m) == "ledgit.core"))
def test_the_core_imports_no_storage_library(module: str) -> None:
    """The pure core imports no click, pygit2, sqlite3 or subprocess, even lazily."""
    path = module_files()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and not node.level}
    assert names.isdisjoint({"click", "pygit2", "sqlite3", "subprocess"}), module


def test_no_module_is_over_650_lines() -> None:
    """Modules of one idea (issue 23): none over 650 lines."""
    long = {m: n for m, p in module_files().items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 650}
    assert long == {}


def test_the_map_names_every_module_in_its_package() -> None:
    """docs/design.md opens with "The map": one row per package naming each of its modules
    (by file name), so a newcomer finds where a change goes from the map alone."""
    text = (SRC.parent / "docs" / "design.md").read_text(encoding="utf-8")
    the_map = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in the_map.splitlines():
        match = re.match(r"\|\s*`(ledgit(?:/[\w]+)?/?)`\s*\|(.*)", line)
        if match:
            rows[match.group(1).rstrip("/")] = match.group(2)
    missing = []
    for module in module_files():
        unit = package_of(module)
        if module == unit:
            continue  # the package itself
        key = unit.replace(".", "/")
        stem = module.split(".", 2)[2] if module.count(".") >= 2 else module
        if f"`{stem.split('.')[-1]}`" not in rows.get(key, ""):
            missing.append(f"{module} (row {key})")
    assert not missing, "not on docs/design.md's map: " + ", ".join(missing)
