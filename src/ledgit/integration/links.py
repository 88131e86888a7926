"""Symbolic links committed inside a board (issue 26): what Git holds with mode 120000 under a
``.ledgit/`` directory, or as a ``.ledgit`` entry itself.

A cloned repository is a stranger's input: a committed ``.ledgit/tasks -> ../../victim`` would
make a checkout's board a directory outside the repository. ledgit never follows such a link
on disk (:mod:`ledgit.storage.boardlinks`); the questions here let the pre-commit hook, ``ledgit
verify --rev/--range`` and ``ledgit doctor`` name the entry in a tree or the index before it
is checked out elsewhere. Plumbing only: argv lists, ``-z`` output, every revision after
``--end-of-options`` (gitcli(7)).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.git.repository import index_path, no_git_env, run_git, work_root

if TYPE_CHECKING:
    from pathlib import Path

LINK_MODE = "120000"  # a symbolic link's mode in a tree (git-fast-import(1), "filemodify")
LINK_RULE = "symlink"  # the finding's rule name
LINK_GLOBS = (":(glob).ledgit", ":(glob).ledgit/**", ":(glob)**/.ledgit", ":(glob)**/.ledgit/**")


def is_board_path(path: str) -> bool:
    """``path`` (repository-relative, ``/``-separated) is a ``.ledgit`` entry or lies under
    one."""
    parts = path.split("/")
    return ".ledgit" in parts


def links_in_raw(out: bytes) -> list[str]:
    """The paths that a ``--raw -z`` diff (git-diff(1) "RAW OUTPUT FORMAT") gives mode 120000
    on its new side, under a board, sorted."""
    fields = out.split(b"\0")
    found: set[str] = set()
    n = 0
    while n < len(fields):
        meta = fields[n].lstrip(b"\n")
        if meta.startswith(b":") and n + 1 < len(fields):
            parts = meta[1:].split(b" ")
            path = os.fsdecode(fields[n + 1])
            # a merge's combined raw line has one mode per parent, then the result's
            modes = [p for p in parts if len(p) == 6 and p.isdigit()]
            if modes and modes[-1].decode() == LINK_MODE and is_board_path(path):
                found.add(path)
            n += 2
            continue
        n += 1
    return sorted(found, key=os.fsencode)


def links_at(cwd: Path, rev: str) -> list[str]:
    """Every symbolic link under a board in the tree of commit ``rev`` (``git ls-tree -r
    --full-tree``), sorted. A bad ``rev`` raises LedgitError (2)."""
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev],
                  work_root(cwd)).stdout
    found = []
    for record in filter(None, out.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        path = os.fsdecode(raw_path)
        if meta.split(b" ")[0].decode() == LINK_MODE and is_board_path(path):
            found.append(path)
    return found


def links_in_range(cwd: Path, commits: list[str]) -> dict[str, list[str]]:
    """commit -> the symbolic links under a board that it adds or changes against any of its
    parents (every path of a root commit), for each of ``commits`` (full ids); one ``git
    diff-tree --stdin`` for all of them."""
    if not commits:
        return {}
    args = ["diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames", "--no-abbrev",
            "--root", "-m", "--", *LINK_GLOBS]
    out = run_git(args, work_root(cwd), input="".join(f"{c}\n" for c in commits).encode()).stdout
    found: dict[str, list[str]] = {}
    # the output: per commit (per parent with -m) its id NUL, then raw records
    chunks: list[tuple[str, bytes]] = []
    current = ""
    fields = out.split(b"\0")
    start = 0
    for n, field in enumerate(fields):
        text = field.strip(b"\n")
        if len(text) in (40, 64) and all(c in b"0123456789abcdef" for c in text) \
                and not field.startswith(b":"):
            chunks.append((current, b"\0".join(fields[start:n]) + b"\0"))
            current, start = text.decode(), n + 1
    chunks.append((current, b"\0".join(fields[start:]) + b"\0"))
    for commit, raw in chunks:
        links = links_in_raw(raw)
        if commit and links:
            found[commit] = sorted({*found.get(commit, []), *links}, key=os.fsencode)
    return found


def staged_links(cwd: Path, rev: str) -> list[str]:
    """The symbolic links under a board that the index
    (:func:`ledgit.git.repository.index_path`) adds or changes against ``rev`` (HEAD's
    commit, or the empty tree on an unborn branch)."""
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    out = run_git(["diff-index", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev",
                   "--end-of-options", rev, "--", *LINK_GLOBS], work_root(cwd), env=env).stdout
    return links_in_raw(out)


def link_message(path: str) -> str:
    """The one line that names a committed link (the finding's message)."""
    return (f"{path} is a symbolic link inside a board; ledgit never follows one (a clone "
            f"could point it outside the repository): commit the directory or file itself "
            f"(git rm --cached {path})")
