"""Real Git repositories for tests: an isolated environment, a ``git`` helper, fixtures.

Use the fixtures with ``pytest_plugins = ["gitutil"]`` in a test module (importing them by
name upsets ruff); import :func:`git` and :func:`commit_file` directly. No ``assert`` here, so
PYTEST_DONT_REWRITE: pytest need not warn that the module was imported before its plugin use.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from ledgit.__main__ import run
from ledgit.storage.board import Board

IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Tester", "GIT_AUTHOR_EMAIL": "ada@example.invalid",
    "GIT_COMMITTER_NAME": "Ada Tester", "GIT_COMMITTER_EMAIL": "ada@example.invalid",
}


def git(*args: str, cwd: Path, env: Mapping[str, str] | None = None,
        input: bytes | None = None, check: bool = True) -> str:
    """Run ``git ARGS`` in ``cwd`` and return stdout without its final newline.

    ``env`` is added to the current environment. A failure fails the test with git's stderr
    (pass ``check=False`` to expect one, e.g. a conflicting merge).
    """
    proc = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **(env or {})},
                          input=input, capture_output=True)
    if check and proc.returncode != 0:
        pytest.fail(f"git {' '.join(args)} exited {proc.returncode}:\n"
                    f"{proc.stderr.decode(errors='replace')}")
    return os.fsdecode(proc.stdout).removesuffix("\n")


def commit_file(repo: Path, path: str, content: str | bytes, message: str = "edit") -> str:
    """Write ``path`` (repo-relative), stage it, commit; return the new commit id."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    target.write_bytes(content)
    git("add", "--", path, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


def hermetic_environ(machine: Path) -> dict[str, str]:
    """The environment of a fresh machine below ``machine`` (a session's temp dir): a Git
    global config of our own (``init.defaultBranch=main``, an identity) with no system config,
    ``HOME``, XDG dirs and the pip/npm caches inside ``machine``, so no test reads or writes the
    developer's Git config, ``~/.cache`` or ``~/.npm`` (issues 12 and 18)."""
    home = machine / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = machine / "gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n"
                         "[user]\n\tname = Ada Tester\n\temail = ada@example.invalid\n"
                         "[advice]\n\tdetachedHead = false\n", encoding="utf-8")
    return {
        "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share"),
        "PIP_CACHE_DIR": str(home / ".cache/pip"), "npm_config_cache": str(home / ".npm"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def isolate_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GIT_* or LEDGIT_* setting from outside, HOME at ``home``, no system Git config, no
    in-process watching (LEDGIT_WATCH=0: tests that need it turn it on themselves). The
    session's own Git global config (:func:`hermetic_environ`) is kept."""
    keep = {key: os.environ[key] for key in ("GIT_CONFIG_GLOBAL",) if key in os.environ}
    for key in list(os.environ):
        if key.startswith(("GIT_", "LEDGIT_")):
            monkeypatch.delenv(key)
    for key, value in keep.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LEDGIT_WATCH", "0")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


class CliRun:
    """``ledgit ARGS`` in-process in a repository: (exit code, stdout, stderr)."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root, self.capsys = root, capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = run(list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def board(self) -> Board:
        return Board(self.root)


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An environment no machine setting leaks into: no GIT_* from outside, no system config,
    a throwaway HOME whose global config sets identity and ``init.defaultBranch=main``.
    Yields that HOME."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ada Tester\n\temail = ada@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    yield home


@pytest.fixture
def git_repo(tmp_path: Path, git_env: Path) -> Path:
    """A fresh non-bare repository (branch ``main``, no commits yet) at ``tmp_path/"repo"``."""
    repo = tmp_path / "repo"
    git("init", "-q", str(repo), cwd=tmp_path)
    return repo
