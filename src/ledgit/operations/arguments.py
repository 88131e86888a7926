"""What a command's arguments name, for every face: task ids from unique prefixes, a task's
status, comma-separated lists. Dependencies across boards (``ALIAS:ID``) are
:mod:`ledgit.operations.projects`' (``resolve_dependencies``, ``dependency_statuses``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.core.errors import LedgitError

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


def status_of(board: Board, task: str) -> str | None:
    """The status of ``task`` on ``board``, None when it cannot be read."""
    try:
        return str(board.read(task).fields["status"])
    except LedgitError:
        return None
