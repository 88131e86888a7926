"""16 processes in 8 clones race to claim one task: exactly one wins, every loser exits 6
naming the winner (issue 24 acceptance). Over a file-path remote and over ``git daemon``.

Races: ``LEDGIT_RACES`` (default 10 on a file path, 3 over the daemon); the ``stress``
marker runs 200 of each (``pytest -m stress tests/test_lease_race.py``). With
``LEDGIT_RACE_REPORT=PATH`` the figures (wins, per-claim latency, load) are written there
as JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from leaseutil import clone, git_daemon, lease_record, ledgit_env, make_remote

pytest_plugins = ["gitutil"]

CLONES = 8
PER_CLONE = 2
# Each racer is one process for every race (ledgit imported once): for race N it waits for
# the start file go-N, claims task N in its clone, and prints one JSON line (exit code,
# stderr, seconds). The race is between claims, not between interpreter start-ups.
RACER = """
import contextlib, io, json, os, sys, time
from ledgit.__main__ import run
go, actor, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
for n, task in enumerate(tasks):
    while not os.path.exists(f"{go}-{n}"):
        time.sleep(0.002)
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run(["claim", task, "--by", actor])
    took = time.perf_counter() - start
    print(json.dumps([code, err.getvalue(), took]), flush=True)
"""


def races(clones: list[Path], tasks: list[str], go: Path
          ) -> list[list[tuple[str, int, str, float]]]:
    """One race on each of ``tasks`` in turn, ``PER_CLONE`` racers in each clone: per race,
    (actor, exit code, stderr, seconds) of each racer."""
    procs = []
    for c, root in enumerate(clones):
        for p in range(PER_CLONE):
            actor = f"agent-{c}-{p}"
            procs.append((actor, subprocess.Popen(
                [sys.executable, "-c", RACER, str(go), actor, *tasks], cwd=root,
                env=ledgit_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)))
    out = []
    try:
        for n in range(len(tasks)):
            Path(f"{go}-{n}").touch()
            results = []
            for actor, proc in procs:
                line = proc.stdout.readline() if proc.stdout else ""
                if not line:
                    raise AssertionError(f"racer {actor} died: "
                                         f"{proc.stderr.read() if proc.stderr else ''}")
                code, err, took = json.loads(line)
                results.append((actor, code, err.strip(), took))
            out.append(results)
    finally:
        for _, proc in procs:
            proc.kill()
            proc.communicate(timeout=60)
    return out


def run_races(base: Path, url: str | None, count: int) -> dict[str, object]:
    """``races`` races, each on its own task, in ``CLONES`` clones of a remote under
    ``base`` (``url``: the remote's URL, default its path). Asserts each race's outcome;
    returns the figures."""
    remote, _, tasks = make_remote(base, tasks=count)
    source = url + "remote.git" if url else remote
    clones = [clone(source, base / f"c{n}") for n in range(CLONES)]
    wins: list[float] = []
    losses: list[float] = []
    winners = []
    for task, results in zip(tasks, races(clones, tasks, base / "go"), strict=True):
        won = [r for r in results if r[1] == 0]
        assert len(won) == 1, results
        winner = won[0][0]
        for actor, code, err, seconds in results:
            if actor == winner:
                wins.append(seconds)
                continue
            assert code == 6, (actor, code, err)
            assert winner in err and len(err.splitlines()) == 1, (actor, err)
            losses.append(seconds)
        record = json.loads(lease_record(remote, task).splitlines()[-1])
        assert (record["state"], record["by"]) == ("held", winner)
        winners.append(winner)
    return {"transport": "git daemon" if url else "file path", "races": count,
            "racers": CLONES * PER_CLONE, "clones": CLONES,
            "exactly_one_winner": count, "distinct_winners": len(set(winners)),
            "win_p50_s": statistics.median(wins), "loss_p50_s": statistics.median(losses),
            "win_max_s": max(wins), "loss_max_s": max(losses),
            "load_average": os.getloadavg()}


def report(figures: dict[str, object]) -> None:
    path = os.environ.get("LEDGIT_RACE_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(figures) + "\n")


def test_sixteen_racers_one_winner_file_remote(tmp_path: Path) -> None:
    report(run_races(tmp_path, None, int(os.environ.get("LEDGIT_RACES", "10"))))


def test_sixteen_racers_one_winner_git_daemon(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    with git_daemon(served) as url:
        report(run_races(served, url, int(os.environ.get("LEDGIT_RACES", "3"))))


@pytest.mark.stress
@pytest.mark.parametrize("transport", ["file path", "git daemon"])
def test_two_hundred_races(tmp_path: Path, transport: str) -> None:
    count = int(os.environ.get("LEDGIT_RACES", "200"))
    if transport == "file path":
        report(run_races(tmp_path, None, count))
        return
    served = tmp_path / "served"
    served.mkdir()
    with git_daemon(served) as url:
        report(run_races(served, url, count))
