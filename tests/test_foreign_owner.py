"""Foreign owners (issue 26, first pass's open bullet): root reads another user's repository
(``safe.directory`` allows it), then the owner writes. Run as root with an unprivileged user
(``LEDGIT_TEST_USER``, default ``nobody``; .ci/run makes one); skips elsewhere."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from gitutil import git
from test_odd_env import _base_env, _board_repo, _other_user, _run, _text, _user_home


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A temp dir under /tmp that every user can enter."""
    path = Path(tempfile.mkdtemp(prefix="ledgit-foreign-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _owned_by_others(root: Path, uid: int) -> list[str]:
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in [*dirs, *files]
            if os.lstat(os.path.join(d, n)).st_uid != uid]


def test_root_reads_then_the_owner_writes(shared_dir: Path) -> None:
    uid = _other_user()
    root_env = _base_env(_user_home(shared_dir, 0))
    repo, ids = _board_repo(shared_dir, root_env, owner=uid)
    env = _base_env(_user_home(shared_dir, uid))
    shutil.rmtree(repo / ".git" / "ledgit", ignore_errors=True)
    assert _owned_by_others(repo, uid) == []
    for args in (["list"], ["get", ids[0]], ["search", "task"], ["verify"], ["doctor"],
                 ["cache", "status"], ["board", "--html", "-"]):
        proc = _run(args, repo, root_env)
        assert proc.returncode in (0, 1), (args, _text(proc))
        assert "Traceback" not in _text(proc)[1]
    assert _owned_by_others(repo, uid) == [], "a read as root left files of root's"
    for args in (["update", ids[0], "--title", "after root"], ["create", "new one"],
                 ["claim", ids[1]]):
        proc = _run(args, repo, env, user=uid)
        assert proc.returncode == 0, (args, _text(proc))
    listed = _run(["list"], repo, root_env)  # root still reads, and sees the writes
    assert listed.returncode == 0 and "after root" in _text(listed)[0]


def test_root_writes_then_the_owner_writes(shared_dir: Path) -> None:
    """A write as root in the user's repository gives what it makes (locks, task files,
    histories) to the owner, so the owner's next writes work."""
    uid = _other_user()
    root_env = _base_env(_user_home(shared_dir, 0))
    repo, ids = _board_repo(shared_dir, root_env, owner=uid)
    env = _base_env(_user_home(shared_dir, uid))
    shutil.rmtree(repo / ".git" / "ledgit", ignore_errors=True)
    made = _run(["create", "by root"], repo, root_env)
    assert made.returncode == 0, _text(made)
    for args in (["update", ids[0], "--title", "root was here"], ["claim", ids[1]]):
        proc = _run(args, repo, root_env)
        assert proc.returncode == 0, (args, _text(proc))
    assert _owned_by_others(repo, uid) == [], "a write as root left files of root's"
    new = _text(made)[0].strip()
    for args in (["update", ids[0], "--title", "owner again"], ["update", new, "--priority", "1"],
                 ["create", "by the owner"], ["release", ids[1], "--by", "Ada Tester"]):
        proc = _run(args, repo, env, user=uid)
        assert proc.returncode == 0, (args, _text(proc))


def _chown_all(root: Path, uid: int) -> None:
    gid = pwd.getpwuid(uid).pw_gid
    for d, dirs, files in os.walk(root):
        for n in [*dirs, *files]:
            os.lchown(os.path.join(d, n), uid, gid)
    os.chown(root, uid, gid)


def _beads_file(where: Path, count: int = 4) -> Path:
    """A small Beads export (``count`` issues), made up here: no dependency on shared data."""
    lines = [json.dumps({"id": f"bd-{n:04d}", "title": f"imported {n}", "status": "open",
                         "priority": 2, "issue_type": "task",
                         "created_at": "2026-01-01T00:00:00Z",
                         "updated_at": "2026-01-02T00:00:00Z"}) for n in range(count)]
    path = where / "issues.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o644)
    return path


def test_root_makes_a_board_then_the_owner_works_in_it(shared_dir: Path) -> None:
    """Issue 36, item 6: root's init (the board, .gitignore), install (hooks, attributes),
    an import (its staging), project add (projects.yaml), create, cache rebuild and an
    HTML page in a user's repository leave nothing of root's: the owner then writes,
    imports, registers and finds doctor quiet about owners."""
    uid = _other_user()
    root_env = _base_env(_user_home(shared_dir, 0))
    env = _base_env(_user_home(shared_dir, uid))
    (shared_dir / "lib-parent").mkdir()
    lib, _ = _board_repo(shared_dir / "lib-parent", root_env, owner=uid)
    repo = shared_dir / "repo"
    repo.mkdir()
    git("init", "-q", str(repo), cwd=shared_dir, env=root_env)
    _chown_all(repo, uid)
    beads = _beads_file(shared_dir)
    for args in (["init"], ["install"], ["import", "beads", str(beads)],
                 ["project", "add", "lib", str(lib)], ["create", "by root"],
                 ["cache", "rebuild"], ["board", "--html", "board.html"]):
        proc = _run(args, repo, root_env)
        assert proc.returncode == 0, (args, _text(proc))
    left = [p for p in _owned_by_others(repo, uid) if "/.git/objects/" not in p]
    assert left == [], "root left files of its own in the owner's repository:\n" + \
        "\n".join(left)
    first = json.loads(_text(_run(["list", "--json"], repo, env, user=uid))[0])["tasks"][0]
    for args in (["create", "by the owner"], ["import", "beads", str(beads)],
                 ["project", "add", "lib2", str(lib)], ["install"],
                 ["update", first["id"], "--title", "the owner's now"]):
        proc = _run(args, repo, env, user=uid)
        assert proc.returncode == 0, (args, _text(proc))
    doctor = _run(["doctor"], repo, env, user=uid)
    assert "owned by" not in _text(doctor)[0] and "not built" not in _text(doctor)[0], \
        _text(doctor)
    # outside Git: the board's .gitignore entry and its private dir are the owner's too
    plain = shared_dir / "plain"
    plain.mkdir()
    _chown_all(plain, uid)
    for args in (["init"], ["create", "outside git"], ["list"]):
        proc = _run(args, plain, root_env)
        assert proc.returncode == 0, (args, _text(proc))
    assert (plain / ".gitignore").exists()
    assert _owned_by_others(plain, uid) == []
    proc = _run(["create", "owner outside git"], plain, env, user=uid)
    assert proc.returncode == 0, _text(proc)


def test_doctor_names_files_not_the_owners_with_the_chown(shared_dir: Path) -> None:
    """Issue 36, item 6: board and index files another user left (an older ledgit run as
    root, a copy) are named by doctor -- the owner's and root's -- with the chown that
    fixes them; a present index is never called "not built"."""
    uid = _other_user()
    root_env = _base_env(_user_home(shared_dir, 0))
    env = _base_env(_user_home(shared_dir, uid))
    repo, ids = _board_repo(shared_dir, root_env, owner=uid)
    assert _run(["install"], repo, env, user=uid).returncode == 0
    assert _run(["list"], repo, env, user=uid).returncode == 0  # the owner's index
    index = repo / ".git" / "ledgit" / "index.sqlite3"
    assert index.is_file()
    task = repo / ".ledgit" / "tasks" / f"{ids[0]}.md"
    for path in (task, index):
        os.lchown(path, 0, 0)
    name = pwd.getpwuid(uid).pw_name
    for who, user in ((env, uid), (root_env, None)):
        proc = _run(["doctor"], repo, who, user=user)
        out = _text(proc)[0]
        assert proc.returncode == 1, out
        gap = [line for line in out.splitlines() if "not owned by" in line]
        assert len(gap) == 1, out
        assert f".ledgit/tasks/{ids[0]}.md" in gap[0] and "index.sqlite3" in gap[0]
        assert f"chown -R {name}:" in gap[0]
        assert f"{repo / '.ledgit'}" in gap[0] and f"{repo / '.git' / 'ledgit'}" in gap[0]
        assert "not built" not in out, out
    fix = gap[0].rpartition("(fix: ")[2].rstrip(")").split()
    assert fix[0] == "chown"  # root's doctor: no sudo
    subprocess.run(fix, check=True)
    proc = _run(["doctor"], repo, env, user=uid)
    assert "not owned by" not in _text(proc)[0] and "not built" not in _text(proc)[0]
    proc = _run(["update", ids[0], "--title", "mine again"], repo, env, user=uid)
    assert proc.returncode == 0, _text(proc)
