"""Deliverable 3b: hostile input, case by case, through the real console script.

Ids with path separators, ``..``, NUL or absurd lengths; files in ``tasks/`` with hostile
names; symlinked task files (never followed for writes); YAML tags (``!!python/object``...);
alias bombs; a 50 MB body. Each is refused with one clear line (exit 2 usage/invalid or 4 not
found, DESIGN §9), fast (< 2 s, the CLI's start-up included), without a traceback and
without writing anything anywhere. Known, unfixed bugs are in test_regressions.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from stresskit import ledgit

from ledgit.core.errors import LedgitError
from ledgit.core.record import parse_record
from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board

FAST = 2.0  # CPU seconds of one command, start-up included (issue 7: "refused fast")
SANE = 20.0  # wall seconds: only a hang fails this, not a loaded machine
T0 = "2026-01-01T00:00:00.000000Z"


def _tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (symlinks as their target text), for "nothing was written"."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != "ledgit"]  # the private index may refresh
        for name in filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(path))
            out[rel] = (b"->" + os.readlink(p).encode()) if p.is_symlink() else p.read_bytes()
    return out


def _one_clear_line(err: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert "Traceback" not in err


def _task_text(tid: str, extra: str = "", title: str = "t", body: str = "") -> str:
    return (f"---\nid: {tid}\ntitle: {title}\nstatus: open\n{extra}created: {T0}\n"
            f"last_modified: {T0}\n---\n{body}")


HOSTILE_IDS = ["../x", "a/b", "/etc/passwd", "..", "Q-x/../../y", "a\\b", "x" * 300,
               "$(touch pwned)", "Q x", "Q-x\n", "ü"]
FEW_IDS = ["../x", "a/b", "Q-x/../../y"]


@pytest.mark.parametrize("command", [
    ["get", "{id}"], ["update", "{id}", "--response", "x"], ["claim", "{id}"],
    ["history", "{id}"], ["verify", "{id}"],
    ["item", "add", "{id}", "--kind", "fact", "--text", "x"],
    ["update", "T-aaaaaaaaaa", "--depends", "{id}"],
])
def test_hostile_ids_are_refused(repo: Path, env: dict[str, str], command: list[str]) -> None:
    ledgit(["create", "a real task"], repo, env)
    outside = repo.parent / "outside"
    outside.mkdir(exist_ok=True)
    before_repo, before_out = _tree(repo / ".ledgit"), _tree(outside)
    ids = HOSTILE_IDS if command[0] in ("get", "update") and "{id}" in command[1] else FEW_IDS
    for hostile in ids:
        args = [a.replace("{id}", hostile) for a in command]
        res = ledgit(args, repo, env, ok=None)
        assert res.cpu < FAST and res.seconds < SANE, res.describe()
        assert res.code in (2, 4), res.describe()
        _one_clear_line(res.err)
    assert _tree(repo / ".ledgit") == before_repo
    assert _tree(outside) == before_out
    assert not (repo / "pwned").exists()


def test_nul_and_separators_never_make_a_path(tmp_path: Path) -> None:
    """In process (argv cannot carry NUL): every id is checked before it becomes a path."""
    board: Board = init_board(tmp_path / "b")
    for hostile in ["a\0b", "\0", "T-x\0/../../etc/passwd", "a/b", "..", "../x", "", " ",
                    "x" * 129, "a\nb", "/abs"]:
        for method in (board.task_path, board.history_path):
            with pytest.raises(LedgitError) as info:
                method(hostile)
            assert info.value.code == 2 and "\n" not in str(info.value)
        assert not board.exists(hostile)
        with pytest.raises(LedgitError) as info:
            board.resolve_id(hostile)
        assert info.value.code in (2, 4)


HOSTILE_NAMES = ["a b.md", "x..y.md", "-rf.md", "ü.md", "new\nline.md", "T-a:b.md",
                 ".hidden.md", "T-z.md.tmp-1-2", "T-q.MD", "T-\x1b[31mred.md"]


def test_hostile_file_names_in_tasks_dir(repo: Path, env: dict[str, str]) -> None:
    """Files with hostile names in tasks/ are reported or ignored, never a traceback, and
    reading the board writes none of them."""
    ledgit(["create", "a real task"], repo, env)
    for name in HOSTILE_NAMES:
        (repo / ".ledgit" / "tasks" / name).write_text(_task_text("T-zzzzzzzzzz"))
    before = _tree(repo / ".ledgit")
    for args in (["list"], ["list", "--json"], ["verify", "--all"], ["ready"],
                 ["search", "real"], ["cache", "rebuild"], ["doctor", "--repair"]):
        res = ledgit(args, repo, env, ok=(0, 1, 2))
        assert "Traceback" not in res.err, res.describe()
    assert _tree(repo / ".ledgit") == before


YAML_ATTACKS = {
    "python-object-apply": "title: !!python/object/apply:os.system ['touch {pwned}']\n",
    "python-name": "title: !!python/name:os.system\n",
    "python-object-new": "x:\n  k: !!python/object/new:os.system [\"touch {pwned}\"]\n",
    "custom-tag": "title: !evil thing\n",
    "verbatim-tag": "title: !<tag:yaml.org,2002:python/object:os.system> x\n",
    "tag-directive": None,  # whole-document form below
    "binary": "title: !!binary aGVsbG8=\n",
    "set": "labels: !!set {a, b}\n",
    "tagged-map": "claim: !!python/object:dict {by: x, at: 2026-01-01T00:00:00Z}\n",
    "merge-key": "x:\n  base: &b {k: v}\n  other:\n    <<: *b\n",
    "billion-laughs": ("x:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                       + "".join(f"  {c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                                 for p, c in zip("abcdefgh", "bcdefghi", strict=True))),
    "deep-nesting": "x:\n  k: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-block-nesting": "x:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))
                          + "  " * 201 + "v\n",
    "long-key": "x:\n  " + "k" * 100_000 + ": v\n",
    "many-keys": "x:\n" + "".join(f"  k{i}: v\n" for i in range(20_000)),
}


def _attack_text(attack: str, tid: str, pwned: Path) -> str:
    fragment = YAML_ATTACKS[attack]
    if fragment is None:
        return (f"---\n%TAG !e! tag:yaml.org,2002:python/object/apply:\n---\nid: {tid}\n"
                "title: !e!os.system [x]\nstatus: open\n---\n")
    return _task_text(tid, fragment.replace("{pwned}", str(pwned)))


@pytest.mark.parametrize("attack", sorted(YAML_ATTACKS))
def test_yaml_attacks_are_refused_fast(tmp_path: Path, attack: str) -> None:
    pwned = tmp_path / "pwned"
    started = time.process_time()
    try:
        parse_record(_attack_text(attack, "T-hostile00", pwned).encode(), "hostile.md")
        accepted = True
    except LedgitError as exc:
        accepted = False
        assert "\n" not in str(exc)
        assert str(exc).startswith("hostile.md")
    assert time.process_time() - started < FAST
    # 20,000 plain keys under x: are legal: they only have to be fast.
    assert accepted == (attack == "many-keys"), f"{attack}: accepted={accepted}"
    assert not pwned.exists(), "a YAML tag ran code"


def test_yaml_attacks_through_the_cli(repo: Path, env: dict[str, str]) -> None:
    """Every attack file planted in one board: get and update refuse each with one line
    (exit 2) and rewrite none; list and verify report them; no tag runs code."""
    pwned = repo.parent / "pwned"
    planted: dict[str, Path] = {}
    for n, attack in enumerate(sorted(YAML_ATTACKS)):
        if attack == "many-keys":
            continue
        tid = f"T-hostile{n:02d}"
        path = repo / ".ledgit" / "tasks" / f"{tid}.md"
        path.write_text(_attack_text(attack, tid, pwned))
        planted[tid] = path
    before = {tid: p.read_bytes() for tid, p in planted.items()}
    calls = [["get", tid] for tid in planted] + [
        ["update", tid, "--response", "x"] for tid in planted]

    for args in calls:
        res = ledgit(args, repo, env, ok=None)
        assert res.cpu < FAST and res.seconds < SANE, res.describe()
        assert res.code == 2, res.describe()
        _one_clear_line(res.err)
    for args in (["list"], ["verify", "--all"]):
        res = ledgit(args, repo, env, ok=(0, 1))
        assert "Traceback" not in res.err
    assert {tid: p.read_bytes() for tid, p in planted.items()} == before
    assert not pwned.exists(), "a YAML tag ran code"


def test_symlinked_task_file_target_is_never_written(repo: Path, env: dict[str, str]) -> None:
    """A task file that is a symlink to a file outside the board: writes never go through
    it (the outside file keeps its bytes). Whether the write is refused or replaces the link
    is test_regressions.py's business."""
    tid = ledgit(["create", "victim", "--json"], repo, env).json()["id"]
    task = repo / ".ledgit" / "tasks" / f"{tid}.md"
    outside = repo.parent / "outside.md"
    outside.write_bytes(task.read_bytes())
    task.unlink()
    task.symlink_to(outside)
    before = outside.read_bytes()
    for args in (["update", tid, "--response", "through the link"], ["claim", tid],
                 ["record", tid], ["doctor", "--repair"], ["cache", "rebuild"]):
        res = ledgit(args, repo, env, ok=None)
        assert "Traceback" not in res.err
        assert outside.read_bytes() == before, f"{args} wrote through the symlink"


def test_symlinked_tasks_dir_entry_to_a_directory(repo: Path, env: dict[str, str]) -> None:
    """A task "file" that is a symlink to a directory is reported, not a traceback."""
    ledgit(["create", "ok"], repo, env)
    (repo / ".ledgit" / "tasks" / "T-dirlink000.md").symlink_to(repo.parent)
    for args in (["list"], ["verify", "--all"], ["get", "T-dirlink000"],
                 ["update", "T-dirlink000", "--response", "x"]):
        res = ledgit(args, repo, env, ok=None)
        assert "Traceback" not in res.err, res.describe()
        assert res.code != 70


def test_dangling_symlink_task(repo: Path, env: dict[str, str]) -> None:
    ledgit(["create", "ok"], repo, env)
    (repo / ".ledgit" / "tasks" / "T-dangling00.md").symlink_to(repo.parent / "nowhere.md")
    for args in (["list"], ["verify", "--all"], ["get", "T-dangling00"],
                 ["update", "T-dangling00", "--response", "x"], ["doctor", "--repair"]):
        res = ledgit(args, repo, env, ok=None)
        assert "Traceback" not in res.err, res.describe()
        assert res.code != 70
    assert not (repo.parent / "nowhere.md").exists()
