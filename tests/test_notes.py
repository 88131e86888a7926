"""Notes that merge (issue 24 item 2, DESIGN §4): ``ledgit note`` appends ``{at, by, text}``
to a task's notes; two sides that only appended notes, or only appended lines at the end of
the body, merge with no conflict, every line once, byte-identical whichever side is ours.
Only edits of the same existing body lines still conflict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from examples import examples
from gitflow import commit_all, create, git_rc, has_markers, ledgit, new_repo, task_file
from gitutil import CliRun, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgit.core.historymerge import merge_histories
from ledgit.core.merge import merge_notes, merge_records
from ledgit.core.record import Record, make_record, parse_record
from ledgit.core.render import render_record

pytest_plugins = ["gitutil"]

T0 = "2026-01-01T00:00:00.000000Z"


def _record(body: str, notes: list[dict[str, str]] | None = None,
            lm: str = T0) -> Record:
    fields: dict[str, Any] = {"id": "T-1", "title": "t", "status": "open", "created": T0,
                              "last_modified": lm}
    if notes:
        fields["notes"] = notes
    return make_record(fields, body)


def _note(second: int, by: str, text: str) -> dict[str, str]:
    return {"at": f"2026-01-01T00:00:{second:02d}.000000Z", "by": by, "text": text}


def _both_ways(base: Record, ours: Record, theirs: Record) -> tuple[str, list[str]]:
    one = merge_records(base, ours, theirs)
    two = merge_records(base, theirs, ours)
    text = render_record(one.record)
    assert text == render_record(two.record)
    assert one.conflicts == two.conflicts
    return text, one.conflicts


# --------------------------------------------------------------------------- the rules


def test_notes_added_on_both_sides_are_joined_oldest_first() -> None:
    n1, n2, n3 = _note(1, "ada", "base note"), _note(5, "bob", "b"), _note(3, "cy", "a")
    base = _record("", [n1])
    ours = _record("", [n1, n2], "2026-01-01T00:00:05.000000Z")
    theirs = _record("", [n1, n3], "2026-01-01T00:00:03.000000Z")
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == []
    assert parse_record(text).fields["notes"] == [n1, n3, n2]


def test_the_same_note_on_both_sides_is_kept_once() -> None:
    n1, n2 = _note(1, "ada", "x"), _note(2, "bob", "y")
    assert merge_notes([], [n1, n2], [n2]) == [n1, n2]
    assert merge_notes([], [n2], [n1, n2]) == [n1, n2]


def test_a_note_removed_by_hand_on_one_side_stays_removed() -> None:
    n1, n2 = _note(1, "ada", "x"), _note(2, "bob", "y")
    assert merge_notes([n1], [], [n1, n2]) == [n2]


def test_lines_appended_to_the_body_on_both_sides_merge_without_conflict() -> None:
    base = _record("## Goal\nShip.\n")
    ours = _record("## Goal\nShip.\nnote from ours\n", lm="2026-01-01T00:00:02.000000Z")
    theirs = _record("## Goal\nShip.\nnote from theirs\n", lm="2026-01-01T00:00:01.000000Z")
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == []
    # the earlier side's lines first
    assert parse_record(text).body == "## Goal\nShip.\nnote from theirs\nnote from ours\n"


def test_a_shared_appended_line_is_kept_once() -> None:
    base = _record("a\n")
    ours = _record("a\nshared\nmine\n", lm="2026-01-01T00:00:02.000000Z")
    theirs = _record("a\nshared\ntheirs\n", lm="2026-01-01T00:00:01.000000Z")
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == []
    assert parse_record(text).body == "a\nshared\ntheirs\nmine\n"


def test_an_appended_last_line_without_newline_does_not_run_into_the_other() -> None:
    base = _record("a\n")
    ours = _record("a\nx", lm="2026-01-01T00:00:02.000000Z")
    theirs = _record("a\ny", lm="2026-01-01T00:00:01.000000Z")
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == [] and parse_record(text).body == "a\ny\nx\n"


def test_edits_of_the_same_line_still_conflict() -> None:
    base = _record("a\nb\nc\n")
    ours = _record("a\nB1\nc\n", lm="2026-01-01T00:00:02.000000Z")
    theirs = _record("a\nB2\nc\n", lm="2026-01-01T00:00:01.000000Z")
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == ["body"]
    assert has_markers(text)


# --------------------------------------------------------------------------- the law

_LINE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                max_size=12).map(str.strip)
_AT = st.integers(0, 59)
_BY = st.sampled_from(["ada", "bob", "cy"])


@st.composite
def _appending_sides(draw: st.DrawFn) -> tuple[Record, Record, Record]:
    """A base and two sides that each only appended: notes (some the same on both sides)
    and lines at the end of the body."""
    def notes(n: int) -> list[dict[str, str]]:
        out = []
        for _ in range(n):
            text = draw(_LINE) or "n"
            out.append(_note(draw(_AT), draw(_BY), text))
        return out

    base_lines = draw(st.lists(_LINE, max_size=4))
    base_body = "".join(line + "\n" for line in base_lines)
    pool = notes(draw(st.integers(0, 6)))
    base_notes = _unique(notes(draw(st.integers(0, 3))))
    shared = draw(st.lists(_LINE, max_size=2))

    def side(seconds: int) -> Record:
        extra = [n for n in pool if draw(st.booleans())]
        ns = _unique(base_notes + extra)
        lines = draw(st.lists(_LINE, max_size=3))
        tail = (shared if draw(st.booleans()) else []) + lines
        lm = f"2026-01-02T00:00:{seconds:02d}.000000Z"
        return _record(base_body + "".join(t + "\n" for t in tail), ns, lm)

    base = _record(base_body, base_notes)
    return base, side(draw(st.integers(0, 3))), side(draw(st.integers(0, 3)))


def _unique(notes: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, ...]] = set()
    out = []
    for n in notes:
        key = (n["at"], n["by"], n["text"])
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_appending_sides())
def test_append_only_sides_merge_byte_identical_both_ways(
        sides: tuple[Record, Record, Record]) -> None:
    base, ours, theirs = sides
    text, conflicts = _both_ways(base, ours, theirs)
    assert conflicts == []
    merged = parse_record(text)
    # every note of either side, once
    keys = [(n["at"], n["by"], n["text"]) for n in merged.fields.get("notes", [])]
    want = {(n["at"], n["by"], n["text"])
            for r in (ours, theirs) for n in r.fields.get("notes", [])}
    assert len(keys) == len(set(keys)) and set(keys) == want
    # the body is the base, then both sides' appended lines, each side's in its order
    assert merged.body.startswith(base.body)
    tail = merged.body[len(base.body):].splitlines()
    for side in (ours, theirs):
        mine = side.body[len(base.body):].splitlines()
        it = iter(tail)
        assert all(line in it for line in mine), (mine, tail)
    assert len(tail) <= len(ours.body[len(base.body):].splitlines()) + len(
        theirs.body[len(base.body):].splitlines())


# --------------------------------------------------------------------------- the command


def test_note_command_appends_an_attributed_line(lg: CliRun) -> None:
    tid = lg("create", "t", "--by", "ada")[1].split()[0]
    code, out, _ = lg("note", tid, "read the parser; fine", "--by", "bob")
    assert code == 0 and "noted" in out
    notes = lg.board().read(tid).fields["notes"]
    assert [(n["by"], n["text"]) for n in notes] == [("bob", "read the parser; fine")]
    assert notes[0]["at"] <= lg.board().read(tid).fields["last_modified"]
    code, out, _ = lg("get", tid)
    assert "notes (1):" in out and "bob: read the parser; fine" in out
    assert lg("note", tid, "  ")[0] == 2
    code, _, err = lg("note", tid, "two\nlines")
    assert code == 2 and "one line" in err and err.count("\n") == 1
    assert lg("note", "T-nope", "x")[0] == 4
    assert lg("update", tid, "--set", "notes=x")[0] == 2


# --------------------------------------------------------------------------- real Git


@pytest.mark.parametrize("pull", ["--rebase", "--no-rebase"])
def test_two_clones_noting_one_task_never_stop_a_pull(tmp_path: Path, git_env: Path,
                                                      pull: str) -> None:
    origin = new_repo(tmp_path / "origin")
    tid = create(origin, "shared", "--body", "## Goal\nShip.\n")
    commit_all(origin, "task")
    git("init", "-q", "--bare", str(tmp_path / "remote.git"), cwd=tmp_path)
    git("push", "-q", str(tmp_path / "remote.git"), "HEAD:main", cwd=origin)
    clones = []
    for name in ("a", "b"):
        path = tmp_path / name
        git("clone", "-q", str(tmp_path / "remote.git"), str(path), cwd=tmp_path)
        ledgit(path, "install", "--command", f"{__import__('sys').executable} -m ledgit")
        clones.append(path)
    a, b = clones
    for who, clone in (("ada", a), ("bob", b)):
        ledgit(clone, "note", tid, f"{who} was here", "--by", who)
        path = task_file(clone, tid)
        path.write_text(path.read_text() + f"appended by {who}\n")
        ledgit(clone, "record", tid, "--by", who)
        commit_all(clone, f"{who} notes")
    git("push", "-q", "origin", "HEAD:main", cwd=a)
    proc = git_rc(b, "pull", "-q", pull, "origin", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = task_file(b, tid).read_text()
    assert not has_markers(text)
    rec = parse_record(text)
    assert sorted(n["text"] for n in rec.fields["notes"]) == ["ada was here", "bob was here"]
    assert "appended by ada\n" in rec.body and "appended by bob\n" in rec.body
    assert ledgit(b, "verify", tid).code == 0
    # the other way round gives the same bytes
    git("push", "-q", "origin", "HEAD:main", cwd=b)
    git("pull", "-q", pull, "origin", "main", cwd=a)
    if pull == "--no-rebase":
        assert task_file(a, tid).read_text() == text


def test_history_merge_of_appended_notes_agrees_with_the_task_file(lg: CliRun) -> None:
    tid = lg("create", "t", "--by", "ada")[1].split()[0]
    board = lg.board()
    base_text = board.read_history_text(tid) or ""
    base_file = board.task_file(tid)
    base_bytes = Path(base_file).read_bytes()
    lg("note", tid, "from a", "--by", "ada")
    a_text, a_rec = board.read_history_text(tid) or "", board.read(tid)
    Path(base_file).write_bytes(base_bytes)
    Path(board.history_file(tid)).write_text(base_text)
    lg("note", tid, "from b", "--by", "bob")
    b_text, b_rec = board.read_history_text(tid) or "", board.read(tid)
    one = merge_histories(base_text, a_text, b_text, tid)
    two = merge_histories(base_text, b_text, a_text, tid)
    assert not one.conflict and one.text == two.text
    base_rec = parse_record(base_bytes.decode())
    merged = merge_records(base_rec, a_rec, b_rec)
    assert one.event is not None and one.event["after"] == merged.record.revision
