"""Import time vs a cold ``ledgit cache rebuild`` of the resulting board (issue 5).

Each run: a fresh Git repository, ``ledgit init``, ``ledgit import beads FILE`` (timed), then
the index is deleted and ``ledgit cache rebuild`` is run (timed), then ``ledgit verify``.
Both commands run as Git would run them for a user: fresh processes, the installed CLI.
Wall time on a shared machine says as much about the neighbours as about us, so the CPU time
of each child process (user + system, from getrusage) is reported beside it. Budget: the
import takes at most 1.5x the rebuild (medians).

Usage: ``python bench/import_bench.py [FILE] [--runs N] [--json]``
(FILE defaults to the full beads-issues.jsonl beside the checkout, else the trimmed copy in
tests/data/beads: bench/benchdata.py).
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

from benchdata import beads_file

DEFAULT = beads_file("beads-issues.jsonl")


def timed(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, child CPU seconds, result) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, cpu, proc


def one_run(ledgit: list[str], source: Path) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-import-bench-"))
    try:
        env_git = ["git", "-c", "init.defaultBranch=main", "init", "-q", str(tmp)]
        subprocess.run(env_git, check=True)
        subprocess.run([*ledgit, "init"], cwd=tmp, check=True, capture_output=True)
        iw, ic, proc = timed([*ledgit, "import", "beads", str(source), "--by", "bench"], tmp)
        summary = proc.stdout.strip()
        index = tmp / ".git" / "ledgit" / "index.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        rw, rc, _ = timed([*ledgit, "cache", "rebuild"], tmp)
        vw, _, vproc = timed([*ledgit, "verify"], tmp)
        tasks = len(os.listdir(tmp / ".ledgit" / "tasks"))
        return {"import_wall": iw, "import_cpu": ic, "rebuild_wall": rw, "rebuild_cpu": rc,
                "verify_wall": vw, "tasks": tasks, "summary": summary,
                "verify": vproc.stderr.strip()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    ledgit = [sys.executable, "-m", "ledgit"]
    runs = []
    for n in range(args.runs):
        r = one_run(ledgit, args.file)
        runs.append(r)
        if not args.json:
            print(f"run {n + 1}: import {r['import_wall']:.2f}s wall / {r['import_cpu']:.2f}s "
                  f"cpu; rebuild {r['rebuild_wall']:.2f}s / {r['rebuild_cpu']:.2f}s; "
                  f"{r['tasks']} tasks; {r['verify']}", flush=True)
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("import_wall", "import_cpu", "rebuild_wall", "rebuild_cpu")}
    res = {"file": str(args.file), "runs": args.runs, "median": med,
           "ratio_wall": med["import_wall"] / med["rebuild_wall"],
           "ratio_cpu": med["import_cpu"] / med["rebuild_cpu"],
           "summary": runs[-1]["summary"], "tasks": runs[-1]["tasks"], "all": runs}
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"median: import {med['import_wall']:.2f}s wall / {med['import_cpu']:.2f}s cpu; "
              f"rebuild {med['rebuild_wall']:.2f}s / {med['rebuild_cpu']:.2f}s; ratio "
              f"{res['ratio_wall']:.2f} (wall), {res['ratio_cpu']:.2f} (cpu); budget 1.5")
        print(res["summary"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
