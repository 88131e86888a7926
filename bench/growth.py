"""What "a history only grows" costs (issue 12, Acceptance): the pre-commit hook with 5 staged
tasks and ``ledgit verify --range`` over 50 commits, this commit against the one before the
growth check (default: the merge base with ``main``), with both ratios in one run.

Usage::

    python bench/growth.py                     # board of 1,000 tasks, 7 rounds
    python bench/growth.py --size 200 --runs 5 --base 14d58b0 --keep

Both ledgits are ``git archive REV src`` snapshots of this checkout, byte-compiled, put first on
``PYTHONPATH`` (which the installed hooks inherit), so each timed process runs exactly one of
them. The board is bench/run.py's (the shapes of the real Beads issues in ../shared/data; the
run stops with a message when they are absent). The cases run in rounds, base and new next to
each other, so both share the machine's noise; a figure is the median over the rounds. Budgets:
new / base <= 1.20 for each case. Writes bench/results/growth.md and growth.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import (  # noqa: E402 - bench/run.py is a script beside this one
    DEFAULT_DATA,
    PY,
    RESULTS,
    Case,
    SetupError,
    board_shapes,
    build_ledgit,
    git_env,
    ledgit_argv,
    load_shapes,
    sh,
    snapshot_source,
)

BUDGET = 1.20  # the growth check may add at most 20% (issue 12, Acceptance)
COMMITS = 50  # commits in the verified range: 44 on main, a branch of 5, the merge


def default_base() -> str:
    """The commit before this branch: ``git merge-base HEAD main``."""
    out = subprocess.run(["git", "-C", str(BENCH.parent), "merge-base", "HEAD", "main"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit("bench/growth.py: no merge base with main; give --base REV")
    return out.stdout.strip()


def with_source(env: dict[str, str], src: Path) -> dict[str, str]:
    """``env`` running the ledgit in ``src`` (first on PYTHONPATH); checked by importing it."""
    out = {**env, "PYTHONPATH": os.pathsep.join(
        [str(src), *filter(None, [env.get("PYTHONPATH")])])}
    probe = subprocess.run([PY, "-c", "import ledgit; print(ledgit.__file__)"], env=out,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not probe.startswith(str(src)):
        raise SystemExit(f"bench/growth.py: PYTHONPATH={src} imports {probe} instead")
    return out


def make_range(repo: Path, env: dict[str, str], ids: list[str]) -> str:
    """:data:`COMMITS` commits of ledgit updates on top of the board; returns the range."""
    lg = ledgit_argv()
    start = sh(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()
    branch_at = COMMITS - 10  # then 5 on the side branch and 4 more on main, then the merge

    def commit(n: int, message: str) -> None:
        for t in (ids[(n * 37) % len(ids)], ids[(n * 53 + 1) % len(ids)]):
            sh([*lg, "update", t, "--response", f"{message} {n}"], repo, env)
        sh(["git", "commit", "-q", "--no-verify", "-am", f"{message} {n}"], repo, env)

    for n in range(branch_at):
        commit(n, "main")
    sh(["git", "checkout", "-q", "-b", "side"], repo, env)
    for n in range(5):
        commit(1000 + n, "side")
    sh(["git", "checkout", "-q", "main"], repo, env)
    for n in range(branch_at, branch_at + 4):
        commit(n, "main")
    sh(["git", "merge", "-q", "--no-verify", "--no-edit", "side"], repo, env)
    count = int(sh(["git", "rev-list", "--count", f"{start}..HEAD"], repo, env).stdout)
    if count != COMMITS:
        raise SetupError(f"the range holds {count} commits, not {COMMITS}")
    return f"{start}..HEAD"


def stage_five(repo: Path, env: dict[str, str], ids: list[str]) -> None:
    """5 tasks updated and staged (task file + history each) for the pre-commit hook."""
    lg = ledgit_argv()
    for t in ids[-5:]:
        sh([*lg, "update", t, "--response", "staged for the hook"], repo, env)
        sh(["git", "add", f".ledgit/tasks/{t}.md", f".ledgit/history/{t}.jsonl"], repo, env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size", type=int, default=1000, help="tasks on the board")
    ap.add_argument("--runs", type=int, default=7, help="timed rounds")
    ap.add_argument("--base", help="the commit without the growth check (default: merge base "
                                   "with main)")
    ap.add_argument("--new", default="HEAD", help="the commit with it (default HEAD)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        print(f"bench/growth.py: {args.data} is missing (the task shapes); give --data FILE",
              file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-growth-bench-"))
    try:
        base_src, base = snapshot_source(tmp, args.base or default_base())
        new_src, new = snapshot_source(tmp, args.new)
        home = tmp / "home"
        home.mkdir()
        (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n", encoding="utf-8")
        env = with_source(git_env(home), new_src)
        repo = tmp / "board"
        picks = build_ledgit(repo, board_shapes(load_shapes(args.data), args.size), env)
        spec = make_range(repo, env, picks["ids"])
        stage_five(repo, env, picks["ids"])
        hook = repo / ".git" / "hooks" / "pre-commit"
        lg = ledgit_argv()
        envs = {"base": with_source(git_env(home), base_src), "new": env}
        cases = {(op, side): Case("ledgit", op, cmd, repo, envs[side])
                 for side in ("base", "new")
                 for op, cmd in (("precommit", lambda r: [str(hook)]),
                                 ("verify_range", lambda r: [*lg, "verify", "--range", spec]))}
        for r in range(-1, args.runs):  # round -1: untimed warm-up
            for case in cases.values():
                case.run(r)
        results = {f"{op}/{side}": case.result() for (op, side), case in cases.items()}
        lines = [f"# growth check cost: {new} against {base}", "",
                 f"Board of {args.size} tasks; {args.runs} rounds; verify over {COMMITS} "
                 f"commits ({spec.split('..')[0][:12]}..HEAD, one merge); load average "
                 f"{os.getloadavg()[0]:.1f}.", "",
                 "| case | base ms | new ms | new / base | budget | CPU base / new ms |",
                 "|---|---|---|---|---|---|"]
        ok = True
        for op, label in (("precommit", "pre-commit hook, 5 staged tasks"),
                          ("verify_range", f"verify --range, {COMMITS} commits")):
            b, n = (results[f"{op}/{s}"] for s in ("base", "new"))
            if "median_ms" not in b or "median_ms" not in n:
                lines.append(f"| {label} | {b.get('errors')} | {n.get('errors')} | - | MISS | - |")
                ok = False
                continue
            ratio = n["median_ms"] / b["median_ms"]
            verdict = "PASS" if ratio <= BUDGET else "MISS"
            ok = ok and verdict == "PASS"
            lines.append(f"| {label} | {b['median_ms']:.1f} | {n['median_ms']:.1f} | "
                         f"{ratio:.2f} | {verdict} (<= {BUDGET:.2f}) | "
                         f"{b['cpu_median_ms']:.1f} / {n['cpu_median_ms']:.1f} |")
        text = "\n".join(lines) + "\n"
        print(text, end="")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "growth.md").write_text(text, encoding="utf-8")
        (args.out / "growth.json").write_text(json.dumps(
            {"base": base, "new": new, "size": args.size, "runs": args.runs,
             "commits": COMMITS, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "cpu_note": "cpu_median_ms: user+sys of the process tree",
             "results": results, "all_pass": ok}, indent=2) + "\n", encoding="utf-8")
        return 0
    except SetupError as exc:
        print(f"bench/growth.py: setup failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
