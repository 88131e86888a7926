"""What a command's arguments name, for every face: task ids from unique prefixes,
dependencies (``ALIAS:ID`` across boards) and their statuses, comma-separated lists, and the
actor (``--by``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.core.errors import LedgitError
from ledgit.operations import projects

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ledgit.storage.board import Board


def split_list(texts: Iterable[str]) -> list[str]:
    """The comma-separated parts of ``texts`` (``--label a,b --label c``), stripped, in
    order, without empty parts or repeats."""
    parts: list[str] = []
    for text in texts:
        for part in text.split(","):
            if part.strip() and part.strip() not in parts:
                parts.append(part.strip())
    return parts


def resolve_ids(board: Board, texts: Iterable[str]) -> list[str]:
    """Full task ids for ``texts`` (each may hold several, separated by commas or spaces),
    in order, without repeats. Raises LedgitError (exit 4) for an unknown or ambiguous id."""
    ids: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            tid = board.resolve_id(part)
            if tid not in ids:
                ids.append(tid)
    return ids


def resolve_or_keep(board: Board, text: str) -> str:
    """The full id ``text`` names on ``board``, else ``text`` as given (``update
    --no-depends`` removes a dependency whose task is gone)."""
    try:
        return board.resolve_id(text)
    except LedgitError:
        return text


def resolve_dependencies(board: Board, texts: Iterable[str]) -> list[str]:
    """:func:`resolve_ids` for ``--depends``: ``ALIAS:ID`` names a task of a registered
    board, resolved there to its full id (ledgit.operations.projects; exit 4 naming the alias when
    it is
    not registered, cannot be read or holds no such task)."""
    found: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            if ":" in part:

                alias, task = projects.split_dependency(part)
                assert alias is not None
                full = f"{alias}:{projects.open_project(board, alias).resolve_id(task)}"
            else:
                full = board.resolve_id(part)
            if full not in found:
                found.append(full)
    return found


def dependency_statuses(board: Board, deps: list[str]) -> dict[str, str | None]:
    """Each dependency's status (None: not found or unreadable), for a claim's readiness;
    ``ALIAS:ID`` read on its registered board
    (:func:`ledgit.operations.projects.dependency_statuses`)."""
    if any(":" in d for d in deps):

        return projects.dependency_statuses(board, deps)
    return {d: status_of(board, d) for d in deps}


def status_of(board: Board, task: str) -> str | None:
    """The status of ``task`` on ``board``, None when it cannot be read."""
    try:
        return str(board.read(task).fields["status"])
    except LedgitError:
        return None
