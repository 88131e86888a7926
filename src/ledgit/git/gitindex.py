"""The index as Git keeps it (DESIGN §8): what is staged under a prefix, the staged pairs and
changes the pre-commit hook checks (read from the file ``GIT_INDEX_FILE`` names), and the
conflict stages ``resolve`` re-merges."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git.objects import batch_contents, cat_blobs, open_repo, read_blobs
from ledgit.git.repository import (
    GitPaths,
    head_oid,
    index_path,
    is_blob_mode,
    last_line,
    no_git_env,
    pathspec,
    require_repo,
    run_git,
)

if TYPE_CHECKING:
    from pathlib import Path


def staged_files(cwd: Path, prefix: str) -> dict[str, bytes | None]:
    """The paths under ``prefix`` whose index entry differs from HEAD, in path order:
    added or modified -> the staged blob, deleted -> None (``git diff --cached``).

    Reads the index :func:`index_path` names; blobs are read only for the changed entries.
    On an unborn branch every entry is added. Conflicted paths are left out; see
    :func:`conflicted_paths`. Submodules are ignored.
    """
    return {path: staged for path, (_, staged) in staged_pairs(cwd, prefix).items()}


def staged_pairs(cwd: Path, prefix: str) -> dict[str, tuple[bytes | None, bytes | None]]:
    """:func:`staged_files` with HEAD's side: path -> (the blob at HEAD, the staged blob),
    None where there is none (added; deleted). One ``git diff-index --cached --raw``, whose
    raw lines name both blobs, and one ``git cat-file --batch`` for all of them."""
    paths = require_repo(cwd)
    changes = staged_changes(cwd, prefix, paths=paths)
    blobs = cat_blobs(cwd, list(dict.fromkeys(oid for change in changes.values()
                                              for oid in change if oid is not None)),
                      paths=paths)
    return {path: (None if head is None else blobs[head], None if oid is None else blobs[oid])
            for path, (head, oid) in changes.items()}


def staged_changes(cwd: Path, prefix: str, *,
                   paths: GitPaths | None = None) -> dict[str, StagedChange]:
    """:func:`staged_pairs` without the contents: path -> the blob ids at HEAD and in the
    index (:class:`StagedChange`); one ``git diff-index --cached`` (two more processes on an
    unborn branch, where HEAD's side is always None). ``paths``: the repository already
    discovered from ``cwd``."""
    paths = paths or require_repo(cwd)
    root = paths.toplevel or paths.git_dir
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd, paths))}
    args = ["--literal-pathspecs", "diff-index", "--cached", "--raw", "-z", "--no-renames",
            "--no-abbrev", "--end-of-options", "HEAD", *pathspec(prefix)]
    proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0 and head_oid(root) is None:
        # unborn: compare with the empty tree (of this repository's hash function)
        empty = run_git(["hash-object", "-t", "tree", "--stdin"], root, input=b"").stdout
        args[args.index("HEAD")] = empty.decode().strip()
        proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0:
        raise LedgitError(f"git diff-index: {last_line(proc.stderr)}", USAGE)
    return _diff_index_changes(proc.stdout)


class StagedChange(NamedTuple):
    """One path whose index entry differs from HEAD: the blob ids on either side."""

    head: str | None  # the blob at HEAD; None when HEAD has none there (added, or a submodule)
    staged: str | None  # the blob in the index; None when the index has none (deleted)


def _diff_index_changes(out: bytes) -> dict[str, StagedChange]:
    fields = out.split(b"\0")[:-1]
    changes: dict[str, StagedChange] = {}
    # -z raw records: ":<mode> <mode> <oid> <oid> <status>" NUL <path> NUL (git-diff-index(1))
    for meta, raw_path in zip(fields[0::2], fields[1::2], strict=True):
        old_mode, new_mode, old_oid, new_oid, status = meta.decode()[1:].split(" ")
        if status == "U":
            continue  # unmerged: conflicted_paths
        change = StagedChange(old_oid if is_blob_mode(int(old_mode, 8)) else None,
                              new_oid if is_blob_mode(int(new_mode, 8)) else None)
        if change != (None, None):  # a submodule on both sides is no file
            changes[os.fsdecode(raw_path)] = change
    return changes


class StagedReader:
    """The pre-commit hook's two questions, asked as a hook of this repository asks them:
    ``git diff-index --cached --raw -z HEAD -- PATHSPEC`` and one ``git cat-file --batch``,
    run in ``cwd`` (the work tree top, where Git runs hooks) with the environment Git gave
    the hook (``GIT_INDEX_FILE``, ``GIT_DIR``...: the same repository, so nothing is stripped)
    and no discovery. ``PATHSPEC`` is relative to ``cwd``.

    Both processes start when the reader is made, so that they run while the hook imports
    its checks; :meth:`close` (or leaving a ``with`` block) ends whichever still runs, so
    neither outlives the hook. Raises OSError when ``git`` cannot be started.
    """

    def __init__(self, cwd: str, pathspec: str) -> None:
        args = ["git", "--literal-pathspecs", "diff-index", "--cached", "--raw", "-z",
                "--no-renames", "--no-abbrev", "HEAD", "--", pathspec]
        pipe = subprocess.PIPE
        self.raw = b""
        self._cwd = cwd
        self._diff = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=pipe,
                                      stderr=pipe)
        try:
            self._cat = subprocess.Popen(["git", "cat-file", "--batch"], cwd=cwd, stdin=pipe,
                                         stdout=pipe, stderr=pipe)
        except OSError:
            self._end(self._diff)
            raise

    def changes(self) -> dict[str, StagedChange] | None:
        """Repository path -> the blob ids at HEAD and in the index (:class:`StagedChange`),
        both named by the raw diff (git-diff-index(1) "RAW OUTPUT FORMAT"), so HEAD's side
        needs no tree walk; unmerged paths left out. None where git cannot answer so (an
        unborn branch, a pathspec outside the work tree): then :func:`staged_changes`
        answers."""
        out, _ = self._diff.communicate()
        self.raw = out  # the raw diff itself: its modes name staged links (operations.links)
        return _diff_index_changes(out) if self._diff.returncode == 0 else None

    def blobs(self, names: Sequence[str]) -> dict[str, bytes | None]:
        """name -> content for ``names`` (blob ids, or ``:path`` for a path's entry in the
        index Git gave the hook), None where no blob has that name; asked once, of the one
        ``git cat-file --batch``. Raises LedgitError (2) when git fails."""
        if any("\n" in name for name in names):
            raise LedgitError("git cat-file: an object name holds a newline", USAGE)
        out, err = self._cat.communicate("".join(f"{name}\n" for name in names).encode())
        if self._cat.returncode != 0:
            raise LedgitError(f"git cat-file --batch: {last_line(err)}", USAGE)
        return batch_contents(out, names)

    def listed(self, directory: str) -> list[str]:
        """The repository paths the index Git gave the hook holds under ``directory``
        (relative to ``cwd``, the work tree top): one ``git ls-files -z``, started only when
        asked (a commit that adds a task file). Raises LedgitError (2) when git fails."""
        proc = subprocess.run(["git", "--literal-pathspecs", "ls-files", "-z", "--",
                               directory], cwd=self._cwd, capture_output=True, check=False)
        if proc.returncode != 0:
            raise LedgitError(f"git ls-files: {last_line(proc.stderr)}", USAGE)
        return [os.fsdecode(p) for p in proc.stdout.split(b"\0") if p]

    def close(self) -> None:
        """End both processes (a process still running is killed: it only reads)."""
        self._end(self._cat)
        self._end(self._diff)

    @staticmethod
    def _end(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.kill()
        with proc:  # closes the pipes, waits
            pass

    def __enter__(self) -> StagedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listed_paths(cwd: Path, directory: str) -> list[str]:
    """The repository paths the index (:func:`index_path`) holds under ``directory`` (a
    repository path): one ``git ls-files -z --full-name``, run at the work tree top."""
    paths = require_repo(cwd)
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd, paths))}
    args = ["--literal-pathspecs", "ls-files", "-z", "--full-name", *pathspec(directory)]
    out = run_git(args, paths.toplevel or paths.git_dir, env=env).stdout
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def conflicted_paths(cwd: Path, prefix: str) -> list[str]:
    """The unmerged paths under ``prefix`` (index stages 1-3), sorted (``git ls-files -u``)."""
    return sorted({path for path, _, _ in _ls_files_unmerged(cwd, prefix)})


def conflict_stages(cwd: Path, path: str) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The blobs of ``path`` at index stages 1 (base), 2 (ours) and 3 (theirs); a side that is
    absent (added on both sides, deleted on one) is None, and so are all three when ``path``
    is not in conflict (gitrevisions(7) ``:1:path``)."""
    paths = require_repo(cwd)
    oids: list[str | None] = [None, None, None]
    for entry_path, stage, oid in _ls_files_unmerged(cwd, path):
        if entry_path == path:
            oids[stage - 1] = oid
    blobs = read_blobs(open_repo(paths), paths, [oid for oid in oids if oid is not None])
    base, ours, theirs = (None if oid is None else blobs[oid] for oid in oids)
    return base, ours, theirs


def _ls_files_unmerged(cwd: Path, prefix: str) -> list[tuple[str, int, str]]:
    paths = require_repo(cwd)
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd, paths))}
    args = ["--literal-pathspecs", "ls-files", "-u", "-z", *pathspec(prefix)]
    out = run_git(args, paths.toplevel or paths.git_dir, env=env).stdout
    entries = []
    for record in filter(None, out.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        _, oid, stage = meta.decode().split(" ")
        entries.append((os.fsdecode(raw_path), int(stage), oid))
    return entries
