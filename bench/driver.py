"""Merge-driver budgets (issue 3), printed as ratios in one run.

1. One driver invocation on a typical task triple (and on its history triple), as Git runs it:
   ``<python> -m ledgit merge-driver %O %A %B %L %P`` in a fresh process. Budget: the task
   triple <= 3x ``python3 -c pass`` (median of N runs each).
2. A 50-commit rebase in a real repository where every commit touches shared tasks (different
   fields, different body paragraphs than upstream). Budget: 0 conflicts. Reports the time,
   the number of driver calls and the CI gate over the rebased range.

Usage: ``python bench/driver.py [--runs N] [--commits N] [--tasks N]``. Needs only git.
Git identity and config come from the command line / a throwaway HOME, never the user's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ledgit.core.history import event_line, heads, new_event, parse_events, replay
from ledgit.core.record import Record, make_record
from ledgit.core.render import render_record

BASE_TIME = "2026-08-29T10:00:00.000000Z"


def stamp(n: int) -> str:
    """A deterministic, strictly increasing RFC 3339 timestamp: BASE_TIME + n seconds."""
    minutes, seconds = divmod(n, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"2026-08-{29 + days:02d}T{10 + hours:02d}:{minutes:02d}:{seconds:02d}.000000Z"


BODY = """## Goal
Make the nightly export resumable after a crash.

## Notes
The exporter writes batches of 500 rows and keeps no cursor.
Resuming means re-reading the last batch and skipping what was written.

Upstream notes go here.

## Design
Keep the cursor next to the output; fsync it after every batch.
A torn batch is detected by its trailing checksum line.

Feature notes go here.

## Acceptance
- kill -9 during an export, restart, and the output equals a clean run
- no batch is written twice
"""


def genesis(task_id: str, n: int = 0) -> tuple[Record, str]:
    """A typical open task and its one-line history."""
    rec = make_record({
        "id": task_id, "title": f"Resumable nightly export ({task_id})", "status": "open",
        "priority": 2, "owner": "ops", "labels": ["export", "reliability"],
        "depends_on": [], "next_action": "write the cursor file",
        "items": [{"id": "i-1", "kind": "fact", "text": "batches are 500 rows", "trust": "locked",
                   "by": "ops", "at": stamp(n)}],
        "created": stamp(n), "last_modified": stamp(n),
    }, BODY)
    event = new_event(parents=[], at=stamp(n), actor="ops", op="create", before_state={},
                      after_state=rec.state())
    return rec, event_line(event)


def mutate(history: str, task_id: str, actor: str, at: str, op: str,
           change: dict[str, Any], body: tuple[str, str] | None = None) -> tuple[str, str]:
    """Apply ``change`` (field -> value, None removes) to the head state of ``history``.

    Returns (task file text, history text): the record at the new head and the history with
    one more event whose parents are all current heads (DESIGN §6).
    """
    events = parse_events(history, task_id)
    states = replay(events, task_id)
    hs = heads(events)
    before = states[hs[0]]
    fields = dict(before["fields"])
    for k, v in change.items():
        if v is None:
            fields.pop(k, None)
        else:
            fields[k] = v
    fields["last_modified"] = at
    text = before["body"]
    if body is not None:
        text = text.replace(body[0], body[1])
    rec = make_record(fields, text)
    event = new_event(parents=hs, at=at, actor=actor, op=op, before_state=before,
                      after_state=rec.state())
    return render_record(rec), history + event_line(event)


def isolated_env(home: Path) -> dict[str, str]:
    """Environment for git with no system/global config and a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@ledgit.invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@ledgit.invalid")
    return env


def driver_command() -> str:
    """The driver exactly as ``ledgit install`` configures it (absolute, any cwd)."""
    return f"{shlex.quote(sys.executable)} -m ledgit merge-driver %O %A %B %L %P"


# --------------------------------------------------------------------------- 1. one invocation


def _child_env() -> dict[str, str]:
    """The environment Git gives the driver, with bytecode caching on (a user's normal
    setting; PYTHONDONTWRITEBYTECODE would make every run recompile what changed)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child (user + system), exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, env=env).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


def bench_invocation(tmp: Path, runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of ``python3 -c pass`` and of one driver call per triple
    kind; the three are run interleaved, so that a busy neighbour slows all of them alike."""
    task_id = "T-benchtriple1"
    rec, hist = genesis(task_id)
    base_md, base_h = render_record(rec), hist
    ours_md, ours_h = mutate(base_h, task_id, "agent-a", stamp(60), "update",
                             {"priority": 1, "labels": ["export", "reliability", "p1"]},
                             ("Upstream notes go here.", "Upstream: cursor lives in .state/"))
    ours_md, ours_h = mutate(ours_h, task_id, "agent-a", stamp(61), "claim",
                             {"status": "in_progress",
                              "claim": {"by": "agent-a", "at": stamp(61),
                                        "heartbeat": stamp(61)}})
    theirs_md, theirs_h = mutate(base_h, task_id, "agent-b", stamp(70), "update",
                                 {"response": "cursor + checksum design written",
                                  "next_action": "review the design"},
                                 ("Feature notes go here.", "Feature: checksum is crc32c."))
    env = _child_env()
    cases: dict[str, tuple[list[str], Path | None, str]] = {
        "python3 -c pass": ([sys.executable, "-c", "pass"], None, "")}
    for kind, (b, o, t), path in (
            ("task", (base_md, ours_md, theirs_md), f".ledgit/tasks/{task_id}.md"),
            ("history", (base_h, ours_h, theirs_h), f".ledgit/history/{task_id}.jsonl")):
        files = {name: tmp / f"{kind}.{name}" for name in ("O", "A", "B")}
        files["O"].write_text(b)
        files["B"].write_text(t)
        argv = [sys.executable, "-m", "ledgit", "merge-driver", str(files["O"]),
                str(files["A"]), str(files["B"]), "7", path]
        cases[f"driver ({kind} triple)"] = (argv, files["A"], o)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for round_ in range(runs + 1):  # round 0 warms the bytecode cache and is not counted
        for name, (argv, target, text) in cases.items():
            if target is not None:
                target.write_text(text)
            wall, cpu, rc = _timed(argv, env)
            if rc != 0:
                raise SystemExit(f"{name} failed (exit {rc})")
            if round_:
                times[name].append((wall, cpu))
    return {name: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts))
            for name, ts in times.items()}


# --------------------------------------------------------------------------- 2. the rebase


def git(repo: Path, env: dict[str, str], *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=False)
    if check and proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def bench_rebase(tmp: Path, commits: int, ntasks: int) -> dict[str, Any]:
    """Upstream and a feature branch each make ``commits`` commits touching every shared task
    in turn; time ``git rebase main`` of the feature branch and count its conflicts."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = isolated_env(tmp)
    (tmp / "gitconfig").write_text("")
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "config", "merge.ledgit.name", "ledgit task merge")
    git(repo, env, "config", "merge.ledgit.driver", driver_command())
    (repo / ".gitattributes").write_text(".ledgit/tasks/*.md merge=ledgit\n"
                                         ".ledgit/history/*.jsonl merge=ledgit\n")
    tasks = [f"T-shared{i:04d}" for i in range(ntasks)]
    (repo / ".ledgit" / "tasks").mkdir(parents=True)
    (repo / ".ledgit" / "history").mkdir()
    (repo / ".ledgit" / "config.yaml").write_text("prefix: T\n")
    for t in tasks:
        rec, hist = genesis(t)
        (repo / f".ledgit/tasks/{t}.md").write_text(render_record(rec))
        (repo / f".ledgit/history/{t}.jsonl").write_text(hist)
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "board")
    git(repo, env, "branch", "feature")

    def step(side: str, i: int, clock: int) -> None:
        t = tasks[i % ntasks]
        md_path, h_path = repo / f".ledgit/tasks/{t}.md", repo / f".ledgit/history/{t}.jsonl"
        hist = h_path.read_text()
        if side == "main":
            change: dict[str, Any] = {"priority": i % 5, "next_action": f"upstream step {i}"}
            body = ("Upstream notes go here.", f"Upstream notes go here. ({i})")
        else:
            labels = ["export", "reliability", f"f{i}"]
            change = {"labels": labels, "response": f"feature step {i}"}
            body = ("Feature notes go here.", f"Feature notes go here. ({i})")
        md, hist = mutate(hist, t, f"agent-{side}", stamp(clock), "update", change, body)
        md_path.write_text(md)
        h_path.write_text(hist)
        git(repo, env, "commit", "-qam", f"{side} {i}")

    git(repo, env, "checkout", "-q", "main")
    for i in range(commits):
        step("main", i, 100 + 2 * i)
    git(repo, env, "checkout", "-q", "feature")
    for i in range(commits):
        step("feature", i, 101 + 2 * i)
    log = tmp / "merges.log"
    renv = dict(env, LEDGIT_MERGE_LOG=str(log))
    t0 = time.perf_counter()
    proc = subprocess.run(["git", "rebase", "main"], cwd=repo, env=renv, capture_output=True,
                          text=True, check=False)
    elapsed = time.perf_counter() - t0
    conflicts = 0
    if proc.returncode != 0:
        conflicts = len(git(repo, env, "diff", "--name-only", "--diff-filter=U").split())
        conflicts = max(conflicts, 1)
    calls = sum(1 for line in log.read_text().splitlines()) if log.exists() else 0
    result: dict[str, Any] = {"commits": commits, "tasks": ntasks, "seconds": elapsed,
                              "conflicts": conflicts, "driver log lines": calls,
                              "rebase exit": proc.returncode}
    if proc.returncode == 0:
        result.update(gate_range(repo, env, "main..feature"))
    return result


def gate_range(repo: Path, env: dict[str, str], spec: str) -> dict[str, Any]:
    """Run ``ledgit verify --range`` over the rebased commits (the CI gate)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ledgit", "verify", "--range", spec],
                          cwd=repo, env=env, capture_output=True, text=True, check=False)
    return {"gate exit": proc.returncode, "gate seconds": time.perf_counter() - t0,
            "gate output": (proc.stdout + proc.stderr).strip().splitlines()[-1:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-bench-"))
    try:
        inv = bench_invocation(tmp, args.runs)
        base_wall, base_cpu = inv["python3 -c pass"]
        print(f"python3 -c pass: {base_wall * 1000:.1f} ms wall, {base_cpu * 1000:.1f} ms CPU "
              f"(medians of {args.runs}, interleaved with the driver runs)")
        ok = True
        for name, (wall, cpu) in inv.items():
            if not name.startswith("driver"):
                continue
            ratio = wall / base_wall
            budget = " (budget <= 3.0x)" if "task" in name else ""
            if "task" in name and ratio > 3.0:
                ok = False
            print(f"{name}: {wall * 1000:.1f} ms wall = {ratio:.2f}x python3 -c pass{budget}; "
                  f"CPU {cpu * 1000:.1f} ms = {cpu / base_cpu:.2f}x")
        reb = bench_rebase(tmp / "rebase", args.commits, args.tasks) if args.commits else {}
        if reb:
            print(f"rebase of {reb['commits']} commits over {reb['commits']} upstream commits "
                  f"({reb['tasks']} shared tasks): {reb['seconds']:.2f} s, "
                  f"{reb['conflicts']} conflicts (budget 0), exit {reb['rebase exit']}, "
                  f"{reb['driver log lines']} merge notes")
            if "gate exit" in reb:
                print(f"gate over the rebased range: exit {reb['gate exit']} in "
                      f"{reb['gate seconds']:.2f} s {reb['gate output']}")
                ok = ok and reb["gate exit"] == 0
            ok = ok and reb["conflicts"] == 0
        print("budgets: " + ("met" if ok else "NOT met"))
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
