"""ledgit.storage.watch: the in-process inotify watcher on real directories (no mocks). Linux
only."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ledgit.storage import watch

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/proc/sys/fs/inotify"),
    reason="the watcher needs Linux inotify")


def write(path: str | bytes, data: bytes = b"x\n") -> None:
    with open(path, "wb") as f:
        f.write(data)


def changes(watcher: watch.Watcher, token: str) -> tuple[str, list[str]]:
    new, names = watcher.changes(token)
    assert names is not None
    return new, names


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, watch.Watcher, str]]:
    """(tasks dir, a watcher on it, a current token)."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    watcher = watch.Watcher(str(tasks))
    token, names = watcher.changes(None)
    assert names is None  # no token: cannot say
    yield str(tasks), watcher, token
    watcher.close()


# --------------------------------------------------------------------------- changes


def _modify_in_place(p: str) -> None:
    with open(p, "r+b") as f:
        f.write(b"Y")


def _append(p: str) -> None:
    with open(p, "ab") as f:  # the shell's >>
        f.write(b"more\n")


def _truncate(p: str) -> None:
    os.truncate(p, 1)


def _utime(p: str) -> None:
    os.utime(p, ns=(1_000_000_000, 1_000_000_000))


def _chmod(p: str) -> None:
    os.chmod(p, 0o600)


def _delete(p: str) -> None:
    os.unlink(p)


def _rename_over(p: str) -> None:
    tmp = p + ".tmp"
    write(tmp, b"new\n")
    os.replace(tmp, p)


def _rename_away(p: str) -> None:
    os.rename(p, p + ".gone")


@pytest.mark.parametrize("change", [
    _modify_in_place, _append, _truncate, _utime, _chmod, _delete, _rename_over, _rename_away,
])
def test_each_kind_of_change_is_reported_by_name(
        running: tuple[str, watch.Watcher, str], change: Callable[[str], None]) -> None:
    tasks, sock, _ = running
    path = os.path.join(tasks, "t-1.md")
    write(path, b"hello\n")
    write(os.path.join(tasks, "other.md"))
    token, _names = changes(sock, running[2])
    change(path)
    token2, names = changes(sock, token)
    assert "t-1.md" in names
    assert "other.md" not in names
    assert changes(sock, token2) == (token2, [])  # reported once


def test_create_is_reported(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, sock, token = running
    write(os.path.join(tasks, "new.md"))
    token2, names = changes(sock, token)
    assert names == ["new.md"]
    assert changes(sock, token2) == (token2, [])


def test_changes_are_reported_once_and_newest_first(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, sock, token = running
    assert changes(sock, token) == (token, [])
    for name in ("a.md", "b.md", "a.md", "c.md"):
        write(os.path.join(tasks, name))
    token2, names = changes(sock, token)
    assert names == ["c.md", "a.md", "b.md"]  # each name once, by its last change
    token3, names = changes(sock, token2)
    assert (token3, names) == (token2, [])
    write(os.path.join(tasks, "b.md"))
    token4, names = changes(sock, token3)
    assert names == ["b.md"]
    # An older token still covers everything since it was issued.
    assert sorted(changes(sock, token)[1]) == ["a.md", "b.md", "c.md"]


def test_a_change_right_before_the_query_is_reported(
        running: tuple[str, watch.Watcher, str]) -> None:
    """The drain argument: the event is queued inside the syscall, before the request."""
    tasks, sock, token = running
    ops: list[Callable[[str], None]] = [_modify_in_place, _append, _utime, _rename_over]
    path = os.path.join(tasks, "hot.md")
    write(path)
    token, _ = changes(sock, token)
    for i in range(300):
        ops[i % len(ops)](path)
        token, names = changes(sock, token)
        assert names[:1] == ["hot.md"], (i, ops[i % len(ops)].__name__)  # + the temp name


def test_subdirectory_contents_are_not_watched(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, sock, token = running
    os.mkdir(os.path.join(tasks, "sub"))
    token, names = changes(sock, token)
    assert names == ["sub"]
    write(os.path.join(tasks, "sub", "deep.md"))
    assert changes(sock, token) == (token, [])


ODD_NAMES = [
    "tâche-ü.md".encode(), "日本語.md".encode(), "emoji-🙂.md".encode(), b"with space.md",
    b"new\nline.md", b'quote".md', b"back\\slash.md", b"tab\t.md", b"-dash.md",
    b":colon:0.md", b"\xff\xfe-not-utf8-\xe9.md", b"\x01\x7f.md", b"{}[],.md",
]


def test_odd_names_round_trip(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, sock, token = running
    for name in ODD_NAMES:
        write(os.path.join(os.fsencode(tasks), name))
    token, names = changes(sock, token)
    assert sorted(names) == sorted(os.fsdecode(n) for n in ODD_NAMES)
    assert sorted(names) == sorted(os.listdir(tasks))
    for decoded in names:  # usable as they come back
        assert os.stat(os.path.join(tasks, decoded)).st_size == 2
        assert os.fsencode(decoded) in ODD_NAMES


# --------------------------------------------------------------------------- tokens


def test_unknown_tokens_cannot_say_and_give_a_usable_token(
        running: tuple[str, watch.Watcher, str], tmp_path: Path) -> None:
    tasks, watcher, token = running
    instance, _, seq = token.partition(":")
    bad = [None, "", "garbage", instance, f"{instance}:", f"{instance}:x", f"{instance}:-1",
           f"{instance}:{int(seq) + 5}", f"{instance}:\u0661", "0" * 16 + ":0", f"{token}:0"]
    for since in bad:
        assert watcher.changes(since) == (token, None), since
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = watch.Watcher(str(other_dir))
    try:
        other_token = other.changes(None)[0]
        assert other_token.partition(":")[0] != instance
        assert watcher.changes(other_token) == (token, None)
    finally:
        other.close()
    new, names = watcher.changes(None)
    assert names is None
    write(os.path.join(tasks, "later.md"))
    assert changes(watcher, new)[1] == ["later.md"]


def test_queue_overflow_makes_older_tokens_unknown(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, watcher, token = running
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    if limit > 200_000:
        pytest.skip("max_queued_events too large to overflow quickly")
    a, b = os.path.join(tasks, "a.md"), os.path.join(tasks, "b.md")
    write(a)
    write(b)
    token, _ = changes(watcher, token)
    for i in range(limit + 100):  # nobody drains meanwhile; alternating: no coalescing
        os.utime(a if i % 2 else b, ns=(i, i))
    new, names = watcher.changes(token)
    assert names is None
    assert changes(watcher, new) == (new, [])
    write(a)
    assert changes(watcher, new)[1] == ["a.md"]


def test_deleting_the_watched_dir_makes_every_answer_unknown(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, watcher, token = running
    os.rmdir(tasks)
    assert watcher.changes(token)[1] is None
    assert watcher.gone is not None


def test_a_replaced_directory_is_noticed(
        running: tuple[str, watch.Watcher, str]) -> None:
    tasks, watcher, token = running
    os.rename(tasks, tasks + ".old")
    os.mkdir(tasks)
    assert watcher.changes(token)[1] is None
    assert watcher.gone is not None


def test_other_directories_count_events_but_are_not_answered(tmp_path: Path) -> None:
    tasks, history = tmp_path / "tasks", tmp_path / "history"
    tasks.mkdir()
    history.mkdir()
    seen: list[int] = []
    watcher = watch.Watcher(str(tasks), [str(history)], on_events=lambda: seen.append(1))
    try:
        token = watcher.changes(None)[0]
        write(str(history / "T-1.jsonl"))
        assert watcher.drain() > 0 and seen
        assert changes(watcher, token) == (token, [])
    finally:
        watcher.close()
    assert watcher.drain() == 0  # closed: nothing more


def test_a_missing_directory_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        watch.Watcher(str(tmp_path / "missing"))
    with pytest.raises(OSError):
        watch.Watcher(str(tmp_path), [str(tmp_path / "missing")])


def test_available_honours_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    for off in ("0", "false", "No", " off "):
        monkeypatch.setenv(watch.ENV_VAR, off)
        assert not watch.available()
    monkeypatch.setenv(watch.ENV_VAR, "1")
    assert watch.available()


def test_importing_ledgit_watch_starts_nothing() -> None:
    """The module is a library: no process, no thread, no descriptor at import."""
    code = ("import os, threading; before = set(os.listdir('/proc/self/fd')); "
            "import ledgit.storage.watch; after = set(os.listdir('/proc/self/fd')); "
            "print(threading.active_count(), len(after - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "0"]
