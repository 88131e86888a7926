"""What a fresh user reads: the `get` readout's labelled lines and the `unknown`-actor warning.

Real Git repositories in temp dirs, ledgit run in-process (:func:`ledgit.__main__.run`), no mocks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ledgit.__main__ import run as ledgit_run
from ledgit.cli import main as cli

WARNING = "ledgit: warning: no --by, $LEDGIT_ACTOR or git user.name: writing as 'unknown'"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def nameless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a board and no Git identity anywhere (no user.name)."""
    for key in list(os.environ):
        if key.startswith(("GIT_", "LEDGIT_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    monkeypatch.chdir(root)
    assert cli.run(["init"]) == 0
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = ledgit_run(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_writes_as_unknown_warn_once_per_command(nameless: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run(capsys, "create", "Nameless")
    assert code == 0 and err.splitlines() == [WARNING]
    tid = out.strip()
    code, _, err = _run(capsys, "update", tid, "--priority", "2")
    assert code == 0 and err.splitlines() == [WARNING]
    code, _, err = _run(capsys, "item", "add", tid, "--kind", "fact", "--text", "x")
    assert code == 0 and err.splitlines() == [WARNING]
    events = _run(capsys, "history", tid, "--json")[1]
    assert '"actor": "unknown"' in events
    # a named actor (flag, environment or Git) is not warned about; reads never are
    assert _run(capsys, "update", tid, "--priority", "1", "--by", "ada")[2] == ""
    monkeypatch.setenv("LEDGIT_ACTOR", "env-actor")
    assert _run(capsys, "update", tid, "--priority", "3")[2] == ""
    monkeypatch.delenv("LEDGIT_ACTOR")
    _git(nameless, "config", "user.name", "Git User")
    assert _run(capsys, "update", tid, "--priority", "4")[2] == ""
    assert _run(capsys, "get", tid)[2] == ""


def test_get_prints_priority_owner_worker_on_their_own_lines(
        nameless: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tid = _run(capsys, "create", "Plain", "--priority", "1", "--by", "ada")[1].strip()
    text = _run(capsys, "get", tid)[1]
    assert "priority:      1\n" in text
    assert "who:" not in text and "owner:" not in text and "worker:" not in text
    _run(capsys, "update", tid, "--owner", "olga", "--worker", "agent-a", "--by", "ada")
    lines = _run(capsys, "get", tid)[1].splitlines()
    assert "priority:      1" in lines and "owner:         olga" in lines
    assert "worker:        agent-a" in lines
    assert lines.index("priority:      1") < lines.index("owner:         olga") \
        < lines.index("worker:        agent-a")
