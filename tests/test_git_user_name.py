"""repository.user_name is git's own answer for user.name, whatever the config files hold
(DESIGN §9)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ledgit.git import repository

CASES = [
    ("[user]\n\tname = Ada Lovelace\n", None),
    ("[User]\n  NAME=ada\n[user]\nname = second\n", None),
    ("[user \"x\"]\n\tname = sub\n", "[user]\n\tname = global\n"),
    ("[core]\n\tbare = false\n", "[user]\n\tname = from global\n"),
    ("[user]\n\tname = \"quoted  name\"\n", None),
    ("[user]\n\tname = with # comment\n", None),
    ("[user] name = same line\n", None),
    ("[include]\n\tpath = extra\n", "[user]\n\tname = g\n"),
    ("[user]\n\tname = a \\\n b\n", None),
    ("", None),
]


def _git_says(repo: Path, env: dict[str, str]) -> str | None:
    proc = subprocess.run(["git", "config", "--get", "user.name"], cwd=repo, env=env,
                          capture_output=True)
    return os.fsdecode(proc.stdout.rstrip(b"\n")) if proc.returncode == 0 else None


@pytest.mark.parametrize("local, global_", CASES)
def test_user_name_matches_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               local: str, global_: str | None) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with open(repo / ".git" / "config", "a", encoding="utf-8") as fh:
        fh.write(local)
    if global_ is not None:
        (home / ".gitconfig").write_text(global_, encoding="utf-8")
    expected = _git_says(repo, dict(os.environ))
    assert repository.user_name(repo) == expected
    # without GIT_CONFIG_NOSYSTEM
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    assert repository.user_name(repo) == _git_says(repo, dict(os.environ))
