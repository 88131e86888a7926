"""What a command's arguments name: task ids from unique prefixes, dependencies (``ALIAS:ID``
across boards), comma-separated lists, and the actor (``--by``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.actor import ACTOR_ENV, actor_name
from ledgit.commands.output import err
from ledgit.errors import LedgitError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from ledgit.board import Board


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
    board, resolved there to its full id (ledgit.projects; exit 4 naming the alias when it is
    not registered, cannot be read or holds no such task)."""
    found: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            if ":" in part:
                # (ledgit.projects: with dataclasses and pathlib)
                from ledgit import projects  # lazy: 12 ms (-X importtime): plain ids skip it

                alias, task = projects.split_dependency(part)
                assert alias is not None
                full = f"{alias}:{projects.open_project(board, alias).resolve_id(task)}"
            else:
                full = board.resolve_id(part)
            if full not in found:
                found.append(full)
    return found


def actor_or_warn(by: str | None, root: Path | str) -> str:
    """:func:`ledgit.actor.actor_name`, plus one stderr warning when no ``--by``,
    ``$LEDGIT_ACTOR`` or Git ``user.name`` names the actor and it falls back to ``unknown``.
    Each writing command calls it once."""
    actor = actor_name(by, root)
    if actor == "unknown" and not (by or "").strip() \
            and not os.environ.get(ACTOR_ENV, "").strip():
        err("ledgit: warning: no --by, $LEDGIT_ACTOR or git user.name: writing as 'unknown'")
    return actor
