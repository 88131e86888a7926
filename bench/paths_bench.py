"""Issue 25's costs against a base commit, side by side in the same rounds: the pre-commit
hook (5 staged tasks), ``ledgit verify --range`` over 50 commits, a whole ``git commit`` with
every hook ``ledgit install`` puts in (pre-commit, and now reference-transaction), and (issue
36) a ``git commit`` of a code file only, whose reference-transaction block must start no
Python process.

Usage::

    python bench/paths_bench.py --base b05d583 [--tasks 500] [--rounds 7]

Both sides are ``git archive`` snapshots (HEAD of this checkout, and ``--base``), compiled, run
through ``PYTHONPATH``; each round runs every case of both sides once, alternating, so they
share the machine's noise. Prints medians, the ratio (this / base) per case, and the 1-minute
load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PY = sys.executable
ENTRY = ("import sys; sys.path[0] or sys.path.pop(0); "
         "from ledgit.__main__ import main; main()")


def snapshot(rev: str, dest: Path) -> Path:
    """``git archive REV src`` of this checkout, compiled; returns the src dir."""
    dest.mkdir(parents=True)
    data = subprocess.run(["git", "-C", str(BENCH.parent), "archive", rev, "src"],
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)
    subprocess.run([PY, "-m", "compileall", "-q", str(dest / "src")], check=True)
    return dest / "src"


def env_for(src: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "LEDGIT_")) and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(src), HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_AUTHOR_NAME="bench",
               GIT_AUTHOR_EMAIL="b@x.invalid", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="b@x.invalid", LEDGIT_ACTOR="bench", LEDGIT_WATCH="0")
    return env


def sh(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr[-500:]}")
    return proc.stdout


def build(repo: Path, env: dict[str, str], tasks: int, commits: int) -> list[str]:
    """A board of ``tasks`` tasks, then ``commits`` commits each updating 2 tasks; then 5
    tasks updated and staged (for the hook). Returns the task ids."""
    lg = [PY, "-c", ENTRY]
    repo.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh([*lg, "init"], repo, env)
    sys.path.insert(0, env["PYTHONPATH"])
    from ledgit.core.history import event_line, new_event
    from ledgit.core.record import make_record
    from ledgit.core.render import render_record

    ids = [f"T-bench{n:05d}" for n in range(tasks)]
    for n, tid in enumerate(ids):
        at = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000000Z"
        rec = make_record({"id": tid, "title": f"task {n}", "status": "open", "priority": 2,
                           "created": at, "last_modified": at}, "## Goal\nBench.\n")
        ev = new_event(parents=[], at=at, actor="bench", op="create", before_state={},
                       after_state=rec.state())
        (repo / ".ledgit" / "tasks" / f"{tid}.md").write_text(render_record(rec))
        (repo / ".ledgit" / "history" / f"{tid}.jsonl").write_text(event_line(ev))
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "--no-verify", "-m", "board"], repo, env)
    for c in range(commits):
        for tid in (ids[(2 * c) % tasks], ids[(2 * c + 1) % tasks]):
            sh([*lg, "update", tid, "--next-action", f"step {c}"], repo, env)
        sh(["git", "commit", "-q", "--no-verify", "-am", f"step {c}"], repo, env)
    for tid in ids[-5:]:
        sh([*lg, "update", tid, "--response", "staged for the hook"], repo, env)
    sh(["git", "add", "-A"], repo, env)
    return ids


def _cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, metavar="REV")
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="hook,verify,commit,code",
                    help="cases to time, comma-separated: hook, verify, commit, code")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-paths-bench-"))
    try:
        home = tmp / "home"
        home.mkdir()
        (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n")
        sides = {"this": snapshot("HEAD", tmp / "this"), "base": snapshot(args.base, tmp / "base")}
        envs = {name: env_for(src, home) for name, src in sides.items()}
        first = tmp / "board"
        build(first, envs["this"], args.tasks, args.commits)
        repos: dict[str, Path] = {}
        for name, env in envs.items():
            repo = tmp / f"repo-{name}"
            shutil.copytree(first, repo, symlinks=True)
            sh([PY, "-c", ENTRY, "install"], repo, env)
            sh([PY, "-c", ENTRY, "list", "--limit", "1"], repo, env)
            repos[name] = repo
        spec = f"HEAD~{args.commits}..HEAD"
        every = {
            "hook": ("pre-commit hook, 5 staged tasks",
                     lambda r: [str(r / ".git/hooks/pre-commit")]),
            "verify": (f"verify --range over {args.commits} commits",
                       lambda r: [PY, "-c", ENTRY, "verify", "--range", spec]),
            "commit": ("git commit (all hooks) + ref back", None),
            "code": ("git commit -- code.txt (all hooks, no task) + ref back", None),
        }
        cases = dict(every[k] for k in args.only.split(",") if k)
        times: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        loads: list[float] = []
        for rnd in range(-1, args.rounds):
            for label, argv in cases.items():
                for name in (("base", "this") if rnd % 2 else ("this", "base")):
                    repo, env = repos[name], envs[name]
                    t0, c0 = time.perf_counter(), _cpu()
                    if argv is None:
                        code = ["--", "code.txt"] if label.startswith("git commit --") else []
                        if code:
                            (repo / "code.txt").write_text(f"{rnd} {name}\n")
                            sh(["git", "add", "code.txt"], repo, env)
                            t0, c0 = time.perf_counter(), _cpu()
                        sh(["git", "commit", "-q", "-m", "timed", *code], repo, env)
                        elapsed, cpu = time.perf_counter() - t0, _cpu() - c0
                        back = {**env, "LEDGIT_ALLOW_REWRITE": "1"}
                        sh(["git", "reset", "-q", "--soft", "HEAD~1"], repo, back)
                    else:
                        sh(argv(repo), repo, env)
                        elapsed, cpu = time.perf_counter() - t0, _cpu() - c0
                    if rnd >= 0:
                        times.setdefault((label, name), []).append(elapsed)
                        cpus.setdefault((label, name), []).append(cpu)
            loads.append(os.getloadavg()[0])
        print(f"{args.tasks} tasks, {args.commits} commits, {args.rounds} rounds; 1-min load "
              f"during the rounds: {min(loads):.1f}-{max(loads):.1f}")
        for label in cases:
            b = statistics.median(times[(label, "base")]) * 1000
            t = statistics.median(times[(label, "this")]) * 1000
            cb = statistics.median(cpus[(label, "base")]) * 1000
            ct = statistics.median(cpus[(label, "this")]) * 1000
            print(f"{label}: wall base {b:.1f} ms, this {t:.1f} ms, ratio {t / b:.2f}; CPU "
                  f"(children) base {cb:.1f} ms, this {ct:.1f} ms, ratio {ct / cb:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
