"""Merge rules that real concurrent edits needed (docs/merge.md, "Real concurrent edits"),
and the Beads merge corpus (tests/data/beads): 0 one-sided changes lost, 0 asymmetric,
>= 95% clean."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from shareddata import BEADS_MERGE_CASES, BEADS_MERGES

from ledgit.core.merge import NO_ACCOUNT, merge_records
from ledgit.core.record import Record, make_record
from ledgit.core.render import render_record

ROOT = Path(__file__).resolve().parents[1]
CORPUS = BEADS_MERGES
T0 = "2026-01-01T00:00:00.000000Z"


def ts(n: int) -> str:
    return f"2026-01-01T00:00:{n:02d}.000000Z"


def rec(**kw: Any) -> Record:
    fields: dict[str, Any] = {"id": "T-abc", "title": "t", "status": "open", "created": T0,
                              "last_modified": T0}
    fields.update(kw)
    body = fields.pop("body", "")
    return make_record(fields, body)


def both_ways(base: Record, ours: Record, theirs: Record) -> Record:
    one = merge_records(base, ours, theirs)
    two = merge_records(base, theirs, ours)
    assert render_record(one.record) == render_record(two.record)
    return one.record


def test_x_merges_key_by_key_and_recursively() -> None:
    base = rec(x={"beads": {"a": "1", "deps": {"d1": {"type": "blocks"}}, "gone": "g"}})
    ours = rec(x={"beads": {"a": "2", "deps": {"d1": {"type": "blocks"}, "d2": {"type": "x"}},
                            "gone": "g"}}, last_modified=ts(1))
    theirs = rec(x={"beads": {"a": "1", "deps": {"d1": {"type": "related"}, "d3": {"t": "y"}},
                              "new": "n"}}, last_modified=ts(2))
    merged = both_ways(base, ours, theirs)
    assert merged.fields["x"] == {"beads": {
        "a": "2", "deps": {"d1": {"type": "related"}, "d2": {"type": "x"}, "d3": {"t": "y"}},
        "new": "n"}}


def test_x_changed_differently_on_both_sides_takes_the_later_side() -> None:
    base = rec(x={"k": "0"})
    merged = both_ways(base, rec(x={"k": "1"}, last_modified=ts(5)),
                       rec(x={"k": "2"}, last_modified=ts(3)))
    assert merged.fields["x"] == {"k": "1"}


def test_last_modified_moved_on_one_side_only_is_that_sides() -> None:
    base = rec(title="a", last_modified=ts(9))
    ours = rec(title="a", priority=1, last_modified=ts(3))  # a restored, older snapshot
    theirs = rec(title="b", last_modified=ts(9))
    assert both_ways(base, ours, theirs).fields["last_modified"] == ts(3)
    both = both_ways(base, rec(priority=1, last_modified=ts(10)),
                     rec(title="b", last_modified=ts(11)))
    assert both.fields["last_modified"] == ts(11)


def test_the_no_account_placeholder_never_replaces_a_real_account() -> None:
    base = rec()
    ours = rec(status="done", response=NO_ACCOUNT, last_modified=ts(9))
    theirs = rec(status="done", response="fixed in abc123", last_modified=ts(2))
    assert both_ways(base, ours, theirs).fields["response"] == "fixed in abc123"
    real = both_ways(base, rec(status="done", response="one", last_modified=ts(9)),
                     rec(status="done", response="two", last_modified=ts(2)))
    assert real.fields["response"] == "one"


def test_the_beads_merge_corpus() -> None:
    spec = importlib.util.spec_from_file_location("merge_corpus", ROOT / "bench" /
                                                  "merge_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["merge_corpus"] = module
    spec.loader.exec_module(module)
    res = module.run(CORPUS, git=False)
    figures = res["ledgit"]
    assert figures["cases"] == BEADS_MERGE_CASES
    assert figures["conflicted"] > 0  # the hard cases are in the trimmed corpus
    assert figures["one_sided_lost"] == 0, figures["examples"]
    assert figures["same_lost"] == 0
    assert figures["asymmetric"] == 0
    assert figures["clean"] >= 0.95 * figures["cases"]
    assert set(figures["conflicts_by_field"]) <= {"body"}
