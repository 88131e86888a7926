"""What ``ledgit forge update`` costs (issue 27, Acceptance): on a board of 10,000 tasks
against one of 100, with 1, 10 and 50 tasks changed on both the branch and its base (every
one of them a conflict the driver resolves), all in one run, as ratios.

Usage::

    python bench/forge_bench.py                          # 100 and 10,000 tasks, 5 rounds
    python bench/forge_bench.py --sizes 100 1000 --changed 1 10 --runs 3

Each case: a bare repository (the forge) whose ``main`` and branch ``feature`` both changed the
same K tasks since their fork point; the timed command is ``<python> -m ledgit forge update
feature --base main`` in a clone that never ran ``ledgit install`` (a new process, as the
workflow runs it: fetch, temporary worktree, merge with the driver, growth check, push with a
lease). Before each round the forge's ``feature`` is set back to the agent's tip. A figure is
the median over the rounds (wall and CPU of the child and its children). Writes
bench/results/forge.md and forge.json (``--out``); prints the table and ``uptime``.
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

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from driver import genesis, isolated_env, mutate, stamp  # noqa: E402 - a script beside this

from ledgit.core.render import render_record  # noqa: E402

RESULTS = BENCH / "results"


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def build(root: Path, env: dict[str, str], size: int, changed: int) -> tuple[Path, Path, str]:
    """(forge, bot clone, the agent's tip of ``feature``) for a board of ``size`` tasks
    whose first ``changed`` tasks both ``main`` and ``feature`` changed."""
    seed = root / "seed"
    seed.mkdir(parents=True)
    git(seed, env, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, "-m", "ledgit", "init"], cwd=seed, env=env, check=True,
                   capture_output=True)
    tasks, hist = seed / ".ledgit" / "tasks", seed / ".ledgit" / "history"
    histories: dict[str, str] = {}
    for n in range(size):
        tid = f"T-{n:010d}"
        rec, line = genesis(tid, n % 1000)
        (tasks / f"{tid}.md").write_text(render_record(rec))
        (hist / f"{tid}.jsonl").write_text(line)
        histories[tid] = line
    git(seed, env, "add", "-A")
    git(seed, env, "commit", "-q", "-m", "board")
    ids = sorted(histories)[:changed]
    git(seed, env, "branch", "-q", "feature")  # the fork point
    for side in ("main", "feature"):
        git(seed, env, "switch", "-q", side)
        for k, tid in enumerate(ids):
            at = stamp(5000 + k * 2 + (side == "feature"))
            text, history = mutate(histories[tid], tid, side, at, "update",
                                   {"labels": ["export", side]})
            (tasks / f"{tid}.md").write_text(text)
            (hist / f"{tid}.jsonl").write_text(history)
        git(seed, env, "commit", "-q", "-am", f"{side} changes {changed} task(s)")
    agent_tip = git(seed, env, "rev-parse", "feature")
    forge = root / "forge.git"
    git(root, env, "init", "-q", "--bare", str(forge))
    git(seed, env, "push", "-q", str(forge), "main", "feature")
    bot = root / "bot"
    git(root, env, "clone", "-q", str(forge), str(bot))
    return forge, bot, agent_tip


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the children, stdout); a failure stops the run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def report(cases: dict[str, dict[str, Any]], sizes: list[int], changed: list[int], runs: int,
           load: tuple[float, float, float]) -> list[str]:
    """The Markdown table: wall and CPU per case, the large board against the small one, and
    each size against its fewest changed tasks."""
    small, large = min(sizes), max(sizes)
    lines = ["# ledgit forge update: cost against board size and changed tasks", "",
             f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
             f"({os.cpu_count()} CPUs); median of {runs} rounds; CPU = the command's process "
             "and its children (git, the driver).", "",
             "| changed | " + " | ".join(f"{s:,} tasks: wall / CPU (s)" for s in sizes)
             + f" | {large:,} ÷ {small:,} wall | CPU |", "|---" * (len(sizes) + 3) + "|"]
    for c in changed:
        cells = [f"{cases[f'{s}/{c}']['wall_s']:.3f} / {cases[f'{s}/{c}']['cpu_s']:.3f}"
                 for s in sizes]
        big, little = cases[f"{large}/{c}"], cases[f"{small}/{c}"]
        lines.append(f"| {c} | " + " | ".join(cells) + f" | {big['wall_s'] / little['wall_s']:.2f}"
                     f" | {big['cpu_s'] / little['cpu_s']:.2f} |")
    lines += ["", "Within one board size, CPU against the fewest changed tasks:", ""]
    for s in sizes:
        one = cases[f"{s}/{min(changed)}"]["cpu_s"]
        lines.append(f"- {s:,} tasks: " + ", ".join(
            f"{c} changed {cases[f'{s}/{c}']['cpu_s'] / one:.2f}x" for c in changed))
    lines += ["", "Up to date (nothing to do), wall: " + ", ".join(
        f"{s:,} tasks {cases[f'{s}/{min(changed)}']['noop_s']:.3f} s" for s in sizes)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--changed", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-forge-bench-"))
    try:
        home = tmp / "home"
        home.mkdir()
        (home / "gitconfig").write_text("[advice]\n\tdetachedHead = false\n")
        env = isolated_env(home)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["LEDGIT_WATCH"] = "0"
        cases: dict[str, dict[str, Any]] = {}
        for size in args.sizes:
            for changed in args.changed:
                root = tmp / f"{size}-{changed}"
                t0 = time.perf_counter()
                forge, bot, agent_tip = build(root, env, size, changed)
                built = time.perf_counter() - t0
                cmd = [sys.executable, "-m", "ledgit", "forge", "update", "feature",
                       "--base", "main"]
                walls, cpus = [], []
                for _ in range(args.runs):
                    git(forge, env, "update-ref", "refs/heads/feature", agent_tip)
                    wall, cpu, out = timed(cmd, bot, env)
                    if "pushed" not in out:
                        raise SystemExit(f"not updated: {out}")
                    walls.append(wall)
                    cpus.append(cpu)
                noop, _, out = timed(cmd, bot, env)  # up to date: nothing to do
                assert "nothing pushed" in out, out
                cases[f"{size}/{changed}"] = {
                    "size": size, "changed": changed, "wall_s": statistics.median(walls),
                    "cpu_s": statistics.median(cpus), "walls": walls, "noop_s": noop,
                    "build_s": built}
                print(f"{size:>6} tasks, {changed:>3} changed: {statistics.median(walls):.3f} s "
                      f"wall, {statistics.median(cpus):.3f} s CPU (up to date: {noop:.3f} s)",
                      flush=True)
                shutil.rmtree(root, ignore_errors=True)
        load = os.getloadavg()
        lines = report(cases, args.sizes, args.changed, args.runs, load)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "forge.md").write_text("\n".join(lines) + "\n")
        (args.out / "forge.json").write_text(json.dumps({"cases": cases, "load": load},
                                                        indent=2) + "\n")
        print("\n".join(lines))
        print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
