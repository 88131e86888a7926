"""The sync loop (issue 24 item 5): commit + ``git pull --rebase`` + push with ledgit installed,
against the same loop without ledgit, in one run.

For each board size (default 200 and 10,000 tasks, built as bench/run.py builds its boards:
the Beads snapshot's shapes, ledgit's own library, committed) and each number of changed
tasks ``k`` (default 2 and 10), two clones A and B of one bare remote work in rounds:

- untimed: A changes ``k`` tasks and B changes ``k`` tasks, ``overlap`` of them the same
  tasks as A's (each change a ``note`` and a ``response`` through ledgit's library, as an
  agent's writes; the plain loop gets the same writes);
- timed: A ``commit`` (``git add -A .ledgit`` + ``git commit``), A ``push``; B ``commit``,
  B ``pull --rebase`` (a real rebase of k changed files over k, the overlapping ones merged),
  B ``push``; A ``pull --rebase`` (a fast-forward).

"ledgit" = ``ledgit install`` in both clones: the pre-commit hook, the merge driver, the
post-checkout/post-merge/post-rewrite hooks. "plain" = the same files, ledgit not installed, a
line appended to each changed task file and history (the same files touched), and Git's
built-in ``union`` merge for them (set in ``.git/info/attributes``): the cheapest merge that
never stops, so the loop runs the same steps. The two loops alternate round by round (one
untimed warm-up round each), so they share the machine's noise. Reported: the median wall and
CPU time of each step and of the whole loop, ledgit / plain, and the load average.

``--trace`` also runs one extra round of each loop under ``GIT_TRACE2_EVENT`` and says where
the time of each step went: hooks, merge-driver processes, and Git itself::

    python bench/sync_bench.py                       # 200 and 10,000 tasks, k = 2 and 10
    python bench/sync_bench.py --sizes 200 --ks 10 --runs 3 --trace

Writes bench/results/sync-latest.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402 - bench/run.py: the board builder shared with the main bench

from ledgit.core.readout import now_timestamp  # noqa: E402
from ledgit.operations.notes import note  # noqa: E402
from ledgit.operations.transitions import update  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.writepath import mutate_task  # noqa: E402

STEPS = ("A commit", "A push", "B commit", "B pull --rebase", "B push", "A pull --rebase")
BUDGET = 2.0  # ledgit / plain, the whole loop (issue 24)
LOCK_TIMEOUT = 30.0  # seconds: nobody else writes these boards


def git(args: list[str], cwd: Path, env: dict[str, str], *, check: bool = True
        ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: exit {proc.returncode}: "
                           f"{proc.stderr.strip()[-500:]}")
    return proc


class Loop:
    """One contender: a bare remote and two clones A and B."""

    def __init__(self, name: str, tmp: Path, seed_repo: Path, env: dict[str, str]) -> None:
        self.name, self.env = name, env
        tmp.mkdir(parents=True, exist_ok=True)
        self.remote = tmp / f"{name}.git"
        git(["clone", "-q", "--bare", str(seed_repo), str(self.remote)], tmp, env)
        self.a, self.b = tmp / f"{name}-A", tmp / f"{name}-B"
        for path in (self.a, self.b):
            git(["clone", "-q", str(self.remote), str(path)], tmp, env)
            if name == "ledgit":
                subprocess.run([*bench.ledgit_argv(), "install"], cwd=path, env=env,
                               capture_output=True, check=True)
            else:
                attrs = path / ".git" / "info" / "attributes"
                attrs.write_text(".ledgit/tasks/*.md merge=union\n"
                                 ".ledgit/history/*.jsonl merge=union\n", encoding="utf-8")
        self.times: dict[str, list[float]] = {s: [] for s in STEPS}
        self.cpu: dict[str, list[float]] = {s: [] for s in STEPS}

    def change(self, path: Path, tasks: list[str], tag: str) -> None:
        """An agent's writes on ``tasks``: a note and a response each (untimed). The plain
        loop appends a line to each file instead (a union merge of two edited front
        matters would not parse: the loop must run the same steps, not check ledgit)."""
        if self.name == "plain":
            for tid in tasks:
                for sub, line in (("tasks", f"- {tag}: looked at it; {tag} was here\n"),
                                  ("history", json.dumps({"op": "note", "actor": tag}) + "\n")):
                    suffix = ".md" if sub == "tasks" else ".jsonl"
                    with open(path / ".ledgit" / sub / f"{tid}{suffix}", "a",
                              encoding="utf-8") as fh:
                        fh.write(line)
            return
        board = Board(path)
        for tid in tasks:
            mutate_task(board, tid, lambda r: note(r, text=f"{tag}: looked at it", by=tag,
                                                   now=now_timestamp()), tag,
                        lock_timeout=LOCK_TIMEOUT)
            mutate_task(board, tid, lambda r: update(r, response=f"{tag} was here"), tag,
                        lock_timeout=LOCK_TIMEOUT)

    def round(self, a_tasks: list[str], b_tasks: list[str], r: int, timed: bool,
              trace: Path | None = None) -> None:
        env = dict(self.env)
        if trace is not None:
            env["GIT_TRACE2_EVENT"] = str(trace)
        self.change(self.a, a_tasks, f"agent-a-{r}")
        self.change(self.b, b_tasks, f"agent-b-{r}")
        steps = (
            ("A commit", self.a, [["add", "-A", ".ledgit"], ["commit", "-q", "-m", f"a {r}"]]),
            ("A push", self.a, [["push", "-q", "origin", "HEAD:main"]]),
            ("B commit", self.b, [["add", "-A", ".ledgit"], ["commit", "-q", "-m", f"b {r}"]]),
            ("B pull --rebase", self.b, [["pull", "-q", "--rebase", "origin", "main"]]),
            ("B push", self.b, [["push", "-q", "origin", "HEAD:main"]]),
            ("A pull --rebase", self.a, [["pull", "-q", "--rebase", "origin", "main"]]),
        )
        for step, cwd, commands in steps:
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            for args in commands:
                git(args, cwd, env)
            if timed:
                self.times[step].append(time.perf_counter() - t0)
                ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                self.cpu[step].append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime
                                      - ru0.ru_stime)
        status = git(["status", "--porcelain", ".ledgit"], self.b, env).stdout
        if status.strip():
            raise RuntimeError(f"{self.name}: B is not clean after the loop: {status[:300]}")

    def medians(self, cpu: bool = False) -> dict[str, float]:
        """Median milliseconds of each step and of the whole loop: wall, or with ``cpu``
        user + system of every process the step ran (git, hooks, drivers)."""
        times = self.cpu if cpu else self.times
        out = {s: statistics.median(v) * 1000 for s, v in times.items() if v}
        runs = len(next(iter(times.values())))
        out["loop"] = statistics.median(
            sum(times[s][i] for s in STEPS) for i in range(runs)) * 1000
        return {k: round(v, 1) for k, v in out.items()}


def where_the_time_goes(trace: Path) -> dict[str, float]:
    """Milliseconds of child processes Git started, by kind (from a trace2 event file):
    each hook by name, the merge driver, and everything else Git ran."""
    starts: dict[tuple[str, int], str] = {}
    out: dict[str, float] = {}
    if not trace.exists():
        return out
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        key = (ev.get("sid", ""), ev.get("child_id", -1))
        if ev.get("event") == "child_start":
            argv = ev.get("argv") or []
            text = " ".join(argv)
            if ev.get("child_class") == "hook" or "/hooks/" in text:
                kind = "hook " + (ev.get("hook_name") or Path(argv[0]).name if argv else "?")
            elif "merge-driver" in text:
                kind = "merge driver"
            else:
                kind = "git: " + (argv[1] if len(argv) > 1 and argv[0] == "git"
                                  else Path(argv[0]).name if argv else "?")
            starts[key] = kind
        elif ev.get("event") == "child_exit" and key in starts:
            kind = starts.pop(key)
            out[kind] = out.get(kind, 0.0) + float(ev.get("t_rel", 0.0)) * 1000
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def bench_size(n: int, ks: list[int], runs: int, tmp: Path, shapes: list[Any],
               env: dict[str, str], trace: bool) -> list[dict[str, Any]]:
    seed = tmp / f"seed-{n}"
    t0 = time.perf_counter()
    picks = bench.build_ledgit(seed, bench.board_shapes(shapes, n), env)
    build_s = time.perf_counter() - t0
    # The plain seed: the same commit (its .gitattributes names a driver nobody configured).
    loops = [Loop("ledgit", tmp / f"n{n}", seed, env), Loop("plain", tmp / f"n{n}", seed, env)]
    free = [t for t in picks["ids"]]
    results = []
    for k in ks:
        for loop in loops:
            loop.times = {s: [] for s in STEPS}
            loop.cpu = {s: [] for s in STEPS}
        overlap = k // 2
        for r in range(-1, runs):
            base = (r + 1 + k * 7) * 2 * k
            a_tasks = [free[(base + i) % len(free)] for i in range(k)]
            b_tasks = a_tasks[:overlap] + [free[(base + k + i) % len(free)]
                                           for i in range(k - overlap)]
            for loop in loops:
                loop.round(a_tasks, b_tasks, r, timed=r >= 0)
            print(f"  [{n} tasks, k={k}] round {'warm-up' if r < 0 else r + 1}/{runs}, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        row: dict[str, Any] = {"tasks": n, "k": k, "overlap": overlap, "runs": runs,
                               "build_s": round(build_s, 1)}
        for loop in loops:
            row[loop.name] = loop.medians()
            row[f"{loop.name}_cpu"] = loop.medians(cpu=True)
        row["ratio"] = {s: round(row["ledgit"][s] / row["plain"][s], 2)
                        for s in row["ledgit"] if row["plain"].get(s)}
        row["cpu_ratio"] = {s: round(row["ledgit_cpu"][s] / row["plain_cpu"][s], 2)
                            for s in row["ledgit_cpu"] if row["plain_cpu"].get(s)}
        row["load"] = [round(x, 2) for x in os.getloadavg()]
        if trace:
            row["trace"] = {}
            for loop in loops:
                path = tmp / f"trace-{loop.name}-{n}-{k}.json"
                base = (runs + 3) * 2 * k * 3
                a_tasks = [free[(base + i) % len(free)] for i in range(k)]
                b_tasks = a_tasks[:overlap] + [free[(base + k + i) % len(free)]
                                               for i in range(k - overlap)]
                loop.round(a_tasks, b_tasks, 99, timed=False, trace=path)
                row["trace"][loop.name] = where_the_time_goes(path)
        results.append(row)
        print(json.dumps(row), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 10_000])
    parser.add_argument("--ks", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=bench.RESULTS / "sync-latest.json")
    args = parser.parse_args(argv)
    shapes = bench.load_shapes(args.data)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-sync-"))
    env = bench.git_env(tmp)
    # No automatic gc or maintenance: a detached repack of a seed while it is being cloned
    # breaks the clone, and it is noise in either loop.
    (tmp / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
                                   "[maintenance]\n\tauto = false\n", encoding="utf-8")
    results: list[dict[str, Any]] = []
    try:
        for n in args.sizes:
            results += bench_size(n, args.ks, args.runs, tmp, shapes, env, args.trace)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    verdicts = [f"{r['tasks']} tasks, k={r['k']}: loop {r['ledgit']['loop']:.0f} ms vs "
                f"{r['plain']['loop']:.0f} ms = {r['ratio']['loop']:.2f}x wall "
                f"({'PASS' if r['ratio']['loop'] <= BUDGET else 'MISS'} <= {BUDGET}x); CPU "
                f"{r['ledgit_cpu']['loop']:.0f} ms vs {r['plain_cpu']['loop']:.0f} ms = "
                f"{r['cpu_ratio']['loop']:.2f}x; load {r['load'][0]}" for r in results]
    print("\n".join(verdicts))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results, "verdicts": verdicts,
                                    "python": sys.version.split()[0]}, indent=1) + "\n",
                        encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
