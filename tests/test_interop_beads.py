"""Beads import mapping (ledgit.interop.beads) on the real snapshot and on small cases."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from shareddata import BEADS_ISSUE_LINES, BEADS_ISSUES, BEADS_MERGES

from ledgit.core.errors import LedgitError
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.record import parse_record
from ledgit.core.render import render_record
from ledgit.core.timestamps import normalize_timestamp
from ledgit.interop.beads import (
    BLOCKED_WAITING_ON,
    CLOSED_FALLBACK,
    STATUS_MAP,
    _fast_timestamp,
    beads_equal,
    beads_to_record,
    derived_id,
    normalize_beads,
    record_to_beads,
    split_body,
)

ISSUES = BEADS_ISSUES
MERGES = BEADS_MERGES


def issue(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "bd-1a2b", "title": "Fix it", "status": "open", "priority": 2,
                            "issue_type": "task", "created_at": "2025-12-17T14:32:02.998106-08:00",
                            "updated_at": "2025-12-18T01:00:00Z"}
    base.update(kw)
    return base


def roundtrip(obj: dict[str, Any]) -> dict[str, Any]:
    rec = beads_to_record(obj)
    return record_to_beads(parse_record(render_record(rec)))


def test_fields_map_onto_the_record() -> None:
    obj = issue(description="Body text", assignee="alice", owner="bob", labels=["b", "a"],
                close_reason="because", status="closed",
                dependencies=[{"issue_id": "bd-1a2b", "depends_on_id": "bd-9", "type": "blocks",
                               "created_at": "2025-12-17T14:32:02Z", "created_by": "x"},
                              {"issue_id": "bd-1a2b", "depends_on_id": "bd-8",
                               "type": "parent-child", "created_at": "2025-12-17T14:32:02Z",
                               "created_by": "x"}],
                comments=[{"id": 7, "issue_id": "bd-1a2b", "author": "carol", "text": "hi",
                           "created_at": "2026-01-12T02:16:51Z"}],
                ephemeral=True, timeout=30)
    rec = beads_to_record(obj)
    f = rec.fields
    assert (f["id"], f["title"], f["status"], f["priority"]) == ("bd-1a2b", "Fix it", "done", 2)
    assert (f["worker"], f["owner"], f["labels"], f["response"]) == ("alice", "bob", ["b", "a"],
                                                                    "because")
    assert f["depends_on"] == ["bd-9"]  # parent-child does not gate readiness
    assert f["created"] == "2025-12-17T22:32:02.998106Z"
    assert f["last_modified"] == "2025-12-18T01:00:00.000000Z"
    xb = f["x"]["beads"]
    assert xb["issue_type"] == "task"
    assert xb["created_at"] == "2025-12-17T14:32:02.998106-08:00"  # verbatim beside the instant
    assert xb["updated_at"] == "2025-12-18T01:00:00Z"
    assert xb["json"] == {"ephemeral": "true", "timeout": "30"}
    assert set(xb["dependencies"]) == {"bd-9", "bd-8"}
    [comment] = xb["comments"].values()
    assert comment == {"author": "carol", "created_at": "2026-01-12T02:16:51Z", "json": {"id": "7"},
                       "text": "hi"}
    assert rec.body == "Body text\n"
    assert beads_equal(roundtrip(obj), normalize_beads(obj))


@pytest.mark.parametrize("status", sorted(STATUS_MAP) + ["someday"])
def test_every_status_maps_to_a_valid_record_and_back(status: str) -> None:
    rec = beads_to_record(issue(status=status))
    assert rec.fields["status"] == STATUS_MAP.get(status, "open")
    assert lifecycle_problems(rec.fields) == []
    assert roundtrip(issue(status=status))["status"] == status


def test_status_companions() -> None:
    assert beads_to_record(issue(status="closed")).fields["response"] == CLOSED_FALLBACK
    assert beads_to_record(issue(status="blocked")).fields["waiting_on"] == BLOCKED_WAITING_ON
    assert beads_to_record(issue(status="deferred")).fields["outcome"]["kind"] == "park"
    hooked = beads_to_record(issue(status="hooked"))
    assert hooked.fields["status"] == "in_progress"
    assert hooked.fields["x"]["beads"]["status"] == "hooked"
    tomb = beads_to_record(issue(status="tombstone", deleted_at="2026-01-07T01:30:22-08:00",
                                 deleted_by="batch delete", delete_reason="batch delete",
                                 original_type="task"))
    assert tomb.fields["status"] == "archived"
    assert tomb.fields["x"]["beads"]["deleted_by"] == "batch delete"


def test_text_sections_and_trailing_newlines_round_trip() -> None:
    obj = issue(description="para\n\n## Heading\n---\n", design="d", acceptance_criteria="- a\n",
                notes="n")
    rec = beads_to_record(obj)
    assert "## Design\n<!-- beads:design -->\nd\n" in rec.body
    assert split_body(rec.body) == {"description": "para\n\n## Heading\n---\n", "design": "d",
                                    "acceptance_criteria": "- a\n", "notes": "n"}
    assert roundtrip(obj) == normalize_beads(obj)
    only_notes = issue(notes="just notes")
    assert roundtrip(only_notes) == normalize_beads(only_notes)


def test_a_text_holding_our_marker_stays_out_of_the_body() -> None:
    obj = issue(description="before\n<!-- beads:notes -->\nafter", notes="n")
    rec = beads_to_record(obj)
    assert rec.body == ""
    assert rec.fields["x"]["beads"]["description"] == obj["description"]
    assert roundtrip(obj) == normalize_beads(obj)


def test_odd_values_are_kept_under_x() -> None:
    obj = issue(id="bd x/1", title="two\nlines", priority=7, assignee="a\nb",
                labels=["ok", " spaced"], close_reason=CLOSED_FALLBACK, status="closed")
    rec = beads_to_record(obj)
    assert rec.id == derived_id("bd x/1") and rec.id.startswith("B-")
    assert rec.fields["title"] == "two lines"
    assert "priority" not in rec.fields and "worker" not in rec.fields
    assert "labels" not in rec.fields
    assert beads_equal(roundtrip(obj), normalize_beads(obj))


def test_empty_values_mean_not_set() -> None:
    assert roundtrip(issue(description="", labels=[], assignee=None)) == normalize_beads(issue())


def test_key_order_does_not_change_the_bytes() -> None:
    obj = issue(description="x", labels=["a"], notes="n", ephemeral=True)
    keys = list(obj)
    random.Random(1).shuffle(keys)
    shuffled = {k: obj[k] for k in keys}
    assert render_record(beads_to_record(obj)) == render_record(beads_to_record(shuffled))


@pytest.mark.parametrize("obj, field", [
    ([1, 2], None), ({"title": "t", "status": "open", "created_at": "2025-01-01T00:00:00Z"}, "id"),
    (issue(title=None), "title"), (issue(status=3), "status"),
    (issue(created_at="yesterday"), "created_at"), (issue(updated_at=5), "updated_at"),
])
def test_malformed_objects_are_refused_with_the_field(obj: Any, field: str | None) -> None:
    with pytest.raises(LedgitError) as err:
        beads_to_record(obj, "issues.jsonl:3")
    assert str(err.value).startswith("issues.jsonl:3: ")
    if field:
        assert f"{field}:" in str(err.value)


def test_the_real_snapshot_and_every_merge_side_round_trip() -> None:
    objs = [json.loads(line) for line in ISSUES.open(encoding="utf-8")]
    assert len(objs) == BEADS_ISSUE_LINES
    for line in MERGES.open(encoding="utf-8"):
        row = json.loads(line)
        objs += [row[k] for k in ("base", "ours", "theirs", "result") if row[k]]
    ids = set()
    for obj in objs:
        rec = beads_to_record(obj)
        text = render_record(rec)
        again = parse_record(text)
        assert again == rec
        assert lifecycle_problems(rec.fields) == [], obj["id"]
        assert beads_equal(record_to_beads(again), normalize_beads(obj)), obj["id"]
        ids.add(rec.id)
    assert len(ids) >= BEADS_ISSUE_LINES


def test_the_fast_timestamp_path_agrees_with_normalize_timestamp() -> None:
    texts = ["2025-11-02T21:58:07.2-08:00", "0001-01-01T00:00:00.000000+01:00",
             "9999-12-31T23:59:59.999999-01:00", "2025-02-29T00:00:00.000000+00:00",
             "2024-02-29T23:59:59.5+14:00", "2025-11-02T21:58:07.295058-00:00",
             "2025-11-02T21:58:07.295058+23:59", "2025-11-02T21:58:07.295058+24:00",
             "2025-11-02T21:58:07.1234567-08:00", "2025-11-02T21:58:07Z"]
    for line in ISSUES.open(encoding="utf-8"):
        obj = json.loads(line)
        texts += [obj[k] for k in ("created_at", "updated_at") if isinstance(obj.get(k), str)]
    fast = 0
    for text in texts:
        try:
            expected: str | None = normalize_timestamp(text)
        except ValueError:
            expected = None
        got = _fast_timestamp(text)
        assert got is None or got == expected, text
        fast += got is not None
    assert fast >= 6
