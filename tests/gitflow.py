"""Helpers for the Git-layer tests: real repositories, worktrees, ledgit commands.

What Git runs -- the hooks and the merge driver -- is always a separate ``<python> -m ledgit``
process (``new_repo`` installs them with ``--command``), so what those tests see is what a
user gets. The commands a test itself gives (``ledgit(repo, "create", ...)``, ``verify``,
``resolve``) run in this process through :func:`ledgit.__main__.run`, the console script's own
entry point, with the working directory, environment and standard streams of the call, all
restored after: a process each cost ~0.1 s of CPU, 10x the command (issue 14's test budget).
Tests about the process itself (exit status, streams, locale, signals) run
``<python> -m ledgit`` themselves: tests/test_odd_env.py, tests/test_cli.py, stress/. Use
with the ``git_env`` fixture of :mod:`gitutil` (isolated config, HOME and identity).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitutil import git

from ledgit.__main__ import run
from ledgit.core.record import parse_record

PY = sys.executable
LEDGIT = f"{shlex.quote(PY)} -m ledgit"


class Result(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def ledgit(cwd: Path, *args: str, env: Mapping[str, str] | None = None,
           code: int | None = 0) -> Result:
    """Run ``ledgit ARGS`` in ``cwd`` in this process, ``env`` added to the environment;
    assert its exit code unless ``code`` is None. The working directory and ``os.environ``
    are restored after; an exception ledgit does not turn into an exit code fails the test."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exit_code = run([*args])
            except SystemExit as exc:  # click's standalone paths end this way
                exit_code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    result = Result(exit_code, out.getvalue(), err.getvalue())
    if code is not None:
        assert result.code == code, (f"ledgit {' '.join(args)} exited {result.code}, wanted "
                                     f"{code}:\n{result.text}")
    return result


def git_rc(cwd: Path, *args: str,
           env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` whose failure is expected or inspected (returns the process)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)


def new_repo(root: Path, *, install: bool = True) -> Path:
    """A repository at ``root`` with a board, ``ledgit install`` (unless told not to) and one
    commit."""
    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", str(root), cwd=root.parent)
    ledgit(root, "init")
    if install:
        ledgit(root, "install", "--command", LEDGIT)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "board", cwd=root)
    return root


def create(cwd: Path, title: str, *args: str) -> str:
    """Create a task; returns its id."""
    return ledgit(cwd, "create", title, *args).out.strip().splitlines()[-1]


def commit_all(cwd: Path, message: str) -> str:
    git("add", "-A", cwd=cwd)
    git("commit", "-q", "-m", message, cwd=cwd)
    return git("rev-parse", "HEAD", cwd=cwd)


def task_file(cwd: Path, tid: str) -> Path:
    return cwd / ".ledgit" / "tasks" / f"{tid}.md"


def history_file(cwd: Path, tid: str) -> Path:
    return cwd / ".ledgit" / "history" / f"{tid}.jsonl"


def fields(cwd: Path, tid: str) -> dict[str, Any]:
    """The parsed front matter of a task file."""
    return parse_record(task_file(cwd, tid).read_bytes()).fields


def event_ids(text: str) -> list[str]:
    """Event ids of a history text, in file order (duplicates kept)."""
    return [json.loads(line)["id"] for line in text.splitlines() if line.strip()]


def has_markers(text: str) -> bool:
    return re.search(r"(?m)^(<{7}|>{7})( |$)", text) is not None


def edit_body(cwd: Path, tid: str, old: str, new: str, by: str = "editor") -> None:
    """Hand-edit the body of a task file, then record the edit (``ledgit record``)."""
    path = task_file(cwd, tid)
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))
    ledgit(cwd, "record", tid, "--by", by)


BODY = ("## Goal\nShip the thing.\n\n## Notes\nFirst paragraph, kept by upstream.\n\n"
        "Middle paragraph that separates the two.\nIt has two lines.\n\n"
        "Last paragraph, kept by the feature.\n\n## Acceptance\n- it ships\n")
