"""Hard edges, second pass (issue 26): what a cloned repository or a special file can do.

Each test is one bullet of the issue's "What was seen", run against real Git repositories and
real special files (FIFOs, character devices made with mknod as root, /dev/zero).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from gitutil import CliRun, git

from ledgit.core.errors import LedgitError
from ledgit.git import objects as gitmod
from ledgit.integration.links import links_at, staged_links
from ledgit.integration.precommit import pre_commit
from ledgit.storage.taskfiles import is_valid_id

IO_ERROR = 74


def _commit_all(root: Path, message: str = "board") -> None:
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", message, cwd=root)


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


@pytest.fixture
def cloned_link(lg: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose commit holds ``.ledgit/tasks -> ../../victim``, cloned: the clone's
    work tree (the working directory), with ``tmp_path/victim`` an existing directory."""
    root = lg.root
    lg("create", "first")
    _commit_all(root)
    git("rm", "-r", "-q", "--cached", ".ledgit/tasks", cwd=root)
    for f in (root / ".ledgit" / "tasks").iterdir():
        f.unlink()
    (root / ".ledgit" / "tasks").rmdir()
    os.symlink("../../victim", root / ".ledgit" / "tasks")
    git("add", ".ledgit/tasks", cwd=root)
    git("commit", "-q", "--no-verify", "-m", "evil", cwd=root)
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("mine\n")
    git("clone", "-q", str(root), str(tmp_path / "clone" / "c"), cwd=tmp_path)
    clone = tmp_path / "clone" / "c"
    assert (clone / ".ledgit" / "tasks").is_symlink()
    monkeypatch.chdir(clone)
    return clone


def test_cloned_symlink_is_named_by_verify_and_doctor(lg: CliRun, cloned_link: Path) -> None:
    code, out, err = lg("verify", "--rev", "HEAD")
    assert code == 1, (out, err)
    assert ".ledgit/tasks is a symbolic link inside a board" in out + err
    code, out, err = lg("verify", "--range", "HEAD~1..HEAD")
    assert code == 1 and ".ledgit/tasks is a symbolic link" in out + err
    code, out, err = lg("doctor")
    assert code == 1
    assert "HEAD commits .ledgit/tasks as a symbolic link inside a board" in out + err
    assert "is a symbolic link to ../../victim, outside the board" in out + err


def test_cloned_symlink_writes_nothing_outside(lg: CliRun, cloned_link: Path,
                                              tmp_path: Path) -> None:
    victim = tmp_path / "clone" / "victim"
    victim.mkdir()  # where ../../victim points from the clone's .ledgit/
    before = _tree(victim)
    for args in (("create", "x"), ("list",), ("init",), ("update", "T-x", "--priority", "1")):
        code, out, err = lg(*args)
        assert code == 2, (args, out, err)
        assert err.count("\n") == 1 and "symbolic link to ../../victim" in err, err
    code, out, _ = lg("doctor", "--repair")
    assert code == 1 and "symbolic link to ../../victim" in out
    assert _tree(victim) == before and list(victim.iterdir()) == []


def test_hook_refuses_a_staged_board_link(lg: CliRun, tmp_path: Path) -> None:
    root = lg.root
    assert lg("install")[0] == 0
    lg("create", "first")
    _commit_all(root)
    os.symlink("/etc", root / ".ledgit" / "history" / "T-evil.jsonl")
    git("add", ".ledgit/history/T-evil.jsonl", cwd=root)
    proc = subprocess.run(["git", "commit", "-q", "-m", "evil"], cwd=root,
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert ".ledgit/history/T-evil.jsonl is a symbolic link inside a board" in proc.stderr


def test_task_file_link_and_fifo_are_not_followed(lg: CliRun, tmp_path: Path) -> None:
    """A task file that is a link to a file outside, or a FIFO: no read follows or blocks."""
    root = lg.root
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    tid = "T-aaaaaaaaaa"
    os.symlink(outside, root / ".ledgit" / "tasks" / f"{tid}.md")
    os.mkfifo(root / ".ledgit" / "tasks" / "T-bbbbbbbbbb.md")
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(
        subprocess_run(root, "verify")), daemon=True)
    worker.start()
    worker.join(60)
    assert result, "ledgit verify blocked on a FIFO"
    code, _, err = lg("get", tid)
    assert code == 2 and "symbolic link" in err
    assert outside.read_text() == "secret\n"


def subprocess_run(cwd: Path, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return proc.returncode, proc.stdout, proc.stderr


# --------------------------------------------------------------------------- special outputs


@pytest.fixture
def full_device(tmp_path: Path) -> Path:
    """A character device like /dev/full (1, 7), made in ``tmp_path`` (root only), so that a
    failure of the test cannot replace the machine's /dev/full."""
    path = tmp_path / "full"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except (PermissionError, AttributeError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return path


@pytest.mark.parametrize("command", [["board", "--html"], ["export", "stateframe", "T", "-o"]])
def test_a_device_output_is_written_in_place(lg: CliRun, full_device: Path,
                                             command: list[str]) -> None:
    tid = lg("create", "x")[1].strip()
    args = [tid if a == "T" else a for a in command]
    code, out, err = lg(*args, str(full_device))
    assert code == IO_ERROR, (out, err)
    assert stat.S_ISCHR(full_device.lstat().st_mode), "the device was replaced"
    assert "wrote" not in err and err.count("\n") == 1


def test_dev_null_output_stays_a_device(lg: CliRun, tmp_path: Path) -> None:
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    tid = lg("create", "x")[1].strip()
    assert lg("export", "stateframe", tid, "-o", str(null))[0] == 0
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_a_fifo_output_is_written_in_place_or_refused(lg: CliRun, tmp_path: Path) -> None:
    tid = lg("create", "x")[1].strip()
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, _, err = lg("export", "stateframe", tid, "-o", str(fifo))  # nobody reads it
    assert code == 2 and "FIFO that nobody reads" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, before the writer opens
    try:
        reader = threading.Thread(target=lambda: got.append(_drain(fd)), daemon=True)
        code, _, err = lg("export", "stateframe", tid, "-o", str(fifo))
        reader.start()
        reader.join(30)
    finally:
        os.close(fd)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert b'"schema"' in got[0] or b"{" in got[0]


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, True)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------- special inputs


def test_body_file_dev_zero_is_refused_quickly(lg: CliRun) -> None:
    code, _, err = lg("create", "t", "--body-file", "/dev/zero")
    assert code == 2, err
    assert "/dev/zero" in err and "over the limit of 10 MiB" in err
    assert lg.board().list_ids() == []


def test_import_dev_zero_is_refused(lg: CliRun) -> None:
    for kind in ("beads", "stateframe"):
        code, _, err = lg("import", kind, "/dev/zero")
        assert code == 2, (kind, err)
        assert "/dev/zero" in err and "larger than" in err
    assert lg.board().list_ids() == []


def test_body_file_from_a_pipe_still_works(lg: CliRun, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"from a pipe\r\n")
    os.close(write_end)
    try:
        code, out, err = lg("create", "t", "--body-file", f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert code == 0, err
    assert lg.board().read(out.strip()).body.startswith("from a pipe\n")


# --------------------------------------------------------------------------- hand layout


HAND_LAYOUTS = [
    ("depends_on: []", lambda t: t.replace("status: open\n", "status: open\ndepends_on: []\n")),
    ("an unquoted timestamp", lambda t: t.replace('created: "', "created: ").replace(
        'Z"\nlast', "Z\nlast", 1)),
    ("a single-quoted timestamp", lambda t: t.replace('created: "', "created: '").replace(
        'Z"\nlast', "Z'\nlast", 1)),
    ("key order", lambda t: t.replace("status: open\n", "").replace("id:", "status: open\nid:")),
    ("flow vs block", lambda t: t.replace("status: open\n",
                                          "status: open\nlabels:\n  - a\n  - b\n")),
    ("trailing spaces", lambda t: t.replace("status: open\n", "status: open   \n")),
    ("an empty field", lambda t: t.replace("status: open\n", "status: open\nowner:\n")),
    ("a double-quoted title", lambda t: t.replace("title: Hand\n", 'title: "Hand edited"\n')),
]


@pytest.mark.parametrize(("what", "edit"), HAND_LAYOUTS, ids=[h[0] for h in HAND_LAYOUTS])
@pytest.mark.parametrize("command", [("record", "ID"), ("check", "--fix")])
def test_harmless_hand_layout_is_normalised_and_said(lg: CliRun, what: str, edit: object,
                                                     command: tuple[str, str]) -> None:
    """What was seen: ``record`` of ``depends_on: []`` or a re-quoted timestamp exited 2
    asking for ``--normalize``; nothing would have been lost."""
    tid = lg("create", "Hand")[1].strip()
    path = lg.root / ".ledgit" / "tasks" / f"{tid}.md"
    text = path.read_text()
    changed = edit(text)  # type: ignore[operator]
    assert changed != text, what
    changed = changed.replace("title: Hand\n", "title: Hand edited\n")  # a real edit too
    assert "Hand edited" in changed
    path.write_text(changed)
    code, out, err = lg(*(tid if a == "ID" else a for a in command))
    assert code == 0, (what, out, err)
    said = [line for line in out.splitlines() if "in the canonical form" in line]
    assert len(said) == 1, out
    after = path.read_text()
    assert after.startswith("---\nid: ") and after.endswith("\n")
    assert lg("verify", tid)[0] == 0
    assert lg.board().read(tid).fields["title"] == "Hand edited"


def test_a_comment_is_still_refused(lg: CliRun) -> None:
    tid = lg("create", "Hand")[1].strip()
    path = lg.root / ".ledgit" / "tasks" / f"{tid}.md"
    path.write_text(path.read_text().replace("title: Hand\n", "title: Hand2  # why\n"))
    code, _, err = lg("record", tid)
    assert code == 2 and "a YAML comment ('# why') would not be kept" in err
    assert "# why" in path.read_text()


# --------------------------------------------------------------------------- git options


@pytest.mark.parametrize("args", [
    ["verify", "--rev", "--output=OUT"], ["verify", "--rev=--output=OUT"],
    ["verify", "--range", "--output=OUT..HEAD"], ["verify", "--range", "HEAD..--output=OUT"],
    ["verify", "--rev", "-h"], ["verify", "--rev", "--all"],
])
def test_a_revision_is_never_an_option_to_git(lg: CliRun, tmp_path: Path,
                                              args: list[str]) -> None:
    lg("create", "x")
    _commit_all(lg.root)
    out_file = tmp_path / "out"
    code, out, err = lg(*(a.replace("OUT", str(out_file)) for a in args))
    assert code == 2, (out, err)
    assert "not a valid commit name" in err and err.count("\n") == 1, err
    assert not out_file.exists()


def test_git_plumbing_takes_option_like_revisions_as_revisions(lg: CliRun,
                                                               tmp_path: Path) -> None:
    lg("create", "x")
    _commit_all(lg.root)
    out_file = tmp_path / "out"
    for call in (lambda: gitmod.board_paths_at(lg.root, f"--output={out_file}"),
                 lambda: gitmod.index_diff_paths(lg.root, f"--output={out_file}"),
                 lambda: gitmod.tree_diff_paths(lg.root, f"--output={out_file}", "HEAD"),
                 lambda: links_at(lg.root, f"--output={out_file}"),
                 lambda: staged_links(lg.root, f"--output={out_file}")):
        with pytest.raises(LedgitError):
            call()
    assert not out_file.exists()


def test_imported_names_come_only_from_valid_ids(lg: CliRun, tmp_path: Path) -> None:
    """Importers pick file names from source ids: an id that is a path gets an id of
    ledgit's own (the source id kept in ``x``), nothing is written outside the board."""
    source = tmp_path / "issues.jsonl"
    lines = [{"id": i, "title": "evil", "status": "open", "priority": 2,
              "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
             for i in ("../../../escape", "/abs/path", "a/b", "..", "ok-1")]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = lg("import", "beads", str(source))
    assert "Traceback" not in err
    assert code == 0, err
    ids = lg.board().list_ids()
    assert len(ids) == 5 and "ok-1" in ids and all(is_valid_id(t) for t in ids), ids
    for sub, suffix in (("tasks", ".md"), ("history", ".jsonl")):
        names = sorted(p.name for p in (lg.root / ".ledgit" / sub).iterdir())
        assert names == sorted(t + suffix for t in ids)
    assert not (tmp_path / "escape.md").exists() and not list(tmp_path.glob("*.md"))


def test_pre_commit_with_discovery_names_a_staged_board_link(lg: CliRun,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    """The hook's other path (run from anywhere, with discovery: precommit.pre_commit)."""
    root = lg.root
    lg("create", "first")
    _commit_all(root)
    os.symlink("../../victim", root / ".ledgit" / "evil")
    git("add", ".ledgit/evil", cwd=root)
    capsys.readouterr()
    assert pre_commit(root / ".ledgit") == 1
    assert ".ledgit/evil is a symbolic link inside a board" in capsys.readouterr().err
