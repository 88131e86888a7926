"""Shared fixtures: a fresh board on disk, with no LEDGIT_* setting leaking in from outside."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgit.board import Board, init_board


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LEDGIT_ROOT / LEDGIT_ACTOR / LEDGIT_DEBUG from the calling shell."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR", "LEDGIT_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def board(tmp_path: Path, clean_env: None) -> Board:
    """An empty board at ``tmp_path/"board"``, outside any Git repository."""
    return init_board(tmp_path / "board")
