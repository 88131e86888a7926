"""``ledgit install`` / ``uninstall`` / ``doctor`` on real repositories."""

from __future__ import annotations

import os
from pathlib import Path

from gitflow import LEDGIT, PY, commit_all, create, history_file, ledgit, task_file
from gitutil import git

from ledgit.integration.hookblock import BEGIN, END, HOOKS

pytest_plugins = ["gitutil"]


def _snapshot(repo: Path) -> dict[str, bytes]:
    """Every file install may touch: shared config, attributes, hooks dir."""
    out = {"config": (repo / ".git" / "config").read_bytes()}
    attrs = repo / ".gitattributes"
    if attrs.exists():
        out[".gitattributes"] = attrs.read_bytes()
    for p in sorted((repo / ".git" / "hooks").iterdir()):
        out[f"hooks/{p.name}"] = p.read_bytes() + (b"+x" if os.access(p, os.X_OK) else b"")
    return out


def _plain_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    git("init", "-q", str(repo), cwd=tmp_path)
    ledgit(repo, "init")
    commit_all(repo, "board")
    return repo


def test_install_is_idempotent_and_uninstall_removes_exactly_it(tmp_path: Path,
                                                                git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    before = _snapshot(repo)
    ledgit(repo, "install", "--command", LEDGIT)
    once = _snapshot(repo)
    assert git("config", "merge.ledgit.driver", cwd=repo) == \
        f"{LEDGIT} merge-driver %O %A %B %L %P"
    assert git("check-attr", "merge", "--", ".ledgit/tasks/x.md", cwd=repo).endswith("ledgit")
    for name in HOOKS:
        assert BEGIN in (repo / ".git" / "hooks" / name).read_text()
    r = ledgit(repo, "install", "--command", LEDGIT)
    assert "already" in r.out
    assert _snapshot(repo) == once
    ledgit(repo, "uninstall")
    assert _snapshot(repo) == before
    assert "nothing to remove" in ledgit(repo, "uninstall").out


def test_existing_hooks_are_chained(tmp_path: Path, git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "log"
    sh_hook = hooks / "post-merge"
    sh_hook.write_text(f"#!/bin/sh\necho \"own post-merge $*\" >> '{log}'\nexit 0\n")
    sh_hook.chmod(0o755)
    py_hook = hooks / "pre-commit"
    py_hook.write_text("#!/usr/bin/env python3\n"
                       f"open({str(log)!r}, 'a').write('own pre-commit\\n')\n")
    py_hook.chmod(0o755)
    original = {p: p.read_bytes() for p in (sh_hook, py_hook)}
    ledgit(repo, "install", "--command", LEDGIT)
    text = sh_hook.read_text()
    assert text.startswith("#!/bin/sh\n" + BEGIN) and "own post-merge" in text
    assert (hooks / "pre-commit.pre-ledgit").read_bytes() == original[py_hook]
    tid = create(repo, "A task", "--by", "a")
    commit_all(repo, "a commit runs both pre-commit hooks")
    assert "own pre-commit" in log.read_text()
    git("checkout", "-q", "-b", "side", cwd=repo)
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    commit_all(repo, "side")
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "--ff-only", "side", cwd=repo)
    assert "own post-merge 0" in log.read_text()
    ledgit(repo, "uninstall")
    assert {p: p.read_bytes() for p in (sh_hook, py_hook)} == original
    assert not (hooks / "pre-commit.pre-ledgit").exists()


def test_core_hooks_path_is_respected(tmp_path: Path, git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    git("config", "core.hooksPath", "githooks", cwd=repo)
    ledgit(repo, "install", "--command", LEDGIT)
    assert all((repo / "githooks" / n).is_file() for n in HOOKS)
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    ledgit(repo, "doctor")
    ledgit(repo, "uninstall")
    assert not any((repo / "githooks").iterdir())


def test_pre_commit_framework_gets_the_snippet_not_our_hooks(tmp_path: Path,
                                                             git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")
    r = ledgit(repo, "install", "--command", LEDGIT)
    assert "default_install_hook_types: [pre-commit, post-checkout, post-merge, post-rewrite, " \
        "pre-merge-commit]" in r.out
    assert "id: ledgit-check" in r.out and "id: ledgit-index" in r.out
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    d = ledgit(repo, "doctor", code=1)
    assert "does not use hook id ledgit-check" in d.out and "pre-commit install" in d.out


def test_doctor_checks_every_worktree_and_fix_closes_the_gaps(tmp_path: Path,
                                                              git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    git("worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"), cwd=repo)
    r = ledgit(repo, "doctor", code=1)
    for wt in (repo, tmp_path / "wt"):
        assert f"gap: {wt}: merge.ledgit.driver is not configured" in r.out
    assert "(fix: ledgit install)" in r.out
    r = ledgit(repo, "doctor", "--fix")
    assert "fixed:" in r.out and "ok: 2 worktree(s) checked" in r.out
    ledgit(tmp_path / "wt", "doctor")


def test_doctor_repair_rolls_an_interrupted_write_forward(tmp_path: Path,
                                                          git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    ledgit(repo, "install", "--command", LEDGIT)
    tid = create(repo, "Crash me", "--by", "a")
    old = task_file(repo, tid).read_bytes()
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    # a crash between the history append and the rename: the file is one write behind
    task_file(repo, tid).write_bytes(old)
    os.utime(history_file(repo, tid), None)
    r = ledgit(repo, "doctor", code=1)
    assert f"interrupted writes: {tid}" in r.out and "ledgit doctor --repair" in r.out
    r = ledgit(repo, "doctor", "--repair", "--fix")
    assert "repaired:" in r.out
    assert "priority: 1" in task_file(repo, tid).read_text()
    ledgit(repo, "verify")


def test_hook_block_survives_reinstall_with_another_command(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo = _plain_repo(tmp_path)
    ledgit(repo, "install", "--command", LEDGIT)
    ledgit(repo, "install", "--command", "ledgit")
    text = (repo / ".git" / "hooks" / "pre-commit").read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert "command -v ledgit" in text
    ledgit(repo, "uninstall")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_install_says_the_next_step_and_shows_the_driver_as_typed(tmp_path: Path,
                                                                  git_env: Path) -> None:
    """Issue 18: before ``ledgit init``, install says there is no board and how to make one;
    the driver is shown as a person would type it (``ledgit`` when PATH's ``ledgit`` is this
    installation, else ``<python> -m ledgit``), while the config keeps the exact command."""
    repo = tmp_path / "repo"
    git("init", "-q", str(repo), cwd=tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "ledgit"
    script.write_text(f"#!{PY}\nfrom ledgit.__main__ import main\nmain()\n")
    script.chmod(0o755)
    path = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    r = ledgit(repo, "install", env=path)
    lines = r.out.splitlines()
    assert lines[0].startswith("merge driver: configured in ")
    assert lines[0].endswith(": ledgit merge-driver %O %A %B %L %P "
                             "(exact command: git config merge.ledgit.driver)")
    assert "board: none here yet; make one with: ledgit init (then commit .ledgit/ and " \
           ".gitattributes)" in lines
    assert "sys.path" not in r.out
    assert "from ledgit.__main__ import main" in git("config", "merge.ledgit.driver", cwd=repo)
    script.write_text("#!/bin/sh\necho another ledgit\n")  # not this installation
    r = ledgit(repo, "install", env=path)
    assert r.out.splitlines()[0] == (f"merge driver: already configured: {LEDGIT} "
                                     "merge-driver %O %A %B %L %P")
    ledgit(repo, "init")
    r = ledgit(repo, "install", env=path)
    assert not [line for line in r.out.splitlines() if line.startswith("board:")]
    assert "index: 0 task(s) indexed" in r.out
