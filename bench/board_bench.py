"""The board page's budgets (issue 16), in one run:

1. ``ledgit board --html`` on a 10,000-task board <= 1.5x a cold ``ledgit cache rebuild``
   (index deleted first) of the same board, medians of ``--runs`` interleaved rounds after
   one untimed warm-up round, wall
   time (the CPU time of each, user + system of the process and its workers, beside it);
2. the page is interactive -- first paint and a filter applied -- within 2 s in headless
   Chromium at 10,000 tasks (Debian's chromium through playwright, no downloads): from
   before the page is opened until the page has rendered the board filtered by a text (the
   page's own clock, ``data-rendered-at``, once ``#match-count`` is for that text);
3. a served page (``ledgit board --serve``) reflects a CLI write within 1 s: from the CLI's
   exit until the page rendered the new card, with inotify and without (``LEDGIT_WATCH=0``:
   the directories' stat every 0.25 s).

The board is built as bench/run.py builds its boards (the Beads snapshot's shapes, cycled;
ledgit's own library writes the task files and histories; committed; index warmed)::

    python bench/board_bench.py                  # 10,000 tasks, 3 rounds
    python bench/board_bench.py --tasks 1000 --runs 5 --keep

Prints a table with PASS/MISS per budget and writes it as JSON to ``--out`` (default
bench/results/board-latest.json). Needs git, chromium at /usr/bin/chromium (or on PATH) and
playwright for the browser figures; without them those lines say why they were skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402 - bench/run.py: the board builder shared with the main bench

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # the browser figures say they were skipped
    sync_playwright = None

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BUDGETS = {"html_vs_rebuild": 1.5, "interactive_s": 2.0, "live_s": 1.0, "live_unwatched_s": 1.0}
FILTER_TEXT = "daemon"  # a word of many titles of the Beads snapshot


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s: user + system of the process and the children it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise bench.SetupError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def drop_index(repo: Path, env: dict[str, str]) -> None:
    private = Path(subprocess.run(["git", "rev-parse", "--git-path", "ledgit"], cwd=repo, env=env,
                                  capture_output=True, text=True, check=True).stdout.strip())
    private = private if private.is_absolute() else repo / private
    for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
        (private / name).unlink(missing_ok=True)


def html_vs_rebuild(repo: Path, env: dict[str, str], runs: int, out: Path) -> dict[str, Any]:
    lg = bench.ledgit_argv()
    rebuild, html = [], []
    drop_index(repo, env)  # one untimed warm-up round, as bench/run.py's (byte code, caches)
    timed([*lg, "cache", "rebuild"], repo, env)
    timed([*lg, "board", "--html", str(out)], repo, env)
    for _ in range(runs):
        drop_index(repo, env)
        rebuild.append(timed([*lg, "cache", "rebuild"], repo, env))
        html.append(timed([*lg, "board", "--html", str(out)], repo, env))
    r, h = (statistics.median(w for w, _ in rebuild), statistics.median(w for w, _ in html))
    rc, hc = (statistics.median(c for _, c in rebuild), statistics.median(c for _, c in html))
    return {"rebuild_s": [w for w, _ in rebuild], "html_s": [w for w, _ in html],
            "rebuild_cpu_s": [c for _, c in rebuild], "html_cpu_s": [c for _, c in html],
            "rebuild_median_s": r, "html_median_s": h, "ratio": h / r,
            "rebuild_cpu_median_s": rc, "html_cpu_median_s": hc, "cpu_ratio": hc / rc,
            "page_bytes": out.stat().st_size}


def browser_figures(repo: Path, env: dict[str, str], page: Path, runs: int) -> dict[str, Any]:
    if not os.access(CHROMIUM, os.X_OK):
        return {"skipped": f"no chromium at {CHROMIUM}"}
    if sync_playwright is None:
        return {"skipped": "playwright is not installed"}
    interactive = []
    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(runs):
                tab = browser.new_page(viewport={"width": 1400, "height": 900})
                started = time.time()
                tab.goto(page.as_uri())
                tab.wait_for_selector("body[data-ready=yes]", timeout=60_000)
                tab.fill("#f-text", FILTER_TEXT)
                tab.wait_for_selector(f"#match-count[data-text='{FILTER_TEXT}']",
                                      timeout=60_000)
                rendered = int(tab.get_attribute("body", "data-rendered-at")) / 1000
                interactive.append(rendered - started)  # the page's clock: when it showed it
                tab.close()
            out.update(interactive_s=interactive,
                       interactive_median_s=statistics.median(interactive))
            for key, watch in (("live", "1"), ("live_unwatched", "0")):
                live = served_write_latency(browser, repo, dict(env, LEDGIT_WATCH=watch), runs)
                out.update({f"{key}_s": live, f"{key}_median_s": statistics.median(live)})
        finally:
            browser.close()
    return out


def served_write_latency(browser: Any, repo: Path, env: dict[str, str], runs: int
                         ) -> list[float]:
    """Seconds from a CLI write's exit until a served page rendered its card, per run."""
    lg = bench.ledgit_argv()
    live = []
    proc = subprocess.Popen([*lg, "board", "--serve"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = re.search(r"(http://\S+/)", proc.stdout.readline())
        if not url:
            raise bench.SetupError("board --serve printed no URL")
        tab = browser.new_page(viewport={"width": 1400, "height": 900})
        tab.goto(url.group(1))
        tab.wait_for_selector("body[data-ready=yes]", timeout=60_000)
        for r in range(runs):
            title = f"Board bench live write {r} {time.time_ns()}"
            tab.fill("#f-text", title)
            subprocess.run([*lg, "create", title], cwd=repo, env=env, check=True,
                           capture_output=True)
            written = time.time()
            tab.wait_for_selector(f"#view-board .card .title:text('{title}')",
                                  timeout=60_000)
            rendered = int(tab.get_attribute("body", "data-rendered-at")) / 1000
            live.append(rendered - written)  # the page's clock: when it showed it
        tab.goto("about:blank")
        tab.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    return live


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=bench.RESULTS / "board-latest.json")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir with the board")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-board-bench-"))
    try:
        env = bench.git_env(tmp / "home")
        env["LEDGIT_ACTOR"] = "bench"
        repo = tmp / "board"
        started = time.perf_counter()
        bench.build_ledgit(repo, bench.board_shapes(bench.load_shapes(args.data), args.tasks),
                           env)
        built = time.perf_counter() - started
        page = tmp / "board.html"
        results: dict[str, Any] = {"tasks": args.tasks, "runs": args.runs,
                                   "build_s": built, "load": os.getloadavg()}
        results["html"] = html_vs_rebuild(repo, env, args.runs, page)
        results["browser"] = browser_figures(repo, env, page, args.runs)
        results["load_after"] = os.getloadavg()
    finally:
        if args.keep:
            print(f"kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    h, b = results["html"], results["browser"]
    lines = [f"board page at {args.tasks:,} tasks, {args.runs} round(s), load "
             f"{results['load'][0]:.1f} -> {results['load_after'][0]:.1f}",
             f"board --html {h['html_median_s']:.2f} s / cold cache rebuild "
             f"{h['rebuild_median_s']:.2f} s = {h['ratio']:.2f}x (budget <= "
             f"{BUDGETS['html_vs_rebuild']}x): "
             f"{'PASS' if h['ratio'] <= BUDGETS['html_vs_rebuild'] else 'MISS'}; CPU "
             f"{h['html_cpu_median_s']:.2f} s / {h['rebuild_cpu_median_s']:.2f} s = "
             f"{h['cpu_ratio']:.2f}x; page {h['page_bytes'] / 1e6:.1f} MB"]
    if "skipped" in b:
        lines.append(f"browser figures skipped: {b['skipped']}")
    else:
        for key, what in (("interactive", "interactive (paint + filter)"),
                          ("live", "served page shows a write (inotify)"),
                          ("live_unwatched", "served page shows a write (LEDGIT_WATCH=0)")):
            value = b[f"{key}_median_s"]
            lines.append(f"{what}: {value:.2f} s (budget <= {BUDGETS[f'{key}_s']} s): "
                         f"{'PASS' if value <= BUDGETS[f'{key}_s'] else 'MISS'}")
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
