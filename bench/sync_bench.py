"""The sync loop (issues 24 and 32): an agent's loop between writes, ledgit against plain Git,
in one run.

For each board size (default 200 and 10,000 tasks, built as bench/run.py builds its boards:
the Beads snapshot's shapes, ledgit's own library, committed) and each number of changed
tasks ``k`` (default 2 and 10), two clones A and B of one bare remote work in rounds. Untimed:
A changes ``k`` tasks and B changes ``k`` tasks, ``k // 2`` of them the same tasks as A's
(each change a ``note`` and a ``response`` through ledgit's library, as an agent writes; the
plain loop gets a line appended to the same files). Timed, per contender:

- ``plain``: Git without ledgit -- A ``commit`` (``git add -A .ledgit`` + ``git commit``), A
  ``push``; B ``commit``, B ``pull --rebase``, B ``push``; A ``pull --rebase`` -- with Git's
  built-in ``union`` merge for the task files (the cheapest merge that never stops);
- ``hooks``: the same Git loop with ``ledgit install`` (the pre-commit hook, the merge driver,
  the post-* hooks), local remote only;
- ``sync``: ``ledgit install``, then A ``ledgit sync``, B ``ledgit sync``, A ``ledgit sync``
  (one process each: the same commits, merges and pushes);
- ``inproc``: the same three syncs called in this one process
  (:func:`ledgit.integration.sync.sync`): what a long-lived process such as ``ledgit mcp``
  pays, with no interpreter start.

Each over a local path remote and over ``git daemon`` on 127.0.0.1 (``--remotes``). The
contenders alternate round by round (one untimed warm-up round each), so they share the
machine's noise. Reported: the median wall and CPU time (user + system of this process's
children; ``inproc`` counts this process's own) of each step and of the whole loop, each
contender / plain, and the load average. Budgets (issue 32): ``sync`` <= 1.0x ``plain`` at
every size and k over both remotes; ``hooks`` <= 2x ``plain`` at 10,000 tasks::

    python bench/sync_bench.py                          # 200 and 10,000 tasks, k = 2 and 10
    python bench/sync_bench.py --sizes 200 --ks 2 --runs 3 --remotes local
    python bench/sync_bench.py --sizes 200 --ks 10 --runs 3 --trace   # where Git's loops spend

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
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))
import run as bench  # noqa: E402 - bench/run.py: the board builder shared with the main bench
from leaseutil import git_daemon  # noqa: E402 - tests/leaseutil.py: git daemon on 127.0.0.1

from ledgit.core.readout import now_timestamp  # noqa: E402
from ledgit.integration.sync import SyncOptions, sync  # noqa: E402
from ledgit.operations.notes import note  # noqa: E402
from ledgit.operations.transitions import update  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.writepath import mutate_task  # noqa: E402

GIT_STEPS = ("A commit", "A push", "B commit", "B pull --rebase", "B push", "A pull --rebase")
SYNC_STEPS = ("A sync", "B sync", "A sync again")
BUDGETS = {"sync": 1.0, "hooks": 2.0}  # contender / plain, the whole loop
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
    """One contender over one kind of remote: a bare remote and two clones A and B."""

    def __init__(self, name: str, where: str, tmp: Path, seed_repo: Path, env: dict[str, str],
                 url_prefix: str | None) -> None:
        self.name, self.where, self.env = name, where, env
        tmp.mkdir(parents=True, exist_ok=True)
        label = f"{name}-{where}"
        self.remote = tmp / f"{label}.git"
        git(["clone", "-q", "--bare", str(seed_repo), str(self.remote)], tmp, env)
        # git daemon serves the whole temporary directory: the remote's path below it
        url = (f"{url_prefix}{self.remote.relative_to(tmp.parent)}" if url_prefix
               else str(self.remote))
        self.a, self.b = tmp / f"{label}-A", tmp / f"{label}-B"
        for path in (self.a, self.b):
            git(["clone", "-q", url, str(path)], tmp, env)
            if name != "plain":
                subprocess.run([*bench.ledgit_argv(), "install"], cwd=path, env=env,
                               capture_output=True, check=True)
            else:
                attrs = path / ".git" / "info" / "attributes"
                attrs.write_text(".ledgit/tasks/*.md merge=union\n"
                                 ".ledgit/history/*.jsonl merge=union\n", encoding="utf-8")
        self.steps = SYNC_STEPS if name in ("sync", "inproc") else GIT_STEPS
        self.reset()

    def reset(self) -> None:
        self.times: dict[str, list[float]] = {s: [] for s in self.steps}
        self.cpu: dict[str, list[float]] = {s: [] for s in self.steps}

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

    def _commands(self, r: int) -> list[tuple[str, Path, list[list[str]]]]:
        if self.name == "sync":
            sync_cmd = [*bench.ledgit_argv(), "sync", "--message", f"sync {r}"]
            return [(s, cwd, [sync_cmd]) for s, cwd in zip(SYNC_STEPS, (self.a, self.b, self.a),
                                                            strict=True)]
        return [
            ("A commit", self.a, [["git", "add", "-A", ".ledgit"],
                                  ["git", "commit", "-q", "-m", f"a {r}"]]),
            ("A push", self.a, [["git", "push", "-q", "origin", "HEAD:main"]]),
            ("B commit", self.b, [["git", "add", "-A", ".ledgit"],
                                  ["git", "commit", "-q", "-m", f"b {r}"]]),
            ("B pull --rebase", self.b, [["git", "pull", "-q", "--rebase", "origin", "main"]]),
            ("B push", self.b, [["git", "push", "-q", "origin", "HEAD:main"]]),
            ("A pull --rebase", self.a, [["git", "pull", "-q", "--rebase", "origin", "main"]]),
        ]

    def round(self, a_tasks: list[str], b_tasks: list[str], r: int, timed: bool,
              trace: Path | None = None) -> None:
        env = self.env if trace is None else {**self.env, "GIT_TRACE2_EVENT": str(trace)}
        self.change(self.a, a_tasks, f"agent-a-{r}")
        self.change(self.b, b_tasks, f"agent-b-{r}")
        if self.name == "inproc":
            for step, cwd in zip(SYNC_STEPS, (self.a, self.b, self.a), strict=True):
                ru0 = resource.getrusage(resource.RUSAGE_SELF)
                t0 = time.perf_counter()
                sync(Board(cwd), SyncOptions(message=f"sync {r}"))
                self._record(step, timed, t0, ru0, resource.getrusage(resource.RUSAGE_SELF))
        else:
            for step, cwd, commands in self._commands(r):
                ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                for argv in commands:
                    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                                          text=True, stdin=subprocess.DEVNULL, check=False)
                    if proc.returncode != 0:
                        raise RuntimeError(f"{self.name}: {' '.join(argv)} in {cwd}: exit "
                                           f"{proc.returncode}: {proc.stderr.strip()[-500:]}")
                self._record(step, timed, t0, ru0, resource.getrusage(resource.RUSAGE_CHILDREN))
        for path in (self.a, self.b):
            status = git(["status", "--porcelain", ".ledgit"], path, self.env).stdout
            if status.strip():
                raise RuntimeError(f"{self.name}: {path.name} is not clean after the loop: "
                                   f"{status[:300]}")
        if git(["rev-parse", "HEAD"], self.a, self.env).stdout != \
                git(["rev-parse", "HEAD"], self.b, self.env).stdout:
            raise RuntimeError(f"{self.name}: A and B differ after the loop")

    def _record(self, step: str, timed: bool, t0: float, ru0: Any, ru1: Any) -> None:
        if timed:
            self.times[step].append(time.perf_counter() - t0)
            self.cpu[step].append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime)

    def medians(self, cpu: bool = False) -> dict[str, float]:
        """Median milliseconds of each step and of the whole loop: wall, or with ``cpu``
        user + system time."""
        times = self.cpu if cpu else self.times
        out = {s: statistics.median(v) * 1000 for s, v in times.items() if v}
        runs = len(next(iter(times.values())))
        out["loop"] = statistics.median(
            sum(times[s][i] for s in self.steps) for i in range(runs)) * 1000
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
               env: dict[str, str], remotes: list[str], daemon: str | None,
               trace: bool = False) -> list[dict[str, Any]]:
    seed = tmp / f"seed-{n}"
    t0 = time.perf_counter()
    picks = bench.build_ledgit(seed, bench.board_shapes(shapes, n), env)
    build_s = time.perf_counter() - t0
    loops: list[Loop] = []
    for where in remotes:
        names = ("plain", "hooks", "sync", "inproc") if where == "local" else (
            "plain", "sync", "inproc")
        loops += [Loop(name, where, tmp / f"n{n}", seed, env,
                       daemon if where == "daemon" else None) for name in names]
    free = list(picks["ids"])
    results = []
    for k in ks:
        for loop in loops:
            loop.reset()
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
        for where in remotes:
            here = {loop.name: loop for loop in loops if loop.where == where}
            row: dict[str, Any] = {"tasks": n, "k": k, "overlap": overlap, "runs": runs,
                                   "remote": where, "build_s": round(build_s, 1)}
            for name, loop in here.items():
                row[name] = loop.medians()
                row[f"{name}_cpu"] = loop.medians(cpu=True)
            plain, plain_cpu = row["plain"]["loop"], row["plain_cpu"]["loop"]
            row["ratio"] = {name: round(row[name]["loop"] / plain, 2) for name in here
                            if name != "plain"}
            row["cpu_ratio"] = {name: round(row[f"{name}_cpu"]["loop"] / plain_cpu, 2)
                                for name in here if name != "plain" and plain_cpu}
            row["load"] = [round(x, 2) for x in os.getloadavg()]
            if trace:
                row["trace"] = {}
                for name, loop in here.items():
                    if name in ("plain", "hooks"):
                        path = tmp / f"trace-{name}-{where}-{n}-{k}.json"
                        tb = (runs + 3) * 2 * k * 3
                        a_tasks = [free[(tb + i) % len(free)] for i in range(k)]
                        b_tasks = a_tasks[:overlap] + [free[(tb + k + i) % len(free)]
                                                       for i in range(k - overlap)]
                        loop.round(a_tasks, b_tasks, 99, timed=False, trace=path)
                        row["trace"][name] = where_the_time_goes(path)
            results.append(row)
            print(json.dumps(row), flush=True)
    return results


def verdicts(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in results:
        for name, ratio in r["ratio"].items():
            budget = BUDGETS.get(name)
            if name == "hooks" and r["tasks"] < 10_000:
                budget = None  # per-process budgets there (issue 32), not a loop budget
            mark = "" if budget is None else (
                f" ({'PASS' if ratio <= budget else 'MISS'} <= {budget}x)")
            lines.append(f"{r['tasks']} tasks, k={r['k']}, {r['remote']} remote: {name} "
                         f"{r[name]['loop']:.0f} ms vs plain {r['plain']['loop']:.0f} ms = "
                         f"{ratio:.2f}x wall{mark}; CPU {r['cpu_ratio'].get(name, 0):.2f}x; "
                         f"load {r['load'][0]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 10_000])
    parser.add_argument("--ks", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--remotes", nargs="+", choices=("local", "daemon"),
                        default=["local", "daemon"])
    parser.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    parser.add_argument("--trace", action="store_true",
                        help="one more round of the git loops under GIT_TRACE2_EVENT: where "
                             "their time went (hooks, merge drivers, Git)")
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
    # the in-process contender reads this process's environment, as a server would
    os.environ.clear()
    os.environ.update(env)
    results: list[dict[str, Any]] = []
    try:
        with nullcontext() if "daemon" not in args.remotes else git_daemon(tmp) as daemon:
            for n in args.sizes:
                results += bench_size(n, args.ks, args.runs, tmp, shapes, env, args.remotes,
                                      daemon, args.trace)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    lines = verdicts(results)
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results, "verdicts": lines,
                                    "python": sys.version.split()[0]}, indent=1) + "\n",
                        encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
