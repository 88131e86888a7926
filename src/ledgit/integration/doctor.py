"""``ledgit doctor``: the gaps in a repository's ledgit wiring, per worktree
(git-worktree(1)), each with the command that closes it (DESIGN §8).

:func:`worktree_gaps` checks one worktree: the merge driver, the attributes, the hooks (or the
pre-commit framework's), the board's private dir, its ``.gitignore``, the index's freshness,
interrupted writes, task files that differ from their history head (:func:`unrecorded_edits`)
and unresolved task conflicts. :func:`doctor` reports them for every worktree and board;
``--fix`` runs ``ledgit install`` (:mod:`ledgit.integration.install`) and refreshes stale
indexes, ``--repair`` rolls interrupted writes forward.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import NamedTuple

from ledgit.core.errors import LedgitError
from ledgit.git import gitindex, repository
from ledgit.integration.driverconfig import DRIVER
from ledgit.integration.gate import attributes_name_driver, board_prefixes
from ledgit.integration.hookblock import (
    HOOKS,
    REF_HOOK,
    hook_installed,
    pre_commit_framework_gaps,
    uses_pre_commit_framework,
)
from ledgit.integration.install import attributes_file, install, preflight, work_tree_top
from ledgit.integration.links import links_at
from ledgit.integration.restore import behind_head
from ledgit.operations.leases import doctor_lines
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import BOARD_IGNORE
from ledgit.storage.boardlinks import escaping_link, link_refusal
from ledgit.storage.boardrepair import pending_repairs, repair_board
from ledgit.storage.index import Index
from ledgit.storage.indexfiles import INDEX_NAME, index_dir, private_dir_refusal
from ledgit.storage.oserrors import group_name, user_name
from ledgit.storage.ownership import foreign_files


class Gap(NamedTuple):
    """One thing ``doctor`` found missing: where (a worktree), what, and the fixing command."""

    worktree: Path
    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.worktree}: {self.what} (fix: {self.fix})"


def _driver_runs(value: str) -> bool:
    try:
        words = shlex.split(value)
    except ValueError:
        return False
    if not words:
        return False
    exe = words[0]
    return os.access(exe, os.X_OK) if os.path.isabs(exe) else shutil.which(exe) is not None


def worktree_gaps(wt: Path, board_rel: str, *, fix: bool = False) -> list[Gap]:
    """Gaps of one worktree: driver, attributes, hooks, index freshness, interrupted writes,
    unresolved task conflicts. With ``fix``, the index is refreshed on the way."""

    gaps: list[Gap] = []
    driver = repository.config_get(wt, f"merge.{DRIVER}.driver")
    if not driver:
        gaps.append(Gap(wt, f"merge.{DRIVER}.driver is not configured: Git would line-merge "
                            f"task files", "ledgit install"))
    elif not _driver_runs(driver):
        gaps.append(Gap(wt, f"merge.{DRIVER}.driver runs a missing program ({driver})",
                        "ledgit install"))
    if not attributes_name_driver(wt, board_rel):
        command = "ledgit install"
        try:
            preflight(attributes_file(wt), None, "install")
        except LedgitError as exc:  # install would refuse it: say what to do first
            command = f"{exc.message.partition(' (ledgit install')[0]}; then: ledgit install"
        gaps.append(Gap(wt, ".gitattributes does not route task files to the ledgit driver",
                        command))
    top = repository.toplevel(wt) or wt
    hdir = repository.hooks_dir(wt)
    if uses_pre_commit_framework(top):
        for what in pre_commit_framework_gaps(top, hdir):
            gaps.append(Gap(wt, what, "add ledgit to .pre-commit-config.yaml (ledgit install "
                                      "prints the snippet), then: pre-commit install"))
        if not hook_installed(hdir, REF_HOOK):
            gaps.append(Gap(wt, f"no ledgit {REF_HOOK} hook in {hdir} (the ref guard; the "
                                f"pre-commit framework has no stage for it)", "ledgit install"))
    else:
        missing = [n for n in HOOKS if not hook_installed(hdir, n)]
        if hdir.exists() and not hdir.is_dir():
            gaps.append(Gap(wt, f"{hdir} is not a directory, so Git runs no hooks from it",
                            "move it aside, then: ledgit install"))
        elif missing:
            gaps.append(Gap(wt, f"hooks without ledgit in {hdir}: {', '.join(missing)}",
                            "ledgit install"))
    gaps += link_gaps(wt, top / board_rel)
    board_root = top / board_rel
    if (board_root / ".ledgit").is_dir() and escaping_link(str(board_root)) is None:
        gaps += _board_gaps(wt, board_root, fix=fix)
    conflicted = gitindex.conflicted_paths(wt, f"{board_rel}.ledgit/")
    if conflicted:
        gaps.append(Gap(wt, f"{len(conflicted)} task file(s) or histories unmerged: "
                            + ", ".join(conflicted[:3]), "ledgit resolve"))
    return gaps + head_gaps(wt)


def head_gaps(wt: Path) -> list[Gap]:
    """HEAD, index and work tree disagree on a task: its history there lacks events HEAD's
    holds (:func:`ledgit.integration.restore.behind_head`), as a ``reset`` or ``checkout``
    that Git left half-done leaves it (issue 36)."""
    return [Gap(wt, f"{b.task}: {b.where} lack {b.events} event(s) of HEAD's history (a "
                    f"reset or checkout left half-done, or older files taken into the work "
                    f"tree); HEAD, index and work tree disagree",
                f"git checkout HEAD -- {' '.join(b.files)} (HEAD's files back), or to keep "
                f"the changes: ledgit restore-events HEAD, then git add {' '.join(b.files)}")
            for b in behind_head(wt)]


def link_gaps(wt: Path, board_root: Path) -> list[Gap]:
    """Symbolic links that would lead a board outside itself (issue 26): one on disk under
    ``board_root`` (:func:`ledgit.storage.boardlinks.escaping_link`), and every one under a
    board in the tree of HEAD (:func:`ledgit.integration.links.links_at`)."""
    gaps: list[Gap] = []
    found = escaping_link(str(board_root))
    if found is not None:
        gaps.append(Gap(wt, link_refusal(str(board_root), found),
                        f"replace {found} with the directory or file itself"))
    if repository.head_oid(wt) is not None:
        for path in links_at(wt, "HEAD"):
            gaps.append(Gap(wt, f"HEAD commits {path} as a symbolic link inside a board",
                            f"git rm --cached {path}, then commit the directory itself"))
    return gaps


def _board_gaps(wt: Path, root: Path, *, fix: bool) -> list[Gap]:

    board = Board(root)
    gaps: list[Gap] = []
    owners = owner_gap(wt, board)
    if owners is not None:
        gaps.append(owners)
    refused = _private_gap(wt, board)  # what that means for reads and writes there
    if refused is not None:
        gaps.append(refused)
    try:
        ignored = (root / ".ledgit" / ".gitignore").read_text(encoding="utf-8",
                                                              errors="replace").splitlines()
    except OSError:
        ignored = []
    if not all(line in ignored for line in BOARD_IGNORE):
        gaps.append(Gap(wt, f"{root / '.ledgit' / '.gitignore'} does not ignore the temp "
                            f"files of interrupted writes", "ledgit init"))
    stale = _index_stale(board, fix=fix)
    if stale:
        gaps.append(Gap(wt, stale, "ledgit cache rebuild"))
    interrupted = pending_repairs(board)
    if interrupted:
        gaps.append(Gap(wt, "interrupted writes: " + ", ".join(interrupted[:5]),
                        "ledgit doctor --repair"))
    unrecorded = unrecorded_edits(board, skip=set(interrupted))
    for tid in unrecorded[:MAX_LISTED]:
        gaps.append(Gap(wt, f"{tid}: the task file differs from its history head (a hand "
                            f"edit, or the file alone checked out or restored)",
                        f"ledgit record {tid}"))
    if len(unrecorded) > MAX_LISTED:
        gaps.append(Gap(wt, f"{len(unrecorded) - MAX_LISTED} more task file(s) differ from "
                            f"their history head", "ledgit check --fix"))
    return gaps


MAX_OWNED = 3  # doctor names this many files of another user's, then counts the rest


def owner_gap(wt: Path, board: Board) -> Gap | None:
    """Board or index files not owned by the board's owner (the owner of the directory
    holding ``.ledgit``; issue 36): anything under ``.ledgit/`` or the worktree's private
    dir that another user -- root, most often, by an older ledgit or another tool -- left
    there, which fails the owner's next write. The fix is the ``chown -R`` of the
    directories holding them, to that owner and the directory's group (``sudo`` unless
    doctor runs as root). None where there are no POSIX owners."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # pragma: no cover - Windows
        return None
    try:
        st = os.stat(board.root_str)
    except OSError:
        return None
    roots = [board.dir_str]
    if not board.private_str.startswith(board.dir_str + os.sep):  # outside Git: in .ledgit
        roots.append(board.private_str)
    found = foreign_files(roots, st.st_uid)
    if not found:
        return None
    holding = [r for r in roots if any(f == r or f.startswith(r + os.sep) for f in found)]
    name = user_name(st.st_uid)
    shown = ", ".join(os.path.relpath(f, board.root_str) for f in found[:MAX_OWNED])
    if len(found) > MAX_OWNED:
        shown += f" and {len(found) - MAX_OWNED} more"
    sudo = "" if geteuid() == 0 else "sudo "
    return Gap(wt, f"{len(found)} board or index file(s) not owned by {name} (uid "
                   f"{st.st_uid}), who owns {board.root_str}: {shown}; the owner's writes "
                   f"fail there",
               f"{sudo}chown -R {name}:{group_name(st.st_gid)} "
               + " ".join(shlex.quote(r) for r in holding))


def _private_gap(wt: Path, board: Board) -> Gap | None:
    """The worktree's private dir (locks, index) is read-only or another user's (issue 13):
    writes fail there, reads keep their index in this user's cache."""
    why = private_dir_refusal(board)
    if why is None:
        return None
    where = index_dir(board, create=False)
    reads = (f"reads keep their index in {where}" if where is not None
             else "reads build their index in memory")
    fix = why.rpartition("fix: ")[2] if "fix: " in why else "make it writable"
    return Gap(wt, f"{why.partition('; fix: ')[0]}: writes fail, {reads}", fix)


MAX_LISTED = 10  # doctor names this many unrecorded edits, then counts the rest


def unrecorded_edits(board: Board, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Tasks whose file's revision is not their history head's (DESIGN §6, rule
    ``record-head``): a hand edit not yet recorded, or a file put back by ``git checkout``/
    ``restore`` alone. The next write would record it as an ``edit`` event; ``ledgit record
    ID`` does it now. ``skip``: tasks already reported as interrupted writes."""
    found = {p.task for p in verify_board(board) if p.rule == "record-head"}
    return sorted(found - skip)


def _index_stale(board: Board, *, fix: bool) -> str | None:
    """A sentence when the worktree's index is missing or stale (None when fresh or fixed).

    Stale: a task file has no row, or a row was built from a file whose (mtime, size, inode)
    differ from the file's now, or a row has no file. Reads refresh the index themselves; a
    stale index only costs the next read, so ``fix`` just refreshes it.
    """

    state: str | None = None
    index = Index.open_existing(board)
    if index is None:
        where = index_dir(board, create=False)
        if os.path.lexists(os.path.join(board.private_str, INDEX_NAME)) and \
                where != board.private_str:
            return None  # present, but not this user's to use: the gaps above name it
        present = where is not None and os.path.lexists(os.path.join(where, INDEX_NAME))
        # a present index is never "not built" (issue 36): of another version or boot
        state = (f"the index {os.path.join(where or '', INDEX_NAME)} is out of date (another "
                 f"ledgit's schema, another board, or built before a restart)" if present
                 else "the index is not built")
    else:
        try:
            differ = index.stale_tasks()
        finally:
            index.close()
        if differ:
            state = (f"the index is stale ({len(differ)} task file(s) changed since it was "
                     f"built: {', '.join(differ[:3])})")
    if state is not None and fix:
        with Index.open(board) as fresh:
            fresh.refresh()
        return None
    return state


def doctor(cwd: Path, *, fix: bool = False, repair: bool = False) -> tuple[int, list[str]]:
    """``ledgit doctor``: every gap of every worktree with its fix; exit 1 when any is left.

    ``fix`` runs ``ledgit install`` (when a gap calls for it) and refreshes stale indexes;
    ``repair`` rolls interrupted writes forward (:meth:`Board.repair`) in every worktree.
    """

    work_tree_top(cwd, "doctor")
    # The board found from cwd, else every board Git tracks (boards in subdirectories).
    board_rel, *others = board_prefixes(cwd)
    lines: list[str] = []
    worktrees = repository.list_worktrees(cwd)
    if fix or repair:
        for wt in worktrees:
            lines += _apply(wt, board_rel, fix=fix, repair=repair)
            if repair:
                for other in others:
                    root = (repository.toplevel(wt) or wt) / other
                    if (root / ".ledgit").is_dir():
                        lines += [f"repaired: {line}" for line in repair_board(Board(root))]
    gaps: list[Gap] = []
    for wt in worktrees:
        gaps += worktree_gaps(wt, board_rel, fix=fix)
        for other in others:  # each further board: its attributes and its own state
            root = (repository.toplevel(wt) or wt) / other
            if not attributes_name_driver(wt, other):
                gaps.append(Gap(wt, f"{other}.gitattributes does not route task files to the "
                                    f"ledgit driver", f"cd {other} && ledgit install"))
            if (root / ".ledgit").is_dir() and escaping_link(str(root)) is None:
                gaps += _board_gaps(wt, root, fix=fix)
    for gap in gaps:
        lines.append(f"gap: {gap}")
    if not gaps:
        lines.append(f"ok: {len(worktrees)} worktree(s) checked, nothing missing")
    top = repository.toplevel(cwd) or cwd
    if (top / board_rel / ".ledgit").is_dir() and escaping_link(str(top / board_rel)) is None:
        # expired remote leases (docs/leases.md)
        lines += doctor_lines(Board(top / board_rel))
    return (1 if gaps else 0), lines


def _apply(wt: Path, board_rel: str, *, fix: bool, repair: bool) -> list[str]:
    lines: list[str] = []
    gaps = worktree_gaps(wt, board_rel)
    if fix and any(g.fix == "ledgit install" for g in gaps):
        lines += [f"fixed: {line}" for line in install(wt)
                  if "already" not in line]
    if repair and any(g.fix == "ledgit doctor --repair" for g in gaps):

        top = repository.toplevel(wt) or wt
        lines += [f"repaired: {line}" for line in repair_board(Board(top / board_rel))]
    return lines
