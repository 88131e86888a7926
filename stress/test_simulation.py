"""Deliverable 4: a multi-agent simulation against a real bare remote on this machine.

K agents (small: 4 x 3 rounds; full: 8 x 20) each work in a clone of one bare remote, or in a
``git worktree`` of another agent's clone (every third agent), with ``ledgit install`` run in
each so the merge driver and the hooks are live. Each round every agent (all at once, in
threads) syncs, runs a random workload -- create, claim, heartbeat, update, item add, accept,
complete, and now and then a hand edit of a shared task's body recorded with
``ledgit record`` -- commits (the pre-commit hook checks it) and pushes with a
fetch-rebase-push loop, retrying on rejection.

A rebase that stops is resolved as a person would only when every conflicted path is a task
file whose body holds overlapping edits (the driver marks those; DESIGN §7): both sides'
lines are kept and the edit recorded. Any other conflict fails the test.

At the end: every event any agent created is in the remote's histories exactly once; every
commit on main passes ``ledgit verify --rev`` (checked as ``--range`` plus the root, and
``--rev`` on a sample); after a final pull every clone and worktree shows the same board
(same tree, same ``ledgit list``) and verifies. Prints rounds, events, merges, conflicts and
time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stresskit import Figures, Result, Scale, git, histories, isolated_env, ledgit, read_events

MARKER_RE = re.compile(r"^(<{7}|={7}|>{7})( .*)?$")


@dataclass
class Agent:
    name: str
    path: Path
    env: dict[str, str]
    rng: Any
    created: list[tuple[str, str]] = field(default_factory=list)  # (task, event id)
    claimed: set[str] = field(default_factory=set)  # what it believes it holds
    ops: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    pushes: int = 0
    rejected_pushes: int = 0
    rebases: int = 0
    body_conflicts: int = 0
    other_conflicts: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Sim:
    def __init__(self, tmp: Path, scale: Scale) -> None:
        self.tmp = tmp
        self.scale = scale
        self.remote = tmp / "remote.git"
        self.home = tmp / "home"
        self.base_env = isolated_env(self.home)
        self.merge_log = tmp / "merge.log"
        self.base_env["LEDGIT_MERGE_LOG"] = str(self.merge_log)
        self.agents: list[Agent] = []
        self.notes_task = ""

    # ------------------------------------------------------------------ setup

    def setup(self, n_agents: int) -> None:
        env = self.base_env
        git(["init", "-q", "--bare", str(self.remote)], self.tmp, env)
        seed = self.tmp / "seed"
        git(["clone", "-q", str(self.remote), str(seed)], self.tmp, env)
        ledgit(["init"], seed, env)
        ledgit(["install"], seed, env)
        self.notes_task = ledgit(["create", "shared notes", "--body",
                                  "## Goal\n\nA page every agent appends to.\n\n## Notes\n",
                                  "--json"], seed, env).json()["id"]
        for i in range(3):
            ledgit(["create", f"seed task {i}", "--goal", f"Seed {i}.", "--json"], seed, env)
        git(["add", "-A"], seed, env)
        git(["commit", "-q", "-m", "seed board"], seed, env)
        git(["push", "-q", "origin", "HEAD:main"], seed, env)
        for i in range(n_agents):
            name = f"agent-{i}"
            aenv = dict(env, LEDGIT_ACTOR=name, GIT_AUTHOR_NAME=name,
                        GIT_COMMITTER_NAME=name)
            if i % 3 == 2 and self.agents:  # a worktree of the previous agent's clone
                owner = self.agents[-1].path
                path = self.tmp / f"wt-{i}"
                git(["worktree", "add", "-q", "-b", f"work-{i}", str(path), "origin/main"],
                    owner, aenv)
            else:
                path = self.tmp / f"clone-{i}"
                git(["clone", "-q", str(self.remote), str(path)], self.tmp, aenv)
            ledgit(["install"], path, aenv)
            self.agents.append(Agent(name, path, aenv, self.scale.rng(name)))

    # ------------------------------------------------------------------ one agent

    def board(self, agent: Agent) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = ledgit(["list", "--all", "--json"], agent.path,
                                            agent.env).json()["tasks"]
        return rows

    def mutate(self, agent: Agent, op: str, args: list[str], ok: tuple[int, ...] = (0,)
               ) -> Result | None:
        res = ledgit([*args, "--json"], agent.path, agent.env, ok=None)
        if res.code not in ok and res.code not in (0,):
            agent.failures.append(f"{agent.name}: {op}: {res.describe()}")
            return None
        if res.code != 0:
            agent.refused[op] = agent.refused.get(op, 0) + 1
            return None
        agent.ops[op] = agent.ops.get(op, 0) + 1
        data = res.json()
        if op == "record":
            event = data.get("event")
            if event:
                agent.created.append((data["id"], event["id"]))
            return res
        if data.get("written") is False:
            return res
        tid = data.get("task") or data["id"]
        hist = agent.path / ".ledgit" / "history" / f"{tid}.jsonl"
        match = [e["id"] for e in read_events(hist) if e["after"] == data["revision"]]
        if len(match) != 1:
            agent.failures.append(f"{agent.name}: {op}: no single event for the revision "
                                  f"it printed ({len(match)})")
        else:
            agent.created.append((tid, match[0]))
        return res

    def work(self, agent: Agent, round_no: int) -> None:
        rng = agent.rng
        rows = self.board(agent)
        for step in range(rng.randint(1, 3)):
            roll = rng.random()
            live = [r for r in rows if r["status"] in ("open", "in_progress")]
            # What it believes it holds: a merge may have given the claim to an earlier
            # claimant (contested), and then heartbeat/complete must refuse with exit 6.
            mine = [r for r in live if r["id"] in agent.claimed]
            free = [r for r in live if r["status"] == "open" and not r.get("claim")]
            if free and rng.random() < 0.5:  # crowd onto the oldest free tasks
                free = sorted(free, key=lambda r: r["created"])[:2]
            tag = f"{agent.name} r{round_no}.{step}"
            if roll < 0.15 or not live:
                self.mutate(agent, "create", ["create", f"task by {tag}", "--goal",
                                              f"Made by {tag}.", "--accept", "it works"])
            elif roll < 0.30 and free:
                tid = rng.choice(free)["id"]
                if self.mutate(agent, "claim", ["claim", tid], ok=(6,)):
                    agent.claimed.add(tid)
            elif roll < 0.38 and mine:
                tid = rng.choice(mine)["id"]
                if not self.mutate(agent, "heartbeat", ["heartbeat", tid], ok=(6,)):
                    agent.claimed.discard(tid)
            elif roll < 0.55:
                self.mutate(agent, "update", ["update", rng.choice(live)["id"],
                                              "--response", f"progress by {tag}"])
            elif roll < 0.70:
                self.mutate(agent, "item", ["item", "add", rng.choice(live)["id"], "--kind",
                                            rng.choice(["fact", "decision", "question"]),
                                            "--text", f"noted by {tag}"])
            elif roll < 0.78:
                self.accept(agent, rng.choice(live)["id"])
            elif roll < 0.88 and mine:
                tid = rng.choice(mine)["id"]
                self.mutate(agent, "complete", ["complete", tid,
                                                "--response", f"finished by {tag}"], ok=(6,))
                agent.claimed.discard(tid)
            else:
                self.edit_body(agent, tag)
            rows = self.board(agent)

    def accept(self, agent: Agent, tid: str) -> None:
        items = ledgit(["item", "list", tid, "--trust", "candidate", "--json"], agent.path,
                       agent.env).json()["items"]
        if items:
            self.mutate(agent, "accept", ["accept", tid, items[0]["id"], "--trusted"])

    def edit_body(self, agent: Agent, tag: str) -> None:
        """A person's hand edit: append a line to the shared task's body, then record it."""
        path = agent.path / ".ledgit" / "tasks" / f"{self.notes_task}.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text + f"- note from {tag}\n", encoding="utf-8")
        self.mutate(agent, "record", ["record", self.notes_task])

    # ------------------------------------------------------------------ git

    def commit_and_push(self, agent: Agent, message: str, retries: int = 40) -> None:
        env, path = agent.env, agent.path
        git(["add", "-A", ".ledgit"], path, env)
        if git(["diff", "--cached", "--quiet"], path, env, check=False).code != 0:
            res = git(["commit", "-q", "-m", message], path, env, check=False)
            if res.code != 0:
                agent.failures.append(f"{agent.name}: commit refused\n{res.describe()}")
                return
        for _ in range(retries):
            res = git(["push", "-q", "origin", "HEAD:main"], path, env, check=False)
            if res.code == 0:
                agent.pushes += 1
                return
            agent.rejected_pushes += 1
            if not self.rebase(agent):
                return
        agent.failures.append(f"{agent.name}: could not push after {retries} tries")

    def fetch(self, agent: Agent) -> None:
        for _ in range(20):
            if git(["fetch", "-q", "origin"], agent.path, agent.env, check=False).code == 0:
                return
            time.sleep(0.05)  # a worktree sibling holds the shared ref lock
        git(["fetch", "-q", "origin"], agent.path, agent.env)

    def rebase(self, agent: Agent) -> bool:
        """fetch + rebase onto origin/main, resolving overlapping body edits like a person.
        False (with a failure noted) when anything else needs a person."""
        env, path = agent.env, agent.path
        self.fetch(agent)
        agent.rebases += 1
        res = git(["rebase", "-q", "origin/main"], path, env, check=False)
        while res.code != 0:
            conflicted = git(["diff", "--name-only", "--diff-filter=U"], path,
                             env).out.split()
            if not conflicted:
                agent.failures.append(f"{agent.name}: rebase failed\n{res.describe()}")
                git(["rebase", "--abort"], path, env, check=False)
                return False
            for rel in conflicted:
                if not self.resolve_body(agent, rel):
                    agent.other_conflicts.append(rel)
                    agent.failures.append(
                        f"{agent.name}: {rel} needed a person\n{res.describe()}\n"
                        + (path / rel).read_text(encoding="utf-8", errors="replace")[:3000])
                    git(["rebase", "--abort"], path, env, check=False)
                    return False
            res = git(["-c", "core.editor=true", "rebase", "--continue"], path, env,
                      check=False)
        return True

    def resolve_body(self, agent: Agent, rel: str) -> bool:
        """Resolve a task file whose only conflict is in the body: keep both sides' lines,
        record the edit. False for anything else."""
        m = re.fullmatch(r"\.ledgit/tasks/(.+)\.md", rel)
        if not m:
            return False
        tid = m.group(1)
        path = agent.path / rel
        text = path.read_text(encoding="utf-8")
        head, sep, body = text.partition("\n---\n")
        if not sep or any(MARKER_RE.match(ln) for ln in head.splitlines()):
            return False
        lines = [ln for ln in body.split("\n") if not MARKER_RE.match(ln)]
        path.write_text(head + sep + "\n".join(lines), encoding="utf-8")
        agent.body_conflicts += 1
        res = self.mutate(agent, "record", ["record", tid])
        if res is None:
            return False
        git(["add", rel, f".ledgit/history/{tid}.jsonl"], agent.path, agent.env)
        return True

    def sync(self, agent: Agent) -> None:
        self.rebase(agent)


def _agent_round(sim: Sim, agent: Agent, round_no: int, barrier: threading.Barrier) -> None:
    try:
        barrier.wait(timeout=600)
        sim.sync(agent)
        if agent.failures:
            return
        sim.work(agent, round_no)
        sim.commit_and_push(agent, f"{agent.name}: round {round_no}")
    except Exception as exc:  # noqa: BLE001 - reported by the test
        agent.failures.append(f"{agent.name}: round {round_no}: {type(exc).__name__}: {exc}")


def test_multi_agent_simulation(scale: Scale, tmp_path: Path, figures: Figures) -> None:
    n_agents = min(8, max(4, scale.pick(4, 8)))
    rounds = scale.pick(3, 20)
    sim = Sim(tmp_path, scale)
    started = time.perf_counter()
    sim.setup(n_agents)
    for r in range(rounds):
        barrier = threading.Barrier(len(sim.agents))
        threads = [threading.Thread(target=_agent_round, args=(sim, a, r, barrier))
                   for a in sim.agents]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        failures = [f for a in sim.agents for f in a.failures]
        assert not failures, f"round {r}: " + "\n\n".join(failures[:3])
    for agent in sim.agents:  # the final pull
        sim.sync(agent)
    failures = [f for a in sim.agents for f in a.failures]
    assert not failures, "\n\n".join(failures[:3])
    work_seconds = time.perf_counter() - started

    # A fresh clone of the remote is the judge.
    judge = tmp_path / "judge"
    env = sim.base_env
    git(["clone", "-q", str(sim.remote), str(judge)], tmp_path, env)
    ledgit(["install"], judge, env)
    remote_hist = histories(judge)
    counts: dict[tuple[str, str], int] = {}
    for tid, events in remote_hist.items():
        for e in events:
            counts[(tid, e["id"])] = counts.get((tid, e["id"]), 0) + 1
    created = [c for a in sim.agents for c in a.created]
    missing = [c for c in created if counts.get(c, 0) == 0]
    twice = [k for k, n in counts.items() if n > 1]
    assert not missing, f"{len(missing)} event(s) never reached the remote: {missing[:5]}"
    assert not twice, f"event(s) more than once in a history: {twice[:5]}"
    assert len(set(created)) == len(created)

    # Every commit on main passes the gate.
    root = git(["rev-list", "--max-parents=0", "main"], judge, env).out.split()[0]
    commits = git(["rev-list", "main"], judge, env).out.split()
    gate = ledgit(["verify", "--range", f"{root}..main"], judge, env, ok=None, timeout=900)
    assert gate.code == 0, gate.describe()
    ledgit(["verify", "--rev", root], judge, env)
    rng = scale.rng("sample")
    for rev in rng.sample(commits, min(len(commits), scale.pick(3, 12))):
        res = ledgit(["verify", "--rev", rev], judge, env, ok=None)
        assert res.code == 0, res.describe()

    # Every clone and worktree shows the same board.
    tree = git(["rev-parse", "HEAD:.ledgit"], judge, env).out.strip()
    judge_board = _board_view(judge, env)
    for agent in sim.agents:
        assert git(["rev-parse", "HEAD:.ledgit"], agent.path, agent.env).out.strip() == tree
        assert git(["status", "--porcelain"], agent.path, agent.env).out.strip() == ""
        assert _board_view(agent.path, agent.env) == judge_board, agent.name
        ledgit(["verify", "--all"], agent.path, agent.env)

    merge_events = sum(1 for evs in remote_hist.values() for e in evs if e["op"] == "merge")
    driver_notes = (sim.merge_log.read_text(encoding="utf-8").splitlines()
                    if sim.merge_log.exists() else [])
    ops: dict[str, int] = {}
    refused: dict[str, int] = {}
    for a in sim.agents:
        for k, v in a.ops.items():
            ops[k] = ops.get(k, 0) + v
        for k, v in a.refused.items():
            refused[k] = refused.get(k, 0) + v
    figures.update({
        "agents": n_agents, "worktrees": sum(1 for a in sim.agents if "wt-" in a.path.name),
        "rounds": rounds, "events_created": len(created),
        "events_in_remote": sum(len(v) for v in remote_hist.values()),
        "tasks": len(remote_hist), "commits_on_main": len(commits),
        "merge_events": merge_events,
        "driver_history_merges": sum(1 for n in driver_notes if "merge event" in n),
        "contested_claim_merges": sum(1 for n in driver_notes if "claim contested" in n),
        "pushes": sum(a.pushes for a in sim.agents),
        "rejected_pushes": sum(a.rejected_pushes for a in sim.agents),
        "rebases": sum(a.rebases for a in sim.agents),
        "body_conflicts_resolved_by_person": sum(a.body_conflicts for a in sim.agents),
        "other_conflicts": sum(len(a.other_conflicts) for a in sim.agents),
        "ops": ops, "refused": refused,
        "seconds": round(time.perf_counter() - started, 1),
        "work_seconds": round(work_seconds, 1),
    })
    print(f"\nsimulation: {json.dumps(figures.values)}")


def _board_view(path: Path, env: dict[str, str]) -> list[tuple[str, str, str]]:
    rows = ledgit(["list", "--all", "--json"], path, env).json()["tasks"]
    return sorted((r["id"], r["status"], r["revision"]) for r in rows)
