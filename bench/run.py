"""ledgit against its floors and its peers, side by side, with every DESIGN §10 budget checked.

Usage::

    python bench/run.py --quick      # a few minutes: boards of 100/1,000/10,000, 3 runs
    python bench/run.py --full       # ~20 minutes: 7 runs, 5 rebases, peers at every size
    python bench/run.py --sizes 100 1000 --runs 5 --no-peers --keep

For each board size it builds, in throwaway Git repositories under a temp dir, one ledgit board
and one board per peer (YYLO Ledger, Backlog.md) from the same task shapes (titles, bodies,
labels, priorities, statuses and timestamps of the real Beads issues: bench/benchdata.py), then
times the real command lines as a user runs them -- one fresh process each, wall clock, stdin
/dev/null, output discarded -- in rounds: every round runs every case once, so the contenders
alternate and share the machine's noise. A figure is the median over the rounds. A command
that fails is reported (exit code and the last line of stderr), never a crash.

Writes bench/results/latest.md, latest.json and latest.png (see bench/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchdata import beads_file

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
# the full snapshot beside the checkout, else tests/data/beads (bench/benchdata.py says which)
DEFAULT_DATA = beads_file("beads-issues.jsonl")
PY = sys.executable
ACTOR = "bench"
SEARCH_TERM = "daemon"  # a word in ~5% of the real Beads titles/descriptions
LIMIT = "20"
TIMEOUT = 600.0
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"

# The operations every contender offers (the "at 1,000 tasks >= 3x faster than the faster
# peer" budget is checked on each of these).
PEER_OPS = ("create", "get", "list", "search", "update", "claim")
OP_LABELS = {
    "create": "create", "get": "get / view", "list": "list (20)", "search": "search (20)",
    "update": "update / edit", "claim": "claim (status in_progress + owner)",
    "verify": "verify --all", "rebuild": "cold cache rebuild",
    "refresh": "list after 10 changed files (index refresh)",
    "precommit": "pre-commit hook, 5 staged tasks", "driver": "merge driver, task triple",
    "postmerge": "post-merge hook after a pull of 2 tasks (index refresh)",
    "driver_history": "merge driver, history triple", "merge": "one merge (task triple)",
    "version": "ledgit --version", "python": "python3 -c pass",
    "update_small": "update on the smallest board (same rounds)",
    "claim_small": "claim on the smallest board (same rounds)",
    "parse_floor": "read+YAML-parse loop (CSafeLoader)",
    "stat_floor": "stat every task file (python)",
    "hash_floor": "read+sha256+JSON-parse loop (histories)",
    "git_floor": "git diff-index --cached + git cat-file --batch of the staged blobs",
}


# The ops compared with the --base commit.
BASE_OPS = ("version", "create", "get", "list", "search", "update", "claim", "verify",
            "rebuild", "refresh", "precommit", "driver", "driver_history")
# Issue 23 retired the CLI's start-up budgets (against ``ledgit --version``, against the stat
# floor, and every command within 10% of the commit before): those lines are still printed,
# as "retired". What stays a budget: the merge driver and the hooks against their floors and
# within 10% of before, every CLI command >= 3x faster than the fastest peer at 1,000 tasks;
# get, list and update at the largest board are recorded in absolute ms.
HELD_BASE_OPS = ("precommit", "driver", "driver_history")
RECORDED_OPS = ("get", "list", "update")
RETIRED = "retired"


# --------------------------------------------------------------------------- task shapes


@dataclass
class Shape:
    """One real Beads issue, reduced to what every contender can store."""

    title: str
    body: str
    labels: list[str]
    priority: int
    status: str  # open | in_progress | done
    response: str
    worker: str | None
    created: str  # RFC 3339 UTC, µs
    modified: str
    has_deps: bool


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def load_shapes(path: Path) -> list[Shape]:
    """The live (non-tombstone) Beads issues as shapes, in file order."""
    shapes: list[Shape] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            if o.get("status") == "tombstone" or not isinstance(o.get("title"), str):
                continue
            title = " ".join(o["title"].split())[:200] or "(untitled)"
            parts = []
            desc = o.get("description")
            if isinstance(desc, str) and desc.strip():
                parts.append("## Goal\n" + desc.replace("\r\n", "\n").strip() + "\n")
            notes = o.get("notes")
            if isinstance(notes, str) and notes.strip():
                parts.append("## Notes\n" + notes.replace("\r\n", "\n").strip() + "\n")
            labels = [lab for lab in (o.get("labels") or []) if isinstance(lab, str)]
            if isinstance(o.get("issue_type"), str):
                labels.append(o["issue_type"])
            labels = [" ".join(lab.split()) for lab in labels]
            labels = sorted({lab for lab in labels if lab})
            status = {"open": "open", "in_progress": "in_progress", "hooked": "in_progress",
                      "closed": "done"}.get(o.get("status"), "open")
            prio = o.get("priority")
            created = _utc(o["created_at"])
            modified = _utc(o.get("updated_at") or o["created_at"])
            if modified <= created:
                modified = created + timedelta(seconds=1)
            reason = o.get("close_reason")
            worker = o.get("assignee")
            shapes.append(Shape(
                title=title, body="\n".join(parts), labels=labels,
                priority=prio if isinstance(prio, int) and 0 <= prio <= 4 else 2,
                status=status,
                response=reason.strip() if isinstance(reason, str) and reason.strip() else
                ("closed" if status == "done" else ""),
                worker=" ".join(worker.split()) if isinstance(worker, str) and worker.strip()
                else None,
                created=_stamp(created), modified=_stamp(modified),
                has_deps=bool(o.get("dependencies"))))
    if not shapes:
        raise SystemExit(f"no usable issues in {path}")
    return shapes


def board_shapes(shapes: list[Shape], n: int) -> list[Shape]:
    """``n`` shapes: the real ones in order, cycled when ``n`` exceeds them."""
    return [shapes[i % len(shapes)] for i in range(n)]


def task_id(i: int) -> str:
    digest = hashlib.sha256(f"ledgit-bench-{i}".encode()).digest()
    bits = int.from_bytes(digest[:8], "big")
    return "T-" + "".join(BASE32[(bits >> (5 * k)) & 31] for k in range(10))


# --------------------------------------------------------------------------- processes


def git_env(home: Path) -> dict[str, str]:
    """An environment with no user/system Git config and a fixed identity."""
    # PYTHONDONTWRITEBYTECODE would make every ledgit process compile its modules from
    # source (an installed package has its bytecode): measure what a user runs.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "LEDGIT_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
               GIT_AUTHOR_NAME=ACTOR, GIT_AUTHOR_EMAIL="bench@ledgit.invalid",
               GIT_COMMITTER_NAME=ACTOR, GIT_COMMITTER_EMAIL="bench@ledgit.invalid",
               LEDGIT_ACTOR=ACTOR, NO_COLOR="1", TERM="dumb")
    return env


class SetupError(RuntimeError):
    """A setup step failed (the board or contender is reported as skipped)."""


def sh(argv: Sequence[str], cwd: Path, env: dict[str, str], check: bool = True,
       timeout: float = TIMEOUT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run an untimed setup command; raise SetupError with its stderr when it fails."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False,
                              **({"input": stdin} if stdin is not None
                                 else {"stdin": subprocess.DEVNULL}))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{' '.join(argv)}: {exc}") from None
    if check and proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [""]
        raise SetupError(f"{' '.join(argv)}: exit {proc.returncode}: {tail[0]}")
    return proc


def ledgit_argv() -> list[str]:
    """The ``ledgit`` console script next to this interpreter (as a user runs it)."""
    exe = Path(PY).parent / "ledgit"
    return [str(exe)] if exe.exists() else [PY, "-m", "ledgit"]


# --------------------------------------------------------------------------- timed cases


@dataclass
class Case:
    """One timed command line, run once per round."""

    contender: str  # ledgit | floor | yylo | backlog | git
    op: str
    argv: Callable[[int], list[str]]
    cwd: Path
    env: dict[str, str]
    pre: Callable[[int], None] | None = None
    any_exit: bool = False  # True: every exit code is a result (git merge-file: #conflicts)
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user+sys of the process tree
    errors: list[str] = field(default_factory=list)
    note: str = ""
    codes: list[int] = field(default_factory=list)

    def run(self, r: int) -> None:
        if len(self.errors) >= 2:
            return  # failing consistently: stop spending time on it
        try:
            if self.pre is not None:
                self.pre(r)
            argv = self.argv(r)
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=TIMEOUT, check=False)
            elapsed = time.perf_counter() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        except (OSError, subprocess.TimeoutExpired, SetupError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        self.codes.append(proc.returncode)
        if proc.returncode == 0 or (self.any_exit and proc.returncode > 0):
            if r >= 0:
                self.times.append(elapsed)
                self.cpu.append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime)
        else:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            self.errors.append(f"exit {proc.returncode}: {tail[0][:300]}")

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": len(self.times),
                               "times_ms": [round(t * 1000, 2) for t in self.times]}
        if self.times:
            out["median_ms"] = round(statistics.median(self.times) * 1000, 2)
            out["min_ms"] = round(min(self.times) * 1000, 2)
            out["cpu_median_ms"] = round(statistics.median(self.cpu) * 1000, 2)
        if self.errors:
            out["errors"] = self.errors
        if self.note:
            out["note"] = self.note
        return out


def run_rounds(cases: list[Case], runs: int, label: str) -> list[float]:
    """One untimed warm-up round, then ``runs`` rounds; each round runs every case once.
    Returns the 1-minute load average seen after each round (other work on the machine)."""
    loads: list[float] = []
    for r in range(-1, runs):
        t0 = time.perf_counter()
        for case in cases:
            case.run(r)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        loads.append(round(load, 2))
        print(f"  [{label}] round {'warm-up' if r < 0 else r + 1}/{runs}: "
              f"{time.perf_counter() - t0:.1f} s, load {load:.2f}", flush=True)
    return loads


# --------------------------------------------------------------------------- ledgit board


def build_ledgit(repo: Path, shapes: list[Shape], env: dict[str, str]) -> dict[str, Any]:
    """Init + install through the CLI, then write every task file and its history with
    ledgit's own library (record.make_record/render_record, history.new_event/event_line):
    genesis ``create``; in-progress tasks also a ``claim``; done tasks ``claim`` + ``complete``.
    Committed to Git, index warmed. Returns ids picked for the timed commands."""
    from ledgit.core.history import event_line, new_event
    from ledgit.core.record import make_record
    from ledgit.core.render import render_record

    repo.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    lg = ledgit_argv()
    sh([*lg, "init"], repo, env)
    sh([*lg, "install"], repo, env)
    tasks_dir, hist_dir = repo / ".ledgit" / "tasks", repo / ".ledgit" / "history"
    ids = [task_id(i) for i in range(len(shapes))]
    for i, (tid, s) in enumerate(zip(ids, shapes, strict=True)):
        fields: dict[str, Any] = {"id": tid, "title": s.title, "status": "open",
                                  "priority": s.priority, "labels": s.labels,
                                  "created": s.created, "last_modified": s.created}
        if s.worker:
            fields["worker"] = s.worker
        if s.has_deps and i > 0:
            fields["depends_on"] = [ids[(i * 7919) % i]]
        rec = make_record(fields, s.body)
        events = [new_event(parents=[], at=s.created, actor=ACTOR, op="create",
                            before_state={}, after_state=rec.state())]
        if s.status in ("in_progress", "done"):
            c, m = _utc(s.created), _utc(s.modified)
            at = s.modified if s.status == "in_progress" else _stamp(c + (m - c) / 2)
            claimed = dict(rec.fields, status="in_progress", last_modified=at,
                           claim={"by": s.worker or ACTOR, "at": at, "heartbeat": at})
            nxt = make_record(claimed, s.body)
            events.append(new_event(parents=[events[-1]["id"]], at=at, actor=ACTOR, op="claim",
                                    before_state=rec.state(), after_state=nxt.state()))
            rec = nxt
        if s.status == "done":
            done = {k: v for k, v in rec.fields.items() if k != "claim"}
            done.update(status="done", response=s.response, last_modified=s.modified)
            nxt = make_record(done, s.body)
            events.append(new_event(parents=[events[-1]["id"]], at=s.modified, actor=ACTOR,
                                    op="complete", before_state=rec.state(),
                                    after_state=nxt.state()))
            rec = nxt
        (tasks_dir / f"{tid}.md").write_text(render_record(rec), encoding="utf-8")
        (hist_dir / f"{tid}.jsonl").write_text("".join(event_line(e) for e in events),
                                               encoding="utf-8")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "--no-verify", "-m", "board"], repo, env)
    sh([*lg, "list", "--limit", "1"], repo, env)  # builds the index
    free = [tid for tid, s in zip(ids, shapes, strict=True)
            if s.status == "open" and not s.has_deps]
    if len(free) < 2:
        raise SetupError("the board has fewer than 2 open tasks without dependencies")
    mid = len(ids) // 2
    return {"ids": ids, "get": ids[mid], "update": free[len(free) // 2],
            "claim": free[len(free) // 2 - 1],
            "others": [t for t in ids if t not in (free[len(free) // 2],
                                                    free[len(free) // 2 - 1])]}


def ledgit_cases(repo: Path, env: dict[str, str], picks: dict[str, Any],
                 tmp: Path) -> list[Case]:
    """Every ledgit command of issue 6 on this board, with its untimed preparation."""
    lg = ledgit_argv()
    index = Path(sh(["git", "rev-parse", "--git-path", "ledgit"], repo, env).stdout.strip())
    if not index.is_absolute():
        index = repo / index
    others: list[str] = picks["others"]

    # 10 changed files: a branch where 10 tasks were updated; the timed list after a checkout
    # (hooks off, as after `git reset --hard`/stash/cherry-pick or without `ledgit install`).
    ten, staged = others[1:11], others[11:16]
    sh(["git", "checkout", "-q", "-b", "ten"], repo, env)
    for t in ten:
        sh([*lg, "update", t, "--response", "changed on branch ten"], repo, env)
    sh(["git", "commit", "-q", "--no-verify", "-am", "ten changed tasks"], repo, env)
    sh(["git", "checkout", "-q", "main"], repo, env)
    # 2 changed files: what a pull of another agent's two tasks brings, for the post-merge
    # hook's refresh (issue 32: each post-* refresh <= 1.5x python -c pass at 200 tasks).
    sh(["git", "checkout", "-q", "-b", "two"], repo, env)
    for t in others[16:18]:
        sh([*lg, "update", t, "--response", "changed on branch two"], repo, env)
    sh(["git", "commit", "-q", "--no-verify", "-am", "two changed tasks"], repo, env)
    sh(["git", "checkout", "-q", "main"], repo, env)
    sh([*lg, "list", "--limit", "1"], repo, env)  # the index as main has it
    # 5 staged tasks for the pre-commit hook.
    for t in staged:
        sh([*lg, "update", t, "--response", "staged for the hook"], repo, env)
        sh(["git", "add", f".ledgit/tasks/{t}.md", f".ledgit/history/{t}.jsonl"], repo, env)
    hook = repo / ".git" / "hooks" / "pre-commit"

    def flip(r: int) -> None:
        sh(["git", "-c", "core.hooksPath=/dev/null", "checkout", "-q",
            "ten" if r % 2 == 0 else "main"], repo, env)

    def pulled(r: int) -> None:
        # the two tasks' files as a pull leaves them (no hook ran), ORIG_HEAD the tip before
        came, went = ("two", "main") if r % 2 == 0 else ("main", "two")
        sh(["git", "-c", "core.hooksPath=/dev/null", "checkout", "-q", came], repo, env)
        sh(["git", "update-ref", "ORIG_HEAD", went], repo, env)

    def drop_index(r: int) -> None:
        for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
            (index / name).unlink(missing_ok=True)

    def release(r: int) -> None:
        sh([*lg, "release", picks["claim"]], repo, env, check=False)

    drv = driver_triple(repo, picks["update"], tmp)
    cases = [
        Case("ledgit", "version", lambda r: [*lg, "--version"], repo, env),
        Case("ledgit", "create", lambda r: [*lg, "create", f"Bench task {r}", "--body",
                                             f"## Goal\nMeasure create, run {r}.\n",
                                             "--label", "bench", "--priority", "2"], repo, env),
        Case("ledgit", "get", lambda r: [*lg, "get", picks["get"]], repo, env),
        Case("ledgit", "list", lambda r: [*lg, "list", "--limit", LIMIT], repo, env),
        Case("ledgit", "search", lambda r: [*lg, "search", SEARCH_TERM, "--limit", LIMIT],
             repo, env),
        Case("ledgit", "update", lambda r: [*lg, "update", picks["update"], "--response",
                                             f"bench run {r}"], repo, env),
        Case("ledgit", "claim", lambda r: [*lg, "claim", picks["claim"], "--note",
                                            f"bench run {r}"], repo, env, pre=release),
        Case("ledgit", "verify", lambda r: [*lg, "verify", "--all"], repo, env),
        Case("ledgit", "rebuild", lambda r: [*lg, "cache", "rebuild"], repo, env, pre=drop_index),
        Case("ledgit", "refresh", lambda r: [*lg, "list", "--limit", LIMIT], repo, env, pre=flip),
        Case("ledgit", "precommit", lambda r: [str(hook)], repo, env),
        Case("ledgit", "postmerge", lambda r: [str(hook.with_name("post-merge")), "0"], repo,
             env, pre=pulled),
        Case("ledgit", "driver", drv["argv"]("task"), drv["dir"], env, pre=drv["reset"]("task")),
        Case("ledgit", "driver_history", drv["argv"]("history"), drv["dir"], env,
             pre=drv["reset"]("history")),
        Case("git", "merge", lambda r: ["git", "merge-file", str(drv["dir"] / "task.A"),
                                        str(drv["dir"] / "task.O"), str(drv["dir"] / "task.B")],
             drv["dir"], env, pre=drv["reset"]("task"), any_exit=True,
             note="plain line merge of the same task triple; exit code = number of conflicts"),
    ]
    return cases


def base_cases(board: Path, repo: Path, env: dict[str, str], picks: dict[str, Any],
               tmp: Path) -> list[Case]:
    """The same ledgit cases for the ``--base`` commit (``env`` puts its code on PYTHONPATH),
    on a copy of the freshly built board with the base's own hooks and driver installed and
    its own index warmed; contender ``base``."""
    shutil.copytree(board, repo, symlinks=True)
    # The copy's hooks are this checkout's (a hook the base does not know, such as
    # reference-transaction, would refuse every ref update under the base's code): the base
    # installs its own into an empty hooks dir.
    shutil.rmtree(repo / ".git" / "hooks")
    (repo / ".git" / "hooks").mkdir()
    lg = ledgit_argv()
    sh([*lg, "install"], repo, env)
    sh([*lg, "list", "--limit", "1"], repo, env)  # builds the base's index
    cases = [c for c in ledgit_cases(repo, env, picks, tmp) if c.contender == "ledgit"]
    for c in cases:
        c.contender = "base"
    return cases


def driver_triple(repo: Path, tid: str, tmp: Path) -> dict[str, Any]:
    """A base/ours/theirs triple of one real board task and its history: ours changes
    priority, labels and claims it; theirs writes a response and a next action."""
    from ledgit.core.history import event_line, heads, new_event, parse_events, replay
    from ledgit.core.record import make_record
    from ledgit.core.render import render_record

    hist0 = (repo / ".ledgit" / "history" / f"{tid}.jsonl").read_text(encoding="utf-8")
    base_md = (repo / ".ledgit" / "tasks" / f"{tid}.md").read_text(encoding="utf-8")

    def step(history: str, at: str, actor: str, op: str, change: dict[str, Any]
             ) -> tuple[str, str]:
        events = parse_events(history, tid)
        hs = heads(events)
        before = replay(events, tid)[hs[0]]
        fields = dict(before["fields"], **change, last_modified=at)
        rec = make_record(fields, before["body"])
        event = new_event(parents=hs, at=at, actor=actor, op=op, before_state=before,
                          after_state=rec.state())
        return render_record(rec), history + event_line(event)

    ours_md, ours_h = step(hist0, "2030-01-01T10:00:00.000000Z", "agent-a", "update",
                           {"priority": 1, "labels": ["bench", "merge"]})
    ours_md, ours_h = step(ours_h, "2030-01-01T10:00:01.000000Z", "agent-a", "claim",
                           {"status": "in_progress",
                            "claim": {"by": "agent-a", "at": "2030-01-01T10:00:01.000000Z",
                                      "heartbeat": "2030-01-01T10:00:01.000000Z"}})
    theirs_md, theirs_h = step(hist0, "2030-01-01T10:00:02.000000Z", "agent-b", "update",
                               {"response": "design written", "next_action": "review it"})
    d = tmp / "triple"
    d.mkdir(parents=True, exist_ok=True)
    texts = {"task": (base_md, ours_md, theirs_md), "history": (hist0, ours_h, theirs_h)}
    paths = {"task": f".ledgit/tasks/{tid}.md", "history": f".ledgit/history/{tid}.jsonl"}
    for kind, (b, _o, t) in texts.items():
        (d / f"{kind}.O").write_text(b, encoding="utf-8")
        (d / f"{kind}.B").write_text(t, encoding="utf-8")
    driver = (sh(["git", "config", "merge.ledgit.driver"], repo, os.environ.copy(),
                 check=False).stdout.strip()
              or f"{PY} -m ledgit merge-driver %O %A %B %L %P")

    def argv(kind: str) -> Callable[[int], list[str]]:
        words = shlex.split(driver)  # as the shell Git runs it with splits it
        subst = {"%O": str(d / f"{kind}.O"), "%A": str(d / f"{kind}.A"),
                 "%B": str(d / f"{kind}.B"), "%L": "7", "%P": paths[kind]}
        return lambda r: [subst.get(w, w) for w in words]

    def reset(kind: str) -> Callable[[int], None]:
        def write(r: int) -> None:
            (d / f"{kind}.A").write_text(texts[kind][1], encoding="utf-8")
        return write

    return {"dir": d, "argv": argv, "reset": reset, "command": driver}


# --------------------------------------------------------------------------- floors

PARSE_FLOOR = """
import os, sys, yaml
L = yaml.CSafeLoader
d = sys.argv[1]
for name in os.listdir(d):
    if name.endswith(".md"):
        with open(os.path.join(d, name), "rb") as f:
            text = f.read().decode("utf-8")
        yaml.load(text.split("---\\n", 2)[1], Loader=L)
"""

# The honest floor of a read without a watcher: the same interpreter, started, stats every
# task file (the freshness check a read cannot skip, DESIGN §8) and exits.
STAT_FLOOR = """
import os, sys
d = sys.argv[1]
for name in os.listdir(d):
    if name.endswith(".md"):
        os.stat(os.path.join(d, name))
"""

HASH_FLOOR = """
import hashlib, json, os, sys
d = sys.argv[1]
for name in os.listdir(d):
    if name.endswith(".jsonl"):
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        for line in data.splitlines():
            json.loads(line)
            hashlib.sha256(line).digest()
"""


# The floor of asking Git what the pre-commit hook asks (issue 14): the same diff-index and
# one cat-file --batch for the same staged blobs, from the same interpreter, nothing checked.
GIT_FLOOR = """
import subprocess
out = subprocess.run(["git", "diff-index", "--cached", "--raw", "-z", "--no-renames",
                      "--no-abbrev", "HEAD", "--", ".ledgit"], capture_output=True,
                     check=True).stdout.split(b"\\0")
oids = [meta.split(b" ")[3] for meta in out[0:-1:2]]
subprocess.run(["git", "cat-file", "--batch"], input=b"\\n".join(oids) + b"\\n",
               capture_output=True, check=True)
"""


def floor_cases(repo: Path, env: dict[str, str], tmp: Path) -> list[Case]:
    tasks, hist = repo / ".ledgit" / "tasks", repo / ".ledgit" / "history"
    parse, digest = tmp / "parse_floor.py", tmp / "hash_floor.py"
    stat = tmp / "stat_floor.py"
    stat.write_text(STAT_FLOOR.lstrip(), encoding="utf-8")
    parse.write_text(PARSE_FLOOR.lstrip(), encoding="utf-8")
    digest.write_text(HASH_FLOOR.lstrip(), encoding="utf-8")
    asking = tmp / "git_floor.py"
    asking.write_text(GIT_FLOOR.lstrip(), encoding="utf-8")
    return [
        Case("floor", "python", lambda r: [PY, "-c", "pass"], repo, env,
             note=f"{PY}: the interpreter ledgit, its hooks and its driver run on"),
        Case("floor", "parse_floor", lambda r: [PY, str(parse), str(tasks)], repo, env),
        Case("floor", "stat_floor", lambda r: [PY, str(stat), str(tasks)], repo, env,
             note="the interpreter started, every task file stat-ed"),
        Case("floor", "hash_floor", lambda r: [PY, str(digest), str(hist)], repo, env),
        Case("floor", "git_floor", lambda r: [PY, str(asking)], repo, env,
             note="run where the hook runs, with the same 5 tasks staged"),
    ]


# --------------------------------------------------------------------------- peers


@dataclass
class Peer:
    name: str
    argv: list[str]
    version: str = ""
    skipped: str = ""


def find_yylo(venv: Path, install: bool) -> Peer:
    """yylo-ledger: ``$YYLO_LEDGER``, else ``venv`` (pip-installed there when missing)."""
    exe = Path(os.environ.get("YYLO_LEDGER") or venv / "bin" / "yylo-ledger")
    if not exe.exists() and install and not os.environ.get("YYLO_LEDGER"):
        try:
            sh([sys.executable, "-m", "venv", str(venv)], Path.cwd(), dict(os.environ))
            sh([str(venv / "bin" / "pip"), "install", "-q", "yylo-ledger"], Path.cwd(),
               dict(os.environ, PIP_CACHE_DIR=str(venv.parent / "pip-cache")))
        except SetupError as exc:
            return Peer("yylo", [], skipped=f"pip install yylo-ledger failed: {exc}")
    if not exe.exists():
        return Peer("yylo", [], skipped=f"{exe} not found (pip install yylo-ledger)")
    try:
        version = sh([str(exe), "--version"], Path.cwd(), dict(os.environ)).stdout.strip()
    except SetupError as exc:
        return Peer("yylo", [], skipped=str(exc))
    return Peer("yylo", [str(exe)], version=version)


def find_backlog(directory: Path, install: bool) -> Peer:
    """Backlog.md: ``$BACKLOG_BIN``, else ``directory`` (npm-installed there when missing)."""
    exe = Path(os.environ.get("BACKLOG_BIN") or directory / "node_modules" / ".bin" / "backlog")
    if not exe.exists() and install and not os.environ.get("BACKLOG_BIN"):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            # npm's cache and logs beside the install, not in ~/.npm
            npm_env = dict(os.environ, npm_config_cache=str(directory / "npm-cache"))
            if not (directory / "package.json").exists():
                sh(["npm", "init", "-y"], directory, npm_env)
            sh(["npm", "install", "backlog.md"], directory, npm_env)
        except SetupError as exc:
            return Peer("backlog", [], skipped=f"npm install backlog.md failed: {exc}")
    if not exe.exists():
        return Peer("backlog", [], skipped=f"{exe} not found (npm install backlog.md)")
    try:
        version = sh([str(exe), "--version"], Path.cwd(), dict(os.environ)).stdout.strip()
    except SetupError as exc:
        return Peer("backlog", [], skipped=str(exc))
    return Peer("backlog", [str(exe)], version=version)


_TAG_BAD = re.compile(r"[^a-zA-Z0-9_-]+")


def yylo_id(i: int) -> str:
    digest = hashlib.sha256(f"yylo-bench-{i}".encode()).digest()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    n = int.from_bytes(digest[:8], "big")
    head = "".join(alphabet[(n >> (6 * k)) % 62] for k in range(5))
    return f"task_{head}{n % 10}"  # yylo refuses an all-letter id


def build_yylo(peer: Peer, repo: Path, shapes: list[Shape], env: dict[str, str]
               ) -> dict[str, Any]:
    """A git repo, the config via one CLI call, then every task written by bench/yylo_board.py
    with yylo's own library (task file + genesis ledger event); committed; cache warmed."""
    repo.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh([*peer.argv, "list"], repo, env)  # creates .juno_task/tasks/config.json
    status = {"open": "todo", "in_progress": "in_progress", "done": "done"}
    ids = [yylo_id(i) for i in range(len(shapes))]
    if len(set(ids)) != len(ids):
        raise SetupError("yylo id collision in the generator")
    rows = []
    for tid, s in zip(ids, shapes, strict=True):
        tags = sorted({_TAG_BAD.sub("-", lab).strip("-")[:50] for lab in s.labels} - {""})[:20]
        rows.append({"id": tid, "status": status[s.status],
                     "body": f"title:{s.title}\n\n{s.body}".rstrip("\n"),
                     "response": s.response if s.status == "done" else "",
                     "tags": tags, "priority": s.priority,
                     "created": s.created, "modified": s.modified})
    spec = repo.parent / f"{repo.name}-tasks.json"
    spec.write_text(json.dumps(rows), encoding="utf-8")
    py = str(Path(peer.argv[0]).parent / "python")
    sh([py, str(BENCH / "yylo_board.py"), str(repo), str(spec)], repo, env)
    (repo / ".gitignore").write_text(".juno_task/cache/\n.juno_task/locks/\n")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "board"], repo, env)
    sh([*peer.argv, "list", "--limit", "1"], repo, env)  # builds its query cache
    free = [t for t, s in zip(ids, shapes, strict=True) if s.status == "open"]
    return {"get": ids[len(ids) // 2], "update": free[len(free) // 2],
            "claim": free[len(free) // 2 - 1]}


def yylo_cases(peer: Peer, repo: Path, env: dict[str, str], picks: dict[str, Any]
               ) -> list[Case]:
    y = peer.argv

    def todo(r: int) -> None:
        sh([*y, "update", picks["claim"], "--status", "todo"], repo, env, check=False)

    return [
        Case("yylo", "create", lambda r: [*y, "--raw", "create", "--title", f"Bench task {r}",
                                           "--body", f"Measure create, run {r}.", "--tags",
                                           "bench", "--field", "priority=2"], repo, env),
        Case("yylo", "get", lambda r: [*y, "get", picks["get"]], repo, env),
        Case("yylo", "list", lambda r: [*y, "list", "--limit", LIMIT, "-f", "ndjson"], repo, env),
        Case("yylo", "search", lambda r: [*y, "search", "--body", SEARCH_TERM, "--limit", LIMIT,
                                           "-f", "ndjson"], repo, env),
        Case("yylo", "update", lambda r: [*y, "update", picks["update"], "--response",
                                           f"bench run {r}"], repo, env),
        Case("yylo", "claim", lambda r: [*y, "update", picks["claim"], "--status",
                                          "in_progress"], repo, env, pre=todo,
             note="update --status in_progress (yylo has no claim)"),
    ]


def _slug(title: str) -> str:
    words = re.sub(r"[^\w\s-]", "", title).split()
    return "-".join(words)[:80].encode("utf-8")[:120].decode("utf-8", "ignore") or "task"


def build_backlog(peer: Peer, repo: Path, shapes: list[Shape], env: dict[str, str]
                  ) -> dict[str, Any]:
    """`backlog init` through its CLI, then every task file written directly in Backlog.md's
    own format (backlog/tasks/task-N - Title.md, front matter + marked sections, as its CLI
    writes them; see /work/notes/backlog.md); committed."""
    repo.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh([*peer.argv, "init", "Bench", "--defaults", "--agent-instructions", "none"], repo, env)
    if not (repo / "backlog" / "config.yml").exists():
        raise SetupError("backlog init wrote no backlog/config.yml")
    sh([*peer.argv, "config", "set", "remoteOperations", "false"], repo, env)
    status = {"open": "To Do", "in_progress": "In Progress", "done": "Done"}
    prio = {0: "high", 1: "high", 2: "medium", 3: "low", 4: "low"}
    tasks = repo / "backlog" / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(shapes, start=1):
        created = _utc(s.created).strftime("%Y-%m-%d %H:%M")
        updated = _utc(s.modified).strftime("%Y-%m-%d %H:%M")
        lines = ["---", f"id: TASK-{i}", f"title: {json.dumps(s.title, ensure_ascii=False)}",
                 f"status: {status[s.status]}"]
        lines += ["assignee:", f"  - {json.dumps('@' + s.worker)}"] if s.worker else \
            ["assignee: []"]
        lines += [f"created_date: '{created}'", f"updated_date: '{updated}'"]
        lines += ["labels:", *(f"  - {json.dumps(lab, ensure_ascii=False)}" for lab in s.labels)] \
            if s.labels else ["labels: []"]
        lines += ["dependencies: []", f"priority: {prio[s.priority]}", f"ordinal: {i * 1000}",
                  "---", ""]
        desc = s.body.strip()
        if desc:
            lines += ["## Description", "", "<!-- SECTION:DESCRIPTION:BEGIN -->", desc,
                      "<!-- SECTION:DESCRIPTION:END -->", ""]
        if s.status == "done" and s.response:
            lines += ["## Final Summary", "", "<!-- SECTION:FINAL_SUMMARY:BEGIN -->",
                      s.response, "<!-- SECTION:FINAL_SUMMARY:END -->", ""]
        (tasks / f"task-{i} - {_slug(s.title)}.md").write_text("\n".join(lines),
                                                             encoding="utf-8")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "board"], repo, env)
    free = [i for i, s in enumerate(shapes, start=1) if s.status == "open"]
    return {"get": f"task-{len(shapes) // 2}", "update": f"task-{free[len(free) // 2]}",
            "claim": f"task-{free[len(free) // 2 - 1]}"}


def backlog_cases(peer: Peer, repo: Path, env: dict[str, str], picks: dict[str, Any]
                  ) -> list[Case]:
    b = peer.argv

    def todo(r: int) -> None:
        sh([*b, "task", "edit", picks["claim"], "-s", "To Do", "--plain"], repo, env,
           check=False)

    return [
        Case("backlog", "create", lambda r: [*b, "task", "create", f"Bench task {r}", "-d",
                                              f"Measure create, run {r}.", "-l", "bench",
                                              "--priority", "medium", "--plain"], repo, env),
        Case("backlog", "get", lambda r: [*b, "task", "view", picks["get"], "--plain"], repo, env),
        Case("backlog", "list", lambda r: [*b, "task", "list", "--limit", LIMIT, "--plain"],
             repo, env),
        Case("backlog", "search", lambda r: [*b, "search", SEARCH_TERM, "--limit", LIMIT,
                                              "--plain"], repo, env),
        Case("backlog", "update", lambda r: [*b, "task", "edit", picks["update"], "--notes",
                                              f"bench run {r}", "--plain"], repo, env),
        Case("backlog", "claim", lambda r: [*b, "task", "edit", picks["claim"], "-s",
                                             "In Progress", "-a", "@bench", "--plain"],
             repo, env, pre=todo, note="task edit -s 'In Progress' -a @bench"),
    ]


# --------------------------------------------------------------------------- the rebase


def bench_rebase(board: Path, work: Path, env: dict[str, str], runs: int, commits: int
                 ) -> dict[str, Any]:
    """Clone a built board; upstream (main) and a feature branch each make ``commits`` commits
    through ``ledgit update``, every commit touching one of 3 shared tasks (upstream: priority
    and next action; feature: response and a label). Time ``git rebase main`` with the driver
    and hooks installed, ``runs`` times from the same start, and count conflicted files."""
    lg = ledgit_argv()
    repo = work / "rebase"
    work.mkdir(parents=True, exist_ok=True)
    sh(["git", "clone", "-q", "-b", "main", str(board), str(repo)], work, env)
    sh([*lg, "install"], repo, env)
    ids = sorted(p.stem for p in (repo / ".ledgit" / "tasks").glob("*.md"))
    shared = ids[:3]
    sh(["git", "branch", "feature"], repo, env)
    for i in range(commits):
        t = shared[i % 3]
        sh([*lg, "update", t, "--priority", str(i % 5), "--next-action",
            f"upstream step {i}"], repo, env)
        sh(["git", "commit", "-q", "--no-verify", "-am", f"main {i}"], repo, env)
    sh(["git", "checkout", "-q", "feature"], repo, env)
    for i in range(commits):
        t = shared[i % 3]
        sh([*lg, "update", t, "--response", f"feature step {i}", "--label", f"f{i}"], repo, env)
        sh(["git", "commit", "-q", "--no-verify", "-am", f"feature {i}"], repo, env)
    start = sh(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()
    times: list[float] = []
    conflicts: list[int] = []
    errors: list[str] = []
    gate: dict[str, Any] = {}
    for _r in range(runs):
        sh(["git", "checkout", "-q", "-B", "feature", start], repo, env)
        t0 = time.perf_counter()
        proc = subprocess.run(["git", "rebase", "main"], cwd=repo, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT, check=False)
        elapsed = time.perf_counter() - t0
        if proc.returncode == 0:
            times.append(elapsed)
            conflicts.append(0)
            if not gate:
                g0 = time.perf_counter()
                gp = sh([*lg, "verify", "--range", "main..feature"], repo, env, check=False)
                gate = {"exit": gp.returncode, "ms": round((time.perf_counter() - g0) * 1000, 1),
                        "last line": (gp.stdout + gp.stderr).strip().splitlines()[-1:]}
        else:
            unmerged = sh(["git", "diff", "--name-only", "--diff-filter=U"], repo, env,
                          check=False).stdout.split()
            conflicts.append(max(1, len(unmerged)))
            tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [""]
            errors.append(f"exit {proc.returncode}: {tail[0][:300]}")
            sh(["git", "rebase", "--abort"], repo, env, check=False)
    out: dict[str, Any] = {"commits": commits, "shared tasks": 3, "board tasks": len(ids),
                           "runs": len(times), "times_ms": [round(t * 1000) for t in times],
                           "conflicts": max(conflicts) if conflicts else None, "gate": gate}
    if times:
        out["median_ms"] = round(statistics.median(times) * 1000, 1)
    if errors:
        out["errors"] = errors
    return out


# --------------------------------------------------------------------------- report


def med(results: dict[str, Any], size: int, contender: str, op: str,
        key: str = "median_ms") -> float | None:
    cell = results.get(str(size), {}).get(contender, {}).get(op, {})
    value = cell.get(key)
    return float(value) if value is not None else None


def cpu_note(results: dict[str, Any], size: int, a: tuple[str, str], b: tuple[str, str]) -> str:
    """' (CPU 1.23x)': the same ratio on user+sys CPU time, which other load disturbs less."""
    x = med(results, size, *a, key="cpu_median_ms")
    y = med(results, size, *b, key="cpu_median_ms")
    return f" (CPU {x / y:.2f}x)" if x and y else ""


def budgets(results: dict[str, Any], sizes: list[int], rebase: dict[str, Any]
            ) -> list[dict[str, Any]]:
    """Every budget line of DESIGN §10 / issue 6 as {budget, figure, limit, status}."""
    big, small = max(sizes), min(sizes)
    mid = 1000 if 1000 in sizes else sorted(sizes)[len(sizes) // 2]
    lines: list[dict[str, Any]] = []

    def ratio_line(text: str, size: int, op: str, floor_c: str, floor_op: str,
                   limit: float, *, retired: bool = False) -> None:
        a, b = med(results, size, "ledgit", op), med(results, size, floor_c, floor_op)
        if a is None or b is None:
            lines.append({"budget": text, "figure": "no figure (command failed)",
                          "status": "MISS"})
            return
        r = a / b
        note = cpu_note(results, size, ("ledgit", op), (floor_c, floor_op))
        lines.append({"budget": text, "figure": f"{a:.1f} ms / {b:.1f} ms = {r:.2f}x{note}",
                      "ratio": round(r, 3), "limit": limit,
                      "status": RETIRED if retired else "PASS" if r <= limit else "MISS"})

    at = f"at {big:,} tasks"
    # Issue 15: no background process behind a read.
    for op in ("list", "search"):
        ratio_line(f"{op} (20) <= 1.5x the stat floor (the interpreter + a stat of every "
                   f"task file; {at})", big, op, "floor", "stat_floor", 1.5, retired=True)
    ratio_line(f"get <= 1.6x ledgit --version ({at})", big, "get", "ledgit", "version", 1.6,
               retired=True)
    for op in RECORDED_OPS:
        a = med(results, big, "ledgit", op)
        lines.append({"budget": f"{OP_LABELS[op]} at {big:,} tasks, absolute (issue 23: "
                                f"recorded)",
                      "figure": "no figure" if a is None else f"{a:.1f} ms",
                      "status": "recorded"})
    for op in ("update", "claim"):
        ratio_line(f"{op} <= 2.2x ledgit --version ({at})", big, op, "ledgit", "version", 2.2,
                   retired=True)
        a, b = med(results, big, "ledgit", op), med(results, big, "ledgit", f"{op}_small")
        text = (f"{op} flat from {small:,} to {big:,} tasks (within 10%; both boards timed "
                f"in the same rounds)")
        if a is None or b is None or big == small:
            lines.append({"budget": text, "figure": "needs two sizes",
                          "status": "MISS" if a is None else "n/a"})
        else:
            r = a / b
            note = cpu_note(results, big, ("ledgit", op), ("ledgit", f"{op}_small"))
            lines.append({"budget": text, "figure": f"{a:.1f} ms / {b:.1f} ms = {r:.2f}x{note}",
                          "ratio": round(r, 3), "limit": 1.1,
                          "status": "PASS" if r <= 1.1 else "MISS"})
    ratio_line(f"cold cache rebuild <= 1.5x read+YAML-parse floor ({at})", big, "rebuild",
               "floor", "parse_floor", 1.5)
    ratio_line(f"verify --all <= 2x read+sha256+JSON floor ({at})", big, "verify", "floor",
               "hash_floor", 2.0)
    ratio_line(f"pre-commit hook, 5 staged tasks <= 1.6x the floor of asking Git ({at})", big,
               "precommit", "floor", "git_floor", 1.6)
    ratio_line(f"one merge-driver invocation (task triple) <= 3x python3 -c pass ({at})", big,
               "driver", "floor", "python", 3.0)
    # Issue 32: the plain-Git loop's budget at 200 tasks is per process.
    at_small = f"at {small:,} tasks; issue 32"
    ratio_line(f"pre-commit hook, 5 staged tasks <= 1.6x the floor of asking Git ({at_small})",
               small, "precommit", "floor", "git_floor", 1.6)
    ratio_line(f"one merge-driver invocation (task triple) <= 3x python3 -c pass ({at_small})",
               small, "driver", "floor", "python", 3.0)
    ratio_line(f"post-merge index refresh after a pull of 2 tasks <= 1.5x python3 -c pass "
               f"({at_small})", small, "postmerge", "floor", "python", 1.5)
    c = rebase.get("conflicts")
    lines.append({"budget": f"{rebase.get('commits', 50)}-commit rebase touching shared tasks: "
                            f"0 conflicts",
                  "figure": (f"{c} conflicts, {rebase.get('median_ms', 0) / 1000:.2f} s"
                             if c is not None else "not run"),
                  "status": "PASS" if c == 0 else "MISS"})
    for op in PEER_OPS:
        a = med(results, mid, "ledgit", op)
        peers = {p: med(results, mid, p, op) for p in ("yylo", "backlog")}
        known = {p: v for p, v in peers.items() if v is not None}
        text = f"{OP_LABELS[op]} >= 3x faster than the faster peer (at {mid:,} tasks)"
        if a is None or not known:
            lines.append({"budget": text, "figure": "no ledgit or peer figure",
                          "status": "MISS" if a is None else "n/a"})
            continue
        best = min(known, key=lambda p: known[p])
        r = known[best] / a
        note = cpu_note(results, mid, (best, op), ("ledgit", op))
        lines.append({"budget": text, "figure": f"{best} {known[best]:.1f} ms / ledgit "
                                                f"{a:.1f} ms = {r:.2f}x{note}",
                      "ratio": round(r, 3),
                      "limit": 3.0, "status": "PASS" if r >= 3.0 else "MISS"})
    for size in sizes:  # --base: every figure within 10% of the commit before (issue 14)
        for op in BASE_OPS:
            a, b = med(results, size, "ledgit", op), med(results, size, "base", op)
            if b is None:
                continue
            text = f"{OP_LABELS[op]} within 10% of the base commit ({size:,} tasks)"
            if a is None:
                lines.append({"budget": text, "figure": "no ledgit figure", "status": "MISS"})
                continue
            note = cpu_note(results, size, ("ledgit", op), ("base", op))
            held = "PASS" if a / b <= 1.1 else "MISS"
            lines.append({"budget": text, "figure": f"{a:.1f} / {b:.1f} ms = {a / b:.2f}x{note}",
                          "ratio": round(a / b, 3), "limit": 1.1,
                          "status": held if op in HELD_BASE_OPS else RETIRED})
    a, b = med(results, mid, "ledgit", "driver"), med(results, mid, "git", "merge")
    if a is not None and b is not None:
        lines.append({"budget": f"one merge: driver vs plain git merge-file (at {mid:,} tasks; "
                                f"informational -- no peer has a merge driver)",
                      "figure": f"git merge-file {b:.1f} ms / ledgit {a:.1f} ms = {b / a:.2f}x",
                      "ratio": round(b / a, 3), "status": "info"})
    return lines


def fmt(v: float | None) -> str:
    return "—" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:,.0f}")


def write_markdown(path: Path, data: dict[str, Any]) -> None:
    res, sizes = data["results"], data["sizes"]
    peers = [p for p in ("yylo", "backlog") if not data["peers"][p].get("skipped")]
    out = ["# ledgit benchmark — latest run", "",
           f"{data['started']} · {data['machine']['platform']} · {data['machine']['cpus']} CPUs · "
           f"Python {data['machine']['python']} · git {data['machine']['git']} · "
           f"mode `{data['mode']}`, median of {data['runs']} runs per figure "
           f"(one warm-up round first), contenders alternating in every round.", "",
           f"ledgit measured: `{data['ledgit'].get('package')}` at commit "
           f"`{data['ledgit'].get('commit')}`"
           + (" (a `git archive` snapshot of that commit)" if data["ledgit"].get("snapshot")
              else "")
           + (" (src has uncommitted changes)" if data["ledgit"].get("src_dirty") else "")
           + "."
           + (f" Side by side with the base commit `{data['ledgit']['base']}` (a `git archive` "
              f"snapshot on PYTHONPATH, on a copy of each ledgit board, its read daemon off: "
              f"`LEDGIT_WATCH=0`)." if data["ledgit"].get("base") else ""), ""]
    out += ["Peers: " + "; ".join(
        f"**{p}** " + (f"`{v['version']}`" if not v.get("skipped") else f"SKIPPED — {v['skipped']}")
        for p, v in data["peers"].items()) + f". Peer sizes: {data['peer_sizes']}.", ""]
    out += ["Commands (each a fresh process, wall clock, stdin /dev/null, output discarded):",
            "", "```"] + data["commands"] + ["```", ""]
    out += ["## Budgets (DESIGN §10, issue 6)", "", "| budget | figure | status |", "|---|---|---|"]
    out += [f"| {b['budget']} | {b['figure']} | **{b['status']}** |" for b in data["budgets"]]
    out += [""]
    for size in sizes:
        cell = res.get(str(size), {})
        ver = med(res, size, "ledgit", "version")
        py = med(res, size, "floor", "python")
        out += [f"## {size:,} tasks", ""]
        head = "| command | ledgit ms | CPU ms | × ledgit --version | × python3 -c pass |"
        sep = "|---|---:|---:|---:|---:|"
        with_base = "base" in cell
        if with_base:
            head += " base ms | ledgit ÷ base |"
            sep += "---:|---:|"
        for p in peers:
            head += f" {p} ms | {p} ÷ ledgit |"
            sep += "---:|---:|"
        out += [head, sep]
        for op in ("create", "get", "list", "search", "update", "claim", "update_small",
                   "claim_small", "verify", "rebuild", "refresh", "precommit", "postmerge",
                   "driver", "driver_history", "version"):
            a = med(res, size, "ledgit", op)
            if a is None and op.endswith("_small"):
                continue
            row = f"| {OP_LABELS[op]} | {fmt(a)} | " \
                  f"{fmt(med(res, size, 'ledgit', op, key='cpu_median_ms'))} | " \
                  f"{'—' if a is None or not ver else f'{a / ver:.2f}'} | " \
                  f"{'—' if a is None or not py else f'{a / py:.2f}'} |"
            if with_base:
                v = med(res, size, "base", op)
                row += f" {fmt(v)} | {'—' if v is None or a is None else f'{a / v:.2f}x'} |"
            for p in peers:
                v = med(res, size, p, op)
                row += f" {fmt(v)} | {'—' if v is None or a is None else f'{v / a:.1f}x'} |"
            out.append(row)
        out += ["", "| floor / reference | ms | ledgit figure ÷ floor |", "|---|---:|---|"]
        refs = (("floor", "python", "driver"), ("ledgit", "version", None),
                ("floor", "parse_floor", "rebuild"), ("floor", "hash_floor", "verify"),
                ("git", "merge", "driver"))
        for c, op, vs in refs:
            v = med(res, size, c, op)
            a = med(res, size, "ledgit", vs) if vs else None
            label = OP_LABELS[op] if c != "git" else "git merge-file (same task triple)"
            ratio = f"{OP_LABELS[vs]}: {a / v:.2f}x" if vs and a is not None and v else ""
            out.append(f"| {label} | {fmt(v)} | {ratio} |")
        failures = [f"- {c}/{op}: {'; '.join(v['errors'][:2])}"
                    for c, ops in cell.items() for op, v in ops.items() if v.get("errors")]
        if failures:
            out += ["", "Failures:", *failures]
        out.append("")
    reb = data.get("rebase", {})
    if reb:
        out += ["## Rebase", "",
                f"{reb.get('commits')} upstream + {reb.get('commits')} feature commits, each "
                f"touching one of {reb.get('shared tasks')} shared tasks, on a "
                f"{reb.get('board tasks', 0):,}-task board; `git rebase main` with the driver and "
                f"hooks installed: median {fmt(reb.get('median_ms'))} ms over {reb.get('runs')} "
                f"runs, **{reb.get('conflicts')} conflicts**; CI gate "
                f"`ledgit verify --range main..feature`: {reb.get('gate')}.", ""]
        if reb.get("errors"):
            out += ["Rebase failures: " + "; ".join(reb["errors"]), ""]
    out += ["## Notes", ""] + [f"- {n}" for n in data["notes"]] + [""]
    path.write_text("\n".join(out), encoding="utf-8")


def write_plot(path: Path, data: dict[str, Any]) -> str | None:
    """Log-log time per command against board size, one panel per command."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"no plot: {exc} (pip install matplotlib)"
    res, sizes = data["results"], data["sizes"]
    panels = [("create", ("ledgit", "yylo", "backlog")), ("get", ("ledgit", "yylo", "backlog")),
              ("list", ("ledgit", "yylo", "backlog")), ("search", ("ledgit", "yylo", "backlog")),
              ("update", ("ledgit", "yylo", "backlog")), ("claim", ("ledgit", "yylo", "backlog")),
              ("verify", ("ledgit",)), ("rebuild", ("ledgit",)),
              ("precommit", ("ledgit",)), ("driver", ("ledgit",))]
    floors = {"verify": ("floor", "hash_floor"), "rebuild": ("floor", "parse_floor"),
              "driver": ("floor", "python")}
    colours = {"ledgit": "tab:blue", "yylo": "tab:orange", "backlog": "tab:green",
               "floor": "grey", "version": "tab:purple"}
    fig, axes = plt.subplots(2, 5, figsize=(20, 8), sharex=True)
    for ax, (op, contenders) in zip(axes.flat, panels, strict=False):
        for c in contenders:
            pts = [(s, med(res, s, c, op)) for s in sizes]
            pts = [(s, v) for s, v in pts if v is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colours[c],
                        label=c)
        ver = [(s, med(res, s, "ledgit", "version")) for s in sizes]
        ver = [(s, v) for s, v in ver if v is not None]
        if ver:
            ax.plot([p[0] for p in ver], [p[1] for p in ver], ":", color=colours["version"],
                    label="ledgit --version")
        if op in floors:
            fl = [(s, med(res, s, *floors[op])) for s in sizes]
            fl = [(s, v) for s, v in fl if v is not None]
            if fl:
                ax.plot([p[0] for p in fl], [p[1] for p in fl], "--", color=colours["floor"],
                        label=OP_LABELS[floors[op][1]].split(" (")[0])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(OP_LABELS[op], fontsize=9)
        ax.set_xlabel("tasks on the board")
        ax.set_ylabel("ms (median)")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"ledgit vs peers — {data['started']} ({data['mode']}, median of "
                 f"{data['runs']} runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------- main


def machine() -> dict[str, Any]:
    git_v = subprocess.run(["git", "--version"], capture_output=True, text=True,
                           check=False).stdout.split()[-1:]
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "executable": PY,
            "git": git_v[0] if git_v else "?"}


def snapshot_source(tmp: Path, rev: str = "HEAD") -> tuple[Path, str]:
    """``git archive REV src`` of the checkout holding bench/ into ``tmp``: the measured code
    cannot change under a long run while others commit. Returns (src dir, short commit)."""
    repo = BENCH.parent
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", f"{rev}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    dest = tmp / f"ledgit-{commit}"
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "src"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    # Bytecode, as `pip install` leaves it (nothing may depend on a first-run compile).
    subprocess.run([PY, "-m", "compileall", "-q", str(dest / "src")], check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    return dest / "src", commit


def ledgit_source(env: dict[str, str] | None = None, snapshot: str | None = None
                  ) -> dict[str, Any]:
    """Which ledgit was measured: its package dir, and the Git commit + dirty state of it."""
    probe = subprocess.run([PY, "-c", "import ledgit, os; print(os.path.dirname(ledgit.__file__))"],
                           capture_output=True, text=True, check=False, env=env)
    pkg = probe.stdout.strip()
    out: dict[str, Any] = {"package": pkg}
    if snapshot:
        out.update(commit=snapshot, src_dirty=False, snapshot=True)
    elif pkg:
        head = subprocess.run(["git", "-C", pkg, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", pkg, "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, check=False).stdout.strip()
        out.update(commit=head or "not a git checkout", src_dirty=bool(dirty))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a few minutes (the default): 3 rounds")
    mode.add_argument("--full", action="store_true", help="~20 minutes")
    ap.add_argument("--sizes", type=int, nargs="+", help="board sizes (default 100 1000 10000)")
    ap.add_argument("--peer-sizes", type=int, nargs="+",
                    help="sizes at which peers are measured (quick: 100 1000; full: all)")
    ap.add_argument("--runs", type=int, help="rounds per board (quick 3, full 7)")
    ap.add_argument("--rebase-runs", type=int, help="rebases timed (quick 1, full 5)")
    ap.add_argument("--rebase-size", type=int, default=1000, help="board for the rebase")
    ap.add_argument("--commits", type=int, default=50, help="commits per side of the rebase")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-install", action="store_true", help="never install a missing peer")
    ap.add_argument("--peers-dir", type=Path,
                    help="where the peers are looked for and installed when missing "
                         "(default: in this run's temp dir, removed with it)")
    ap.add_argument("--yylo-venv", type=Path, help="yylo's venv (default: PEERS_DIR/yylo-venv)")
    ap.add_argument("--backlog-dir", type=Path,
                    help="Backlog.md's npm dir (default: PEERS_DIR/backlog)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--base", metavar="REV",
                    help="also measure ledgit at commit REV (a `git archive` snapshot) on a copy "
                         "of every ledgit board, side by side in the same rounds, and check "
                         "each figure within 10%% of it (issue 14)")
    ap.add_argument("--only", type=lambda text: [w for w in text.split(",") if w],
                    metavar="OP,OP,...",
                    help="time only these cases (op names as in latest.json, e.g. "
                         "precommit,git_floor,version); peers are built only when one of "
                         "their ops is named, the rebase only when `rebase` is")
    ap.add_argument("--snapshot", action="store_true",
                    help="measure `git archive HEAD src` of this checkout (via PYTHONPATH), "
                         "not the live, possibly changing, working tree")
    args = ap.parse_args(argv)
    only: set[str] | None = set(args.only) if args.only else None
    if only is not None:
        unknown = sorted(only - {*OP_LABELS, "rebase"})
        if unknown:
            ap.error(f"--only: unknown case(s) {', '.join(unknown)} "
                     f"(known: {', '.join(sorted({*OP_LABELS, 'rebase'}))})")
        if not only & {*PEER_OPS}:
            args.no_peers = True
    full = bool(args.full)
    sizes = sorted(args.sizes or [100, 1000, 10000])
    peer_sizes = sorted(args.peer_sizes or (sizes if full else [s for s in sizes if s <= 1000]))
    runs = args.runs or (7 if full else 3)
    rebase_runs = args.rebase_runs or (5 if full else 1)
    t_start = time.perf_counter()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    shapes = load_shapes(args.data)
    print(f"{len(shapes)} task shapes from {args.data}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-bench-"))
    peers_dir = args.peers_dir or tmp / "peers"
    peers: dict[str, Peer] = {}
    if args.no_peers:
        peers = {p: Peer(p, [], skipped="--no-peers") for p in ("yylo", "backlog")}
    else:
        peers = {"yylo": find_yylo(args.yylo_venv or peers_dir / "yylo-venv",
                                   not args.no_install),
                 "backlog": find_backlog(args.backlog_dir or peers_dir / "backlog",
                                         not args.no_install)}
    for p in peers.values():
        print(f"peer {p.name}: " + (f"SKIPPED: {p.skipped}" if p.skipped else p.version),
              flush=True)

    home = tmp / "home"
    home.mkdir()
    # No automatic gc: a detached `git gc --auto` after a board's big commit would pack
    # objects while --base copies the board (and compete with the timed rounds).
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n")
    snapshot: str | None = None
    if args.snapshot:
        src, snapshot = snapshot_source(tmp)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
        sys.path.insert(0, str(src))
        print(f"measuring a snapshot of ledgit at {snapshot}: {src}", flush=True)
    env = git_env(home)
    source = ledgit_source(env, snapshot)
    base_env: dict[str, str] | None = None
    if args.base:
        base_src, base_commit = snapshot_source(tmp / "base", args.base)
        # The base's own code on PYTHONPATH (the hooks and the driver inherit it). Its
        # auto-spawned read daemon (boards >= 1,000 tasks, deleted by issue 15) is off, so
        # both sides read in-process and no process outlives the run.
        base_env = dict(env, PYTHONPATH=str(base_src), LEDGIT_WATCH="0")
        source["base"] = base_commit
        print(f"base: ledgit at {base_commit} ({base_src}), side by side", flush=True)
    results: dict[str, Any] = {}
    builds: dict[str, Any] = {}
    commands: list[str] = []
    notes: list[str] = []
    rebase: dict[str, Any] = {}
    loads: dict[str, list[float]] = {}
    small_cases: list[Case] = []
    try:
        for size in sizes:
            print(f"== {size:,} tasks", flush=True)
            board = board_shapes(shapes, size)
            cases: list[Case] = []
            bt: dict[str, Any] = {}
            t0 = time.perf_counter()
            lrepo = tmp / f"ledgit-{size}"
            try:
                picks = build_ledgit(lrepo, board, env)
                bt["ledgit"] = round(time.perf_counter() - t0, 1)
                if base_env is not None:
                    cases += base_cases(lrepo, tmp / f"base-{size}", base_env, picks,
                                        tmp / f"driver-base-{size}")
                cases += ledgit_cases(lrepo, env, picks, tmp / f"driver-{size}")
                cases += floor_cases(lrepo, env, tmp)
            except Exception as exc:  # noqa: BLE001 - reported, never a crash
                print(f"  ledgit board failed: {exc}", flush=True)
                bt["ledgit"] = f"FAILED: {exc}"
            for name, peer in peers.items():
                if peer.skipped or size not in peer_sizes:
                    continue
                t0 = time.perf_counter()
                try:
                    prepo = tmp / f"{name}-{size}"
                    if name == "yylo":
                        cases += yylo_cases(peer, prepo, env, build_yylo(peer, prepo, board, env))
                    else:
                        cases += backlog_cases(peer, prepo, env,
                                               build_backlog(peer, prepo, board, env))
                    bt[name] = round(time.perf_counter() - t0, 1)
                except Exception as exc:  # noqa: BLE001 - reported, never a crash
                    print(f"  {name} board failed: {exc}", flush=True)
                    bt[name] = f"FAILED: {exc}"
            print(f"  built: {bt}", flush=True)
            if size == sizes[0]:
                small_cases = [c for c in cases if c.contender == "ledgit"
                               and c.op in ("update", "claim")]
            elif size == sizes[-1]:
                # The flatness budget compares sizes in the same rounds, so that load on the
                # machine at different times cannot fake or hide a slope.
                cases += [Case("ledgit", f"{c.op}_small", c.argv, c.cwd, c.env, pre=c.pre)
                          for c in small_cases]
            builds[str(size)] = bt
            if only is not None:
                cases = [c for c in cases if c.op in only]
            # Interleave so that each contender's version of an op runs back to back.
            order = {op: i for i, op in enumerate(
                ("version", "python", "create", "get", "list", "search", "update",
                 "update_small", "claim", "claim_small", "verify", "hash_floor", "rebuild",
                 "parse_floor", "refresh", "precommit", "postmerge", "driver", "merge",
                 "driver_history"))}
            cases.sort(key=lambda c: order.get(c.op, 99))
            loads[str(size)] = run_rounds(cases, runs, f"{size:,}")
            cell: dict[str, Any] = {}
            for c in cases:
                cell.setdefault(c.contender, {})[c.op] = c.result()
            results[str(size)] = cell
            if size == max(sizes):
                commands = sorted({f"{c.contender:8} {c.op:15} " +
                                   " ".join(_show(w, tmp) for w in c.argv(0)) for c in cases})
            if (isinstance(bt.get("ledgit"), float) and (only is None or "rebase" in only) and
                    (size == args.rebase_size or (args.rebase_size not in sizes
                                                  and size == sizes[0]))):
                print("  rebase ...", flush=True)
                try:
                    rebase = bench_rebase(lrepo, tmp / f"rebase-{size}", env, rebase_runs,
                                          args.commits)
                except Exception as exc:  # noqa: BLE001 - reported, never a crash
                    rebase = {"errors": [f"{type(exc).__name__}: {exc}"], "conflicts": None}
                print(f"  rebase: {rebase.get('median_ms')} ms, conflicts "
                      f"{rebase.get('conflicts')} {rebase.get('errors', '')}", flush=True)
            for c in cases:
                if c.errors:
                    print(f"  FAILED {c.contender}/{c.op}: {c.errors[0]}", flush=True)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    notes += [
        f"Task shapes: the {len(shapes):,} live (non-tombstone) issues of "
        f"{args.data.name} in file order, cycled past that; title, description "
        f"and notes (body), labels + issue_type (labels), priority, status (closed -> done "
        f"with close_reason as the response, hooked/in_progress -> in progress), assignee, "
        f"created/updated. Every contender gets the same shapes.",
        "ledgit boards: `ledgit init` + `ledgit install` through the CLI, then task files and "
        "histories written with ledgit.core.record/ledgit.core.history "
        "(create; + claim; + complete for "
        "done tasks), committed, index warmed by one `ledgit list`.",
        "YYLO boards: config by one CLI call, then task files + genesis ledger events written "
        "with yylo-ledger's own library (bench/yylo_board.py), committed (cache/ and locks/ "
        "ignored, as yylo's own benchmark does), query cache warmed by one `list`. Its CLI "
        "creates take ~0.3 s each and grow with the board.",
        "Backlog.md boards: `backlog init --defaults` through its CLI, then task files written "
        "directly in its format (backlog/tasks/task-N - Title.md), committed.",
        f"search term {SEARCH_TERM!r}; list and search are limited to {LIMIT} results for every "
        "contender. `claim` on the peers is their status edit to in-progress (+ assignee on "
        "Backlog.md); its untimed preparation puts the task back to open/todo/To Do.",
        "Untimed preparations: claim <- release; cold rebuild <- delete index.sqlite3; index "
        "refresh <- `git -c core.hooksPath=/dev/null checkout` between two commits that differ "
        "in 10 tasks (so no post-checkout hook warms the index first); driver / merge-file <- "
        "rewrite %A.",
        f"`python3 -c pass` is {PY} (the interpreter `ledgit install` writes into the hooks "
        "and the driver); the `python3` on PATH may be a slower shim.",
        f"Board build seconds: {builds}.",
        f"1-minute load average after each round (the machine has {os.cpu_count()} CPUs; "
        f"other work on it inflates every figure alike): {loads}.",
        f"Total harness time: {time.perf_counter() - t_start:.0f} s.",
    ]
    data: dict[str, Any] = {
        "started": started, "mode": "full" if full else "quick", "runs": runs,
        "sizes": sizes, "peer_sizes": peer_sizes, "machine": machine(),
        "ledgit": source,
        "peers": {p: {"version": v.version, "skipped": v.skipped} for p, v in peers.items()},
        "results": results, "rebase": rebase, "builds": builds, "loads": loads,
        "commands": commands,
        "notes": notes,
    }
    data["budgets"] = budgets(results, sizes, rebase)
    if only is not None:  # the lines this run has figures for
        data["budgets"] = [b for b in data["budgets"] if "ratio" in b]
        data["only"] = sorted(only)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    problem = write_plot(args.out / "latest.png", data)
    if problem:
        notes.append(problem)
    write_markdown(args.out / "latest.md", data)
    print()
    for b in data["budgets"]:
        print(f"{b['status']:5} {b['budget']}: {b['figure']}")
    print(f"\nwrote {args.out / 'latest.md'}, latest.json, latest.png "
          f"({time.perf_counter() - t_start:.0f} s)")
    return 0


def _show(word: str, tmp: Path) -> str:
    """A command word for the report: temp paths shortened, spaces quoted."""
    word = word.replace(str(tmp), "$TMP")
    return json.dumps(word) if (" " in word or "\n" in word) else word


if __name__ == "__main__":
    raise SystemExit(main())
