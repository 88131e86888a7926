"""A fleet of agents on one board (issues 24 and 32, item 6): what a fleet sees, with ledgit and
without.

N agents (default 8) work against one bare remote on this machine, each in its own clone
(``--layout clones``), or all in worktrees of one clone (``worktrees``), or both (``mixed``:
every third agent a worktree of the previous agent's clone). Every round, all agents at once
(a barrier), each agent:

- picks ready work (``ledgit ready``; half the time the top task, the one every other agent
  sees first too: the deliberate same-task collisions), claims it (exit 6: someone holds it;
  with remote leases that is decided on the remote at once);
- on a task it holds (from an earlier round, or at once for a quick task): heartbeats,
  updates the response, adds a note (``ledgit note``) and an item, then completes or drops
  it; a refused heartbeat or end (exit 6) means the claim was lost and the agent lets the
  task go;
- now and then creates a task, appends a line at the end of a shared task's body by hand
  (``ledgit record``), or -- rarely -- rewrites the same existing body line as others do
  (the one edit that may still need a person);
- commits, then syncs (``git pull --rebase``, or ``--no-rebase``: ``--sync rebase|merge|mixed``,
  mixed = alternating agents) and pushes, retrying a rejected push up to ``--retries`` times;
  or runs ``ledgit sync`` (``--sync ledgit``), which does all of that in one process with as
  many push attempts (stress/fleetsync.py).

``--baseline`` runs the same script with no ledgit: plain task files edited in place, Git's own
line merge, and a conflict settled the way a hurried agent does (take upstream's copy of the
file and go on). The report (JSON) holds: acknowledged writes lost (and which kind), tasks
ended by two agents, tasks held by two agents at once (overlapping acknowledged claims: from
the claim's exit 0 to its end or to the refusal that told the agent it lost), pulls that needed
a person and why, push retries and syncs that gave up, and p50/p95 wall seconds per operation
-- ``loop`` is one round's whole sync: commit + pull + push with their retries, or the
``ledgit sync`` that did the same.

Run by hand for the figures (docs/reliability.md)::

    python stress/fleet.py --agents 8 --rounds 25 --layout mixed --sync ledgit
    python stress/fleet.py --agents 8 --rounds 25 --layout mixed --sync mixed
    python stress/fleet.py --agents 8 --rounds 25 --layout mixed --sync rebase --baseline

stress/test_fleet.py runs a short form in CI. Uses the real ``ledgit`` console script
(:mod:`stresskit`), and its remote leases when the board has them (``ledgit lease list``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleetsync import GOAL_LINE, MARKER_RE, Syncing  # noqa: E402
from stresskit import LEDGIT, isolated_env, read_events, run  # noqa: E402

ENDED = ("done", "dropped", "archived")
GNU_TIME = "/usr/bin/time"


# --------------------------------------------------------------------------- bookkeeping


@dataclass
class Write:
    """One acknowledged write whose effect must survive: ``kind`` (create, note, item,
    append, end), the task, and the token (unique text) or the end op."""

    kind: str
    task: str
    token: str
    agent: str


@dataclass
class Agent:
    name: str
    path: Path
    env: dict[str, str]
    sync: str  # "rebase" | "merge" | "ledgit"
    rng: Any
    held: dict[str, float] = field(default_factory=dict)  # task -> when the claim was acked
    serial: int = 0
    failures: list[str] = field(default_factory=list)
    loop_cpu: float | None = None  # CPU seconds of the sync loop under way (None: not in one)

    def token(self) -> str:
        self.serial += 1
        return f"w-{self.name}-{self.serial}"


class Fleet(Syncing):
    """The shared state of one run: the remote, the agents, and every figure; how the
    agents sync is :class:`fleetsync.Syncing`'s."""

    def __init__(self, tmp: Path, *, agents: int, rounds: int, tasks: int, layout: str,
                 sync: str, baseline: bool, retries: int, seed: int) -> None:
        self.tmp, self.n, self.rounds, self.n_tasks = tmp, agents, rounds, tasks
        self.layout, self.sync_mode, self.baseline = layout, sync, baseline
        self.retries, self.seed = retries, seed
        self.rng = random.Random(seed)
        self.remote = tmp / "remote.git"
        self.env = isolated_env(tmp / "home")
        self.agents: list[Agent] = []
        self.lock = threading.Lock()
        self.writes: list[Write] = []
        self.events: list[tuple[str, str]] = []  # (task, event id) acknowledged (ledgit)
        self.intervals: dict[str, list[tuple[str, float, float]]] = {}  # task -> holds
        self.ends: dict[str, set[str]] = {}  # task -> agents whose end was acknowledged
        self.timings: dict[str, list[float]] = {}
        self.counts: dict[str, int] = {}
        self.person: dict[str, int] = {}  # why a pull needed a person -> count
        self.hot: list[str] = []  # tasks every agent appends to / edits
        self.leases = False
        self.serial = 0  # names the CPU figures' files
        self.run_again: list[str] = []

    # ------------------------------------------------------------------ commands

    def cmd(self, agent: Agent, op: str, args: list[str], *, git: bool = False,
            timeout: float = 300) -> Any:
        """Run ``git ARGS`` or ``ledgit ARGS`` in the agent's work tree, timed as ``op``. In
        a sync loop, GNU time (``/usr/bin/time``, where there is one) also counts its CPU
        seconds and those of every process it waited for (hooks, merge drivers, ``git
        push``'s receive-pack): the loop's cost, which the load of a busy machine stretches
        less than its wall time."""
        argv = ["git", *args] if git else [*LEDGIT, *args]
        measure = agent.loop_cpu is not None and os.access(GNU_TIME, os.X_OK)
        if measure:
            with self.lock:
                self.serial += 1
                out = self.tmp / f"cpu-{self.serial}"
            argv = [GNU_TIME, "-f", "%U %S", "-o", str(out), *argv]
        res = run(argv, agent.path, agent.env, timeout=timeout)
        if measure and agent.loop_cpu is not None:
            user, system = out.read_text(encoding="utf-8").split()[-2:]
            agent.loop_cpu += float(user) + float(system)
            out.unlink()
        with self.lock:
            self.timings.setdefault(op, []).append(res.seconds)
        if not git and ("Traceback (most recent call last)" in res.err or res.code == 70):
            agent.failures.append(f"{agent.name}: {op}: traceback\n{res.describe()}")
        return res

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    # ------------------------------------------------------------------ setup

    def setup(self) -> None:
        env = self.env
        run(["git", "init", "-q", "--bare", str(self.remote)], self.tmp, env)
        seed = self.tmp / "seed"
        run(["git", "clone", "-q", str(self.remote), str(seed)], self.tmp, env)
        if self.baseline:
            self.hot = [self._plain_create(seed, f"hot task {i}") for i in range(2)]
            for i in range(self.n_tasks):
                self._plain_create(seed, f"seed task {i}", priority=i % 5)
        else:
            code = ("import sys\nfrom ledgit.storage.boardinit import init_board\n"
                    "from ledgit.storage.writepath import create_task\n"
                    "b = init_board(sys.argv[1])\nhot = []\n"
                    "for i in range(2):\n"
                    "    hot.append(create_task(b, {'title': f'hot task {i}'}, '## Goal\\n"
                    + GOAL_LINE + "\\n\\n## Log\\n', 'seed').id)\n"
                    "for i in range(int(sys.argv[2])):\n"
                    "    create_task(b, {'title': f'seed task {i}', 'priority': i % 5},"
                    " '## Goal\\nSeed.\\n', 'seed')\n"
                    "print(' '.join(hot))\n")
            res = run([sys.executable, "-c", code, str(seed), str(self.n_tasks)], seed, env)
            if res.code != 0:
                raise RuntimeError(res.describe())
            self.hot = res.out.split()
            run([*LEDGIT, "install"], seed, env)
        run(["git", "add", "-A"], seed, env)
        run(["git", "commit", "-q", "-m", "seed board"], seed, env)
        res = run(["git", "push", "-q", "origin", "HEAD:main"], seed, env)
        if res.code != 0:
            raise RuntimeError(res.describe())
        run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], self.remote, env)
        shared: Path | None = None
        for i in range(self.n):
            name = f"agent-{i}"
            aenv = dict(env, LEDGIT_ACTOR=name, GIT_AUTHOR_NAME=name, GIT_COMMITTER_NAME=name)
            worktree = (self.layout == "worktrees" and i > 0) or (
                self.layout == "mixed" and i % 3 == 2)
            if worktree:
                owner = shared if self.layout == "worktrees" else self.agents[-1].path
                assert owner is not None
                path = self.tmp / f"wt-{i}"
                run(["git", "worktree", "add", "-q", "--track", "-b", f"work-{i}", str(path),
                     "origin/main"], owner, aenv)
            else:
                path = self.tmp / f"clone-{i}"
                run(["git", "clone", "-q", str(self.remote), str(path)], self.tmp, aenv)
                shared = shared or path
            if not self.baseline:
                run([*LEDGIT, "install"], path, aenv)
            sync = self.sync_mode if self.sync_mode != "mixed" else (
                "rebase" if i % 2 == 0 else "merge")
            if sync == "ledgit" and self.baseline:
                sync = "rebase"  # plain Git's loop that ledgit sync replaces
            self.agents.append(Agent(name, path, aenv, sync, random.Random(
                f"{self.seed}:{name}")))
        if not self.baseline:
            probe = run([*LEDGIT, "lease", "list", "--json"], self.agents[0].path,
                        self.agents[0].env)
            self.leases = probe.code == 0

    # ------------------------------------------------------------------ plain files

    def _plain_create(self, root: Path, title: str, priority: int = 2) -> str:
        tid = f"B-{self.rng.getrandbits(40):010x}"
        d = root / "tasks"
        d.mkdir(exist_ok=True)
        (d / f"{tid}.md").write_text(
            f"id: {tid}\ntitle: {title}\nstatus: open\npriority: {priority}\nclaim: \n"
            f"heartbeat: \nresponse: \n---\n## Goal\n{GOAL_LINE}\n\n## Log\n",
            encoding="utf-8")
        return tid

    @staticmethod
    def plain_read(path: Path) -> dict[str, str] | None:
        """A plain task file's header, or None when it is unreadable (markers, no header)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        if any(MARKER_RE.match(ln) for ln in text.splitlines()):
            return None
        head, sep, _ = text.partition("\n---\n")
        if not sep:
            return None
        out: dict[str, str] = {}
        for line in head.splitlines():
            key, colon, value = line.partition(": ")
            if not colon and not line.endswith(":"):
                return None
            if key.rstrip(":") in out:
                return None  # a key twice: a line merge fused two versions
            out[key.rstrip(":")] = value.strip()
        return out if "status" in out else None

    @staticmethod
    def plain_set(path: Path, **values: str) -> None:
        text = path.read_text(encoding="utf-8")
        head, sep, body = text.partition("\n---\n")
        lines = head.splitlines()
        for key, value in values.items():
            lines = [f"{key}: {value}" if ln.partition(":")[0] == key else ln for ln in lines]
        path.write_text("\n".join(lines) + sep + body, encoding="utf-8")

    # ------------------------------------------------------------------ one agent's work

    def ready(self, agent: Agent) -> list[str]:
        if self.baseline:
            rows = []
            for p in sorted((agent.path / "tasks").glob("*.md")):
                head = self.plain_read(p)
                if head and head["status"] == "open" and not head.get("claim"):
                    rows.append((head.get("priority", "2"), p.stem))
            return [t for _, t in sorted(rows)[:5]]
        res = self.cmd(agent, "ready", ["ready", "--json", "--limit", "5"])
        if res.code != 0:
            return []
        return [r["id"] for r in json.loads(res.out)["tasks"]]

    def write(self, agent: Agent, op: str, args: list[str]) -> tuple[int, dict[str, Any]]:
        """A ledgit write: (exit code, JSON); its event is recorded as acknowledged."""
        res = self.cmd(agent, op, [*args, "--json"])
        if res.code != 0:
            if res.code not in (2, 3, 4, 5, 6, 69):
                agent.failures.append(f"{agent.name}: {op}: {res.describe()}")
            return res.code, {}
        data = json.loads(res.out)
        tid = data.get("task") or data.get("id")
        if op == "record":
            event = data.get("event")
            if event:
                with self.lock:
                    self.events.append((tid, event["id"]))
            return 0, data
        if data.get("written") is False:
            return 0, data
        hist = agent.path / ".ledgit" / "history" / f"{tid}.jsonl"
        match = [e["id"] for e in read_events(hist) if e["after"] == data["revision"]]
        if len(match) == 1:
            with self.lock:
                self.events.append((tid, match[0]))
        return 0, data

    def acked(self, kind: str, task: str, token: str, agent: Agent) -> None:
        with self.lock:
            self.writes.append(Write(kind, task, token, agent.name))

    def hold_ends(self, agent: Agent, task: str) -> None:
        """The agent no longer holds ``task`` (ended, released, or told it lost it)."""
        since = agent.held.pop(task, None)
        if since is not None:
            with self.lock:
                self.intervals.setdefault(task, []).append((agent.name, since,
                                                            time.monotonic()))

    def claim(self, agent: Agent, task: str) -> None:
        self.count("claims tried")
        if self.baseline:
            path = agent.path / "tasks" / f"{task}.md"
            head = self.plain_read(path)
            if head is None or head["status"] != "open" or head.get("claim"):
                self.count("claims refused")
                return
            self.plain_set(path, status="in_progress", claim=agent.name)
            agent.held[task] = time.monotonic()
            return
        code, _ = self.write(agent, "claim", ["claim", task])
        if code == 0:
            agent.held[task] = time.monotonic()
        else:
            self.count("claims refused")

    def on_held(self, agent: Agent, task: str, tag: str) -> None:
        rng = agent.rng
        if self.baseline:
            path = agent.path / "tasks" / f"{task}.md"
            head = self.plain_read(path)
            if head is None or head.get("claim") != agent.name or head["status"] in ENDED:
                self.count("lost claims noticed")
                self.hold_ends(agent, task)
                return
            self.plain_set(path, heartbeat=tag, response=f"progress {tag}")
            note, item = agent.token(), agent.token()
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"- note {note}\n- item {item}\n")
            self.acked("note", task, note, agent)
            self.acked("item", task, item, agent)
            if rng.random() < 0.6:
                status = "done" if rng.random() < 0.8 else "dropped"
                self.plain_set(path, status=status, claim="")
                self.acked("end", task, status, agent)
                with self.lock:
                    self.ends.setdefault(task, set()).add(agent.name)
                self.hold_ends(agent, task)
            return
        code, _ = self.write(agent, "heartbeat", ["heartbeat", task])
        if code == 6:
            self.count("lost claims noticed")
            self.hold_ends(agent, task)
            return
        self.write(agent, "update", ["update", task, "--response", f"progress {tag}"])
        note = agent.token()
        if self.write(agent, "note", ["note", task, f"{note} tried the obvious fix"])[0] == 0:
            self.acked("note", task, note, agent)
        item = agent.token()
        if self.write(agent, "item", ["item", "add", task, "--kind", "fact", "--text",
                                      item])[0] == 0:
            self.acked("item", task, item, agent)
        if rng.random() < 0.6:
            if rng.random() < 0.8:
                op, args = "complete", ["complete", task, "--response", f"done {tag}"]
            else:
                op, args = "drop", ["drop", task, "--reason", f"not needed {tag}"]
            code, _ = self.write(agent, op, args)
            if code == 0:
                self.acked("end", task, op, agent)
                with self.lock:
                    self.ends.setdefault(task, set()).add(agent.name)
            elif code == 6:
                self.count("lost claims noticed")
            self.hold_ends(agent, task)

    def create(self, agent: Agent, tag: str) -> None:
        token = agent.token()
        if self.baseline:
            tid = self._plain_create(agent.path, f"{token} made by {tag}")
            self.acked("create", tid, token, agent)
            return
        code, data = self.write(agent, "create", ["create", f"{token} made by {tag}",
                                                  "--goal", "More work."])
        if code == 0:
            self.acked("create", data["id"], token, agent)

    def task_path(self, agent: Agent, task: str) -> Path:
        if self.baseline:
            return agent.path / "tasks" / f"{task}.md"
        return agent.path / ".ledgit" / "tasks" / f"{task}.md"

    def hand_edit(self, agent: Agent, same_line: bool) -> None:
        """Append a line at the end of a hot task's body (the "add a note" pattern), or
        rewrite its goal line, as a person does (then ``ledgit record``)."""
        task = agent.rng.choice(self.hot)
        path = self.task_path(agent, task)
        text = path.read_text(encoding="utf-8")
        token = agent.token()
        if same_line:
            lines = text.split("\n")
            at = next((i for i, ln in enumerate(lines) if i > 0 and lines[i - 1] == "## Goal"),
                      None)
            if at is None:
                return
            lines[at] = f"{GOAL_LINE} ({token})"
            text = "\n".join(lines)
        else:
            text += f"- {token} appended by hand\n"
        path.write_text(text, encoding="utf-8")
        if not self.baseline and self.write(agent, "record", ["record", task])[0] != 0:
            return
        if not same_line:
            self.acked("append", task, token, agent)
        self.count("same-line edits" if same_line else "appends by hand")

    def work(self, agent: Agent, round_no: int) -> None:
        rng = agent.rng
        tag = f"{agent.name} r{round_no}"
        for task in list(agent.held):
            self.on_held(agent, task, tag)
        if len(agent.held) < 2:
            ready = self.ready(agent)
            if ready:
                # Half the time the top task, the one every agent sees first.
                pick = ready[0] if rng.random() < 0.5 else rng.choice(ready)
                self.claim(agent, pick)
                if pick in agent.held and rng.random() < 0.4:
                    self.on_held(agent, pick, tag)  # a quick task: done before the sync
        roll = rng.random()
        if roll < 0.15:
            self.create(agent, tag)
        elif roll < 0.45:
            self.hand_edit(agent, same_line=False)
        elif roll < 0.49:
            self.hand_edit(agent, same_line=True)

    # ------------------------------------------------------------------ the run

    def round(self, round_no: int) -> None:
        barrier = threading.Barrier(len(self.agents))

        def one(agent: Agent) -> None:
            try:
                barrier.wait(timeout=900)
                self.work(agent, round_no)
                self.loop(agent, f"{agent.name}: round {round_no}")
            except Exception as exc:  # noqa: BLE001 - reported in the figures
                agent.failures.append(f"{agent.name}: r{round_no}: {type(exc).__name__}: "
                                      f"{exc}")

        threads = [threading.Thread(target=one, args=(a,)) for a in self.agents]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        self.setup()
        for r in range(self.rounds):
            self.round(r)
        for agent in self.agents:  # the last push, then everyone pulls
            self.loop(agent, f"{agent.name}: final", final=True)
        for agent in self.agents:
            self.catch_up(agent)
        for agent in self.agents:  # release what is still held, for the intervals
            for task in list(agent.held):
                self.hold_ends(agent, task)
        return self.report(time.perf_counter() - started)

    # ------------------------------------------------------------------ the judge

    def report(self, seconds: float) -> dict[str, Any]:
        judge = self.tmp / "judge"
        run(["git", "clone", "-q", str(self.remote), str(judge)], self.tmp, self.env)
        lost: dict[str, int] = {}
        unreadable: set[str] = set()
        final: dict[str, tuple[str, str]] = {}  # task -> (status, text)
        tdir = judge / ("tasks" if self.baseline else ".ledgit/tasks")
        for p in sorted(tdir.glob("*.md")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if self.baseline:
                head = self.plain_read(p)
                if head is None:
                    unreadable.add(p.stem)
                status = head["status"] if head else "?"
            else:
                m = re.search(r"(?m)^status: (\S+)$", text)
                status = m.group(1) if m else "?"
                if any(MARKER_RE.match(ln) for ln in text.splitlines()):
                    unreadable.add(p.stem)
            final[p.stem] = (status, text)
        for w in self.writes:
            status, text = final.get(w.task, ("", ""))
            ok = (bool(text) if w.kind == "create"
                  else status in ENDED if w.kind == "end" else w.token in text)
            if not ok:
                lost[w.kind] = lost.get(w.kind, 0) + 1
        events_lost = 0
        if not self.baseline:
            hdir = judge / ".ledgit" / "history"
            have = {(p.stem, e["id"]) for p in hdir.glob("*.jsonl") for e in read_events(p)}
            events_lost = sum(1 for e in self.events if e not in have)
            res = run([*LEDGIT, "verify", "--all"], judge, self.env, timeout=900)
            verify_ok = res.code == 0
        else:
            verify_ok = not unreadable
        two_at_once = 0
        for holds in self.intervals.values():
            clash = any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2]
                        for i, a in enumerate(holds) for b in holds[i + 1:])
            two_at_once += clash
        timings = {op: _quantiles(v) for op, v in sorted(self.timings.items())
                   if not op.startswith("git ") or op in ("git add",)}
        failures = [f for a in self.agents for f in a.failures]
        return {
            "mode": "baseline (plain Git, no ledgit)" if self.baseline else "ledgit",
            "remote_leases": self.leases,
            "agents": self.n, "rounds": self.rounds, "tasks": self.n_tasks,
            "layout": self.layout, "sync": self.sync_mode, "seed": self.seed,
            "acknowledged_writes": len(self.writes) + len(self.events),
            "acknowledged_writes_lost": sum(lost.values()) + events_lost,
            "lost_by_kind": dict(sorted({**lost, **({"events": events_lost}
                                                    if events_lost else {})}.items())),
            "tasks_unreadable": len(unreadable),
            "tasks_ended_by_two_agents": sum(1 for s in self.ends.values() if len(s) > 1),
            "tasks_held_by_two_agents_at_once": two_at_once,
            "pulls_that_needed_a_person": self.counts.get("pulls that needed a person", 0),
            "why_a_person": dict(sorted(self.person.items())),
            "push_retries": self.counts.get("push retries", 0),
            "syncs_that_gave_up": self.counts.get("syncs that gave up", 0),
            "counts": dict(sorted(self.counts.items())),
            "verify_ok": verify_ok,
            "seconds": round(seconds, 1),
            "load": os.getloadavg(),
            "p50_p95_seconds": timings,
            "failures": failures[:5],
            "syncs_run_again": self.run_again[:5],
        }


def _quantiles(values: list[float]) -> dict[str, float]:
    s = sorted(values)

    def q(p: float) -> float:
        return round(s[min(len(s) - 1, int(p * len(s)))], 3)

    return {"n": len(s), "p50": q(0.5), "p95": q(0.95)}


def run_fleet(tmp: Path, *, agents: int = 8, rounds: int = 25, tasks: int = 200,
              layout: str = "clones", sync: str = "mixed", baseline: bool = False,
              retries: int = 10, seed: int = 0) -> dict[str, Any]:
    """One run in ``tmp`` (an empty directory); the report (see the module doc)."""
    return Fleet(tmp, agents=agents, rounds=rounds, tasks=tasks, layout=layout, sync=sync,
                 baseline=baseline, retries=retries, seed=seed).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--layout", choices=("clones", "worktrees", "mixed"), default="clones")
    parser.add_argument("--sync", choices=("rebase", "merge", "mixed", "ledgit"),
                        default="mixed", help="ledgit: ledgit sync (with --baseline: plain "
                        "Git's commit + pull --rebase + push)")
    parser.add_argument("--retries", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", action="store_true", help="the same script, no ledgit")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-fleet-"))
    try:
        report = run_fleet(tmp, agents=args.agents, rounds=args.rounds, tasks=args.tasks,
                           layout=args.layout, sync=args.sync, baseline=args.baseline,
                           retries=args.retries, seed=args.seed)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
