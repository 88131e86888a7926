"""``ledgit sync`` at the edges of Git (issue 32, found by trying to break it): a shallow
clone, a sparse checkout and a sparse index, a rebase Git stopped while the agent kept
writing, ``--no-push`` and "in sync", a killed sync with core.autocrlf, a branch tracking
another name (push.default), another git command's locks, a board under a globby directory
name, a filter driver (git-lfs), a local pre-push hook's refusal. Real clones of a bare
remote; each test is what a user of several clones would do.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gitutil import git
from leaseutil import clone, ledgit_env, lg, make_remote
from test_sync import notes_of as notes_in_order
from test_sync import sync


def notes_of(repo: Path, task: str) -> list[str]:
    """The task's notes, sorted (who synced first decides their order)."""
    return sorted(notes_in_order(repo, task))


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """A bare remote with a board of 2 tasks and a code file (.gitattributes committed, as
    ``ledgit install`` commits it), and two clones A and B."""
    remote, seed, ids = make_remote(tmp_path, tasks=2)
    (seed / "code.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (seed / ".gitattributes").write_text(".ledgit/tasks/*.md merge=ledgit\n"
                                         ".ledgit/history/*.jsonl merge=ledgit\n",
                                         encoding="utf-8")
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "code", cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    a, b = clone(remote, tmp_path / "A"), clone(remote, tmp_path / "B")
    return remote, a, b, ids


def test_a_shallow_clone_stays_whole(fleet: tuple[Path, Path, Path, list[str]],
                                     tmp_path: Path) -> None:
    """A ``--depth 1`` clone syncs a task both sides changed: both notes kept, and Git can
    still walk the clone's history (libgit2 1.9.7's fetch dropped ``.git/shallow``, leaving
    commits whose parents are missing; the next sync was an internal error)."""
    remote, a, _b, ids = fleet
    shallow = tmp_path / "S"
    git("clone", "-q", "--depth", "1", f"file://{remote}", str(shallow), cwd=tmp_path)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    sync(a)
    lg(shallow, "note", ids[0], "from S", "--by", "agent-s")
    out = sync(shallow)
    assert out["pushed"] is not None
    assert (shallow / ".git" / "shallow").is_file()
    git("log", "--oneline", cwd=shallow)  # fails on a missing parent
    assert notes_of(shallow, ids[0]) == ["from A", "from S"]
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=shallow)


def test_writes_made_while_git_holds_a_stopped_rebase_ride_along(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A code conflict stops B's sync in Git's rebase; B's agent goes on writing (notes on
    the task the rebase still has to pick, and on another); the person resolves code.py and
    runs ``ledgit sync``: the rebase finishes and every note of both sides is pushed (it
    refused before with "git rebase: failed": ``git rebase --continue`` will not go on over
    unstaged changes, and said so on stdout)."""
    remote, a, b, ids = fleet
    for repo, word in ((a, "alpha"), (b, "beta")):
        (repo / "code.py").write_text(f"one\n{word}\nthree\n", encoding="utf-8")
        git("commit", "-q", "-am", f"code {word}", cwd=repo)
        lg(repo, "note", ids[0], f"note {word}", "--by", word)
    sync(a)
    assert "code.py" in str(sync(b, check=1)["stderr"])
    lg(b, "note", ids[0], "while stopped", "--by", "beta")
    lg(b, "note", ids[1], "other while stopped", "--by", "beta")
    (b / "code.py").write_text("one\nalpha and beta\nthree\n", encoding="utf-8")
    git("add", "code.py", cwd=b)
    done = sync(b)
    assert done["pushed"] is not None
    assert git("status", "--porcelain", cwd=b) == ""
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=b)
    assert notes_of(b, ids[0]) == ["note alpha", "note beta", "while stopped"]
    assert notes_of(b, ids[1]) == ["other while stopped"]
    assert lg(b, "verify", "--all").returncode == 0


def test_a_refusal_git_gives_on_stdout_is_quoted(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A rebase stopped at an ``edit`` with the person's own unstaged change: sync cannot
    continue it and quotes Git's reason (Git writes it on stdout), not "failed"."""
    _remote, a, _b, _ids = fleet
    (a / "code.py").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    git("commit", "-q", "-am", "four", cwd=a)
    git("rebase", "-q", "-i", "HEAD~1", cwd=a,
        env={"GIT_SEQUENCE_EDITOR": "sed -i 1s/^pick/edit/"})
    (a / "code.py").write_text("one\ntwo\nthree\nfour\nfive\n", encoding="utf-8")
    out = sync(a, check=1)
    assert "failed" not in str(out["stderr"]) and "git add" in str(out["stderr"])
    assert (a / "code.py").read_text(encoding="utf-8") == "one\ntwo\nthree\nfour\nfive\n"


def _sparse_fleet(fleet: tuple[Path, Path, Path, list[str]],
                  *sparse: str) -> tuple[Path, Path, list[str]]:
    """src/a.txt pushed by B; A then checks out only .ledgit (and the top files), with
    ``git sparse-checkout set SPARSE... .ledgit``; B then changes src/a.txt and a task."""
    _remote, a, b, ids = fleet
    (b / "src").mkdir()
    (b / "src" / "a.txt").write_text("x\n", encoding="utf-8")
    git("add", "src", cwd=b)
    git("commit", "-q", "-m", "src", cwd=b)
    git("push", "-q", "origin", "main", cwd=b)
    git("pull", "-q", cwd=a)
    git("sparse-checkout", "set", *sparse, ".ledgit", cwd=a)
    (b / "src" / "a.txt").write_text("y\n", encoding="utf-8")
    git("commit", "-q", "-am", "src again", cwd=b)
    lg(b, "note", ids[0], "from B", "--by", "agent-b")
    sync(b)
    return a, b, ids


def test_a_sparse_checkout_keeps_its_cone(fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A file outside A's sparse cone changed upstream: A's sync takes it into the index
    and leaves it out of the work tree, as Git does (libgit2 knows no skip-worktree bit:
    it refused, naming the absent file as A's own uncommitted change)."""
    a, _b, ids = _sparse_fleet(fleet)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    out = sync(a)
    assert out["pushed"] is not None
    assert not (a / "src").exists()
    assert git("status", "--porcelain", cwd=a) == ""
    assert git("show", "HEAD:src/a.txt", cwd=a) == "y"
    assert notes_of(a, ids[0]) == ["from A", "from B"]


def test_a_sparse_index_is_refused_in_one_line(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A sparse index, which libgit2 cannot read: exit 2 naming the way on, nothing
    committed (it was an internal error, exit 70)."""
    a, _b, ids = _sparse_fleet(fleet, "--sparse-index")
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    head = git("rev-parse", "HEAD", cwd=a)
    out = sync(a, check=2)
    assert "sparse" in str(out["stderr"]) and "internal error" not in str(out["stderr"])
    assert git("rev-parse", "HEAD", cwd=a) == head


def test_no_push_never_says_in_sync_while_ahead(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """``--no-push`` with a local commit the remote lacks: the summary says how far ahead and
    that nothing was pushed -- never "in sync" -- and ``--json`` gives ``ahead``; after a
    plain sync pushed it, ``ahead`` is 0 and the summary is "in sync"."""
    _remote, a, _b, ids = fleet
    (a / "code.py").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    git("commit", "-q", "-am", "four", cwd=a)
    said = lg(a, "sync", "--no-push").stdout
    assert "in sync" not in said and "1 commit(s) ahead of origin/main" in said
    lg(a, "note", ids[0], "held back", "--by", "agent-a")
    assert sync(a, "--no-push")["ahead"] == 2
    assert sync(a)["ahead"] == 0
    assert "in sync" in lg(a, "sync").stdout


KILLER = Path(__file__).resolve().parents[1] / "stress" / "sync_killer.py"


def test_a_killed_sync_with_autocrlf_is_finished_by_the_next(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """``core.autocrlf=true``: a sync killed after writing the work tree (CRLF files, as Git
    checks them out) is finished by the next -- the files still as the sync wrote them are
    not "changed since" (they were compared byte for byte with the LF blobs, and the next
    sync refused until the person removed the note by hand)."""
    remote, a, b, ids = fleet
    git("config", "core.autocrlf", "true", cwd=a)
    (b / "code.py").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    git("commit", "-q", "-am", "four", cwd=b)
    lg(b, "note", ids[0], "from B", "--by", "agent-b")
    sync(b)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    plan = a.parent / "plan.json"
    plan.write_text(json.dumps({"root": str(a), "args": ["sync"], "pid_file": None,
                                "kill": {"point": "worktree-written", "at": 1}}),
                    encoding="utf-8")
    killed = subprocess.run([sys.executable, str(KILLER), str(plan)], cwd=a,
                            env=ledgit_env(), capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert (a / "code.py").read_bytes() == b"one\r\ntwo\r\nthree\r\nfour\r\n"
    sync(a)
    assert git("status", "--porcelain", cwd=a) == ""
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=a)
    assert notes_of(a, ids[0]) == ["from A", "from B"]


def test_a_worktree_branch_tracking_main_shares_main_as_push_default_says(
        tmp_path: Path) -> None:
    """Worktrees of one clone cannot all check out main: an agent's worktree made as ``git
    worktree add -b agent-1 ../W origin/main`` tracks origin/main (Git's
    branch.autoSetupMerge), and its sync is the shared-branch loop: it pushes into main (the
    fleet's mixed layout). push.default=current pushes the branch under its own name
    instead; nothing pushes nothing and says so. A branch made with --no-track is not pushed
    into main (the branch-per-agent flow)."""
    remote, seed, ids = make_remote(tmp_path, tasks=1)
    wt = tmp_path / "W"
    git("worktree", "add", "-q", "-b", "agent-1", str(wt), "origin/main", cwd=seed)
    lg(wt, "note", ids[0], "agent work", "--by", "agent-1")
    out = sync(wt)
    assert out["pushed"] is not None
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=wt)
    git("config", "push.default", "current", cwd=wt)
    lg(wt, "note", ids[0], "more work", "--by", "agent-1")
    tip = git("rev-parse", "main", cwd=remote)
    out = sync(wt)
    assert out["pushed"] is not None
    assert git("rev-parse", "main", cwd=remote) == tip
    assert git("rev-parse", "agent-1", cwd=remote) == git("rev-parse", "HEAD", cwd=wt)
    git("config", "push.default", "nothing", cwd=wt)
    lg(wt, "note", ids[0], "kept here", "--by", "agent-1")
    said = lg(wt, "sync").stdout
    assert "nothing pushed" in said and "in sync" not in said
    assert git("rev-parse", "main", cwd=remote) == tip
    review = tmp_path / "R"
    git("worktree", "add", "-q", "--no-track", "-b", "agent-2", str(review), "origin/main",
        cwd=seed)
    lg(review, "note", ids[0], "for review", "--by", "agent-2")
    lg(review, "sync", "--branch", "main")
    assert git("rev-parse", "main", cwd=remote) == tip


def test_a_local_pre_push_hook_refusal_is_named_as_this_repositorys(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A pre-push hook of the agent's own clone stops the push (the CLI transport runs it):
    exit 1, the line says the push was stopped here by the pre-push hook and quotes it, not
    that the remote refused; the board's commit is kept and nothing reached the remote."""
    remote, a, _b, ids = fleet
    tip = git("rev-parse", "main", cwd=remote)
    hook = a / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\necho 'no pushes on Fridays' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    out = sync(a, check=1)
    line = str(out["stderr"])
    assert "pre-push hook" in line and "no pushes on Fridays" in line
    assert "origin refused" not in line and "commits are kept" in line
    assert git("rev-parse", "main", cwd=remote) == tip
    assert notes_of(a, ids[0]) == ["from A"] and git("status", "--porcelain", cwd=a) == ""


def test_a_lock_held_by_another_git_is_busy_and_writes_nothing(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """Another git command holds the index (``index.lock``) or the branch (``main.lock``):
    exit 5 -- not exit 70, nor "your uncommitted changes would be overwritten" after the
    incoming files were already written into the work tree, which the next sync then
    committed again as the agent's own -- and once the lock is gone the sync goes on."""
    remote, a, b, ids = fleet
    lg(b, "note", ids[1], "from B", "--by", "agent-b")
    sync(b)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    before = git("status", "--porcelain", cwd=a), git("rev-parse", "HEAD", cwd=a)
    lock = a / ".git" / "index.lock"
    lock.touch()
    out = sync(a, check=5)
    assert "index.lock" in str(out["stderr"])
    lock.unlink()
    assert (git("status", "--porcelain", cwd=a), git("rev-parse", "HEAD", cwd=a)) == before
    ref_lock = a / ".git" / "refs" / "heads" / "main.lock"
    ref_lock.touch()
    out = sync(a, check=5)
    assert "main" in str(out["stderr"]) and "internal error" not in str(out["stderr"])
    ref_lock.unlink()
    sync(a)
    assert git("status", "--porcelain", cwd=a) == ""
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=a)
    assert git("log", "--format=%s", cwd=a).count("ledgit sync") == 2  # B's and A's, once
    assert notes_of(a, ids[0]) == ["from A"] and notes_of(a, ids[1]) == ["from B"]


def test_a_board_under_a_directory_with_glob_characters_is_committed(tmp_path: Path) -> None:
    """A board in ``b[1]/``: its changes are committed and pushed (libgit2 read the
    directory as a pattern, staged nothing, and the sync said "in sync")."""
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    work = clone(remote, tmp_path / "A")
    sub = work / "b[1]"
    sub.mkdir()
    lg(sub, "init", ".")
    task = lg(sub, "create", "in a globby place").stdout.split()[0]
    out = sync(sub)
    assert out["committed"] is not None and out["pushed"] is not None
    assert git("status", "--porcelain", cwd=work) == ""
    assert git("cat-file", "-t", f"main:b[1]/.ledgit/tasks/{task}.md", cwd=remote) == "blob"


def test_a_file_under_a_filter_driver_is_written_as_git_writes_it(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """A path whose ``filter`` attribute names a driver (git-lfs is one; here rot13 by
    ``tr``) changed upstream: A's work tree gets it smudged, as ``git pull`` writes it, and
    ``git status`` is clean (libgit2 runs no filter command: it wrote the stored form, which
    Git then showed as A's own change)."""
    _remote, a, b, ids = fleet
    for repo in (a, b):
        git("config", "filter.rot.smudge", "tr a-z n-za-m", cwd=repo)
        git("config", "filter.rot.clean", "tr a-z n-za-m", cwd=repo)
    attributes = b / ".gitattributes"
    attributes.write_text(attributes.read_text(encoding="utf-8") + "*.dat filter=rot\n",
                          encoding="utf-8")
    (b / "x.dat").write_text("hello\n", encoding="utf-8")
    git("add", "-A", cwd=b)
    git("commit", "-q", "-m", "filtered", cwd=b)
    sync(b)
    sync(a)
    assert (a / "x.dat").read_text(encoding="utf-8") == "hello\n"
    (b / "x.dat").write_text("world\n", encoding="utf-8")
    git("commit", "-q", "-am", "world", cwd=b)
    sync(b)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    sync(a)
    assert (a / "x.dat").read_text(encoding="utf-8") == "world\n"
    assert git("status", "--porcelain", cwd=a) == ""
