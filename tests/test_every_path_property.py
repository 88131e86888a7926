"""Acceptance of issue 25 over random sequences of real Git commands, with ``ledgit install``:
rebases (conflicts settled by merging again, or by taking upstream's board), ``am -3``,
cherry-picks, squash merges, amends, resets and forced pushes to a bare remote whose
``pre-receive`` is ledgit's -- and ``ledgit sync`` (issue 32), which commits, integrates what
another clone pushed meanwhile and pushes. Each step of a sequence is lossy or lossless by
construction:

* a lossy step is refused by a hook (the ref does not move), or -- where it went through,
  because Git had rewritten the index and work tree first (issue 36: ``reset --hard``,
  ``--mixed``) -- the hook said so and named ``ledgit restore-events OLD``, ``ledgit verify
  --ref-update`` names it, and that restore brings every event back; a lossy ``ledgit sync``
  (a commit, or a work tree, holding the task as an older commit had it) is refused by its
  own checks or the remote's ``pre-receive``, or its merge brings every event back to the
  remote: it never pushes a loss;
* a lossless step is never refused, and its result holds every event it must.

The default run draws :data:`DEFAULT` sequences of each kind; the ``stress`` test draws
``FULL`` x ``$LEDGIT_EXAMPLES_FACTOR`` (default 1 there) of each: the acceptance figure
(``LEDGIT_PATHS_SEED`` picks another seed, to run it in shards). The index-refresh hooks are
taken out of the repositories here: they cannot refuse anything, and cost a process each."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pygit2
import pytest
from gitflow import LEDGIT, Result, commit_all, create, event_ids, git_rc, ledgit, new_repo
from gitutil import git
from pygit2.enums import ConfigLevel

pytest_plugins = ["gitutil"]

PROJECT = Path(__file__).resolve().parents[1]
NO_DRIVER = ("-c", "merge.ledgit.driver=false")
EDITOR = ("-c", "core.editor=true")
DEFAULT = 3  # sequences of each kind in the default run
FULL = 300  # of each kind for the acceptance figure (stress)
SYNC_FULL = 100  # of each kind with a ledgit sync among the steps, for issue 32's (stress)
SEARCH_LEVELS = (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM)
STEPS = ("rebase", "am", "cherry-pick", "squash", "amend", "reset", "push", "sync")


def _events(repo: Path, rev: str, tid: str) -> set[str]:
    out = git_rc(repo, "show", f"{rev}:.ledgit/history/{tid}.jsonl")
    return set(event_ids(out.stdout)) if out.returncode == 0 else set()


def _template(root: Path) -> tuple[Path, str]:
    """A repository with a task claimed on main, a two-commit feature branch (each adds an
    event and code) and one more event on main; a bare server with ledgit's pre-receive
    that has main. Returns (the repository, the task id)."""
    repo = new_repo(root / "repo")
    tid = create(repo, "Grow", "--by", "lead")
    commit_all(repo, "task")
    ledgit(repo, "claim", tid, "--by", "agent-b")
    commit_all(repo, "claim")
    git("checkout", "-q", "-b", "feature", cwd=repo)
    for n, args in enumerate((("heartbeat", tid, "--by", "agent-b"),
                              ("update", tid, "--priority", "1", "--by", "agent-b"))):
        ledgit(repo, *args)
        (repo / f"code{n}.txt").write_text(f"feature {n}\n")
        commit_all(repo, f"feature {n}")
    git("checkout", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
    commit_all(repo, "main: label")
    server = root / "server.git"
    git("init", "-q", "--bare", str(server), cwd=root)
    shutil.copy(PROJECT / "hooks" / "pre-receive", server / "hooks" / "pre-receive")
    (server / "hooks" / "pre-receive").chmod(0o755)
    git("remote", "add", "origin", "../server.git", cwd=repo)
    for name in ("post-checkout", "post-merge", "post-rewrite"):  # the index only: not tested
        (repo / ".git" / "hooks" / name).unlink()
    assert git_rc(repo, "push", "-q", "origin", "main", env={"LEDGIT": LEDGIT}).returncode == 0
    other = root / "other"  # another agent's clone, which moves the server for ledgit sync
    git("clone", "-q", str(server), str(other), cwd=root)
    git("remote", "set-url", "origin", "../server.git", cwd=other)  # a copy finds its own
    return repo, tid


class Run:
    """One sequence in a copy of the template: its steps and what each did."""

    def __init__(self, root: Path, tid: str, rng: random.Random) -> None:
        self.repo, self.tid, self.rng = root / "repo", tid, rng
        self.server, self.other = root / "server.git", root / "other"
        self.outcomes: list[tuple[str, bool, str]] = []  # (step, lossy, outcome)
        self.said = ""  # what Git and the hooks said on stderr during the current step
        self.claimed = git("rev-parse", ":/^claim", cwd=self.repo)  # before main's events

    def g(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = git_rc(self.repo, *args, env={"LEDGIT": LEDGIT, **(env or {})})
        self.said += proc.stderr
        return proc

    def rev(self, name: str) -> str:
        return git_rc(self.repo, "rev-parse", "-q", "--verify", name).stdout.strip()

    def clean(self) -> None:
        """Back to main, nothing stopped, nothing staged."""
        for what in ("rebase", "am", "cherry-pick", "merge"):
            self.g(what, "--abort")
        self.g("reset", "-q", "--hard", env={"LEDGIT_ALLOW_REWRITE": "1"})
        self.g("checkout", "-q", "main")

    def main_event(self) -> str:
        """A new event of the task on main, committed; main checked out. Returns the tip."""
        self.g("checkout", "-q", "main")
        ledgit(self.repo, "update", self.tid, "--label", f"m{self.rng.randrange(10**9)}",
               "--by", "main-dev")
        return commit_all(self.repo, "main: event")

    def fresh_feature(self) -> str:
        """Branch feature anew from main with one or two commits, each a new event of the
        task and a code file; then a new event on main, so that the two conflict. Returns
        the feature tip."""
        self.g("checkout", "-q", "-B", "feature", "main",
               env={"LEDGIT_ALLOW_REWRITE": "1"})
        for n in range(self.rng.randint(1, 2)):
            ledgit(self.repo, "update", self.tid, "--next-action",
                   f"f{self.rng.randrange(10**9)}", "--by", "agent-b")
            (self.repo / f"code{n}.txt").write_text(f"{self.rng.random()}\n")
            tip = commit_all(self.repo, f"feature {n}")
        self.main_event()
        return tip

    def conflict_settle(self, lossy: bool) -> None:
        """Settle a stop on the task's files: merge them again with the driver, or (lossy)
        take HEAD's side whole (upstream during a rebase, the branch during am or squash)."""
        if lossy:
            self.g("checkout", "HEAD", "--", ".ledgit")
        else:
            self.g("checkout", "-m", "--", ".ledgit")
        self.g("add", "-A")

    # ---------------------------------------------------------------- the steps

    def step(self, name: str, lossy: bool) -> str:
        """Run step ``name``; 'refused', 'ok', or 'lost' (went through losing events)."""
        self.g("checkout", "-q", "main")
        self.said = ""
        before = {ref: self.rev(ref) for ref in ("main", "feature")}
        result = getattr(self, "_" + name.replace("-", "_"))(lossy, before)
        self.outcomes.append((name, lossy, result))
        return result

    def _finish(self, proc: subprocess.CompletedProcess[str], old: str, new_ref: str) -> str:
        if proc.returncode != 0:
            refused = "ledgit " in proc.stderr and (": growth: " in proc.stderr)
            self.clean()
            return "refused" if refused else f"failed: {proc.stderr[-400:]}"
        return "ok" if _events(self.repo, old, self.tid) <= \
            _events(self.repo, new_ref, self.tid) else "lost"

    def _rebase(self, lossy: bool, before: dict[str, str]) -> str:
        before["feature"] = self.fresh_feature()
        self.g("checkout", "-q", "feature")
        proc = self.g(*NO_DRIVER, "rebase", "main")
        while proc.returncode != 0 and ": growth: " not in proc.stderr \
                and (self.repo / ".git" / "rebase-merge").is_dir():
            self.conflict_settle(lossy)
            proc = self.g(*EDITOR, "rebase", "--continue")
        result = self._finish(proc, before["feature"], "feature")
        self.g("checkout", "-q", "main")
        return result

    def _am(self, lossy: bool, before: dict[str, str]) -> str:
        before["feature"] = self.fresh_feature()
        patches = self.repo.parent / "patches"
        shutil.rmtree(patches, ignore_errors=True)
        self.g("format-patch", "-q", "-o", str(patches), "main..feature")
        proc = self.g(*NO_DRIVER, "am", "-3", *sorted(map(str, patches.iterdir())))
        while proc.returncode != 0 and (self.repo / ".git" / "rebase-apply").is_dir() \
                and ": growth: " not in proc.stderr:
            self.conflict_settle(lossy)
            proc = self.g("am", "--continue")
        return self._finish(proc, before["feature"], "main")

    def _cherry_pick(self, lossy: bool, before: dict[str, str]) -> str:
        picked = self.fresh_feature()
        proc = self.g(*NO_DRIVER, "cherry-pick", picked)
        if proc.returncode != 0 and "is now empty" in proc.stderr + proc.stdout:
            self.g("cherry-pick", "--skip")  # picked before: nothing to take
            return "ok"
        if proc.returncode != 0 and (self.repo / ".git" / "CHERRY_PICK_HEAD").exists():
            if lossy:  # the picked task, without its newest event
                hist = f".ledgit/history/{self.tid}.jsonl"
                ours = git("show", f"HEAD:{hist}", cwd=self.repo)
                (self.repo / hist).write_text(ours + "\n")
                self.g("checkout", "--theirs", f".ledgit/tasks/{self.tid}.md")
                self.g("add", "-A")
            else:
                self.conflict_settle(False)
            proc = self.g(*EDITOR, "cherry-pick", "--continue")
            if proc.returncode != 0 and "is now empty" in proc.stderr + proc.stdout:
                self.g("cherry-pick", "--skip")  # picked before: nothing to take
                return "ok"
        if proc.returncode != 0:
            return self._finish(proc, picked, "main")
        new = _events(self.repo, "main", self.tid)
        added = _events(self.repo, picked, self.tid) - _events(self.repo, f"{picked}~1",
                                                               self.tid)
        return "ok" if added <= new else "lost"

    def _squash(self, lossy: bool, before: dict[str, str]) -> str:
        before["feature"] = self.fresh_feature()
        proc = self.g(*NO_DRIVER, "merge", "--squash", "feature")
        if proc.returncode != 0:
            self.conflict_settle(lossy)
        proc = self.g("commit", "-q", "-m", "squash")
        if proc.returncode == 0:
            self.g("branch", "-D", "feature")
        return self._finish(proc, before["feature"], "main")

    def _amend(self, lossy: bool, before: dict[str, str]) -> str:
        before["main"] = self.main_event()  # the commit amended adds an event
        (self.repo / "amend.txt").write_text(f"{self.rng.random()}\n")
        if lossy:
            self.g("checkout", "HEAD~1", "--", ".ledgit")
            self.g("add", "-A")
            proc = self.g("commit", "-q", "--amend", "--no-verify", "--no-edit")
        else:
            ledgit(self.repo, "update", self.tid, "--label", f"l{self.rng.randrange(10**6)}",
                   "--by", "agent-c")
            self.g("add", "-A")
            proc = self.g("commit", "-q", "--amend", "--no-edit")
        return self._finish(proc, before["main"], "main")

    def _reset(self, lossy: bool, before: dict[str, str]) -> str:
        before["main"] = self.main_event()  # the commit reset away adds an event
        if lossy:
            proc = self.g("reset", "-q", self.rng.choice(["--hard", "--mixed"]), "HEAD~1")
        else:
            proc = self.g("reset", "-q", "--soft", "HEAD~1")
            if proc.returncode == 0:
                proc = self.g("commit", "-q", "-C", "ORIG_HEAD")
        return self._finish(proc, before["main"], "main")

    def _push(self, lossy: bool, before: dict[str, str]) -> str:
        self.g("push", "-q", "--force", "origin", "main")  # the server has main as it is
        shared = self.rev("main")
        if lossy:  # back to the template's claim: every later event of main goes
            self.g("reset", "-q", "--hard", self.claimed, env={"LEDGIT_ALLOW_REWRITE": "1"})
        (self.repo / "push.txt").write_text(f"{self.rng.random()}\n")
        commit_all(self.repo, "to push")
        proc = self.g("push", "-q", "--force", "origin", "main")
        server = self.repo.parent / "server.git"
        if proc.returncode != 0:
            assert git("rev-parse", "main", cwd=server) == shared
            refused = "pre-receive hook declined" in proc.stderr and ": growth: " in proc.stderr
            self.g("reset", "-q", "--hard", shared, env={"LEDGIT_ALLOW_REWRITE": "1"})
            return "refused" if refused else f"failed: {proc.stderr[-400:]}"
        return "ok" if _events(server, shared, self.tid) <= _events(server, "main", self.tid) \
            else "lost"


    def _sync(self, lossy: bool, before: dict[str, str]) -> str:
        """``ledgit sync`` on main after the other clone moved the server (an event of the
        task, or only code) or not. Lossless: a new event here, committed or not. Lossy: the
        task as the claim's commit had it (its later events gone), committed with
        ``--no-verify`` or left in the work tree. 'ok' (lossless) or 'restored' (lossy) when
        the server holds every event of its old tip, of main and of the work tree;
        'refused' when a check refused (the commit, the merge, or the remote's pre-receive)."""
        moved = self.rng.choice(["none", "task", "code"])
        if moved != "none":
            self.move_server(moved == "task")
        must = _events(self.server, "main", self.tid) | _events(self.repo, "main", self.tid)
        task, hist = f".ledgit/tasks/{self.tid}.md", f".ledgit/history/{self.tid}.jsonl"
        if lossy:
            self.g("checkout", self.claimed, "--", task, hist)
            if self.rng.random() < 0.5:
                self.g("commit", "-q", "--no-verify", "-m", "the task as it was")
        else:
            ledgit(self.repo, "update", self.tid, "--next-action",
                   f"s{self.rng.randrange(10**9)}", "--by", "agent-s")
            must |= set(event_ids((self.repo / hist).read_text()))
            if self.rng.random() < 0.5:
                commit_all(self.repo, "an event to sync")
        how = ["--merge"] if self.rng.random() < 0.3 else []
        proc = sync(self.repo, *how)
        if proc.code == 0:
            assert self.rev("main") == git("rev-parse", "main", cwd=self.server)
            if not must <= _events(self.server, "main", self.tid):
                return "lost"
            return "restored" if lossy else "ok"
        refused = proc.code == 1 and ": growth: " in proc.err
        # back to main before the step, then up to the server's tip (the other's events)
        self.g("reset", "-q", "--hard", before["main"], env={"LEDGIT_ALLOW_REWRITE": "1"})
        assert sync(self.repo).code == 0
        return "refused" if refused else f"failed: {proc.err[-400:]}"

    def move_server(self, task: bool) -> None:
        """The other clone pushes with ``ledgit sync``: an event of the task and code, or
        code only."""
        if task:
            ledgit(self.other, "update", self.tid, "--label", f"o{self.rng.randrange(10**9)}",
                   "--by", "agent-o")
        (self.other / "other.txt").write_text(f"{self.rng.random()}\n")
        git("add", "other.txt", cwd=self.other)
        proc = sync(self.other)
        assert proc.code == 0, proc.text


def sync(cwd: Path, *args: str) -> Result:
    """``ledgit sync ARGS`` in ``cwd``, in this process (:func:`gitflow.ledgit`), with the
    server's pre-receive finding ledgit; libgit2's config search path put back after."""
    saved = {level: pygit2.settings.search_path[level] for level in SEARCH_LEVELS}
    try:
        return ledgit(cwd, "sync", *args, env={"LEDGIT": LEDGIT}, code=None)
    finally:
        for level, path in saved.items():
            pygit2.settings.search_path[level] = path


def _sequences(tmp_path: Path, count: int, seed: int, *, progress: bool = False,
               with_sync: bool = False) -> Counter[tuple[bool, str]]:
    """``count`` lossy and ``count`` lossless random sequences; the outcome of each step
    (``with_sync``: each sequence has a ``ledgit sync`` among its steps, and its lossy step
    is that sync half the time)."""
    template, tid = _template(tmp_path / "template")
    tally: Counter[tuple[bool, str]] = Counter()
    rng = random.Random(seed)
    for n in range(2 * count):
        lossy_run = n % 2 == 0
        root = tmp_path / f"run{n}"
        shutil.copytree(template.parent, root, symlinks=True)
        run = Run(root, tid, random.Random(rng.randrange(1 << 30)))
        names = [rng.choice(STEPS) for _ in range(rng.randint(1, 3))]
        lossy_at = rng.randrange(len(names)) if lossy_run else -1
        if with_sync and "sync" not in names:
            at = rng.randrange(len(names) + 1)
            names.insert(at, "sync")
            if lossy_run and rng.random() < 0.5:
                lossy_at = at
            elif lossy_at >= at:
                lossy_at += 1
        for i, name in enumerate(names):
            result = run.step(name, i == lossy_at)
            if i == lossy_at and result == "lost" and name != "sync":
                result = _detect_and_restore(run, name)  # ledgit sync never pushes a loss
            tally[(i == lossy_at, result if name != "sync" else f"{result} (sync)")] += 1
            assert result in ("refused", "ok", "restored"), (n, names, i, run.outcomes)
            if i == lossy_at:
                assert result in ("refused", "restored"), (n, names, i, run.outcomes)
            else:
                assert result == "ok", (n, names, i, run.outcomes)
        shutil.rmtree(root, ignore_errors=True)
        if progress and (n + 1) % 20 == 0:
            print(f"issue 25 sequences: {n + 1}/{2 * count}: {dict(tally)}", flush=True)
    return tally


def _detect_and_restore(run: Run, name: str) -> str:
    """A lossy step that went through: the hook named the restore, the gate names the loss,
    and restore-events brings every event back from the reflog."""
    old = git("rev-parse", "main@{1}", cwd=run.repo)
    if f"ledgit restore-events {old[:12]}" not in run.said:
        return f"unnamed {name}"
    r = ledgit(run.repo, "verify", "--ref-update", old, "main", code=None)
    if r.code != 1:
        return f"undetected {name}"
    ledgit(run.repo, "restore-events", old)
    commit_all(run.repo, "restored")
    return "restored" if _events(run.repo, old, run.tid) <= _events(run.repo, "main", run.tid) \
        else f"not restored {name}"


@pytest.mark.reliability
def test_random_git_sequences_lose_nothing_silently(tmp_path: Path, git_env: Path) -> None:
    """The default run: each sequence has a ``ledgit sync`` among its steps (issue 32)."""
    tally = _sequences(tmp_path, DEFAULT, seed=25, with_sync=True)
    print(f"\nstep outcomes (lossy, outcome): {dict(tally)}")
    assert sum(n for (lossy, _), n in tally.items() if lossy) == DEFAULT


@pytest.mark.stress
def test_random_git_sequences_full_count(tmp_path: Path, git_env: Path) -> None:
    factor = float(os.environ.get("LEDGIT_EXAMPLES_FACTOR", "") or 1)
    count = max(1, round(FULL * factor))
    seed = int(os.environ.get("LEDGIT_PATHS_SEED", "") or 2025)  # shards: other seeds
    tally = _sequences(tmp_path, count, seed=seed, progress=True)
    print(f"\nissue 25 acceptance: {count} lossy and {count} lossless sequences; "
          f"step outcomes: {dict(tally)}")


@pytest.mark.stress
def test_random_sequences_through_ledgit_sync_full_count(tmp_path: Path, git_env: Path) -> None:
    """Issue 32's figure: every sequence has a ``ledgit sync`` among its steps, the lossy
    one half the time (in the count above, a sync is one step in eight)."""
    factor = float(os.environ.get("LEDGIT_EXAMPLES_FACTOR", "") or 1)
    count = max(1, round(SYNC_FULL * factor))
    seed = int(os.environ.get("LEDGIT_PATHS_SEED", "") or 2032)
    tally = _sequences(tmp_path, count, seed=seed, progress=True, with_sync=True)
    print(f"\nissue 32: {count} lossy and {count} lossless sequences through ledgit sync; "
          f"step outcomes: {dict(tally)}")
