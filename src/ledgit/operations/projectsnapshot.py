"""A registered board read at a Git ref (docs/projects.md): the other board's ``.ledgit/`` at the
commit the ref names now, unpacked once per commit into the user's cache. Apart from
:mod:`ledgit.operations.projects` because only a registration with ``ref:`` asks Git."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ledgit.core.errors import NOT_FOUND, USAGE, LedgitError
from ledgit.git import objects, repository
from ledgit.storage.board import Board
from ledgit.storage.locate import LEDGIT_DIR
from ledgit.storage.ownership import adopt_path, make_dirs


def snapshot(alias: str, ref: str, root: Path) -> Board:
    """The other board's ``.ledgit/`` at ``ref`` (the commit it names now), unpacked once
    per commit into the user's cache; exit 4 when the ref does not resolve there.
    ``alias`` names the registration in messages."""
    try:
        commit = objects.resolve_commit(root, ref)
        top = repository.toplevel(root)
    except LedgitError as exc:
        raise LedgitError(f"project {alias!r}: ref {ref!r} does not resolve in {root} "
                          f"({exc.message})", NOT_FOUND) from None
    if top is None:
        raise LedgitError(f"project {alias!r}: {root} is not in a Git repository, so ref "
                          f"{ref!r} cannot be read", NOT_FOUND)
    prefix = os.path.relpath(root, top)
    prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
    cache = Path(os.environ.get("XDG_CACHE_HOME")
                 or os.path.join(os.path.expanduser("~"), ".cache")) / "ledgit" / "projects"
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:16]
    snap = cache / f"{key}-{commit}"
    if not (snap / LEDGIT_DIR).is_dir():
        files = objects.tree_files(root, commit, f"{prefix}{LEDGIT_DIR}")
        if not files:
            raise LedgitError(f"project {alias!r}: no ledgit board at {ref} "
                              f"({commit[:12]}) of {root}", NOT_FOUND)
        tmp = cache / f".{key}-{commit}.{os.getpid()}"
        try:
            # root with another user's HOME (sudo keeps it): the cache is theirs (issue 36)
            for rel, data in files.items():
                dest = tmp / rel[len(prefix):]
                make_dirs(dest.parent)
                dest.write_bytes(data)
                adopt_path(dest)
            make_dirs(tmp / LEDGIT_DIR / "tasks")
            os.replace(tmp, snap)
        except OSError as exc:
            if not (snap / LEDGIT_DIR).is_dir():
                raise LedgitError(f"project {alias!r}: cannot unpack {ref} into "
                                  f"{cache}: {exc.strerror or exc}", USAGE) from None
    board = Board(snap)
    board.read_only = (f"project {alias!r} is read at ref {ref}: it cannot be written "
                       f"through the alias (cd {root} to change it)")
    return board
