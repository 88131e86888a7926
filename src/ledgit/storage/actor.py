"""Who is writing (DESIGN §9): the actor every event names, from ``--by``, ``LEDGIT_ACTOR`` or
Git's ``user.name`` (asked only when neither of the first two names the actor)."""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import repository

ACTOR_ENV = "LEDGIT_ACTOR"


def actor_name(explicit: str | None, root: Path | str) -> str:
    """Who is writing (DESIGN §9): ``explicit`` (``--by``), else ``LEDGIT_ACTOR``, else Git's
    ``user.name`` for ``root``, else ``"unknown"``. Raises LedgitError exit 2 for a name that
    is not one line."""
    for candidate in (explicit, os.environ.get(ACTOR_ENV)):
        if candidate is not None and candidate.strip():
            return checked_actor(candidate.strip())
    name: str | None = None
    try:


        name = repository.user_name(Path(root))
    except Exception:  # noqa: BLE001 - outside Git, no git binary, a refused repository
        name = None
    return checked_actor(name.strip()) if name and name.strip() else "unknown"


def checked_actor(actor: str) -> str:
    """``actor`` stripped, when it is one non-empty line; else LedgitError exit 2."""
    if not isinstance(actor, str) or not actor.strip() or any(
            c in actor for c in "\n\r\x00\u2028\u2029\x85"):
        raise LedgitError(f"invalid actor name {actor!r} (one non-empty line)", USAGE)
    return actor.strip()


def actor_or_warn(by: str | None, root: Path | str) -> str:
    """:func:`actor_name`, plus one stderr warning when no ``--by``,
    ``$LEDGIT_ACTOR`` or Git ``user.name`` names the actor and it falls back to ``unknown``.
    Each writing command calls it once."""
    actor = actor_name(by, root)
    if actor == "unknown" and not (by or "").strip() \
            and not os.environ.get(ACTOR_ENV, "").strip():
        with suppress(OSError, ValueError):  # a closed or full stderr: the write goes on
            sys.stderr.write("ledgit: warning: no --by, $LEDGIT_ACTOR or git user.name: "
                             "writing as 'unknown'\n")
    return actor
