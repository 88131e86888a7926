"""Foreign owners (issue 26, first pass's open bullet): root reads another user's repository
(``safe.directory`` allows it), then the owner writes. Run as root with an unprivileged user
(``LEDGIT_TEST_USER``, default ``nobody``; .ci/run makes one); skips elsewhere."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
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
