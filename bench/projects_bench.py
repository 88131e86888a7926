"""Boards across projects (issue 17): the two budget lines, measured in one run.

* ``ready --projects`` over 3 boards of N tasks each (default 1,000) <= 3x ``ready`` on one;
* reading an external dependency adds <= 5 ms to ``get`` (a task with one ``ALIAS:ID``
  dependency vs the same board's task without one).

Usage: ``python bench/projects_bench.py [--tasks 1000] [--runs 15] [--keep]``. The boards are
built with bench/run.py's builder (real Beads task shapes from ../shared/data; skips with the
reason when that file is absent) in throwaway repositories under a temp dir; one of the three is
registered with ``--ref`` (read from a snapshot at that commit). Every timed command is a fresh
process, wall clock, median over the runs, the cases alternating each round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (bench/run.py: the board builder and environment)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace').strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: {args.data} not present (the real task shapes)")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-projects-bench-"))
    try:
        home = tmp / "home"
        home.mkdir()
        (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        env = bench.git_env(home)
        env.update(XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"))
        shapes = bench.board_shapes(bench.load_shapes(args.data), args.tasks)
        picks = {}
        for name in ("app", "lib", "spec"):
            print(f"building {name} ({args.tasks} tasks)", flush=True)
            picks[name] = bench.build_ledgit(tmp / name, shapes, env)
        lg = bench.ledgit_argv()
        app = tmp / "app"
        bench.sh(["git", "tag", "v1"], tmp / "spec", env)
        bench.sh([*lg, "project", "add", "lib", "../lib"], app, env)
        bench.sh([*lg, "project", "add", "spec", "../spec", "--ref", "v1"], app, env)
        plain = picks["app"]["claim"]
        dep_on = picks["lib"]["get"]
        with_dep = bench.sh([*lg, "create", "Needs lib", "--depends", f"lib:{dep_on}"], app,
                            env).stdout.strip()
        bench.sh([*lg, "ready", "--projects"], app, env)  # warm every index and the snapshot
        cases = {
            "ready (one board)": [*lg, "ready", "--limit", "20"],
            "ready --projects (3 boards)": [*lg, "ready", "--projects", "--limit", "20"],
            "get (no external dep)": [*lg, "get", plain],
            "get (1 external dep)": [*lg, "get", with_dep],
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, cmd in cases.items():
                times[name].append(timed(cmd, app, env))
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        for name, ms in med.items():
            print(f"{name:<30} {ms:8.1f} ms")
        ratio = med["ready --projects (3 boards)"] / med["ready (one board)"]
        added = med["get (1 external dep)"] - med["get (no external dep)"]
        print(f"ready --projects / ready: {ratio:.2f}x (budget <= 3x): "
              f"{'PASS' if ratio <= 3 else 'MISS'}")
        print(f"get with an external dependency: +{added:.1f} ms (budget <= 5 ms): "
              f"{'PASS' if added <= 5 else 'MISS'}")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
