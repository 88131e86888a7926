"""The import graph of src/ledgit has layers and no cycles (DESIGN §11, docs/design.md).

The graph is read with :mod:`ast` from the source: every ``import`` and ``from ... import`` of
a ledgit module, at module level and inside functions alike. Two rules:

* no cycle between ledgit modules (imports under ``if TYPE_CHECKING:`` excepted: they never
  run, and annotations may name a type of a module that imports this one);
* no import from a lower layer to a higher one (imports under ``if TYPE_CHECKING:`` included:
  a lower layer does not even name a higher layer's types).

Every module must be placed in :data:`LAYERS`; a new module fails the test until it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Lowest first. A module may import modules of its own layer or of a lower one.
LAYERS: dict[str, tuple[str, ...]] = {
    # no I/O, nothing of ledgit above: the record, the history, the merge policy, the
    # transitions and what they need
    "core": ("ledgit", "ledgit.core.errors", "ledgit.core.markers", "ledgit.core.lifecycle",
             "ledgit.core.canonjson", "ledgit.core.readout", "ledgit.core.timestamps", "ledgit.core.revision",
             "ledgit.core.schema", "ledgit.core.canonread", "ledgit.core.frontmatter", "ledgit.core.render",
             "ledgit.core.record", "ledgit.core.layoutloss", "ledgit.core.patch",
             "ledgit.core.history", "ledgit.core.merge", "ledgit.core.change", "ledgit.operations.transitions"),
    # a board on disk, its index, its watcher, its config, Git
    "storage": ("ledgit.storage.locate", "ledgit.storage.oserrors", "ledgit.storage.locks", "ledgit.storage.parallel",
                "ledgit.storage.config",
                "ledgit.git.repo", "ledgit.storage.watch", "ledgit.storage.taskfiles", "ledgit.storage.indextables",
                "ledgit.storage.indexbuild", "ledgit.storage.indexsearch", "ledgit.storage.index", "ledgit.storage.board",
                "ledgit.storage.tasklock", "ledgit.storage.writepath", "ledgit.storage.boardcheck", "ledgit.storage.boardrepair",
                "ledgit.storage.boardinit", "ledgit.storage.actor", "ledgit.storage.live"),
    # what the commands and hooks run: the gate, resolve, install/doctor, import/export
    "operations": ("ledgit.operations.gate", "ledgit.operations.resolve", "ledgit.operations.install", "ledgit.operations.projects",
                   "ledgit.operations.precommit",
                   "ledgit.interop",
                   "ledgit.interop.incoming", "ledgit.interop.summary", "ledgit.interop.sources",
                   "ledgit.interop.genesis", "ledgit.interop.staging",
                   "ledgit.interop.historywriter", "ledgit.interop.plan", "ledgit.interop.reimport",
                   "ledgit.interop.bulkimport", "ledgit.interop.beads", "ledgit.interop.backlog",
                   "ledgit.interop.yylo", "ledgit.interop.stateframe"),
    # the command table and its functions, read by both parsers
    "commands": ("ledgit.cli.argspec", "ledgit.cli.commands", "ledgit.cli.commands.table",
                 "ledgit.cli.commands.output", "ledgit.cli.commands.running",
                 "ledgit.operations.arguments", "ledgit.cli.commands.rows", "ledgit.cli.commands.reads",
                 "ledgit.cli.commands.file_reads",
                 "ledgit.cli.commands.writes", "ledgit.cli.commands.lifecycle",
                 "ledgit.cli.commands.items", "ledgit.cli.commands.audit", "ledgit.cli.commands.init",
                 "ledgit.cli.commands.project", "ledgit.cli.commands.cache"),
    # thin: parse, call, print
    "faces": ("ledgit.cli.main", "ledgit.cli.helpdoc", "ledgit.boardpage", "ledgit.boardpage.cli",
              "ledgit.boardpage.model", "ledgit.boardpage.plots", "ledgit.boardpage.render",
              "ledgit.boardpage.server", "ledgit.boardpage.source", "ledgit.mcp.server",
              "ledgit.cli.check",
              "ledgit.cli.gitcli", "ledgit.interop.cli",
              "ledgit.hooks.dispatch", "ledgit.hooks.mergedriver", "ledgit.cli.demo", "ledgit.__main__"),
}
# Modules left out of the graph (none: the read server that once was is deleted).
LEFT_OUT: tuple[str, ...] = ()
RANK = {module: rank for rank, modules in enumerate(LAYERS.values()) for module in modules}
LAYER_OF = {module: layer for layer, modules in LAYERS.items() for module in modules}


def module_files() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in sorted((SRC / "ledgit").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


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
            # `from ledgit import git` imports the module ledgit.git.repo
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                       for a in node.names]
        for target in targets:
            if target in modules and target != name:
                found.append((target, node.lineno, id(node) in typing_only))
    return found


def graph() -> dict[str, list[tuple[str, int, bool]]]:
    modules = module_files()
    return {name: [i for i in imports(name, path, modules) if i[0] not in LEFT_OUT]
            for name, path in modules.items() if name not in LEFT_OUT}


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


def test_every_module_has_a_layer() -> None:
    modules = set(module_files()) - set(LEFT_OUT)
    assert sorted(modules - set(RANK)) == [], "place the new module(s) in LAYERS"
    assert sorted(set(RANK) - modules) == [], "LAYERS names a module that does not exist"


def test_no_import_points_up() -> None:
    up = [f"{name} ({LAYER_OF[name]}) line {line} imports {target} ({LAYER_OF[target]})"
          for name, found in graph().items() if name in RANK
          for target, line, _ in found if target in RANK and RANK[target] > RANK[name]]
    assert up == []


def test_no_import_cycle() -> None:
    runtime = {name: {t for t, _, typing_only in found if not typing_only}
               for name, found in graph().items()}
    found = cycles(runtime)
    detail = [f"{a} -> {b} (line {line})" for component in found for a in component
              for b, line, typing_only in graph()[a] if b in component and not typing_only]
    assert found == [], detail


def test_the_graph_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The reader itself: module level, function level, relative, ``from ledgit import x``;
    TYPE_CHECKING imports are marked; a cycle is found."""
    source = tmp_path / "ledgit" / "interop" / "probe.py"
    source.parent.mkdir(parents=True)
    source.write_text("from typing import TYPE_CHECKING\n"
                      "import ledgit.core.record\n"
                      "from . import common\n"
                      "if TYPE_CHECKING:\n    from ledgit.storage.board import Board\n"
                      "def f():\n    from ledgit import git\n    import json\n",
                      encoding="utf-8")
    modules = {m: Path() for m in ("ledgit", "ledgit.core.record", "ledgit.interop",
                                   "ledgit.interop.common", "ledgit.storage.board", "ledgit.git.repo",
                                   "ledgit.interop.probe")}
    assert imports("ledgit.interop.probe", source, modules) == [
        ("ledgit.core.record", 2, False), ("ledgit.interop.common", 3, False),
        ("ledgit.storage.board", 5, True), ("ledgit.git.repo", 7, False)]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("module", LAYERS["core"])
def test_the_core_imports_no_storage_library(module: str) -> None:
    """The pure core imports no click, pygit2, sqlite3 or subprocess, even lazily."""
    path = module_files()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and not node.level}
    assert names.isdisjoint({"click", "pygit2", "sqlite3", "subprocess"}), module


def test_every_module_is_on_the_design_picture() -> None:
    """docs/design.md §11 draws every module where LAYERS puts it (issue 14 item 6)."""
    text = (SRC.parent / "docs" / "design.md").read_text(encoding="utf-8")
    picture = text.split("## 11.", 1)[1].split("```", 2)[1]
    rows: dict[str, str] = {}
    layer = ""
    heads = {"faces": "faces", "commands": "commands", "operations": "operations",
             "storage": "storage", "pure core": "core"}
    for line in picture.splitlines():
        for head, name in heads.items():
            if line.startswith(head):
                layer = name
        rows[layer] = rows.get(layer, "") + " " + line
    missing = []
    for module in module_files():
        parts = module.split(".")
        word = "ledgit/__init__" if module == "ledgit" else parts[-1]
        found = [name for name, row in rows.items()
                 if any(w.strip("()·,") in (word, "/".join(parts[1:])) for w in row.split())]
        if LAYER_OF.get(module) not in found and module not in ("ledgit.cli.commands",
                                                                "ledgit.interop",
                                                                "ledgit.boardpage"):
            missing.append(f"{module} (layer {LAYER_OF.get(module)}, drawn in {found})")
    assert not missing, "not on docs/design.md §11's picture in its layer: " + ", ".join(missing)
