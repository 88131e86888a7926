"""The audit layer: event hashing, tamper detection and every continuity rule (DESIGN §6)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgit.core.historycheck as historycheck
from ledgit.core import canonjson
from ledgit.core.errors import CHECK_FAILED, LedgitError
from ledgit.core.history import (
    Event,
    HistoryError,
    Problem,
    ancestors,
    apply_patch,
    event_id,
    event_line,
    head_state,
    heads,
    new_event,
    parse_events,
    render_history,
    replay,
    strip_lines,
    topological_order,
)
from ledgit.core.historycheck import _apply_shared, _state_json, verify, verify_with_head
from ledgit.core.record import Record, make_record
from ledgit.core.revision import canonical_json, revision_of
from ledgit.operations.changes import finish
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import create_task, mutate_task

TASK = "T-k3v9q2mz7a"
T0 = "2026-01-01T09:00:00.000000Z"


def _record(**changes: Any) -> Record:
    fields: dict[str, Any] = {"id": TASK, "title": "Write the parser", "status": "open",
                              "created": T0, "last_modified": T0}
    body = changes.pop("body", "## Goal\n\nParse task files.\n")
    fields.update(changes)
    return make_record(fields, body)


def _event(parents: list[str], before: Record | None, after: Record, *, op: str = "update",
           at: str = T0, actor: str = "agent-a", note: str | None = None) -> Event:
    return new_event(parents=parents, at=at, actor=actor, op=op,
                     before_state=before.state() if before else {},
                     after_state=after.state(), note=note)


def _rehash(event: Event) -> Event:
    out = {k: v for k, v in event.items() if k != "id"}
    out["id"] = event_id(out)
    return out


@pytest.fixture()
def linear() -> tuple[list[Event], Record]:
    """genesis → claim → complete; the last record matches the head."""
    r0 = _record()
    r1 = _record(status="in_progress", last_modified="2026-01-01T10:00:00.000000Z",
                 claim={"by": "agent-a", "at": "2026-01-01T10:00:00.000000Z"})
    # An escape sequence in the body puts a "\u001b" escape into the JSON line.
    r2 = _record(status="done", response="Parsed \u00e9 and \x1b[1mbold\x1b[0m.",
                 last_modified="2026-01-01T11:00:00.000000Z", body="## Goal\n\nDone. 😀\n")
    e0 = _event([], None, r0, op="create")
    e1 = _event([e0["id"]], r0, r1, op="claim", at="2026-01-01T10:00:00.000000Z")
    e2 = _event([e1["id"]], r1, r2, op="complete", at="2026-01-01T11:00:00.000000Z",
                note="all green")
    return [e0, e1, e2], r2


def _rules(problems: list[Problem]) -> list[tuple[int, str]]:
    return [(p.line, p.rule) for p in problems]


# --------------------------------------------------------------------------- events


def test_event_id_is_sha256_of_canonical_json_without_id() -> None:
    event = {"parents": [], "at": T0, "actor": "a", "op": "create",
             "patch": [{"op": "add", "path": "/fields", "value": {"title": "é"}}],
             "before": None, "after": "0" * 64, "id": "ignored", "_line": 7}
    expected_json = ('{"actor":"a","after":"' + "0" * 64 + '","at":"' + T0 + '","before":null,'
                     '"op":"create","parents":[],"patch":[{"op":"add","path":"/fields",'
                     '"value":{"title":"é"}}]}').encode("utf-8")
    assert event_id(event) == hashlib.sha256(expected_json).hexdigest()


def test_new_event_genesis_and_child() -> None:
    r0, r1 = _record(), _record(title="Write the parser well")
    e0 = _event([], None, r0, op="create")
    assert e0["parents"] == [] and e0["before"] is None and e0["after"] == r0.revision
    assert e0["id"] == event_id(e0)
    e1 = _event([e0["id"]], r0, r1)
    assert e1["before"] == r0.revision and e1["after"] == r1.revision
    assert e1["patch"] == [{"op": "replace", "path": "/fields/title",
                            "value": "Write the parser well"}]
    assert "note" not in e1


def test_event_line_is_canonical_json(linear: tuple[list[Event], Record]) -> None:
    events, _ = linear
    for e in events:
        line = event_line(e)
        assert line.endswith("\n") and line.count("\n") == 1
        assert line[:-1].encode("utf-8") == canonical_json(e)
        assert json.loads(line) == e


def test_parse_events_numbers_lines_and_skips_blank_ones(
        linear: tuple[list[Event], Record]) -> None:
    events, _ = linear
    text = "\n".join(event_line(e).rstrip("\n") for e in events).replace("\n", "\n\n", 1)
    parsed = parse_events(text + "\n", TASK)
    assert [e["_line"] for e in parsed] == [1, 3, 4]
    assert strip_lines(parsed) == events
    assert event_id(parsed[1]) == events[1]["id"]  # the private _line is not content


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "not JSON"),
    ("[1, 2]", "an event must be a JSON object"),
    ('{"id": "x"}', "missing key 'parents'"),
])
def test_parse_events_refuses_malformed_lines(line: str, message: str) -> None:
    with pytest.raises(HistoryError) as info:
        parse_events(line + "\n", TASK)
    assert info.value.problem.line == 1 and info.value.problem.rule == "parse"
    assert message in str(info.value)


def test_problem_names_task_line_and_rule() -> None:
    assert str(Problem(TASK, 3, "hash", "edited")) == f"{TASK}: line 3: hash: edited"
    assert str(Problem(TASK, 0, "heads", "two")) == f"{TASK}: history: heads: two"


# --------------------------------------------------------------------------- verify


def test_a_clean_history_verifies(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    text = render_history(events)
    assert verify(TASK, text, record) == []
    assert verify(TASK, text.encode("utf-8"), record) == []
    assert verify(TASK, text.replace("\n", "\r\n"), record) == []  # core.autocrlf checkouts


def test_flipping_any_byte_is_detected_on_its_line(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    data = render_history(events).encode("utf-8")
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    rng = random.Random(7)
    for pos in range(len(data)):
        line = max(n for n, s in enumerate(starts, start=1) if s <= pos)
        for mask in (0x01, 0x20, rng.choice((0x02, 0x04, 0x08, 0x10, 0x40, 0x80))):
            tampered = bytearray(data)
            tampered[pos] ^= mask
            problems = verify(TASK, bytes(tampered), record)
            assert any(p.line == line and p.rule in ("hash", "parse") for p in problems), (
                pos, mask, problems)
            assert all(p.task == TASK for p in problems)


def test_same_content_other_bytes_is_an_edit(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    text = render_history(events)
    assert "\\u001b" in text
    problems = verify(TASK, text.replace("\\u001b", "\\u001B", 1), record)
    assert _rules(problems) == [(3, "hash")]
    assert "not the canonical JSON" in problems[0].message


def test_parent_order(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    problems = verify(TASK, render_history([events[0], events[2], events[1]]), record)
    assert _rules(problems) == [(2, "parent-order")]


def test_unknown_parent(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    orphan = _rehash(dict(events[2], parents=["f" * 64]))
    problems = verify(TASK, render_history([events[0], events[1], orphan]), record)
    assert _rules(problems) == [(3, "parent-order")]


def test_duplicate_event(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    problems = verify(TASK, render_history(events + [events[2]]), record)
    assert _rules(problems) == [(4, "duplicate")]


def test_two_geneses() -> None:
    a, b = _record(), _record(title="Another start")
    problems = verify(TASK, render_history([_event([], None, a, op="create"),
                                            _event([], None, b, op="create")]), b)
    assert _rules(problems) == [(2, "genesis")]
    assert "found 2" in problems[0].message


def test_missing_and_empty_history() -> None:
    assert _rules(verify(TASK, None, _record())) == [(0, "missing")]
    assert _rules(verify(TASK, "", _record())) == [(0, "genesis")]
    assert _rules(verify(TASK, "\n\n", _record())) == [(0, "genesis")]


def test_two_heads_then_a_merge() -> None:
    r0 = _record()
    ra = _record(title="Side A", last_modified="2026-01-01T10:00:00.000000Z")
    rb = _record(labels=["b"], last_modified="2026-01-01T10:05:00.000000Z")
    e0 = _event([], None, r0, op="create")
    ea = _event([e0["id"]], r0, ra, at="2026-01-01T10:00:00.000000Z")
    eb = _event([e0["id"]], r0, rb, at="2026-01-01T10:05:00.000000Z", actor="agent-b")
    problems = verify(TASK, render_history([e0, ea, eb]), rb)
    assert _rules(problems) == [(0, "heads")]
    assert ea["id"][:12] in problems[0].message and eb["id"][:12] in problems[0].message
    merged = _record(title="Side A", labels=["b"], last_modified="2026-01-01T10:05:00.000000Z")
    parents = sorted([ea["id"], eb["id"]])
    base = ra if parents[0] == ea["id"] else rb
    em = _event(parents, base, merged, op="merge", actor="ledgit",
                at="2026-01-01T10:05:00.000000Z")
    assert verify(TASK, render_history([e0, ea, eb, em]), merged) == []


def test_before_mismatch(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    bad = _rehash(dict(events[1], before="0" * 64))
    child = _rehash(dict(events[2], parents=[bad["id"]]))
    problems = verify(TASK, render_history([events[0], bad, child]), record)
    assert _rules(problems) == [(2, "before")]


def test_genesis_with_a_before(linear: tuple[list[Event], Record]) -> None:
    events, _ = linear
    bad = _rehash(dict(events[0], before="0" * 64))
    problems = verify(TASK, render_history([bad]), _record())
    assert _rules(problems) == [(1, "before")]


def test_after_mismatch(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    bad = _rehash(dict(events[2], after="0" * 64))
    problems = verify(TASK, render_history([events[0], events[1], bad]), record)
    assert _rules(problems) == [(3, "after")]


def test_patch_that_does_not_apply(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    bad = _rehash(dict(events[2], patch=[{"op": "remove", "path": "/fields/nope"}]))
    problems = verify(TASK, render_history([events[0], events[1], bad]), record)
    assert _rules(problems) == [(3, "replay")]


def test_record_head_mismatch(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    hand_edited = Record(record.fields, record.body + "A hand-written line.\n")
    problems = verify(TASK, render_history(events), hand_edited)
    assert _rules(problems) == [(0, "record-head")]
    assert f"ledgit record {TASK}" in problems[0].message
    missing = verify(TASK, render_history(events), None, "T.md:3: title: must be one line")
    assert [(p.rule, p.message) for p in missing] == [
        ("record-head", "T.md:3: title: must be one line")]


def test_head_state_that_is_not_a_valid_record() -> None:
    bad = Record({"id": TASK, "title": "t", "status": "bogus", "created": T0,
                  "last_modified": T0}, "")
    problems = verify(TASK, render_history([_event([], None, bad, op="create")]), bad)
    assert _rules(problems) == [(0, "schema")]


def test_a_trusted_revision_replaces_the_record(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    text = render_history(events)
    assert verify(TASK, text, None, revision=record.revision) == []
    problems = verify(TASK, text, None, revision="0" * 64)
    assert _rules(problems) == [(0, "record-head")]
    assert f"ledgit record {TASK}" in problems[0].message
    # The revision stands for a file already validated: the head state, equal to it, is
    # not validated again (unlike a Record passed in, which may have been built unchecked).
    bad = Record({"id": TASK, "title": "t", "status": "bogus", "created": T0,
                  "last_modified": T0}, "")
    history = render_history([_event([], None, bad, op="create")])
    assert _rules(verify(TASK, history, bad)) == [(0, "schema")]
    assert verify(TASK, history, None, revision=bad.revision) == []


def test_verify_with_head_returns_the_head_state(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    problems, state = verify_with_head(TASK, render_history(events), record)
    assert problems == [] and state == record.state()
    problems, state = verify_with_head(TASK, render_history(events[:2]), record)
    assert _rules(problems) == [(0, "record-head")] and state is None


@pytest.mark.parametrize("number", ["1.5", "1e3", "NaN", "-Infinity", "2.0"])
def test_a_float_in_a_line_is_a_hash_problem(linear: tuple[list[Event], Record],
                                             number: str) -> None:
    events, record = linear
    lines = render_history(events).splitlines()
    lines[1] = lines[1].replace('"actor":"agent-a"', f'"actor":"agent-a","meta":{{"n":{number}}}')
    problems = verify(TASK, "\n".join(lines) + "\n", record)
    assert [(p.line, p.rule, p.message) for p in problems][0] == (
        2, "hash", "floats are not allowed in hashed content")


def test_an_id_over_non_canonical_bytes_is_a_hash_problem(
        linear: tuple[list[Event], Record]) -> None:
    # A writer that hashes its own non-canonical bytes (here: a space after a colon) makes
    # a line whose id matches those bytes; the id must be the hash of the *canonical* JSON.
    events, record = linear
    e = {k: v for k, v in events[0].items() if k != "id"}
    body = canonical_json(e).decode("utf-8").replace('"op":"create"', '"op": "create"')
    eid = hashlib.sha256(body.encode("utf-8")).hexdigest()
    line = body.replace('"op": "create"', f'"id":"{eid}","op": "create"', 1)
    assert hashlib.sha256(line.replace(f',"id":"{eid}"', "").encode()).hexdigest() == eid
    problems = verify(TASK, line + "\n", record)
    assert problems and (problems[0].line, problems[0].rule) == (1, "hash")
    assert "does not match" in problems[0].message


@pytest.mark.parametrize("patch", [
    [{"op": "add", "path": "/fields/x", "value": {"a": ["1"]}},
     {"op": "replace", "path": "/fields/x/a", "value": "2"},
     {"op": "remove", "path": "/fields/title"}, {"op": "add", "path": "/n", "value": 1}],
    [{"op": "replace", "path": "/fields", "value": {"id": "x"}},
     {"op": "add", "path": "/fields/title", "value": "t"}],
    [{"op": "add", "path": "/fields/labels/0", "value": "a"}],  # a list: jsonpatch's
    [{"op": "add", "path": "/fields/a~1b", "value": "a"}],  # an escape: jsonpatch's
    [{"op": "move", "from": "/body", "path": "/b"}],
    [{"op": "replace", "path": "/fields/nope", "value": 1}],  # fails: jsonpatch words it
    [{"op": "remove", "path": "/fields/nope"}],
    [{"op": "add", "path": "/nope/x", "value": 1}],
    [{"op": "add", "path": "/fields/title"}],  # no value
    [{"op": "bogus", "path": "/fields/title"}],
])
def test_shared_replay_equals_jsonpatch_and_changes_nothing(patch: list[dict[str, Any]]
                                                           ) -> None:
    state = {"fields": {"id": "x", "title": "t", "labels": ["b"], "x": {"a": ["0"]}},
             "body": "b\n"}
    kept, patch_kept = json.dumps(state), json.dumps(patch)
    try:
        expected: Any = apply_patch(state, patch)
    except ValueError:
        expected = None
    shared = _apply_shared(state, patch)
    if patch[0]["path"] in ("/fields/x", "/fields"):
        assert shared is not None  # the common shape takes the shared path
    if shared is not None:  # else: the caller runs jsonpatch itself
        assert shared == expected
    assert json.dumps(state) == kept and json.dumps(patch) == patch_kept


# --------------------------------------------------------------------------- DAG helpers


def test_replay_heads_ancestors(linear: tuple[list[Event], Record]) -> None:
    events, record = linear
    states = replay(events, TASK)
    assert revision_of(states[events[2]["id"]]) == record.revision
    assert heads(events) == [events[2]["id"]]
    head, state = head_state(events, TASK)
    assert head == events[2]["id"] and state == record.state()
    assert ancestors(events, events[1]["id"]) == {events[0]["id"], events[1]["id"]}


def test_replay_names_the_line_of_a_missing_parent(linear: tuple[list[Event], Record]) -> None:
    events, _ = linear
    parsed = parse_events(render_history([events[0], events[2]]), TASK)
    with pytest.raises(HistoryError) as info:
        replay(parsed, TASK)
    assert (info.value.problem.line, info.value.problem.rule) == (2, "parent-order")


def test_topological_order_ignores_input_order() -> None:
    r0 = _record()
    e0 = _event([], None, r0, op="create")
    side = [_event([e0["id"]], r0, _record(title=f"t{i}"), at=f"2026-01-0{i + 1}T00:00:00Z")
            for i in range(4)]
    events = [e0, *side]
    expected = topological_order(events)
    assert expected[0] == e0
    for seed in range(10):
        shuffled = events[:]
        random.Random(seed).shuffle(shuffled)
        assert topological_order(shuffled) == expected


# --------------------------------------------------------------------------- genesis state cut


def _genesis_cases() -> list[Event]:
    plain = _event([], None, _record(), op="create")
    # Values that spell the marker and the body op the cut looks for, inside the fields.
    tricky = _record(x={"patch": [{"op": "add", "path": "/fields", "value": "v"}],
                        "z": ',"parents":[],"patch":[{"op":"add","path":"/fields","value":'},
                     response='},{"op":"add","path":"/body","value":"x"}]}',
                     body='},{"op":"add","path":"/body","value":\n')
    noted = _event([], None, _record(), op="create", note=',"parents":[],"patch":[')
    meta = _rehash(dict(plain, meta={"parents": [], "patch": [
        {"op": "add", "path": "/fields", "value": {}}]}))
    swapped = _rehash(dict(plain, patch=list(reversed(plain["patch"]))))
    return [plain, _event([], None, tricky, op="create"), noted, meta, swapped]


@pytest.mark.parametrize("case", range(5))
def test_genesis_state_cut_equals_the_encoded_state(case: int) -> None:
    event = _genesis_cases()[case]
    line = event_line(event).rstrip("\n")
    cut = historycheck._genesis_state_json(line, json.loads(line))
    state = replay([event])[event["id"]]
    if cut is not None:
        assert cut == (canonical_json(state).decode("utf-8"),
                       canonical_json(state["body"]).decode("utf-8"))
    assert (cut is None) == (case >= 3)  # meta and a reordered patch take the encoder
    assert verify(TASK, render_history([event]), None,
                  revision=revision_of(state)) == []


@pytest.mark.parametrize("case", range(5))
def test_a_genesis_with_a_wrong_after_is_found(case: int) -> None:
    event = _rehash(dict(_genesis_cases()[case], after="0" * 64))
    assert _rules(verify(TASK, render_history([event]), None, revision="0" * 64)) == [
        (1, "after")]


# --------------------------------------------------------------------------- state encoding

_json_leaf = st.none() | st.booleans() | st.integers() | st.text()
_json = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(), inner, max_size=4), max_leaves=12)
_fields = st.dictionaries(st.text(), _json, max_size=8)


@settings(max_examples=examples(400), deadline=None)
@given(fields=_fields, body=st.text(), other=st.one_of(st.none(), _json),
       shape=st.sampled_from(["record", "extra key", "no body", "body not a string"]),
       same_body=st.booleans())
def test_state_json_is_the_plain_encoding(fields: dict[str, Any], body: str, other: Any,
                                          shape: str, same_body: bool) -> None:
    """_state_json gives the canonical JSON of any float-free state byte for byte, with its
    body's, whether the body is the base's very object (its encoding reused) or not."""
    base = {"fields": {}, "body": body}
    state: dict[str, Any] = {"fields": fields,
                             "body": body if same_body else "".join(list(body))}
    if shape == "extra key":
        state["x"] = other
    elif shape == "no body":
        del state["body"]
        state["bodx"] = other
    elif shape == "body not a string":
        state["body"] = other if not isinstance(other, str) else [other]
    expected = canonical_json(state).decode("utf-8")
    for base_body in ("", canonical_json(body).decode("utf-8")):
        text, body_json = _state_json(state, base, base_body)
        assert text == expected
        if shape == "record":
            assert body_json == canonical_json(body).decode("utf-8")
        else:
            assert body_json == ""
        assert json.loads(text) == state


def test_state_json_reuses_the_base_body_only_for_the_same_object() -> None:
    body = "x" * 40
    base = {"fields": {}, "body": body}
    # A stale encoding is used only when the body is the base's very object: a wrong one
    # shows that it was reused (never passed in practice: bodies map to their encoding).
    assert _state_json({"fields": {}, "body": body}, base, '"stale"')[0] == \
        '{"body":"stale","fields":{}}'
    other = "".join(["x"] * 40)
    assert other == body and other is not body
    assert _state_json({"fields": {}, "body": other}, base, '"stale"')[0] == \
        canonical_json({"fields": {}, "body": body}).decode("utf-8")


def test_verify_finds_a_wrong_after_when_only_the_fields_change(
        linear: tuple[list[Event], Record]) -> None:
    """The reused body encoding still hashes the whole state: an ``after`` that is wrong
    (of a state with another body, or another field) is found on its line."""
    events, record = linear
    plain = strip_lines(events)
    assert verify(TASK, render_history(plain), None, revision=record.revision) == []
    claimed = replay(events)[events[1]["id"]]
    assert claimed["body"] == replay(events)[events[0]["id"]]["body"]  # the body is reused
    for wrong in ({**claimed, "body": "other\n"},
                  {**claimed, "fields": {**claimed["fields"], "title": "other"}}):
        bad = _rehash(dict(plain[1], after=revision_of(wrong)))
        text = render_history([plain[0], bad])
        assert _rules(verify(TASK, text, None, revision=revision_of(wrong))) == [
            (2, "after")]


def test_the_plain_encoder_is_canonical_json() -> None:
    """ledgit.core.canonjson's encoder gives json.dumps's canonical text (sorted keys, no
    whitespace, no ASCII escaping) and refuses what canonical JSON refuses."""
    encode = canonjson.plain_encoder()
    for value in ({"x": [1, {"é": None}], "a": "\u2028\x00"}, [], "plain", 12, True,
                  {"b": [1, "\u00e9\x1f", None, True], "a": {"z": "", "y": -2}}):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert encode(value) == text
        assert canonical_json(value) == text.encode("utf-8")
    assert encode({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    with pytest.raises(ValueError):
        encode(float("nan"))
    with pytest.raises(TypeError):
        encode({"a": object()})


def test_a_write_on_a_history_holding_infinity_is_refused_as_damaged(tmp_path: Path) -> None:
    """A history line holding NaN or Infinity (which Python's json reads but no JSON text
    holds, RFC 8259) is a damaged history for the write path: exit 1 naming the line and
    rule ``hash``, never a traceback (found by stress/test_fuzz.py)."""
    board = init_board(tmp_path / "board")
    task = create_task(board, {"title": "t"}, "", "ada").id
    path = board.history_path(task)
    path.write_text(path.read_text().replace('"before":null', '"before":[Infinity]', 1))
    with pytest.raises(LedgitError) as caught:
        mutate_task(board, task, lambda r: finish(r, dict(r.fields, title="u"), "update"), "ada")
    assert caught.value.code == CHECK_FAILED
    assert "line 1: hash" in caught.value.message
