"""The record format: golden files for every edge case of DESIGN §3, round-trip laws, speed.

Golden files: ``tests/data/records/<case>.md`` (raw bytes) and ``<case>.expected.json``, either
``{"fields", "body", "render"}`` for an accepted file or ``{"error"}`` (the exact one-line
message) for a refused one. ``LEDGIT_REGEN_GOLDEN=1 pytest tests/test_record.py`` rewrites the
expected files; review the diff before committing it.
"""

from __future__ import annotations

import copy
import json
import os
import time
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ledgit.core.canonread as canonread
import ledgit.core.frontmatter as frontmatter
from ledgit.core.errors import LedgitError, located
from ledgit.core.record import Record, make_record, parse_record
from ledgit.core.render import render_record
from ledgit.core.revision import canonical_json, revision_of
from ledgit.core.schema import (
    FIELD_ORDER,
    ITEM_KINDS,
    OUTCOME_KINDS,
    STATUSES,
    TRUST_LEVELS,
    validate_fields,
)
from ledgit.core.timestamps import format_timestamp, normalize_timestamp

GOLDEN = Path(__file__).parent / "data" / "records"
CASES = sorted(p.stem for p in GOLDEN.glob("*.md"))
REGEN = os.environ.get("LEDGIT_REGEN_GOLDEN") == "1"


def _outcome(case: str) -> dict[str, Any]:
    data = (GOLDEN / f"{case}.md").read_bytes()
    try:
        record = parse_record(data, f"{case}.md")
    except LedgitError as exc:
        return {"error": str(exc)}
    return {"fields": record.fields, "body": record.body, "render": render_record(record)}


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    got = _outcome(case)
    expected_path = GOLDEN / f"{case}.expected.json"
    if REGEN:
        expected_path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    assert got == expected
    if "error" in got:
        message = got["error"]
        assert "\n" not in message and message.startswith(f"{case}.md")
        assert "Traceback" not in message
    else:
        # The rendered form is a fixed point: it parses back to the same record and text.
        again = parse_record(got["render"], f"{case}.md")
        assert again == Record(got["fields"], got["body"])
        assert render_record(again) == got["render"]


@pytest.mark.parametrize("case", CASES)
def test_golden_with_the_pure_python_parser(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML without libyaml reads every golden file alike (only its own YAML syntax
    messages are worded differently)."""
    monkeypatch.setattr(frontmatter, "_LOADER", frontmatter._Loader)
    got = _outcome(case)
    expected = json.loads((GOLDEN / f"{case}.expected.json").read_text(encoding="utf-8"))
    if "error" in expected and "invalid YAML:" in expected["error"]:
        assert got["error"].split("invalid YAML:")[0] == expected["error"].split(
            "invalid YAML:")[0]
    else:
        assert got == expected


def test_every_golden_input_has_an_expectation() -> None:
    expected = sorted(p.name[:-len(".expected.json")] for p in GOLDEN.glob("*.expected.json"))
    assert expected == CASES


def test_alias_bomb_is_refused_fast() -> None:
    data = (GOLDEN / "alias-bomb.md").read_bytes()
    start = time.perf_counter()
    with pytest.raises(LedgitError, match="anchors and aliases"):
        parse_record(data)
    assert time.perf_counter() - start < 2.0  # issue 7: refused fast


def test_deep_nesting_is_refused_not_a_traceback() -> None:
    head = ("---\nid: T-1\ntitle: a\nstatus: open\ncreated: 2026-01-01T00:00:00Z\n"
            "last_modified: 2026-01-01T00:00:00Z\n")
    for depth in (40, 500, 5000, 100_000):
        text = head + "x: {a: " + "[" * depth + "]" * depth + "}\n---\n"
        with pytest.raises(LedgitError, match="nest"):
            parse_record(text, "deep.md")


def test_text_and_bytes_parse_alike() -> None:
    data = (GOLDEN / "full.md").read_bytes()
    assert parse_record(data) == parse_record(data.decode("utf-8"))


def test_validate_fields_accepts_typed_values() -> None:
    fields = validate_fields({"id": "T-1", "title": "t", "status": "open", "priority": 0,
                              "commits": [1234567], "created": "2026-01-01T00:00:00Z",
                              "last_modified": "2026-01-01T00:00:00+00:00"})
    assert fields["priority"] == 0 and fields["commits"] == ["1234567"]
    assert fields["created"] == "2026-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(("field", "value", "message"), [
    ("priority", True, "priority: must be an integer 0-4 (0 most urgent), got True"),
    ("priority", 7, "priority: must be an integer 0-4 (0 most urgent), got 7"),
    ("x", {"a": None}, "x.a: extension values must be strings, lists or mappings"),
    ("x", {"a": 1.5}, "x.a: extension values must be strings, lists or mappings"),
    ("x", {"k" * 300: "v"}, "x: extension key longer than 256 characters"),
    ("title", "a\ud800", "title: lone surrogate in text"),
    ("title", "a\x00", "title: NUL character in text"),
    ("title", "a\x0bb", "title: control character U+000B"),
    ("title", "esc\x1b[31m", "title: control character U+001B"),
    ("title", "csi\x9b", "title: control character U+009B"),
    ("labels", ["ok", "del\x7f"], "labels[1]: control character U+007F"),
    ("labels", "a", "labels: expected a list, got str"),
    ("contested", [{}], "contested[0]: expected a claim {by, at, heartbeat, note}"),
    ("created", "0001-01-01T00:00:00+01:00", "created: invalid timestamp"),
])
def test_validate_fields_refusals(field: str, value: Any, message: str) -> None:
    fields = {"id": "T-1", "title": "t", "status": "open", "created": "2026-01-01T00:00:00Z",
              "last_modified": "2026-01-01T00:00:00Z", field: value}
    with pytest.raises(LedgitError) as info:
        validate_fields(fields, "T-1.md")
    assert str(info.value).startswith(f"T-1.md: {message}")


def test_timestamps_round_trip_years_before_1000() -> None:
    assert normalize_timestamp("0099-01-01T00:00:00Z") == "0099-01-01T00:00:00.000000Z"


# --------------------------------------------------------------------------- property tests

_TRICKY = ["NO", "no", "Yes", "on", "OFF", "y", "n", "~", "null", "Null", "true", "False",
           "0123456", "010", "0x1F", "0o17", "1e10", "1_000", "12:30", "12:30:45", ".inf",
           "-.5", "+1", "2026-01-01", "2026-01-01T00:00:00Z", "---", "...", "a --- b",
           "a: b", "a:b", "# c", "a #c", " lead", "trail ", "'q'", '"q"', "a'b", 'a"b',
           "\\", "<<", "=", "-", "- a", "? x", "[a]", "{a: b}", "@x", "`x", "!x", "!!str",
           "&a", "*a", "%x", "|", ">", "a,b", "\u2028", "a\u2029b", "\x85", "\ufeff",
           "\ufffe", "\t", "\x7f", "\x1b[0m", "😀", "e\u0301", "é", "日本語", "\u00a0",
           "a\nb", "\n", "a\r\nb", ""]

_chars = st.characters(codec="utf-8", exclude_characters="\x00")  # no lone surrogates
_text_any: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(_TRICKY), st.text(_chars, max_size=30),
    st.lists(st.sampled_from(_TRICKY), max_size=4).map("".join))
_one_line: st.SearchStrategy[Any] = _text_any.map(lambda s: "".join(
    c for c in s if c not in "\n\r\u2028\u2029\x85")).filter(bool)
# a title or a label: one line without control characters but tab (issue 36)
_no_controls: st.SearchStrategy[Any] = _one_line.map(lambda s: "".join(
    c for c in s if c == "\t" or not ("\x00" <= c <= "\x1f" or "\x7f" <= c <= "\x9f"))
).filter(bool)
_task_id = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True).filter(
    lambda s: ".." not in s)
_item_id = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,10}", fullmatch=True)
_commit = st.from_regex(r"[0-9a-f]{4,40}", fullmatch=True) | st.from_regex(r"[0-9]{7}",
                                                                          fullmatch=True)


@st.composite
def _timestamps(draw: st.DrawFn) -> Any:
    moment = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    return format_timestamp(moment.replace(tzinfo=timezone.utc))


def _claims() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"by": _one_line, "at": _timestamps()},
        optional={"heartbeat": _timestamps(), "note": _text_any})


_x_values: st.SearchStrategy[Any] = st.recursive(
    _text_any,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(_one_line.map(lambda s: s[:40]), inner, max_size=3),
    max_leaves=8)
_x_maps = st.dictionaries(_one_line, _x_values, min_size=1, max_size=4)

_items: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"id": _item_id, "kind": st.sampled_from(ITEM_KINDS), "text": _text_any.filter(bool),
     "trust": st.sampled_from(TRUST_LEVELS), "by": _one_line, "at": _timestamps()},
    optional={"why": _text_any, "evidence": _text_any, "supersedes": st.lists(_one_line),
              "superseded_by": st.lists(_one_line), "confidence": _text_any, "x": _x_maps})

_fields = st.fixed_dictionaries(
    {"id": _task_id, "title": _no_controls, "status": st.sampled_from(STATUSES),
     "created": _timestamps(), "last_modified": _timestamps()},
    optional={
        "priority": st.integers(0, 4), "owner": _one_line, "worker": _one_line,
        "claim": _claims(), "contested": st.lists(_claims(), max_size=2),
        "depends_on": st.lists(_task_id, max_size=3), "labels": st.lists(_no_controls, max_size=4),
        "commits": st.lists(_commit, max_size=3), "response": _text_any,
        "next_action": _text_any, "gate": _text_any, "waiting_on": _text_any,
        "signal": _text_any,
        "outcome": st.fixed_dictionaries({"kind": st.sampled_from(OUTCOME_KINDS)},
                                         optional={"reason": _text_any, "reuse": _text_any}),
        "items": st.lists(_items, max_size=3, unique_by=lambda i: i["id"]),
        "x": _x_maps,
    })

_body_lines = st.one_of(st.sampled_from(["---", "## Goal", "", "- [ ] criterion", "...",
                                         "---\u2028---", "\t indented", "😀 done"]),
                        _one_line)
_bodies = st.lists(_body_lines, max_size=8).map(lambda ls: "".join(f"{x}\n" for x in ls))



@st.composite
def _valid_records(draw: st.DrawFn) -> Record:
    return make_record(draw(_fields), draw(_bodies))


_records = _valid_records()


def _front_matter(text: str) -> str:
    assert text.startswith("---\n")
    return text[4:text.index("\n---\n", 3) + 1]


# LEDGIT_EXAMPLES_FACTOR=10 for a deeper run (tests/examples.py).
_PROPERTY = settings(max_examples=examples(400),
                     deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(_records)
def test_round_trip_laws(record: Record) -> None:
    text = render_record(record)
    again = parse_record(text)
    assert again == record
    assert render_record(again) == text
    assert again.revision == record.revision
    assert text.endswith("\n") and "\r" not in text[:len(text) - len(record.body)]


@_PROPERTY
@given(_records)
def test_render_is_a_function_of_the_value(record: Record) -> None:
    shuffled = copy.deepcopy(record.fields)
    if "x" in shuffled:
        shuffled["x"] = dict(reversed(list(shuffled["x"].items())))
    shuffled = dict(reversed(list(shuffled.items())))
    assert render_record(Record(shuffled, record.body)) == render_record(record)
    assert render_record(copy.deepcopy(record)) == render_record(record)


@_PROPERTY
@given(_records)
def test_yaml_1_1_reader_reads_the_same_strings(record: Record) -> None:
    text = render_record(record)
    # PyYAML's plain safe_load applies every YAML 1.1 implicit type: if it reads a string
    # back as anything else (bool, int, float, date, None), the writer failed to quote it.
    assert yaml.safe_load(_front_matter(text)) == record.fields
    assert yaml.load(_front_matter(text), Loader=yaml.CSafeLoader) == record.fields


@_PROPERTY
@given(_records)
def test_yaml_1_2_reader_reads_the_same_strings(record: Record) -> None:
    ruamel = pytest.importorskip("ruamel.yaml")
    reader = ruamel.YAML(typ="safe", pure=True)
    assert reader.load(_front_matter(render_record(record))) == record.fields


@_PROPERTY
@given(_fields, _bodies)
def test_text_is_nfc_and_revision_is_content_only(fields: dict[str, Any], body: str) -> None:
    record = make_record(fields, body)
    assert unicodedata.is_normalized("NFC", canonical_json(record.state()).decode("utf-8"))
    decomposed = make_record(json.loads(unicodedata.normalize(
        "NFD", json.dumps(fields, ensure_ascii=False))), unicodedata.normalize("NFD", body))
    assert decomposed.revision == record.revision
    assert record.revision == revision_of({"body": record.body, "fields": record.fields})


_EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3),
                            st.sampled_from(_TRICKY + [":", " ", "  ", "-", "\n", "[", "]", "{",
                                                       "}", "'", '"', "\t", "---\n", "&",
                                                       "*", "!", "x:", "\\", "#"])),
                  min_size=1, max_size=4)


@_PROPERTY
@given(_records, _EDITS)
def test_hand_edits_are_read_exactly_or_refused_in_one_line(
        record: Record, edits: list[tuple[int, int, str]]) -> None:
    """Any edit of a valid file either parses to a record that then round-trips, or is refused
    with a one-line LedgitError: never another exception, never a multi-line message."""
    text = render_record(record)
    for pos, cut, insert in edits:
        pos = 4 + pos % (len(text) - 3)  # after the opening line: its loss is golden-tested
        text = text[:pos] + insert + text[pos + cut:]
    try:
        edited = parse_record(text, "T.md")
    except LedgitError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("T.md")
        return
    assert parse_record(render_record(edited), "T.md") == edited


# --------------------------------------------------------------------------- speed





@pytest.mark.parametrize(("text", "expected"), [
    ('"plain" tail', ("plain", 7)),
    ('"a\\"b\\\\c\\n\\td\\u00e9" x', ('a"b\\c\n\tdé', 20)),
    ('"\\""', ('"', 4)),
    ('"ends in escape\\\\"', ("ends in escape\\", 18)),
])
def test_canonical_reader_quoted_scalars(text: str, expected: tuple[str, int]) -> None:
    assert canonread._canonical_quoted(text, 0) == expected


@pytest.mark.parametrize("text", ['"unclosed', '"escaped quote only\\"', '"bad \\x escape"'])
def test_canonical_reader_refuses_broken_quoted_scalars(text: str) -> None:
    with pytest.raises(canonread._NotCanonical):
        canonread._canonical_quoted(text, 0)


def test_a_located_message_is_one_line_whatever_the_field_holds() -> None:
    """Found by the hand-edit property test: a key read from a file may hold a line break
    (a vertical tab, U+2028); the error line escapes it."""
    text = located("must be one line\n", "T.md", 77, "x.k\x0bey\u2028\x85")
    assert text == "T.md:77: x.k\\x0bey\\u2028\\x85: must be one line\\x0a"
    assert len(text.splitlines()) == 1


_TOP_KEYS = st.sampled_from([*FIELD_ORDER, "bogus", " title", "-", ""])
_TOP_TEXT = st.text(alphabet=st.sampled_from(list('ab1 :#"\\[]{}-,.\'é')), max_size=12)
_TOP_VALUES = st.one_of(_TOP_TEXT, _TOP_TEXT.map(lambda v: f'"{v}"'))


@settings(max_examples=examples(3000), deadline=None)
@given(st.lists(st.tuples(_TOP_KEYS, st.sampled_from([": ", ":", ":  ", " : "]),
                          _TOP_VALUES), max_size=6))
def test_the_canonical_readers_inlined_top_level_is_the_generic_map(
        entries: list[tuple[str, str, str]]) -> None:
    """canonread._canonical_top inlines the common top-level lines of _canonical_map: for any
    lines, both return the same mapping and end, or both refuse."""
    lines = [key + sep + value for key, sep, value in entries]

    def outcome(read: Any) -> Any:
        try:
            return read()
        except (canonread._NotCanonical, ValueError, IndexError) as exc:
            return type(exc)

    assert outcome(lambda: canonread._canonical_top(lines)) == \
        outcome(lambda: canonread._canonical_map(lines, 0, 0, None))


def test_make_record_refuses_a_nul_in_the_body() -> None:
    """What the MCP server and the importers build records with: a NUL in a body (JSON can
    carry ``\\u0000``) is refused like one in a field, naming the body's line."""
    fields = {"id": "T-k3v9q2mz7a", "title": "t", "status": "open",
              "created": "2026-01-01T09:00:00.000000Z",
              "last_modified": "2026-01-01T09:00:00.000000Z"}
    with pytest.raises(LedgitError) as exc:
        make_record(fields, "one\ntw\0o\n", "T-k3v9q2mz7a")
    assert str(exc.value) == ("T-k3v9q2mz7a: body: NUL character (U+0000) in the body; a task "
                              "file is text (its line 2)")
    assert exc.value.code == 2
