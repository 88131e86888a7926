"""How the agents of stress/fleet.py sync (issue 24 item 6, issue 32 item 6): the Git loop --
``git add`` + commit, ``git pull --rebase`` or ``--no-rebase``, push, a rejected push pulled
and pushed again up to ``--retries`` times -- and ``ledgit sync``, the same loop in one ledgit
process (commit, fetch, merge, push, a lost race fetched and merged again inside it, with as
many push attempts as the Git loop: ``--retries`` + 1).

Either way a stop on a conflict is settled as a person would (counted, with why) and the
agent goes on: for ``ledgit sync``, by running it again, which finishes Git's stopped rebase
or merge. The whole of one round's loop -- from the commit to the push that landed, or to
giving up -- is timed as ``loop`` (wall seconds; ``loop cpu``: CPU seconds of every process
it ran, where GNU time is there): the figure that compares ``ledgit sync`` with plain Git's
commit + pull + push (docs/reliability.md, "Fleet figures").

A mixin of :class:`fleet.Fleet`: it uses the fleet's ``cmd``, ``count``, ``write``, ``lock``,
``person``, ``retries`` and ``baseline``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleet import Agent

MARKER_RE = re.compile(r"^(<{7}|={7}|>{7}|\|{7})( .*)?$")
GOAL_LINE = "The goal line that several agents rewrite."
FINAL_TRIES = 100  # push attempts of a last sync (ledgit sync --tries allows up to 100)


class Syncing:
    """The sync loops of a fleet (module docstring)."""

    baseline: bool
    retries: int
    person: dict[str, int]
    run_again: list[str]  # what a sync run again had said
    lock: Any
    timings: dict[str, list[float]]

    def loop(self, agent: Agent, message: str, *, final: bool = False) -> None:
        """One round's sync by the agent's way (``agent.sync``), timed as ``loop``, its CPU
        seconds as ``loop cpu`` (not a last one: the rounds are what is compared)."""
        started = time.perf_counter()
        agent.loop_cpu = None if final else 0.0
        try:
            if agent.sync == "ledgit":
                self.sync_ledgit(agent, final=final)
            else:
                self.commit(agent, message)
                self.push(agent, final=final)
        finally:
            cpu, agent.loop_cpu = agent.loop_cpu, None
        if not final:
            with self.lock:
                self.timings.setdefault("loop", []).append(time.perf_counter() - started)
                if cpu:
                    self.timings.setdefault("loop cpu", []).append(cpu)

    def catch_up(self, agent: Agent) -> None:
        """The last pull of a run: every agent sees the remote's tip."""
        if agent.sync == "ledgit":
            self.sync_ledgit(agent, final=True)
        else:
            self.pull(agent)

    # ------------------------------------------------------------------ ledgit sync

    def sync_ledgit(self, agent: Agent, final: bool = False) -> None:
        """``ledgit sync`` until it lands: a lost race is retried inside it (``push_races``
        counted as push retries); exit 5 after its tries is a sync that gave up; exit 1 with
        Git stopped on a conflict is settled as a person would, then synced again."""
        tries = FINAL_TRIES if final else self.retries + 1
        for _attempt in range(1000 if final else 8):
            res = self.cmd(agent, "sync", ["sync", "--json", "--tries", str(tries)])
            if res.code == 0:
                self.count("push retries", json.loads(res.out)["push_races"])
                return
            if res.code == 5 and "gave up after" in res.err:
                self.count("push retries", tries - 1)
                if not final:
                    self.count("syncs that gave up")
                    return
                continue
            if res.code == 1 and self.unmerged(agent):
                if not self.settle_sync(agent, res):
                    return
                continue
            if res.code in (5, 69):
                # another sync of a worktree sibling holds a shared ref: again, as with Git
                self.count(f"sync exit {res.code}, run again")
                with self.lock:
                    self.run_again.append(f"{agent.name}: exit {res.code}: {res.err[-300:]}")
                time.sleep(0.05)
                continue
            agent.failures.append(f"{agent.name}: sync failed\n{res.describe()}")
            return
        agent.failures.append(f"{agent.name}: sync never landed")

    def settle_sync(self, agent: Agent, first: Any) -> bool:
        """``ledgit sync`` stopped in Git's rebase or merge: a person settles each conflicted
        file (counted by why) and adds it; the next ``ledgit sync`` finishes the rest."""
        self.count("pulls that needed a person")
        return all(self.settle_file(agent, rel, first, True) for rel in self.unmerged(agent))

    def settle_file(self, agent: Agent, rel: str, first: Any, rebase: bool) -> bool:
        """A person settles one conflicted file (counted by why) and adds it; when that cannot
        be done the failure is recorded and Git's stopped operation aborted."""
        why = self.why(agent, rel)
        with self.lock:
            self.person[why] = self.person.get(why, 0) + 1
        if self.fix(agent, rel, why, rebase):
            return True
        agent.failures.append(f"{agent.name}: {rel} ({why}) could not be settled\n"
                              f"{first.describe()}")
        self.abort(agent)
        return False

    # ------------------------------------------------------------------ the Git loop

    def commit(self, agent: Agent, message: str) -> None:
        what = "tasks" if self.baseline else ".ledgit"
        self.cmd(agent, "git add", ["add", "-A", what], git=True)
        if self.cmd(agent, "git diff", ["diff", "--cached", "--quiet"], git=True).code == 0:
            return
        res = self.cmd(agent, "commit", ["commit", "-q", "-m", message], git=True)
        if res.code != 0:
            agent.failures.append(f"{agent.name}: commit refused\n{res.describe()}")

    def pull(self, agent: Agent) -> bool:
        """``git pull --rebase`` or ``--no-rebase``; a stop settled as a person would
        (counted, with why). False when it could not be settled."""
        how = "--rebase" if agent.sync == "rebase" else "--no-rebase"
        for attempt in range(8):
            res = self.cmd(agent, f"pull {how}", ["pull", "-q", how, "--no-edit", "origin",
                                                  "main"], git=True)
            if res.code == 0:
                return True
            if not self.unmerged(agent):
                # A worktree sibling holds the shared ref lock, or a stale state: again.
                self.abort(agent)
                time.sleep(0.05 * (attempt + 1))
                continue
            return self.settle(agent, res)
        agent.failures.append(f"{agent.name}: pull failed\n{res.describe()}")
        return False

    def unmerged(self, agent: Agent) -> list[str]:
        res = self.cmd(agent, "git diff", ["diff", "--name-only", "--diff-filter=U"],
                       git=True)
        return res.out.split()

    def abort(self, agent: Agent) -> None:
        git_dir = Path(self.cmd(agent, "git rev-parse", ["rev-parse", "--git-dir"],
                                git=True).out.strip())
        git_dir = git_dir if git_dir.is_absolute() else agent.path / git_dir
        if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
            self.cmd(agent, "git rebase", ["rebase", "--abort"], git=True)
        elif (git_dir / "MERGE_HEAD").exists():
            self.cmd(agent, "git merge", ["merge", "--abort"], git=True)

    def settle(self, agent: Agent, first: Any) -> bool:
        """A pull stopped on conflicts: a person looks (counted by why) and settles it."""
        self.count("pulls that needed a person")
        rebase = agent.sync == "rebase"
        for _ in range(50):
            paths = self.unmerged(agent)
            if not paths:
                break
            if not all(self.settle_file(agent, rel, first, rebase) for rel in paths):
                return False
            if rebase:
                res = self.cmd(agent, "git rebase", ["-c", "core.editor=true", "rebase",
                                                     "--continue"], git=True)
                if res.code == 0:
                    return True
            else:
                res = self.cmd(agent, "commit", ["commit", "-q", "--no-edit"], git=True)
                return res.code == 0 or self._fail(agent, res)
        return True

    def _fail(self, agent: Agent, res: Any) -> bool:
        agent.failures.append(f"{agent.name}: could not conclude\n{res.describe()}")
        return False

    def why(self, agent: Agent, rel: str) -> str:
        path = agent.path / rel
        if not path.exists():
            return "a file deleted on one side"
        text = path.read_text(encoding="utf-8", errors="replace")
        if rel.endswith(".jsonl"):
            return "a history"
        head, _, body = text.partition("\n---\n")
        if self.baseline:
            return ("the same body lines" if not any(MARKER_RE.match(ln)
                                                    for ln in head.splitlines())
                    else "the task's fields (front matter)")
        head = text[4:].partition("\n---\n")[0] if text.startswith("---\n") else head
        if any(MARKER_RE.match(ln) for ln in head.splitlines()):
            return "the task's fields (front matter)"
        if any(MARKER_RE.match(ln) for ln in body.splitlines()):
            # Inside the markers: the goal line (rewritten by several agents) or only lines
            # appended at the end (which must never stop a pull).
            inside, conflicted = False, []
            for ln in body.splitlines():
                if MARKER_RE.match(ln):
                    inside = not ln.startswith(">" * 7)
                elif inside:
                    conflicted.append(ln)
            return ("the same body lines" if any(GOAL_LINE in ln for ln in conflicted)
                    else "body lines (appends)")
        return "other"

    def fix(self, agent: Agent, rel: str, why: str, rebase: bool) -> bool:
        if self.baseline:
            # The hurried agent: upstream's copy of the file, and on ("ours" in a rebase).
            side = "--ours" if rebase else "--theirs"
            if self.cmd(agent, "git checkout", ["checkout", side, "--", rel],
                        git=True).code != 0:
                self.cmd(agent, "git rm", ["rm", "-q", "--", rel], git=True)
                return True
            return self.cmd(agent, "git add", ["add", "--", rel], git=True).code == 0
        m = re.fullmatch(r"\.ledgit/tasks/(.+)\.md", rel)
        if not m or why not in ("the same body lines", "body lines (appends)"):
            return False
        # Keep both sides' lines, drop the markers, record the edit.
        path = agent.path / rel
        text = path.read_text(encoding="utf-8")
        lines = [ln for ln in text.split("\n") if not MARKER_RE.match(ln)]
        path.write_text("\n".join(lines), encoding="utf-8")
        if self.write(agent, "record", ["record", m.group(1)])[0] != 0:
            return False
        self.cmd(agent, "git add", ["add", rel, f".ledgit/history/{m.group(1)}.jsonl"],
                 git=True)
        return True

    def push(self, agent: Agent, final: bool = False) -> None:
        retries = 1000 if final else self.retries
        for attempt in range(retries + 1):
            if not self.pull(agent):
                return
            res = self.cmd(agent, "push", ["push", "-q", "origin", "HEAD:main"], git=True)
            if res.code == 0:
                return
            if attempt < retries:
                self.count("push retries")
        self.count("syncs that gave up")

