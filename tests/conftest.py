"""Shared fixtures: a fresh board on disk, with no LEDGIT_* setting leaking in from outside;
``lg``, a board in a fresh Git repository driven through the CLI in-process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gitutil import CliRun, hermetic_environ, isolate_env
from skipsummary import reason_of, summary_line

from ledgit.storage.board import Board

# Long-lived processes started by tests (ledgit mcp) do not watch unless a test asks
from ledgit.storage.boardinit import init_board

# (docs/watch.md): the stat check is the baseline every test exercises.
os.environ.setdefault("LEDGIT_WATCH", "0")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying why tests skipped, counted by what they need (tests/skipsummary.py)."""
    line = summary_line(reason_of(r.longrepr) for r in terminalreporter.stats.get("skipped", ())
                        if getattr(r, "when", "") != "teardown")
    if line:
        terminalreporter.write_line(f"ledgit: {line}")


@pytest.fixture(scope="session", autouse=True)
def hermetic_machine(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test runs as on a fresh machine: see :func:`gitutil.hermetic_environ`."""
    os.environ.update(hermetic_environ(tmp_path_factory.mktemp("machine")))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LEDGIT_ROOT / LEDGIT_ACTOR / LEDGIT_DEBUG from the calling shell."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR", "LEDGIT_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def board(tmp_path: Path, clean_env: None) -> Board:
    """An empty board at ``tmp_path/"board"``, outside any Git repository."""
    return init_board(tmp_path / "board")


@pytest.fixture
def lg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
       capsys: pytest.CaptureFixture[str]) -> CliRun:
    """``ledgit init`` run in a fresh repository at ``tmp_path/"repo"`` (the working dir),
    the environment isolated (:func:`gitutil.isolate_env`); call it to run ``ledgit ARGS``.
    tests/test_cli.py has its own ``lg``."""
    root = tmp_path / "repo"
    root.mkdir()
    isolate_env(tmp_path, monkeypatch)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    run = CliRun(root, capsys)
    assert run("init")[0] == 0
    return run
