"""Stateframe task.ledger.json import/export (ledgit.interop.stateframe), against the vendored
schema of the real project and its real example file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from gitutil import CliRun

from ledgit.core.errors import LedgitError
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.record import parse_record
from ledgit.core.render import render_record
from ledgit.interop.stateframe import (
    ledger_to_record,
    problems,
    record_to_ledger,
    schema,
)
from ledgit.storage.board import Board
from ledgit.storage.writepath import create_task

HERE = Path(__file__).resolve().parent
# Stateframe's own example ledger (github.com/42amps/stateframe, MIT: tests/data/stateframe/LICENSE)
EXAMPLE = HERE / "data" / "stateframe" / "task.ledger.json"
TASK = "11111111-1111-4111-8111-111111111111"
C1, C2 = "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
I1, I2, I3 = ("55555555-5555-4555-8555-555555555555", "66666666-6666-4666-8666-666666666666",
              "77777777-7777-4777-8777-777777777777")


def example() -> dict[str, Any]:
    """The vendored example: always in the repository, never replaced by another ledger."""
    loaded: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return loaded


def commit(cid: str, parent: str | None, **kw: Any) -> dict[str, Any]:
    base = {"id": cid, "task_id": TASK, "parent_commit_id": parent, "author_type": "human",
            "author_id": "ada", "session_tool": "cli", "timestamp": "2026-05-20T16:30:00.000Z",
            "summary": "Task created", "requested_next_action": None, "raw_context_ref": None}
    base.update(kw)
    return base


def item(iid: str, **kw: Any) -> dict[str, Any]:
    base = {"id": iid, "task_id": TASK, "introduced_in_commit": C2,
            "superseded_in_commit": None, "type": "decision", "content": "Use SQLite.",
            "rationale": None, "confidence": 0.8, "provenance": "manual CLI entry",
            "status": "provisional", "correction_of": None,
            "created_at": "2026-05-20T16:45:00.123+02:00"}
    base.update(kw)
    return base


def rich() -> dict[str, Any]:
    """Every feature the format has: provisional/locked/deprecated, superseded_in_commit,
    correction_of, rejected_option with rationale, types without a kind of their own, odd
    confidences, a raw_context_ref."""
    return {
        "task": {"id": TASK, "title": "Pick a store", "objective": "Choose.\n\n## Not a heading",
                 "domain": "research", "status": "paused",
                 "created_at": "2026-05-20T16:30:00Z", "updated_at": "2026-05-21T09:00:00Z",
                 "tags": []},
        "commits": [commit(C1, None),
                    commit(C2, C1, author_type="agent", author_id="extractor",
                           session_tool="manual-transcript", summary="Extracted",
                           timestamp="2026-05-20T16:45:00.000Z",
                           requested_next_action="Benchmark SQLite",
                           raw_context_ref="transcripts/1.txt")],
        "state_items": [
            item(I1, status="deprecated", superseded_in_commit=C2, confidence=1),
            item(I2, type="rejected_option", content="No Postgres.", rationale="No server.",
                 status="locked", confidence=0.1 + 0.2, correction_of=I1),
            item(I3, type="assumption", content="Data fits in RAM.", confidence=0),
            item("88888888-8888-4888-8888-888888888888", type="resolved_question",
                 content="Which engine? SQLite.", provenance="human"),
        ]}


def roundtrip(ledger: dict[str, Any]) -> dict[str, Any]:
    rec = ledger_to_record(ledger)
    return record_to_ledger(parse_record(render_record(rec)))


def test_the_real_example_round_trips_exactly() -> None:
    ledger = example()
    assert problems(ledger) == []
    assert roundtrip(ledger) == ledger


def test_every_feature_round_trips_exactly() -> None:
    ledger = rich()
    assert problems(ledger) == []
    back = roundtrip(ledger)
    assert back == ledger
    # confidence 0.1 + 0.2 == 0.30000000000000004 survives as text and back
    assert back["state_items"][1]["confidence"] == 0.1 + 0.2


def test_the_mapping() -> None:
    rec = ledger_to_record(rich())
    f = rec.fields
    assert f["id"] == TASK and f["status"] == "parked" and f["outcome"]["kind"] == "park"
    assert f["next_action"] == "Benchmark SQLite"
    assert rec.body == "## Goal\n\nChoose.\n\n## Not a heading\n"
    dep, rej, assumption, resolved = f["items"]
    assert (dep["trust"], dep["confidence"]) == ("deprecated", "1.0")
    assert dep["x"]["stateframe"]["superseded_in_commit"] == C2
    assert (rej["kind"], rej["why"], rej["trust"]) == ("rejected", "No server.", "locked")
    assert rej["confidence"] == "0.30000000000000004"
    assert rej["x"]["stateframe"]["correction_of"] == I1
    assert (assumption["kind"], assumption["x"]["stateframe"]["type"]) == ("fact", "assumption")
    assert (resolved["kind"], resolved["trust"]) == ("question", "candidate")
    assert dep["by"] == "extractor"  # the author of the introducing commit
    assert lifecycle_problems(f) == []
    x = f["x"]["stateframe"]
    assert x["domain"] == "research"
    assert x["commits"][C2]["raw_context_ref"] == "transcripts/1.txt"


@pytest.mark.parametrize("status, ours", [("active", "open"), ("paused", "parked"),
                                          ("complete", "done"), ("abandoned", "dropped")])
def test_statuses(status: str, ours: str) -> None:
    ledger = rich()
    ledger["task"]["status"] = status
    rec = ledger_to_record(ledger)
    assert rec.fields["status"] == ours
    assert lifecycle_problems(rec.fields) == []
    assert roundtrip(ledger)["task"]["status"] == status


def test_invalid_ledgers_are_refused_with_the_path() -> None:
    bad = rich()
    bad["state_items"][0]["confidence"] = 1.5
    with pytest.raises(LedgitError, match=r"state_items\[0\]\.confidence"):
        ledger_to_record(bad, "t.json")
    dangling = rich()
    dangling["state_items"][1]["correction_of"] = "99999999-9999-4999-8999-999999999999"
    assert problems(dangling) == ["state_items[1].correction_of: no such state item"]
    unsuperseded = rich()
    unsuperseded["state_items"][0]["superseded_in_commit"] = None
    assert "a deprecated item needs it" in problems(unsuperseded)[0]
    extra = copy.deepcopy(rich())
    extra["task"]["owner"] = "x"
    assert "Additional properties" in problems(extra)[0]



def validate(text: str) -> dict[str, Any]:
    ledger: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator(
        schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(ledger)
    assert problems(ledger) == []
    return ledger


def test_cli_import_change_in_ledgit_export(lg: CliRun, tmp_path: Path) -> None:
    src = tmp_path / "task.ledger.json"
    src.write_text(json.dumps(example(), indent=2), encoding="utf-8")
    code, out, err = lg("import", "stateframe", str(src), "--by", "importer")
    assert code == 0, err
    assert out.strip() == ("import stateframe: imported 1, updated 0, merged 0, conflicts 0, "
                           "unchanged 0, skipped 0")
    tid = example()["task"]["id"]
    code, out, err = lg("export", "stateframe", tid)
    assert code == 0, err
    assert validate(out) == example()  # nothing happened in ledgit yet

    first = example()["state_items"][0]["id"]
    assert lg("item", "add", tid, "--kind", "decision", "--text", "Ship a wheel",
              "--by", "agent-a")[0] == 0
    assert lg("revise", tid, "--supersedes", first, "--text", "Ship a CLI first",
              "--trusted", "--by", "owner")[0] == 0
    out_file = tmp_path / "out.json"
    code, _, err = lg("export", "stateframe", tid, "-o", str(out_file))
    assert code == 0, err
    ledger = validate(out_file.read_text(encoding="utf-8"))
    commits = ledger["commits"]
    assert len(commits) == len(example()["commits"]) + 2
    assert commits[-1]["parent_commit_id"] == commits[-2]["id"]
    assert [c["author_id"] for c in commits[-2:]] == ["agent-a", "owner"]
    by_id = {i["id"]: i for i in ledger["state_items"]}
    old = by_id[first]
    assert old["status"] == "deprecated" and old["superseded_in_commit"] == commits[-1]["id"]
    new = [i for i in ledger["state_items"] if i["correction_of"] == first]
    assert len(new) == 1 and new[0]["status"] == "locked"
    added = [i for i in ledger["state_items"] if i["content"] == "Ship a wheel"]
    assert added[0]["status"] == "provisional"
    assert added[0]["introduced_in_commit"] == commits[-2]["id"]
    # the same export twice: the same bytes (uuid5 ids, no clock)
    assert lg("export", "stateframe", tid)[1] == out_file.read_text(encoding="utf-8")


def test_a_task_born_in_ledgit_exports_valid(lg: CliRun) -> None:
    board = Board(lg.root)
    rec = create_task(board, {"title": "Native", "labels": ["a"]},
                      "## Goal\nDo it.\n\n## Acceptance\n- done\n", "ada")
    assert lg("item", "add", rec.id, "--kind", "fact", "--text", "It is big",
              "--by", "ada")[0] == 0
    code, out, err = lg("export", "stateframe", rec.id)
    assert code == 0, err
    ledger = validate(out)
    assert ledger["task"]["objective"] == "Do it."
    assert ledger["task"]["tags"] == ["a"]
    assert [i["type"] for i in ledger["state_items"]] == ["context_fact"]
    assert ledger["commits"][0]["parent_commit_id"] is None


def test_an_output_it_cannot_write_is_one_line(lg: CliRun, tmp_path: Path) -> None:
    rec = create_task(Board(lg.root), {"title": "Out"}, "", "ada")
    code, out, err = lg("export", "stateframe", rec.id, "-o", str(tmp_path / "nodir" / "x.json"))
    assert code == 2, err
    assert err.strip() == (f"ledgit: export stateframe -o {tmp_path / 'nodir' / 'x.json'}: no "
                           f"such directory {tmp_path / 'nodir'}")
    assert not (tmp_path / "nodir").exists()


def test_an_invalid_file_is_skipped_or_refused(lg: CliRun, tmp_path: Path) -> None:
    bad = rich()
    bad["task"]["status"] = "done"
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(bad), encoding="utf-8")
    code, out, err = lg("import", "stateframe", str(src))
    assert code == 1 and "skipped 1" in out
    assert "bad.json: not a valid Stateframe ledger: task.status" in err
    code, _, err = lg("import", "stateframe", str(src), "--strict")
    assert code == 2 and "nothing imported" in err
    src.write_text("{", encoding="utf-8")
    assert "bad.json: not JSON" in lg("import", "stateframe", str(src))[2]
