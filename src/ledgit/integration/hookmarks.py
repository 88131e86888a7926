"""What one hook tells the next within one Git command (docs/git.md, "Every path that moves
a ref"): two small files in the worktree's private dir (``<git dir>/ledgit``).

* :data:`CHECKED`: the raw diff lines (``:<modes> <oids> <status>\t<path>``, git-diff(1) "Raw
  output format", full object ids) of every path under a ``.ledgit/`` directory that the
  ``pre-commit`` hook checked and passed, written only when every task it checked had both
  files staged and no path needs Git's quoting. Those lines name the old and the new blob of
  every file the check read, so they decide its answer alone: a commit whose ``git diff-tree
  -r --raw --no-abbrev`` against its parent prints the same lines passes the same check. The
  ``reference-transaction`` block compares the two (shell builtins and that one git process)
  and starts no ledgit process when they are equal -- also for a note left by an earlier
  commit that was abandoned: its answer is the same.
* :data:`ORIG_HEAD_NOTE`: ``<pid> <oid>``, written by the ``reference-transaction`` block when
  a command saves ``ORIG_HEAD`` (``reset``, ``merge``, ``pull``, the sequencer's ``--abort``)
  before it moves the branch, with the id of that git process (``$PPID`` in the hook's shell
  block, given to ledgit as ``LEDGIT_GIT_PID``), so a note left by an earlier command is never
  taken for this one's. The ref guard tells a ``reset --soft`` (its events still staged) from
  an ``update-ref``, and a ``reset`` from a ``commit --amend``, by it.

Written whole (a temp file and a rename) or not at all; a private dir that is missing or not
writable means no note, and the ref guard then starts and checks as it would without one.
"""

from __future__ import annotations

import contextlib
import os

PID_ENV = "LEDGIT_GIT_PID"  # the git process that runs the hook ($PPID of the hook script)
CHECKED = "checked"  # what a pre-commit hook checked and passed
ORIG_HEAD_NOTE = "orig-head"  # the ORIG_HEAD that process saved
PRIVATE = "ledgit"  # the worktree's private dir under its git dir (storage.locate)


def is_board_path(path: bytes) -> bool:
    """Whether a repository path lies under a ``.ledgit/`` directory: what the pathspecs
    ``:(top,glob).ledgit/**`` and ``:(top,glob)**/.ledgit/**`` select (git.objects.BOARD_GLOBS)."""
    return b"/.ledgit/" in b"/" + path


def board_lines(raw: bytes) -> bytes | None:
    """What ``git diff-tree -r --raw --no-renames --no-abbrev`` (without ``-z``) prints for
    the records of a ``--raw -z --no-renames`` diff (``:<modes> <oids> <status>\0<path>\0``
    each) whose path lies under a ``.ledgit/`` directory, in Git's order; None when such a
    path holds a byte Git may quote (outside printable ASCII, a space, ``"`` or a backslash)."""
    parts = raw.split(b"\0")
    lines = []
    for i in range(0, len(parts) - 1, 2):
        meta, path = parts[i], parts[i + 1]
        if meta.startswith(b":") and is_board_path(path):
            if not all(0x21 <= c <= 0x7E and c not in b'"\\' for c in path):
                return None
            lines.append(meta + b"\t" + path + b"\n")
    return b"".join(lines)


def note_checked(git_dir: str, raw: bytes) -> None:
    """Leave the :data:`CHECKED` note (nothing without a board path in ``raw``, or with one
    Git would quote): ``raw`` is the pre-commit hook's ``git diff-index --cached --raw -z
    --no-renames --no-abbrev HEAD`` output, and the caller has checked that every task it
    checked had both files staged."""
    lines = board_lines(raw)
    if lines:
        _write(os.path.join(git_dir, PRIVATE, CHECKED), lines)


def saved_orig_head(git_dir: str) -> str | None:
    """The ``ORIG_HEAD`` the git process in ``LEDGIT_GIT_PID`` saved before moving a branch
    (:data:`ORIG_HEAD_NOTE`), None when that process saved none (or ledgit runs by hand)."""
    pid = os.environ.get(PID_ENV, "")
    try:
        with open(os.path.join(git_dir, PRIVATE, ORIG_HEAD_NOTE), encoding="ascii",
                  errors="replace") as fh:
            words = fh.readline().split()
    except OSError:
        return None
    return words[1] if pid.isdigit() and len(words) == 2 and words[0] == pid else None


def _write(path: str, data: bytes) -> None:
    """``path`` whole through a temp file and a rename; nothing when the dir is missing or
    not writable (a note is an optimisation, never a requirement)."""
    if not os.path.isdir(os.path.dirname(path)):
        return
    tmp = f"{path}.{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
