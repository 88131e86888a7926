"""Startup cost (DESIGN §10): the fast paths of ``ledgit.__main__`` import no click."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from typing import Any

import pytest

from ledgit import __version__
from ledgit.storage import config, locate

PROBE = ("import sys, runpy; sys.argv = ['ledgit', *sys.argv[1:]]\n"
         "try:\n    runpy.run_module('ledgit', run_name='__main__')\n"
         "except SystemExit as e:\n    code = e.code\n"
         "print('CLICK' if 'click' in sys.modules else 'NOCLICK', file=sys.stderr)\n"
         "sys.exit(code)\n")


def _run(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cwd is not None:  # never find a repository above the test's directory
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(cwd)
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


def test_config_name_agrees() -> None:
    assert locate.CONFIG_NAME == config.CONFIG_NAME


def test_version_imports_no_click() -> None:
    proc = _run("--version")
    assert proc.returncode == 0
    assert proc.stdout == f"ledgit {__version__}\n"
    assert proc.stderr.strip() == "NOCLICK"


def test_pre_commit_hook_imports_no_click(tmp_path: object) -> None:
    repo = str(tmp_path)
    subprocess.run(["git", "init", "-q", repo], check=True)
    proc = _run("hook", "pre-commit", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "NOCLICK"


def test_pre_commit_hook_outside_git_is_one_line(tmp_path: object) -> None:
    proc = _run("hook", "pre-commit", cwd=str(tmp_path))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert lines[0].startswith("ledgit: ") and "Traceback" not in proc.stderr



def test_a_table_command_runs_without_the_cyclic_collector(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table command is a short process: the collector is off while it runs (no
    collection, however much it allocates) and on again afterwards."""
    from ledgit.__main__ import run
    from ledgit.cli.commands import reads

    subprocess.run([sys.executable, "-m", "ledgit", "init", str(tmp_path)], check=True,
                   capture_output=True)
    monkeypatch.chdir(str(tmp_path))
    real, enabled, collections = reads.list_cmd, [], []

    def busy_list(*args: Any, **kwargs: Any) -> int:
        enabled.append(gc.isenabled())
        _ = [[i] for i in range(100_000)]  # far past the youngest generation's 700
        return real(*args, **kwargs)

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    monkeypatch.setattr(reads, "list_cmd", busy_list)
    gc.callbacks.append(count)  # (the collector holds this very list)
    try:
        assert run(["list"]) == 0
    finally:
        gc.callbacks.remove(count)
    assert enabled == [False] and collections == []
    assert gc.isenabled()
