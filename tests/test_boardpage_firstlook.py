"""Issue 28, "The board's first look", in Debian's chromium (playwright) at 1280x800 and
1440x900: a board one day old, made with the CLI by three agents, fits the window (empty
columns are narrow strips, a button shows them), explains UNKNOWN where it appears, shows
times as relative and local with the stamp on hover, and plots it by the hour with every
agent's dot visible. Screenshots go to $LEDGIT_SCREENSHOTS (else the test's tmp dir).

Skips, saying why, without chromium, playwright or jinja2 (the 'board' extra).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SIZES = [(1280, 800), (1440, 900)]
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")

if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no chromium at {CHROMIUM} (.ci/run installs it with apt-get as root)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install playwright)")
pytest.importorskip("jinja2", reason="the board page needs the 'board' extra (jinja2)")


def _ledgit(cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, f"ledgit {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def one_day_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh board: six tasks, three agents claiming two of them each (the same counts, so
    their plot lines coincide), one task done, some claims stale; only some columns hold
    cards."""
    tmp = tmp_path_factory.mktemp("firstlook")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEDGIT_"))
           or k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")}
    env.update(HOME=str(tmp), LEDGIT_WATCH="0")
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    _ledgit(repo, env, "init")
    ids = [_ledgit(repo, env, "create", f"Task number {n}", "--priority", str(n % 5),
                   "--by", "lead") for n in range(6)]
    for agent, (a, b) in zip(("ann", "bob", "cy"), ((0, 1), (2, 3), (4, 5)), strict=True):
        _ledgit(repo, env, "claim", ids[a], "--by", agent)
        _ledgit(repo, env, "claim", ids[b], "--by", agent)
    _ledgit(repo, env, "complete", ids[5], "--response", "done it", "--by", "cy")
    # bob's claims go stale (a one-second TTL, then two seconds): UNKNOWN on their cards
    config = repo / ".ledgit" / "config.yaml"
    config.write_text(config.read_text().replace("claim_ttl: 30m", "claim_ttl: 1"))
    time.sleep(2)
    _ledgit(repo, env, "heartbeat", ids[0], "--by", "ann")
    _ledgit(repo, env, "heartbeat", ids[4], "--by", "cy")
    out = tmp / "board.html"
    _ledgit(repo, env, "board", "--html", str(out))
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("LEDGIT_SCREENSHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.mark.parametrize("width, height", SIZES)
def test_the_board_fits_the_window_and_explains_itself(
        browser: Any, one_day_page: Path, tmp_path: Path, width: int, height: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(one_day_page.as_uri())
        page.wait_for_selector("body[data-ready=yes]", timeout=30_000)
        shots = _shots(tmp_path)
        page.screenshot(path=str(shots / f"board-{width}x{height}.png"))
        # fits: no horizontal scrolling, every column inside the window
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        board = page.query_selector("#view-board")
        assert board.evaluate("n => n.scrollWidth <= n.clientWidth")
        for column in page.query_selector_all("#view-board .column"):
            box = column.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
        # empty columns are narrow strips, named on hover; a button widens them
        empty = page.query_selector_all("#view-board .column.empty")
        full = page.query_selector_all("#view-board .column:not(.empty)")
        assert len(empty) >= 3 and len(full) >= 2
        assert all(c.bounding_box()["width"] < 40 for c in empty)
        assert all("no task" in c.get_attribute("title") for c in empty)
        toggle = page.query_selector("#toggle-empty")
        assert toggle.is_visible() and toggle.inner_text() == f"show {len(empty)} empty columns"
        toggle.click()
        assert not page.query_selector_all("#view-board .column.empty")
        assert toggle.inner_text().startswith("hide ")
        page.screenshot(path=str(shots / f"board-all-columns-{width}x{height}.png"))
        toggle.click()
        # UNKNOWN is explained where it appears: a legend, and each mark's own reasons
        marks = page.query_selector_all("#view-board .unknown-mark")
        assert marks, "stale claims are UNKNOWN on their cards"
        assert page.is_visible("#unknown-legend")
        assert "does not say" in page.inner_text("#unknown-legend")
        for mark in marks:
            assert mark.get_attribute("title").startswith("UNKNOWN: the record does not say")
        # times: relative and local, the RFC 3339 stamp on hover
        generated = page.query_selector("#generated")
        assert not ISO.search(generated.inner_text()), generated.inner_text()
        assert re.search(r"just now|ago", generated.inner_text())
        assert ISO.match(generated.get_attribute("title"))
        page.keyboard.press("a")
        times = page.query_selector_all("#view-lanes time")
        assert len(times) >= 6
        for t in times:
            assert not ISO.search(t.inner_text()) and ISO.match(t.get_attribute("title"))
        assert not ISO.search(page.inner_text("#view-lanes"))
        page.screenshot(path=str(shots / f"lanes-{width}x{height}.png"))
        # plots of a one-day board: by the hour, inside the frame, no dot hidden by another
        page.keyboard.press("p")
        page.screenshot(path=str(shots / f"plots-{width}x{height}.png"), full_page=True)
        for plot in ("#plot-opened-done svg", "#plot-claims svg"):
            svg = page.query_selector(plot)
            assert svg.get_attribute("data-unit") == "hour"
            dots = svg.eval_on_selector_all("circle", "cs => cs.map(c => [c.getAttribute("
                                            "'cx'), c.getAttribute('cy'), c.getAttribute("
                                            "'fill')])")
            assert len({(x, y) for x, y, _ in dots}) == len(dots), dots  # none on another
            xs = sorted({float(x) for x, _, _ in dots})
            assert xs[-1] - xs[0] > 100, xs  # spread along the axis, not on it
        agents = page.eval_on_selector_all("#plot-claims svg .legend", "ts => ts.map("
                                           "t => t.querySelector('title').textContent)")
        assert agents == ["ann (2)", "bob (2)", "cy (2)"]
    finally:
        context.close()
    assert not errors, errors
