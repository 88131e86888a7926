"""The names Git gives the two sides of a merge, as the merge driver can see them: for
conflict-marker labels a person can tell apart (issue 28). Standard library only, file reads
only (the driver's import budget, DESIGN §7).

What Git lets a driver see (gitattributes(5), git 2.39 checked by tests/test_merge_labels.py):

* ``%X`` / ``%Y`` -- the labels of ours and theirs, from Git 2.44 on; an older Git passes the
  placeholder through unexpanded, which is ignored here;
* ``git merge``: ``GITHEAD_<commit>=<name>`` in the environment, one per merged head;
* ``git rebase`` (merge backend): nothing in the environment, but the rebase's state
  directory ``rebase-merge/`` holds ``head-name`` (the branch being rebased, whose commit is
  replayed as theirs), ``onto`` and ``done`` (its last line ``pick <commit> <subject>``);
* cherry-pick, revert and ``stash apply``: nothing; the record's own marks label the sides.
"""

from __future__ import annotations

import os


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def git_dir(cwd: str = ".") -> str | None:
    """The Git directory of the work tree at ``cwd`` (Git runs a driver at the top of the
    work tree): ``$GIT_DIR``, else ``.git`` -- a directory, or a file ``gitdir: PATH`` in a
    linked worktree. None when there is none."""
    env = os.environ.get("GIT_DIR")
    if env:
        return env
    dot = os.path.join(cwd, ".git")
    if os.path.isdir(dot):
        return dot
    text = _read(dot)
    if text and text.startswith("gitdir: "):
        target = text[8:].strip()
        return target if os.path.isabs(target) else os.path.join(cwd, target)
    return None


def merged_branch() -> str | None:
    """The name of the branch being merged: ``git merge`` exports ``GITHEAD_<commit>=<name>``
    to merge drivers, one per merged head; None when there is not exactly one."""
    names = [v for k, v in os.environ.items() if k.startswith("GITHEAD_") and v]
    return names[0] if len(names) == 1 else None


def rebase_names(gitdir: str | None) -> tuple[str, str] | None:
    """(ours, theirs) during a ``git rebase``: ``HEAD (onto <commit>)`` for the side being
    built on, ``<branch> <commit>`` for the rebased branch's commit being replayed; None when
    no rebase is under way. ``gitdir``: :func:`git_dir`."""
    if gitdir is None:
        return None
    state = os.path.join(gitdir, "rebase-merge")
    head = _read(os.path.join(state, "head-name"))
    done = _read(os.path.join(state, "done"))
    if head is None or done is None:
        return None
    branch = head.strip().removeprefix("refs/heads/")
    picks = [line.split() for line in done.splitlines() if line.strip()]
    commit = picks[-1][1][:7] if picks and len(picks[-1]) > 1 else ""
    onto = (_read(os.path.join(state, "onto")) or "").strip()[:7]
    ours = f"HEAD (onto {onto})" if onto else "HEAD"
    theirs = " ".join(part for part in (branch if branch != "detached HEAD" else "", commit)
                      if part)
    return (ours, theirs) if theirs else None


def side_names(labels: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(ours, theirs) as Git names them, or None when Git names neither side: ``labels``
    (``%X``, ``%Y`` from the driver's command line, when Git expanded them), else the branch
    ``git merge`` merges (``HEAD`` for ours), else a rebase's branch and commit. Never two
    equal names (None instead)."""
    names: tuple[str, str] | None = None
    if len(labels) >= 2 and not any(x.startswith("%") or not x for x in labels[:2]):
        names = (labels[0], labels[1])
    elif (branch := merged_branch()) is not None:
        names = ("HEAD", branch)
    else:
        names = rebase_names(git_dir())
    if names is None or names[0] == names[1]:
        return None
    return names
