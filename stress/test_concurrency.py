"""Deliverable 1: many processes writing the same five tasks of one worktree at once.

N workers (threads here, each running the real ``ledgit`` console script M times in a row)
mix ``update --response``, ``item add``, ``claim``/``release``/``heartbeat``, reads
(``list``/``get``, which refresh the shared SQLite index, and ``cache rebuild``) and
deliberately stale writes, with and without ``--expect``. Every acknowledged write (exit 0:
the JSON it printed gives the new revision) must be an event of the task's history, by that
actor, applied on top of the revision it expected; every stale writer gets exit 3; no lock
or SQLite error reaches stderr; ``ledgit verify --all`` passes and the index agrees with the
files.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stresskit import LOCK_MARKERS, Figures, Result, Scale, histories, ledgit, leftovers

from ledgit.core.record import parse_record

TASKS = 5


@dataclass
class Ack:
    """One acknowledged write: who, what, on which task, expecting what, answered what."""

    worker: int
    op: str
    task: str
    actor: str
    expect: str | None
    revision: str
    written: bool
    text: str | None


@dataclass
class Refusal:
    worker: int
    op: str
    task: str
    code: int
    err: str
    stale_on_purpose: bool


def _worker(n: int, m: int, root: Path, env: dict[str, str], tasks: list[str],
            genesis: dict[str, str], scale: Scale, acks: list[Ack], refusals: list[Refusal],
            failures: list[str], lock: threading.Lock) -> None:
    rng = scale.rng(f"worker-{n}")
    actor = f"agent-{n:02d}"
    wenv = dict(env, LEDGIT_ACTOR=actor)
    holding: set[str] = set()
    for i in range(m):
        task = rng.choice(tasks)
        roll = rng.random()
        use_expect = rng.random() < 0.5
        stale = False
        text: str | None = None
        expect: str | None = None
        try:
            if roll < 0.10:
                pick = rng.random()
                res = ledgit(["list", "--json"] if pick < 0.45 else ["get", task, "--json"]
                             if pick < 0.9 else ["cache", "rebuild"], root, wenv)
                _check_stderr(res, failures, lock)
                continue
            if roll < 0.18:
                op, args, stale = "update", ["update", task, "--response", "stale"], True
                expect = genesis[task] if rng.random() < 0.5 else genesis[task][:12]
            elif roll < 0.45:
                text = f"response {actor} #{i}"
                op, args = "update", ["update", task, "--response", text]
            elif roll < 0.65:
                text = f"fact {actor} #{i}"
                op, args = "item", ["item", "add", task, "--kind", "fact", "--text", text]
            elif roll < 0.80:
                if task in holding and rng.random() < 0.7:
                    op, args = "release", ["release", task]
                else:
                    op, args = "claim", ["claim", task, "--note", f"{actor} #{i}"]
            else:
                op, args = "heartbeat", ["heartbeat", task]
            if use_expect and not stale:
                got = ledgit(["get", task, "--json"], root, wenv)
                _check_stderr(got, failures, lock)
                expect = got.json()["revision"]
                if rng.random() < 0.3:
                    expect = expect[:12 + rng.randrange(20)]
            if expect is not None:
                args += ["--expect", expect]
            res = ledgit([*args, "--json"], root, wenv, ok=None)
        except AssertionError as exc:
            with lock:
                failures.append(str(exc))
            continue
        _check_stderr(res, failures, lock)
        if res.code == 0:
            data = res.json()
            written = bool(data.get("written", True))
            ack = Ack(n, op, task, actor, expect, data["revision"], written, text)
            if op == "claim":
                holding.add(task)
            elif op == "release":
                holding.discard(task)
            with lock:
                acks.append(ack)
                if stale:
                    failures.append(f"a stale --expect {expect} was accepted: {res.describe()}")
            continue
        with lock:
            refusals.append(Refusal(n, op, task, res.code, res.err, stale))
        allowed = {3} if expect is not None else set()
        if op in ("claim", "release", "heartbeat"):
            allowed.add(6)  # held by another worker, or lost to a takeover
        if res.code not in allowed:
            with lock:
                failures.append(f"worker {n}: unexpected exit {res.code}\n{res.describe()}")
        if res.code == 3 and "stale revision" not in res.err:
            with lock:
                failures.append(f"exit 3 without a clear message\n{res.describe()}")
        if op in ("release", "heartbeat") and res.code == 6:
            holding.discard(task)


def _check_stderr(res: Result, failures: list[str], lock: threading.Lock) -> None:
    low = res.err.lower()
    bad = [m for m in LOCK_MARKERS if m.lower() in low]
    if bad or res.code == 5:
        with lock:
            failures.append(f"lock trouble reached the user ({bad})\n{res.describe()}")


def test_concurrent_writers_lose_nothing(scale: Scale, repo: Path, env: dict[str, str],
                                         figures: Figures) -> None:
    n = scale.pick(6, 16)
    m = scale.pick(15, 100)
    tasks: list[str] = []
    genesis: dict[str, str] = {}
    for t in range(TASKS):
        res = ledgit(["create", f"shared task {t}", "--body", f"## Goal\n\nTask {t}.\n",
                      "--json"], repo, env)
        tid = res.json()["id"]
        tasks.append(tid)
        genesis[tid] = res.json()["revision"]
        ledgit(["update", tid, "--next-action", "start"], repo, env)  # genesis is now stale
    ledgit(["list"], repo, env)  # build the index, so readers and writers share it

    acks: list[Ack] = []
    refusals: list[Refusal] = []
    failures: list[str] = []
    lock = threading.Lock()
    started = time.perf_counter()
    threads = [threading.Thread(target=_worker, args=(w, m, repo, env, tasks, genesis, scale,
                                                      acks, refusals, failures, lock))
               for w in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - started
    assert not failures, f"{len(failures)} failure(s); first:\n" + "\n\n".join(failures[:3])

    hist = histories(repo)
    by_after: dict[tuple[str, str], dict[str, Any]] = {}
    worker_events = 0
    for tid, events in hist.items():
        for e in events:
            by_after[(tid, e["after"])] = e
            if str(e["actor"]).startswith("agent-"):
                worker_events += 1
    missing = []
    for ack in acks:
        event = by_after.get((ack.task, ack.revision))
        if event is None:
            missing.append(f"{ack}: no event has after={ack.revision[:12]}")
            continue
        if not ack.written:
            continue
        if event["actor"] != ack.actor:
            missing.append(f"{ack}: event by {event['actor']}")
        if ack.op != "item" and event["op"] != ack.op:
            missing.append(f"{ack}: event op {event['op']}")
        if ack.expect is not None and not str(event["before"]).startswith(ack.expect):
            missing.append(f"{ack}: written over {event['before'][:12]}, not the expected "
                           f"{ack.expect[:12]}")
        if ack.text is not None and ack.text not in repr(event["patch"]):
            missing.append(f"{ack}: its text is not in the event's patch")
    assert not missing, f"{len(missing)} acknowledged write(s) missing:\n" + "\n".join(
        missing[:10])
    written = sum(1 for a in acks if a.written)
    assert worker_events == written, (
        f"{worker_events} events by workers but {written} acknowledged writes")
    stale_refused = [r for r in refusals if r.stale_on_purpose]
    assert all(r.code == 3 for r in stale_refused)

    res = ledgit(["verify", "--all"], repo, env)
    assert res.code == 0
    assert leftovers(repo) == []
    # The index (refreshed by the readers all along) agrees with the files.
    rows = {r["id"]: r["revision"] for r in ledgit(["list", "--all", "--json"], repo,
                                                    env).json()["tasks"]}
    for tid in tasks:
        assert rows[tid] == _file_revision(repo, tid), f"the index is stale for {tid}"
    figures.update({
        "processes": n, "mutations_each": m, "acked": len(acks), "written": written,
        "stale_exit3": sum(1 for r in refusals if r.code == 3),
        "claim_exit6": sum(1 for r in refusals if r.code == 6),
        "events": sum(len(v) for v in hist.values()), "seconds": round(elapsed, 1),
    })


def _file_revision(root: Path, tid: str) -> str:
    return parse_record((root / ".ledgit" / "tasks" / f"{tid}.md").read_bytes()).revision
