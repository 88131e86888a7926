"""Questions about refs, ancestry and operation state asked of Git for the ref guard
(DESIGN §12, "Every path, every forge"): git CLI only (argv lists), one process per question,
and plain file reads of the state Git leaves in the git directory. Nothing here decides what is
allowed: :mod:`ledgit.integration.refguard` does.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from ledgit.git.objects import BOARD_GLOBS, batch_contents
from ledgit.git.repository import run_git

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

ZERO = "0" * 40
_HEX = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_SQUASHED = re.compile(r"^commit ([0-9a-f]{40}(?:[0-9a-f]{24})?)\b", re.MULTILINE)


def is_zero(oid: str) -> bool:
    """True for Git's null object id (a created or deleted ref's missing side)."""
    return bool(oid) and set(oid) == {"0"}


def is_ancestor(cwd: str | Path, old: str, new: str) -> bool:
    """Whether commit ``old`` is an ancestor of (or equal to) ``new``
    (``git merge-base --is-ancestor``; exit 1 = no). A missing object counts as no."""
    return run_git(["merge-base", "--is-ancestor", old, new], cwd, check=False).returncode == 0


def merge_base(cwd: str | Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, None when they share none."""
    proc = run_git(["merge-base", a, b], cwd, check=False)
    out = proc.stdout.decode("ascii", "replace").strip()
    return out if proc.returncode == 0 and out else None


def parents_of(cwd: str | Path, commits: Sequence[str]) -> dict[str, list[str]]:
    """commit -> its parents in order (empty for a root commit), one ``git rev-list
    --no-walk --parents``; a commit Git cannot read is left out."""
    if not commits:
        return {}
    proc = run_git(["rev-list", "--no-walk=unsorted", "--parents", "--stdin"], cwd,
                   input="\n".join(dict.fromkeys(commits)).encode() + b"\n", check=False)
    found: dict[str, list[str]] = {}
    for line in proc.stdout.decode("ascii", "replace").splitlines():
        ids = line.split()
        if ids:
            found[ids[0]] = ids[1:]
    return found


def first_parents(cwd: str | Path, commits: list[str]) -> dict[str, str | None]:
    """commit -> its first parent (None for a root commit), as :func:`parents_of`."""
    return {c: (ps[0] if ps else None) for c, ps in parents_of(cwd, commits).items()}


def ref_values(cwd: str | Path, refs: Sequence[str]) -> dict[str, str | None]:
    """ref (``HEAD``, ``refs/heads/x``) -> the commit it names now, None when it names none
    (an unborn branch, a ref that does not exist yet); one ``git cat-file --batch-check``.
    In a ``reference-transaction`` hook this is the value before the transaction commits:
    the ref's real old value where Git hands the hook zeros (githooks(5))."""
    wanted = list(dict.fromkeys(refs))
    if not wanted:
        return {}
    out = run_git(["cat-file", "--batch-check"], cwd,
                  input="".join(f"{r}^{{commit}}\n" for r in wanted).encode(),
                  check=False).stdout.decode("ascii", "replace").splitlines()
    found: dict[str, str | None] = {}
    for ref, line in zip(wanted, out, strict=False):  # a short answer: None
        words = line.split()
        found[ref] = words[0] if len(words) == 3 and words[1] == "commit" else None
    return found


def paths_between(cwd: str | Path, old: str, new: str) -> set[str]:
    """Every path (not only a board's) whose entry differs between commits ``old`` and
    ``new`` (``git diff-tree -r --no-renames``)."""
    out = run_git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new],
                  cwd).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def index_differs_from(cwd: str | Path, commit: str) -> set[str]:
    """Every path whose entry in the index of the work tree ``cwd`` is in differs from commit
    ``commit``'s (``git diff-index --cached``: entries only, no file is read). The work tree's
    own index, not a ``GIT_INDEX_FILE`` the hook inherited (``filter-branch`` runs
    ``update-ref`` with its temporary index)."""
    out = run_git(["diff-index", "--cached", "-z", "--name-only", "--no-renames", commit],
                  cwd).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def index_locked(git_dir: str | Path) -> bool:
    """Whether a Git command holds the lock of the worktree's index (``index.lock`` in its
    git dir): ``git commit -a`` and ``git commit PATHS`` hold it until their ref has moved,
    and write the index only after (gitrepository-layout(5))."""
    return os.path.exists(os.path.join(str(git_dir), "index.lock"))


def sequencer_action(git_dir: str | Path) -> str | None:
    """"revert" or "cherry-pick" while ``git revert``/``cherry-pick`` of several commits runs
    (the first command of ``sequencer/todo``), None when none does."""
    try:
        with open(os.path.join(str(git_dir), "sequencer", "todo"), encoding="utf-8",
                  errors="replace") as fh:
            first = fh.readline().split(maxsplit=1)
    except OSError:
        return None
    if not first:
        return None
    return "revert" if first[0] == "revert" else "cherry-pick"


def symbolic_head(cwd: str | Path) -> str | None:
    """The branch HEAD points at (``refs/heads/x``), None when HEAD is detached."""
    proc = run_git(["symbolic-ref", "-q", "HEAD"], cwd, check=False)
    out = proc.stdout.decode("utf-8", "replace").strip()
    return out if proc.returncode == 0 and out else None


def shallow_commits(common_dir: str | Path) -> set[str]:
    """The commits whose parents this clone has not fetched (the ``shallow`` file of the
    common git directory, gitrepository-layout(5)); empty in a full clone."""
    try:
        with open(os.path.join(str(common_dir), "shallow"), encoding="ascii",
                  errors="replace") as fh:
            return {line.strip() for line in fh if _HEX.match(line.strip())}
    except OSError:
        return set()


def read_state_oid(git_dir: str | Path, name: str) -> str | None:
    """The object id in a state file of the git directory (``REBASE_HEAD``,
    ``CHERRY_PICK_HEAD``, ``REVERT_HEAD``, ``ORIG_HEAD``), None when absent or not an id."""
    try:
        with open(os.path.join(str(git_dir), name), encoding="ascii", errors="replace") as fh:
            first = fh.readline().strip()
    except OSError:
        return None
    return first if _HEX.match(first) else None


def squashed_tip(git_dir: str | Path) -> str | None:
    """The newest commit ``git merge --squash`` squashed, from ``SQUASH_MSG`` (its
    "Squashed commit of the following:" list, newest first, git-merge(1)); None when no
    squash is pending."""
    try:
        with open(os.path.join(str(git_dir), "SQUASH_MSG"), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read(1 << 16)
    except OSError:
        return None
    found = _SQUASHED.search(text)
    return found.group(1) if found else None


def am_patch(git_dir: str | Path) -> bytes | None:
    """The patch ``git am`` is applying (``rebase-apply/patch``) while it is stopped or
    committing; None outside ``git am``."""
    base = os.path.join(str(git_dir), "rebase-apply")
    if not os.path.exists(os.path.join(base, "applying")):
        return None
    try:
        with open(os.path.join(base, "patch"), "rb") as fh:
            return fh.read()
    except OSError:
        return None


def patch_additions(patch: bytes, wanted: str = "/history/") -> dict[str, bytes]:
    """path -> the lines a unified diff adds to each file whose path holds ``wanted``
    (``+`` lines, without the ``+``), joined by newlines: what a patch brings to a history."""
    added: dict[str, list[bytes]] = {}
    current: str | None = None
    for line in patch.split(b"\n"):
        if line.startswith(b"diff --git "):
            current = None
        elif line.startswith(b"+++ "):
            name = line[4:].decode("utf-8", "surrogateescape").strip()
            current = name[2:] if name.startswith("b/") else None
            if current is not None and wanted not in "/" + current:
                current = None
        elif current is not None and line.startswith(b"+"):
            added.setdefault(current, []).append(line[1:])
    return {path: b"\n".join(lines) + b"\n" for path, lines in added.items()}


def reflog_previous(cwd: str | Path, ref: str, n: int = 1) -> str | None:
    """The value ``ref`` had ``n`` moves ago (``ref@{n}``), None when its reflog is shorter."""
    proc = run_git(["rev-parse", "-q", "--verify", f"{ref}@{{{n}}}"], cwd, check=False)
    out = proc.stdout.decode("ascii", "replace").strip()
    return out if proc.returncode == 0 and out else None


def board_diff(cwd: str | Path, old: str, new: str) -> list[str]:
    """Paths under any ``.ledgit/`` that differ between commits ``old`` and ``new``, sorted
    (``git diff-tree -r --no-renames``), asked in ``cwd`` without discovery (a hook's
    directory: the work tree top, or a bare repository's git directory)."""
    out = run_git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, "--",
                   *BOARD_GLOBS], cwd).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def blobs(cwd: str | Path, names: Sequence[str]) -> dict[str, bytes | None]:
    """name -> blob content (None: no blob there) for ``REV:path`` names, and ``:path`` for
    the index of the work tree ``cwd`` is in (not a ``GIT_INDEX_FILE`` the hook inherited);
    one ``git cat-file --batch`` in ``cwd``."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    out = run_git(["cat-file", "--batch"], cwd,
                  input="\n".join(wanted).encode() + b"\n").stdout
    return batch_contents(out, wanted)
