"""The hooks in a sync loop (issues 24 and 32): every ``ledgit hook NAME`` runs without click,
post-checkout warms nothing when the checkout moved nothing or starts a rebase, and no post-*
hook starts Python when only a few task files changed (the next read re-reads them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gitflow import commit_all, create, git_rc, new_repo

from ledgit.hooks.dispatch import warm_up_needed
from ledgit.storage.board import Board
from ledgit.storage.index import Index

pytest_plugins = ["gitutil"]

SHA_A = "a" * 40
SHA_B = "b" * 40
NULL = "0" * 40


def test_post_checkout_warms_only_what_moved(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "r")
    cwd = str(repo)
    assert warm_up_needed("post-checkout", [SHA_A, SHA_B, "1"], cwd)
    assert warm_up_needed("post-checkout", [NULL, SHA_B, "1"], cwd)  # worktree add, clone
    assert not warm_up_needed("post-checkout", [SHA_A, SHA_A, "1"], cwd)  # checkout -b
    (repo / ".git" / "rebase-merge").mkdir()
    assert not warm_up_needed("post-checkout", [SHA_A, SHA_B, "1"], cwd)
    assert warm_up_needed("post-rewrite", ["rebase"], cwd)
    assert warm_up_needed("post-merge", ["0"], cwd)


def test_hooks_run_without_click(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "r")
    create(repo, "t")
    commit_all(repo, "t")
    code = ("import sys; sys.path[0] or sys.path.pop(0)\n"
            "from ledgit.__main__ import run\n"
            "codes = [run(['hook', n, *a]) for n, a in (('post-merge', ['0']),"
            " ('post-checkout', ['" + SHA_A + "', '" + SHA_B + "', '1']),"
            " ('post-rewrite', ['rebase']), ('pre-commit', []))]\n"
            "print(codes, 'click' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("]")[-1].strip() == "False", proc.stdout
    assert proc.stdout.startswith("[0, 0, 0, 0]")
    bad = subprocess.run([sys.executable, "-m", "ledgit", "hook", "no-such-hook"], cwd=repo,
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown hook" in bad.stderr


def _rebase_two_tasks(tmp_path: Path, threshold: int | None) -> tuple[Path, str, set[str]]:
    """A branch ``side`` rebased onto main, which gained a task in another worktree (so this
    worktree's index never saw it): returns the repository, that task and every id.
    ``threshold``: the ``LEDGIT_WARM_THRESHOLD`` the hooks see (None: the default)."""
    repo = new_repo(tmp_path / "r")
    tid = create(repo, "shared")
    commit_all(repo, "task")
    git_rc(repo, "switch", "-q", "-c", "side")
    other = create(repo, "on side")
    commit_all(repo, "side")
    main = tmp_path / "m"
    assert git_rc(repo, "worktree", "add", "-q", str(main), "main").returncode == 0
    on_main = create(main, "on main")
    commit_all(main, "main")
    env = {} if threshold is None else {"LEDGIT_WARM_THRESHOLD": str(threshold)}
    proc = git_rc(repo, "rebase", "-q", "main", env=env)
    assert proc.returncode == 0, proc.stderr
    return repo, on_main, {tid, other, on_main}


def test_a_pull_rebase_of_a_few_tasks_leaves_them_to_the_next_read(tmp_path: Path,
                                                                    git_env: Path) -> None:
    """Issue 32: the post-rewrite hook starts no Python process for a rebase that brings a
    few task files (told in its shell block by one git diff); the next read re-reads exactly
    those and answers every task."""
    repo, new, ids = _rebase_two_tasks(tmp_path, None)
    with Index.open(Board(repo)) as index:
        stats = index.refresh()
        assert stats.parsed == 1  # the task the rebase brought, read by the read itself
        assert ids <= set(index.ids()) and index.get(new) is not None


def test_a_rebase_of_many_tasks_leaves_a_warm_index(tmp_path: Path, git_env: Path) -> None:
    """Past the threshold (here 0) the post-rewrite hook warms: the next read finds nothing
    to refresh."""
    repo, new, ids = _rebase_two_tasks(tmp_path, 0)
    with Index.open(Board(repo)) as index:
        stats = index.refresh()
        assert stats.parsed == 0  # the post-rewrite hook already read the rebased files
        assert ids <= set(index.ids()) and index.get(new) is not None
