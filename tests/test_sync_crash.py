"""``ledgit sync`` killed at each of its steps (issue 32 item 5), on real clones of a bare
remote reached by a local path (libgit2 fetch, ``git push``) and by ``git daemon`` (libgit2
both ways).

The kill comes from outside ledgit: stress/sync_killer.py patches pygit2's public methods,
``subprocess.run`` and ``os`` functions so that the process SIGKILLs itself at the chosen
step, then runs the CLI's own entry in that process. After each kill:

* ``git status`` explains the state: it runs, shows no unmerged path and no lock left by the
  kill, and every path it names is a board file or a file the upstream changed; every event
  the agent's writes acknowledged is still in the work tree's files;
* ``ledgit sync`` run again finishes: exit 0, the remote has every acknowledged event of
  both agents, ``ledgit verify --all`` passes, nothing is left to commit, the branch is the
  remote's, and a third sync has nothing to do.

The scenario: agent B pushed a note on task 0, a new task and a change of ``code.py``; agent
A has uncommitted notes on task 0 (both sides changed it: merged in process) and task 1, a
new task, and a local commit of another code file. The ``stress`` run draws points, arrival
counts, rebase or merge, the transport, and kills the rerun too, at random.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pygit2
import pytest
from gitflow import ledgit
from gitutil import git
from leaseutil import clone, git_daemon, ledgit_env, lg, make_remote

KILLER = Path(__file__).resolve().parents[1] / "stress" / "sync_killer.py"
NOTE = "sync-move.json"
# every step of a sync, in the order it runs (stress/sync_killer.py), and the arrival killed
POINTS = [("commit-between", 1), ("fetch-start", 1), ("fetch-mid", 1), ("fetch-done", 1),
          ("merge-object", 2), ("note-written", 1), ("worktree-partial", 1),
          ("worktree-written", 1), ("note-left", 1), ("push-start", 1), ("push-mid", 1),
          ("push-done", 1)]
# the default run: the steps issue 32 names -- after the board's commit, during the fetch,
# mid-merge (the work tree written, the branch not moved), before and after the push -- over
# both transports and both ways of integrating; the stress run takes every point each way
DEFAULT = [("local", "commit-between", 1, "rebase"), ("local", "fetch-mid", 1, "rebase"),
           ("local", "worktree-partial", 1, "merge"), ("local", "worktree-written", 1, "rebase"),
           ("local", "push-start", 1, "rebase"), ("local", "push-done", 1, "merge"),
           ("daemon", "fetch-mid", 1, "merge"), ("daemon", "push-mid", 1, "rebase"),
           ("daemon", "push-done", 1, "rebase")]
FULL = [(way, point, at, how) for way in ("local", "daemon") for point, at in POINTS
        for how in ("rebase", "merge") if (way, point, at, how) not in DEFAULT]


class Template(NamedTuple):
    base: Path  # holds remote.git, A and B
    mine: set[str]  # every event A's writes acknowledged
    acked: set[str]  # and B's


def events_in(root: Path) -> set[str]:
    """Every event id in the history files of the work tree at ``root``."""
    found = set()
    for path in (root / ".ledgit" / "history").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.add(json.loads(line)["id"])
    return found


def events_at(repo: Path, rev: str) -> set[str]:
    """Every event id in the history files of commit ``rev`` of ``repo``."""
    found = set()
    names = git("ls-tree", "--name-only", f"{rev}:.ledgit/history", cwd=repo).split()
    for name in names:
        text = git("show", f"{rev}:.ledgit/history/{name}", cwd=repo)
        found |= {json.loads(line)["id"] for line in text.splitlines() if line.strip()}
    return found


def build(base: Path) -> Template:
    """The scenario of the module docstring, ready for A's sync."""
    base.mkdir(parents=True)
    remote, seed, ids = make_remote(base, tasks=2)
    (seed / "code.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    git("add", "code.py", cwd=seed)
    git("commit", "-q", "-m", "code", cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    shutil.rmtree(seed)
    a, b = clone(remote, base / "A"), clone(remote, base / "B")
    lg(b, "note", ids[0], "from B", "--by", "agent-b")
    lg(b, "create", "made by B", "--by", "agent-b")
    (b / "code.py").write_text("one\ntwo\nthree by B\n", encoding="utf-8")
    git("commit", "-q", "-am", "B's code", cwd=b)
    lg(b, "sync")
    (a / "other.py").write_text("A's own code\n", encoding="utf-8")
    git("add", "other.py", cwd=a)
    git("commit", "-q", "-m", "A's code", cwd=a)
    lg(a, "note", ids[0], "from A", "--by", "agent-a")
    lg(a, "note", ids[1], "A only", "--by", "agent-a")
    lg(a, "update", ids[1], "--response", "A was here", "--by", "agent-a")
    lg(a, "create", "made by A", "--by", "agent-a")
    return Template(base, events_in(a), events_in(a) | events_in(b))


def copy_case(template: Template, where: Path, url: str | None) -> tuple[Path, Path]:
    """A copy of the template at ``where``: (the remote, A), A's origin at ``url`` (None:
    the copy's remote by its path)."""
    shutil.copytree(template.base, where, symlinks=True)
    remote, a = where / "remote.git", where / "A"
    git("remote", "set-url", "origin", url or str(remote), cwd=a)
    return remote, a


def run_killer(a: Path, point: str | None, at: int = 1,
               args: tuple[str, ...] = ("sync", "--json")) -> subprocess.CompletedProcess[str]:
    """stress/sync_killer.py in ``a``: ``ledgit ARGS`` killed at ``point`` (None: not
    killed). Waits for a ``git push`` the kill left running (its pid in a file)."""
    plan = a.parent / "plan.json"
    pid_file = a.parent / "push.pid"
    kill = None if point is None else {"point": point, "at": at}
    plan.write_text(json.dumps({"root": str(a), "args": list(args), "kill": kill,
                                "pid_file": str(pid_file)}), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(KILLER), str(plan)], cwd=a, env=ledgit_env(),
                          capture_output=True, text=True, timeout=120)
    if pid_file.exists():
        _wait_gone(int(pid_file.read_text(encoding="utf-8")))
        pid_file.unlink()
    return proc


def _wait_gone(pid: int) -> None:
    """Wait (up to 60 s) for process ``pid``, an orphan of the killed sync, to end."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                if fh.read().split(") ", 1)[1].startswith("Z"):
                    return  # a zombie: done, waiting for init to reap it
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.02)
    raise AssertionError(f"the git push left by the killed sync (pid {pid}) still runs")


def status_explains(a: Path, mine: set[str]) -> list[str]:
    """What ``git status`` says after a kill (the porcelain lines); asserts that it is a
    state a person can read: it runs, no unmerged path, no lock file left in ``.git``,
    every named path a board file or one the upstream changed, every acknowledged event of
    A's in the work tree."""
    proc = subprocess.run(["git", "status", "--porcelain=v1", "-uall"], cwd=a,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not [ln for ln in lines if ln[:2] in ("UU", "AA", "DD", "AU", "UA", "DU", "UD")]
    locks = [str(p.relative_to(a)) for p in (a / ".git").rglob("*.lock")
             if "ledgit" not in p.parts]  # ledgit's own are advisory locks, kept
    assert locks == [], locks
    named = {ln[3:] for ln in lines}
    assert all(p.startswith(".ledgit/") or p == "code.py" for p in named), lines
    assert mine <= events_in(a)
    assert not dropped_by_a_commit(a), "a git commit now would drop events HEAD holds"
    return lines


def dropped_by_a_commit(a: Path) -> list[str]:
    """The histories whose staged copy (Git's index) lacks an event HEAD holds: what a
    ``git commit`` made now would drop."""
    repo = pygit2.Repository(str(a))
    head = repo.head.peel(pygit2.Commit).tree
    index = repo.index
    dropped = []
    for entry in head[".ledgit/history"]:
        path = f".ledgit/history/{entry.name}"
        staged = repo[index[path].id].data if path in index else b""
        if not _ids(entry.data) <= _ids(staged):
            dropped.append(path)
    return dropped


def _ids(data: bytes) -> set[str]:
    return {json.loads(line)["id"] for line in data.decode().splitlines() if line.strip()}


def rerun_finishes(remote: Path, a: Path, acked: set[str], *, again: bool = True
                   ) -> dict[str, Any]:
    """``ledgit sync`` again: exit 0 and the end state of the module docstring (``again``:
    and a third sync that finds nothing to do); its JSON."""
    proc = run_killer(a, None)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    tip = git("rev-parse", "main", cwd=remote)
    assert git("rev-parse", "HEAD", cwd=a) == tip
    missing = acked - events_at(remote, "main")
    assert not missing, f"{len(missing)} acknowledged event(s) not on the remote"
    assert git("status", "--porcelain", "-uall", cwd=a) == ""
    assert not (a / ".git" / "ledgit" / NOTE).exists()
    ledgit(a, "verify", "--all")
    if again:
        third = json.loads(run_killer(a, None).stdout)
        assert third["committed"] is None and third["pushed"] is None
        assert not third["integrations"]
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return build(tmp_path_factory.mktemp("sync-crash") / "template")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A directory ``git daemon`` serves (push enabled), and its URL prefix."""
    root = tmp_path_factory.mktemp("served")
    with git_daemon(root) as url:
        yield root, url


def kill_and_rerun(template: Template, served: tuple[Path, str], case: str, way: str,
                   point: str, at: int, how: str, *, again: bool) -> None:
    """One case: A's sync killed at ``point``, over ``way`` (local or daemon), integrating by
    ``how``; then the checks of the module docstring."""
    root, url = served
    where = root / case
    try:
        remote, a = copy_case(template, where,
                              f"{url}{where.name}/remote.git" if way == "daemon" else None)
        git("config", "pull.rebase", str(how == "rebase").lower(), cwd=a)
        proc = run_killer(a, point, at)
        assert proc.returncode == -9, f"{point} was never reached: {proc.stderr}"
        status_explains(a, template.mine)
        out = rerun_finishes(remote, a, template.acked, again=again)
        push = "library" if way == "daemon" else "git"
        assert out["transport"] == {"fetch": "library", "push": push}
        parents = git("rev-list", "--parents", "-1", "HEAD", cwd=a).split()
        assert len(parents) == (3 if how == "merge" else 2)
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.mark.parametrize(("way", "point", "at", "how"), DEFAULT)
def test_a_killed_sync_is_finished_by_the_next(template: Template, served: tuple[Path, str],
                                               way: str, point: str, at: int,
                                               how: str) -> None:
    kill_and_rerun(template, served, f"{way}-{point}-{how}", way, point, at, how, again=False)


@pytest.mark.parametrize("point", ["worktree-partial", "worktree-written"])
def test_writes_made_after_a_killed_sync_are_kept_by_the_next(
        template: Template, served: tuple[Path, str], point: str) -> None:
    """The agent goes on after its sync was killed while writing the work tree: a note on
    every task, the task the move was merging among them (its files still as the old tip
    had them, or already as the new one has them). The next sync keeps those writes --
    merged with the upstream's, or kept where they went on top of it -- and finishes with
    no person."""
    root, _url = served
    where = root / f"writes-{point}"
    try:
        remote, a = copy_case(template, where, None)
        assert run_killer(a, point).returncode == -9
        for path in sorted((a / ".ledgit" / "tasks").glob("*.md")):
            ledgit(a, "note", path.stem, "written after the kill", "--by", "agent-a")
        out = rerun_finishes(remote, a, template.acked | events_in(a), again=False)
        assert [n for n in out["notes"] if "keeping the writes made since" in n], out["notes"]
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_persons_edit_after_a_killed_sync_is_named_and_nothing_written(
        template: Template, served: tuple[Path, str]) -> None:
    """After a kill mid-checkout, a person edits ``code.py`` (a file the move was writing)
    and the agent adds a note: the next sync names the files and writes none of them (exit
    1, the way on in one line), the branch where it was."""
    root, _url = served
    where = root / "persons-edit"
    try:
        _remote, a = copy_case(template, where, None)
        assert run_killer(a, "worktree-partial").returncode == -9
        head = git("rev-parse", "HEAD", cwd=a)
        (a / "code.py").write_text("a person's own edit\n", encoding="utf-8")
        for path in sorted((a / ".ledgit" / "tasks").glob("*.md")):
            ledgit(a, "note", path.stem, "written after the kill", "--by", "agent-a")
        files = {p: p.read_bytes() for p in (a / ".ledgit").rglob("*") if p.is_file()}
        proc = run_killer(a, None)
        assert proc.returncode == 1 and "code.py" in proc.stderr, proc.stderr
        assert "remove" in proc.stderr and "Traceback" not in proc.stderr
        assert {p: p.read_bytes() for p in files} == files
        assert (a / "code.py").read_text(encoding="utf-8") == "a person's own edit\n"
        assert git("rev-parse", "HEAD", cwd=a) == head
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.mark.stress
@pytest.mark.parametrize(("way", "point", "at", "how"), FULL)
def test_a_killed_sync_is_finished_by_the_next_at_every_point(
        template: Template, served: tuple[Path, str], way: str, point: str, at: int,
        how: str) -> None:
    kill_and_rerun(template, served, f"{way}-{point}-{how}", way, point, at, how, again=True)


@pytest.mark.stress
def test_killed_syncs_at_random(template: Template, served: tuple[Path, str]) -> None:
    """Random points, arrivals, modes and transports; the rerun itself killed a third of
    the time: the last, unkilled sync always finishes."""
    root, url = served
    seed = int(os.environ.get("LEDGIT_STRESS_SEED", "") or random.randrange(1 << 30))
    rng = random.Random(seed)
    points = [p for p, _ in POINTS]
    runs = round(60 * float(os.environ.get("LEDGIT_STRESS_FACTOR", "") or 1))
    killed = 0
    for n in range(runs):
        case = root / f"random-{n}"
        daemon = rng.random() < 0.5
        remote, a = copy_case(template, case,
                              f"{url}{case.name}/remote.git" if daemon else None)
        if rng.random() < 0.3:
            git("config", "pull.rebase", "false", cwd=a)
        while True:
            proc = run_killer(a, rng.choice(points), rng.randint(1, 3))
            assert proc.returncode in (0, -9), (seed, n, proc.stderr)
            killed += proc.returncode == -9
            if proc.returncode == 0:
                break
            status_explains(a, template.mine)
            if rng.random() < 0.67:
                break
        rerun_finishes(remote, a, template.acked)
        shutil.rmtree(case, ignore_errors=True)
    print(f"\nsync crashes: {runs} runs, {killed} kills, seed {seed}")
