"""Boards across projects: named registrations and cross-board dependencies (issue 17).

A board reaches another board only through a registration, never implicitly:

* **team** registrations live in the board's versioned ``.ledgit/projects.yaml`` (paths
  relative to the board's root, so sibling checkouts work for everyone);
* **per-user** ones in ``$XDG_CONFIG_HOME/ledgit/projects.yaml`` (default
  ``~/.config/ledgit/projects.yaml``), paths absolute. A user's registration of an alias
  overrides the team's (a person may keep the sibling checkout elsewhere).

The file (both kinds)::

    name: app              # how other boards' allow-lists name this board (default: root dir name)
    allow: [app, client]   # optional: only boards of these names may reach this one ([] = none)
    projects:
      lib: {path: ../lib}
      spec: {path: ../spec, ref: v1.2}   # read at this Git ref, as a submodule pins a commit

A registration with ``ref`` is read from a snapshot of the other board's ``.ledgit/`` at the
commit the ref names now (cached per commit under ``$XDG_CACHE_HOME/ledgit/projects``); such a
board is read-only through the alias. Every failure fails closed with one line naming the alias:
an alias that is not registered, a path with no board, a ref that does not resolve, a board whose
allow-list does not name this one.

A dependency on another board's task is written ``ALIAS:ID`` in ``depends_on``; it is done
when that task's status in the other board is ``done``. Nothing here recurses without a visited
set, so a cycle across boards is reported, never followed forever.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ledgit.core.errors import NOT_FOUND, USAGE, LedgitError, located
from ledgit.storage.board import Board
from ledgit.storage.config import yaml_settings
from ledgit.storage.locate import LEDGIT_DIR
from ledgit.storage.ownership import adopt_path, make_dirs

FILE_NAME = "projects.yaml"
ALIAS_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_FILE_KEYS = ("name", "allow", "projects")
_ENTRY_KEYS = ("path", "ref")


class Registration(NamedTuple):
    """One alias: ``path`` as written, relative to ``base`` unless absolute; ``ref`` a Git
    revision to read the other board at (None: its working tree); ``source`` "board" (team,
    versioned) or "user" (per-user config)."""

    alias: str
    path: str
    ref: str | None
    source: str
    base: Path

    @property
    def location(self) -> Path:
        """The other board's root (absolute, normalised; not resolved through links)."""
        return Path(os.path.normpath(self.base / self.path))


class ProjectsFile(NamedTuple):
    """A parsed projects.yaml: ``name`` (None: default), ``allow`` (None: anyone), and
    ``projects`` alias -> {"path": str, "ref"?: str}."""

    name: str | None
    allow: tuple[str, ...] | None
    projects: dict[str, dict[str, str]]


class ExternalStatus(NamedTuple):
    """What one ``ALIAS:ID`` dependency says now: ``status`` (None = UNKNOWN, then
    ``reason`` says why), ``task`` (the full id when found), ``source`` (where it was read:
    "working tree of PATH" or "REF at COMMIT of PATH")."""

    dependency: str
    alias: str
    task: str | None
    status: str | None
    source: str | None
    reason: str | None

    def as_json(self) -> dict[str, Any]:
        return {"dependency": self.dependency, "project": self.alias, "id": self.task,
                "status": self.status if self.status is not None else "UNKNOWN",
                "source": self.source, "reason": self.reason}


def split_dependency(dep: str) -> tuple[str | None, str]:
    """``("lib", "T-abc")`` for ``"lib:T-abc"``; ``(None, dep)`` for a local dependency."""
    alias, colon, task = dep.partition(":")
    return (alias, task) if colon else (None, dep)


def user_file() -> Path:
    """The per-user registrations file (``$XDG_CONFIG_HOME/ledgit/projects.yaml``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                             ".config")
    return Path(base) / "ledgit" / FILE_NAME


def board_file(board: Board) -> Path:
    """The team registrations file of ``board`` (``.ledgit/projects.yaml``)."""
    return board.dir / FILE_NAME


def read_file(path: Path) -> ProjectsFile:
    """Parse a projects.yaml; a missing file is empty. Raises LedgitError exit 2 naming the
    file, line and field for anything malformed (the record's YAML rules: no implicit
    typing, no tags or aliases)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ProjectsFile(None, None, {})
    except UnicodeDecodeError:
        raise LedgitError(located("not valid UTF-8", str(path)), USAGE) from None
    except OSError as exc:
        raise LedgitError(f"{path}: cannot read: {exc.strerror or exc}", USAGE) from None
    raw, lines = yaml_settings(text, str(path))

    def fail(key: str, message: str) -> LedgitError:
        line = lines.get(key.split(".")[0])
        parts = key.split(".")
        if len(parts) > 1:  # an entry's line: where its alias is written
            for n, text_line in enumerate(text.splitlines(), start=1):
                head = text_line.strip()
                if head.startswith((f"{parts[1]}:", f'"{parts[1]}":', f"'{parts[1]}':")):
                    line = n
                    break
        return LedgitError(located(message, str(path), line, key), USAGE)

    for key in raw:
        if key not in _FILE_KEYS:
            raise fail(key, f"unknown setting (known: {', '.join(_FILE_KEYS)})")
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not ALIAS_RE.fullmatch(name)):
        raise fail("name", "must be a name of letters, digits, '.', '_' or '-'")
    allow = raw.get("allow")
    if allow is not None:
        if allow == "":
            allow = []
        if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
            raise fail("allow", "must be a list of board names")
    projects: dict[str, dict[str, str]] = {}
    entries = raw.get("projects") or {}
    if not isinstance(entries, dict):
        raise fail("projects", "must be a mapping of alias: {path, ref}")
    for alias, entry in entries.items():
        where = f"projects.{alias}"
        if not ALIAS_RE.fullmatch(alias):
            raise fail(where, "an alias is letters, digits, '.', '_' or '-'")
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) \
                or not entry["path"].strip():
            raise fail(where, "needs a path")
        for key, value in entry.items():
            if key not in _ENTRY_KEYS or not isinstance(value, str):
                raise fail(f"{where}.{key}", "unknown key (known: path, ref)"
                           if key not in _ENTRY_KEYS else "must be a single value")
        projects[alias] = {k: entry[k] for k in _ENTRY_KEYS if entry.get(k)}
    return ProjectsFile(name if isinstance(name, str) else None,
                        tuple(allow) if allow is not None else None, projects)


def render_file(content: ProjectsFile) -> str:
    """The deterministic text of a projects.yaml (strings as JSON, which YAML reads as
    double-quoted scalars)."""
    lines = ["# ledgit project registrations (ledgit project add/remove; docs/projects.md)"]
    if content.name is not None:
        lines.append(f"name: {json.dumps(content.name)}")
    if content.allow is not None:
        lines.append(f"allow: [{', '.join(json.dumps(a) for a in content.allow)}]")
    lines.append("projects:" if content.projects else "projects: {}")
    for alias in sorted(content.projects):
        entry = content.projects[alias]
        body = ", ".join(f"{k}: {json.dumps(entry[k])}" for k in _ENTRY_KEYS if k in entry)
        lines.append(f"  {json.dumps(alias)}: {{{body}}}")
    return "\n".join(lines) + "\n"


def board_name(board: Board) -> str:
    """How allow-lists name ``board``: its projects.yaml ``name``, else its root's name."""
    return read_file(board_file(board)).name or os.path.basename(board.root_str)


def registrations(board: Board) -> dict[str, Registration]:
    """Every alias ``board`` may reach: the team's, then the user's (which override)."""
    found: dict[str, Registration] = {}
    for source, path, base in (("board", board_file(board), board.root),
                               ("user", user_file(), Path.cwd())):
        for alias, entry in read_file(path).projects.items():
            found[alias] = Registration(alias, entry["path"], entry.get("ref"), source, base)
    return found


def duplicate_of(board: Board, regs: Mapping[str, Registration]) -> dict[str, str]:
    """Aliases of ``regs`` that name a board already reached, each mapped to what it repeats:
    ``board`` itself (``""``; a working-tree registration of it, as a hand-written or older
    projects.yaml may hold) or an earlier alias (sorted) for the same directory and ref.
    Directories are compared with links resolved."""
    seen: dict[tuple[str, str | None], str] = {(os.path.realpath(board.root_str), None): ""}
    repeats: dict[str, str] = {}
    for alias in sorted(regs):
        reg = regs[alias]
        key = (os.path.realpath(reg.location), reg.ref)
        if key in seen:
            repeats[alias] = seen[key]
        else:
            seen[key] = alias
    return repeats


def registration(board: Board, alias: str) -> Registration:
    """The registration of ``alias``; exit 4 naming it when there is none."""
    found = registrations(board).get(alias)
    if found is None:
        raise LedgitError(f"project {alias!r} is not registered (ledgit project add {alias} "
                          f"PATH; see: ledgit project list)", NOT_FOUND)
    return found


def add(board: Board, alias: str, path: str, ref: str | None, *, user: bool) -> Registration:
    """Register ``alias`` -> ``path`` (and ``ref``) in the team file (default) or the user's.

    The team file stores the path relative to the board's root; the user's, absolute. The
    other board must exist now -- in its work tree, or with ``ref`` at the commit the ref
    names in its repository, whatever the work tree holds -- exit 4 otherwise.
    Re-adding an alias replaces it. Exit 2 for a malformed alias, and for ``path`` naming
    this board itself (links resolved; with or without ``ref``): a board reaches its own tasks
    by id, and a registration of it would list each of them twice (docs/projects.md)."""
    if not ALIAS_RE.fullmatch(alias):
        raise LedgitError(f"project add: {alias!r}: an alias is letters, digits, '.', '_' "
                          f"or '-' (at most 64)", USAGE)
    target = Path(os.path.abspath(path))
    if os.path.realpath(target) == os.path.realpath(board.root_str):
        raise LedgitError(f"project add {alias}: {path} is this board ({board.root_str}); it "
                          f"reaches its own tasks without a registration (depend on ID, not "
                          f"{alias}:ID)", USAGE)
    file = user_file() if user else board_file(board)
    stored = str(target) if user else os.path.relpath(target, board.root_str)
    reg = Registration(alias, stored, ref, "user" if user else "board",
                       Path.cwd() if user else board.root)
    # said before open_registration's "registered in"; with a ref, the board is looked for
    # at the ref (its work tree may be anywhere else: issue 36)
    if not target.is_dir() if ref else not (target / LEDGIT_DIR).is_dir():
        what = f"no directory {target}" if ref else f"no ledgit board at {target} (ledgit " \
                                                     f"init there first)"
        raise LedgitError(f"project add {alias}: {what}; nothing registered", NOT_FOUND)
    open_registration(board, reg)  # fail closed now rather than at the first read
    content = read_file(file)
    projects = dict(content.projects)
    projects[alias] = {"path": stored, **({"ref": ref} if ref else {})}
    _write(file, ProjectsFile(content.name, content.allow, projects))
    return reg


def remove(board: Board, alias: str, *, user: bool) -> Registration:
    """Remove ``alias`` from the team file (default) or the user's; exit 4 when it is not
    registered there."""
    file = user_file() if user else board_file(board)
    content = read_file(file)
    if alias not in content.projects:
        where = "your user config" if user else "this board"
        raise LedgitError(f"project {alias!r} is not registered in {where} ({file})",
                          NOT_FOUND)
    entry = content.projects[alias]
    projects = {k: v for k, v in content.projects.items() if k != alias}
    _write(file, ProjectsFile(content.name, content.allow, projects))
    return Registration(alias, entry["path"], entry.get("ref"), "user" if user else "board",
                        Path.cwd() if user else board.root)


def _write(path: Path, content: ProjectsFile) -> None:
    """Replace ``path`` atomically (temp file in the same dir, then rename); made by root in
    another user's directory, it is theirs (issue 36)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        make_dirs(path.parent)
        tmp.write_text(render_file(content), encoding="utf-8", newline="\n")
        adopt_path(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LedgitError(f"{path}: cannot write: {exc.strerror or exc}", USAGE) from None


def open_project(board: Board, alias: str, *, write: bool = False) -> Board:
    """The board registered as ``alias``, checked: it exists, its allow-list names
    ``board``, and (``write``) it is not pinned at a ref. Exit 4 / 2 naming the alias."""
    reg = registration(board, alias)
    if write and reg.ref:
        raise LedgitError(f"project {alias!r} is read at ref {reg.ref}: it cannot be written "
                          f"through the alias (cd {reg.location} to change it)", USAGE)
    return open_registration(board, reg)


def open_registration(board: Board, reg: Registration) -> Board:
    """The board behind ``reg`` (a snapshot at its ref when it has one); fails closed."""
    root = reg.location
    if reg.ref:  # read at the ref: whatever its work tree holds now (issue 36)
        if not root.is_dir():
            raise LedgitError(f"project {reg.alias!r}: no directory {root} (registered in "
                              f"{_where(reg)})", NOT_FOUND)
        # lazy: Git and hashlib, 6 ms (-X importtime) of every read; only ref: registrations
        from ledgit.operations.projectsnapshot import snapshot

        other = snapshot(reg.alias, reg.ref, root)
    elif not (root / LEDGIT_DIR).is_dir():
        raise LedgitError(f"project {reg.alias!r}: no ledgit board at {root} (registered in "
                          f"{_where(reg)})", NOT_FOUND)
    else:
        other = Board(root)
    allow = read_file(board_file(other)).allow
    if allow is not None:
        name = board_name(board)
        if name not in allow:
            raise LedgitError(f"project {reg.alias!r}: the board at {root} does not allow "
                              f"{name!r} (its .ledgit/{FILE_NAME} allow: "
                              f"{', '.join(allow) or 'nobody'})", USAGE)
    return other


def _where(reg: Registration) -> str:
    return f".ledgit/{FILE_NAME}" if reg.source == "board" else str(user_file())


def source_of(reg: Registration, other: Board) -> str:
    """Where a read through ``reg`` comes from, for readouts."""
    if reg.ref:
        commit = os.path.basename(other.root_str).rpartition("-")[2]
        return f"{reg.ref} at {commit[:12]} of {reg.location}"
    return f"working tree of {reg.location}"


def external_status(board: Board, dep: str,
                    cache: dict[str, Board | LedgitError] | None = None) -> ExternalStatus:
    """The status of the ``ALIAS:ID`` dependency ``dep`` of a task of ``board``: read from
    the other board's files (at its ref when registered with one); UNKNOWN (status None)
    with the reason when the alias is not registered, the board cannot be read, or the task
    is not there. ``cache`` (alias -> board or error) spares re-opening a board."""
    alias, task = split_dependency(dep)
    assert alias is not None
    cache = {} if cache is None else cache
    opened = cache.get(alias)
    if opened is None:
        try:
            opened = open_project(board, alias)
        except LedgitError as exc:
            opened = exc
        cache[alias] = opened
    if isinstance(opened, LedgitError):
        return ExternalStatus(dep, alias, None, None, None, opened.message)
    source = source_of(registration(board, alias), opened)
    try:
        tid = opened.resolve_id(task)
        status = str(opened.read(tid).fields["status"])
    except LedgitError as exc:
        return ExternalStatus(dep, alias, None, None, source, exc.message)
    return ExternalStatus(dep, alias, tid, status, source, None)


ALLOW_UNKNOWN = "--allow-unknown-deps"  # how a face asks to keep a dependency no board holds


def resolve_dependencies(board: Board, texts: Iterable[str], *,
                         allow_unknown: bool = False) -> list[str]:
    """:func:`ledgit.operations.arguments.resolve_ids` for ``--depends`` (and ``--set
    depends_on=``): each part names a task of ``board`` or, ``ALIAS:ID``, of a registered
    board, and is resolved to its full id; in order, without repeats.

    A part that names no task (no board holds it: issue 36) raises LedgitError exit 4
    naming it and the way to keep it anyway; ``allow_unknown`` keeps it as written instead
    (it may be on another branch, or the other board may not have it yet). An ambiguous
    prefix is exit 4 either way."""
    found: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            full = _dependency(board, part, allow_unknown)
            if full not in found:
                found.append(full)
    return found


def _dependency(board: Board, part: str, allow_unknown: bool) -> str:
    alias, task = split_dependency(part)
    try:
        where = board if alias is None else open_project(board, alias)
    except LedgitError:
        if allow_unknown:
            return part
        raise
    matches = where.matching_ids(task.strip()) if task.strip() else []
    if len(matches) == 1:
        return matches[0] if alias is None else f"{alias}:{matches[0]}"
    if matches or not task.strip():
        where.resolve_id(task)  # raises: ambiguous (listing the candidates), or no id given
    if allow_unknown:
        return part
    on = "this board" if alias is None else f"project {alias!r}"
    raise LedgitError(f"depends_on: no task {task!r} on {on} (if it is on another branch "
                      f"or not made yet: {ALLOW_UNKNOWN} keeps it as written)", NOT_FOUND)


def resolve_settings(board: Board, sets: Iterable[tuple[str, str]], *,
                     allow_unknown: bool = False) -> list[tuple[str, str]]:
    """``update --set`` assignments with ``depends_on``'s value resolved as ``--depends``
    is (:func:`resolve_dependencies`); every other assignment as given."""
    return [(name, ",".join(resolve_dependencies(board, [value],
                                                 allow_unknown=allow_unknown)))
            if name == "depends_on" else (name, value) for name, value in sets]


def unknown_dependencies(board: Board, deps_by_task: Mapping[str, list[str]]
                         ) -> list[tuple[str, str, str]]:
    """(task, dependency, why) for each dependency that names a task no board holds: a local
    id with no task file here, an ``ALIAS:ID`` of a registered board that lacks it (an
    unregistered alias is :func:`unregistered`'s). What ``verify`` warns of (issue 36): it
    may be on another branch, so it fails nothing."""
    known = registrations(board)
    cache: dict[str, Board | LedgitError] = {}
    found = []
    for task, deps in deps_by_task.items():
        for dep in deps:
            alias, tid = split_dependency(dep)
            if alias is None:
                if not board.exists(tid):
                    found.append((task, dep, "no task on this board"))
            elif alias in known:
                ext = external_status(board, dep, cache)
                if ext.task is None:
                    found.append((task, dep, ext.reason or "not found"))
    return found


def dependency_statuses(board: Board, deps: list[str]) -> dict[str, str | None]:
    """``{dep: status or None}`` for a task's ``depends_on``, local and ``ALIAS:ID`` alike
    (the shape :func:`ledgit.operations.claims.claim` takes)."""
    cache: dict[str, Board | LedgitError] = {}
    out: dict[str, str | None] = {}
    for dep in deps:
        if split_dependency(dep)[0] is None:
            try:
                out[dep] = str(board.read(dep).fields["status"])
            except LedgitError:
                out[dep] = None
        else:
            out[dep] = external_status(board, dep, cache).status
    return out


def find_cycle(board: Board, task_id: str, limit: int = 10_000) -> list[str] | None:
    """A dependency cycle through ``task_id`` across boards, as ``["app:T-a", "lib:T-b",
    "app:T-a"]`` (each board named by :func:`board_name`), or None. Walks depends_on depth
    first with a visited set (each task at most once, at most ``limit`` tasks): never loops.
    Boards or tasks that cannot be read end that path."""
    start = (os.path.realpath(board.root_str), task_id)
    boards: dict[str, Board] = {start[0]: board}
    names: dict[str, str] = {}

    def name(node: tuple[str, str]) -> str:
        if node[0] not in names:
            names[node[0]] = board_name(boards[node[0]])
        return f"{names[node[0]]}:{node[1]}"

    def deps_of(node: tuple[str, str]) -> Iterator[tuple[str, str]]:
        b = boards[node[0]]
        try:
            fields = b.read(node[1]).fields
        except LedgitError:
            return
        for dep in fields.get("depends_on") or []:
            alias, tid = split_dependency(dep)
            if alias is None:
                yield (node[0], tid)
                continue
            try:
                other = open_project(b, alias)
                tid = other.resolve_id(tid)
            except LedgitError:
                continue
            key = os.path.realpath(other.root_str)
            boards.setdefault(key, other)
            yield (key, tid)

    visited: set[tuple[str, str]] = set()
    path: list[tuple[str, str]] = [start]
    stack: list[Iterator[tuple[str, str]]] = [deps_of(start)]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            path.pop()
            continue
        if nxt == start:
            return [name(n) for n in path] + [name(start)]
        if nxt in visited or len(visited) >= limit:
            continue
        visited.add(nxt)
        path.append(nxt)
        stack.append(deps_of(nxt))
    return None


def unregistered(board: Board, deps_by_task: Mapping[str, list[str]]) -> list[str]:
    """One problem line per ``ALIAS:ID`` dependency whose alias ``board`` has not
    registered (``verify``: rule ``project``)."""
    known = registrations(board)
    problems = []
    for task, deps in deps_by_task.items():
        for dep in deps:
            alias = split_dependency(dep)[0]
            if alias is not None and alias not in known:
                problems.append(f"{task}: depends_on: {dep}: project {alias!r} is not "
                                f"registered (ledgit project add {alias} PATH)")
    return problems
