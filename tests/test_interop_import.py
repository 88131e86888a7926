"""``ledgit import beads``: the bulk import loop on real Beads lines, in real Git repos."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from gitutil import CliRun

from ledgit.history import parse_events
from ledgit.interop.beads import STATUS_MAP, beads_to_record
from ledgit.interop.common import Progress
from ledgit.record import render_record

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beads-issues.jsonl"
needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"{DATA} not present")



def real_lines(n: int) -> list[dict[str, Any]]:
    """The first ``n`` lines of the real snapshot with at least one of each status there."""
    if not DATA.exists():
        pytest.skip(f"{DATA} not present")
    picked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in DATA.open(encoding="utf-8"):
        obj = json.loads(line)
        if len(picked) < n or obj["status"] not in seen:
            picked.append(obj)
            seen.add(obj["status"])
    return picked


def write_jsonl(path: Path, objs: list[Any], extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines = [json.dumps(o) for o in objs] + list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_then_reimport_is_idempotent_and_changes_become_events(lg: CliRun,
                                                                      tmp_path: Path) -> None:
    objs = real_lines(30)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    code, out, err = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0, err
    assert out.strip() == f"import beads: imported {len(objs)}, updated 0, unchanged 0, skipped 0"
    board = lg.board()
    assert sorted(board.list_ids()) == sorted(o["id"] for o in objs)
    assert board.verify() == []
    first = objs[0]["id"]
    task_bytes = board.task_path(first).read_bytes()
    assert task_bytes == render_record(beads_to_record(objs[0])).encode()
    [genesis] = parse_events(board.read_history_text(first) or "", first)
    assert genesis["op"] == "create" and genesis["actor"] == "importer"
    assert genesis["meta"] == {"source": "beads", "source_id": first}
    snapshot = {tid: (board.task_path(tid).read_bytes(), board.history_path(tid).read_bytes())
                for tid in board.list_ids()}

    code, out, _ = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0
    assert out.strip().endswith(f"updated 0, unchanged {len(objs)}, skipped 0")
    assert snapshot == {tid: (board.task_path(tid).read_bytes(),
                              board.history_path(tid).read_bytes()) for tid in board.list_ids()}

    changed = dict(objs[0], title="A new title", updated_at="2026-02-01T00:00:00Z")
    tomb = next(o for o in objs if o["status"] == "open")
    deleted = dict(tomb, status="tombstone", deleted_at="2026-02-02T00:00:00Z",
                   deleted_by="batch delete", updated_at="2026-02-02T00:00:00Z")
    rest = [o for o in objs if o["id"] not in (first, tomb["id"])]
    write_jsonl(src, [changed, deleted, *rest])
    code, out, _ = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0
    assert "updated 2," in out
    assert board.read(first).fields["title"] == "A new title"
    assert board.read(tomb["id"]).fields["status"] == "archived"
    events = parse_events(board.read_history_text(tomb["id"]) or "", tomb["id"])
    assert [e["op"] for e in events] == ["create", "import"]
    assert events[1]["at"] == "2026-02-02T00:00:00.000000Z"
    assert board.verify() == []


def test_malformed_lines_are_reported_with_their_numbers(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(3)
    src = write_jsonl(tmp_path / "issues.jsonl", objs[:2],
                      ["{not json", json.dumps({"title": "no id", "status": "open"}),
                       json.dumps(objs[0])])
    code, out, err = lg("import", "beads", str(src))
    assert code == 1  # imported what it could, said what it skipped
    assert "imported 2" in out and "skipped 3" in out
    assert "issues.jsonl:3: not JSON" in err
    assert "issues.jsonl:4: id: missing" in err
    assert f"issues.jsonl:5: duplicate id {objs[0]['id']} (first at issues.jsonl:1)" in err
    assert len(lg.board().list_ids()) == 2


def test_strict_refuses_the_whole_import(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(5)
    src = write_jsonl(tmp_path / "issues.jsonl", objs, ["[1, 2]"])
    code, out, err = lg("import", "beads", str(src), "--strict")
    assert code == 2
    assert "nothing imported" in err
    assert f"issues.jsonl:{len(objs) + 1}: expected a JSON object" in err
    assert lg.board().list_ids() == []
    assert os.listdir(lg.root / ".ledgit" / "history") == []


def test_an_existing_task_of_another_origin_is_not_overwritten(lg: CliRun, tmp_path: Path) -> None:
    obj = real_lines(1)[0]
    board = lg.board()
    board.create({"title": "mine"}, "", "me", task_id=obj["id"])
    src = write_jsonl(tmp_path / "issues.jsonl", [obj])
    code, _, err = lg("import", "beads", str(src))
    assert code == 1
    assert f"id taken: {obj['id']} exists and was not imported from beads" in err
    assert board.read(obj["id"]).fields["title"] == "mine"


def test_a_crash_mid_import_is_completed_by_importing_again(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(4)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    assert lg("import", "beads", str(src))[0] == 0
    board = lg.board()
    a, b, c = (o["id"] for o in objs[:3])
    board.history_path(a).unlink()  # history lost, task file kept
    board.task_path(b).unlink()  # task file never written
    board.task_path(c).write_bytes(b"")  # task file written but not flushed
    code, out, err = lg("import", "beads", str(src))
    assert code == 0, err
    assert "imported 3" in out
    assert board.verify() == []


def test_progress_bar_only_on_a_terminal() -> None:
    class Term:
        def __init__(self, tty: bool) -> None:
            self.text, self.tty = "", tty

        def isatty(self) -> bool:
            return self.tty

        def write(self, s: str) -> int:
            self.text += s
            return len(s)

        def flush(self) -> None:
            pass

    for tty in (True, False):
        term = Term(tty)
        bar = Progress("import beads", 3, term)  # type: ignore[arg-type]
        for _ in range(3):
            bar.advance()
        bar.close()
        assert ("3/3" in term.text) is tty


@needs_data
def test_the_real_snapshot(lg: CliRun) -> None:
    code, out, err = lg("import", "beads", str(DATA), "--by", "importer")
    assert code == 0, err
    assert out.strip() == "import beads: imported 5722, updated 0, unchanged 0, skipped 0"
    board = lg.board()
    assert len(board.list_ids()) == 5722
    assert board.verify() == []
    source = Counter(json.loads(line)["status"] for line in DATA.open(encoding="utf-8"))
    expected: Counter[str] = Counter()
    for status, n in source.items():
        expected[STATUS_MAP.get(status, "open")] += n
    got = Counter(board.read(tid).fields["status"] for tid in board.list_ids())
    assert got == expected
    assert got == Counter({"archived": 3319, "done": 2259, "open": 131, "in_progress": 13})
    code, out, _ = lg("import", "beads", str(DATA))
    assert out.strip().endswith("unchanged 5722, skipped 0")
