"""Inputs for the fuzzers (issue 7, hostile input): valid seed records and histories, and
hypothesis strategies that damage them the way hostile or broken tools would.

Pure: builds everything in memory with ledgit's own record and history modules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ledgit.core.history import new_event, render_history
from ledgit.core.record import Record, make_record
from ledgit.core.render import render_record

T0 = "2026-01-01T00:00:00.000000Z"

SEED_FIELDS: list[dict[str, Any]] = [
    {"id": "T-aaaaaaaaaa", "title": "minimal", "status": "open", "created": T0,
     "last_modified": T0},
    {"id": "T-bbbbbbbbbb", "title": "NO", "status": "in_progress", "priority": 1,
     "owner": "ada", "worker": "agent-1",
     "claim": {"by": "agent-1", "at": T0, "heartbeat": T0, "note": "on it: 'quoted'"},
     "depends_on": ["T-aaaaaaaaaa"], "labels": ["yes", "0123", "a b"],
     "commits": ["0123456", "deadbeef"], "response": "line one\nline two",
     "next_action": "ship", "gate": "review", "created": T0,
     "last_modified": "2026-01-02T03:04:05.678901Z",
     "items": [{"id": "i-1", "kind": "fact", "text": "facts: yes", "trust": "locked",
                "by": "ada", "at": T0},
               {"id": "i-2", "kind": "decision", "text": "x", "why": "y",
                "trust": "candidate", "by": "agent-1", "at": T0, "supersedes": ["i-1"]}],
     "x": {"beads": {"id": "bd-1", "deps": ["a", "b"]}, "null": "~"}},
    {"id": "T-cccccccccc", "title": "parked — ünïcödé \u00e9", "status": "parked",
     "outcome": {"kind": "park", "reason": "waiting for Q3", "reuse": "the parser"},
     "waiting_on": "ops", "created": T0, "last_modified": T0},
    {"id": "T-dddddddddd", "title": "done", "status": "done", "response": "did it",
     "created": T0, "last_modified": T0, "commits": ["abcdef1234"]},
]
SEED_BODIES = ["", "## Goal\n\nDo it.\n\n## Acceptance\n\n- works\n",
               "---\nnot front matter\n---\n", "line\u2028sep \ufeff bom\n"]


def seed_records() -> list[Record]:
    return [make_record(f, SEED_BODIES[i % len(SEED_BODIES)])
            for i, f in enumerate(SEED_FIELDS)]


def seed_texts() -> list[str]:
    """Rendered seed records, plus ledgit's golden record files when they are present."""
    texts = [render_record(r) for r in seed_records()]
    golden = Path(__file__).resolve().parents[1] / "tests" / "data" / "records"
    if golden.is_dir():
        for p in sorted(golden.glob("*.md")):
            data = p.read_bytes()
            if len(data) < 20_000:
                texts.append(data.decode("utf-8", "replace"))
    return texts


HOSTILE_TOKENS = [
    "!!python/object/apply:os.system ['touch /tmp/ledgit-pwned']", "!!python/name:os.system",
    "!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "!foo ", "!<tag:yaml.org,2002:int> ",
    "&a ", "*a", "<<: *a\n", "&anchor [1, 2]", "\t", "\r\n", "\r", "\ufeff", "\u2028",
    "\u2029", "\x85", "\x00", "\x1b[31m", "\ud800", "---\n", "...\n", "%YAML 1.1\n",
    "%TAG ! tag:evil,2026:\n", "? ", "- ", "[", "]", "{", "}", ": ", ", ", '"', "'", "|\n",
    ">-\n", "# c\n", "\\", "~", "null", "NO", "yes", "0123", "0x1F", "1e3", ".inf", "-.nan",
    "2026-01-01", "12:30:00", "=", "<<", "@", "`", "\n  ", "\n- ", "\n", "id: ../../etc/x\n",
    "id: \"a\\0b\"\n", "title: [a, b]\n", "status: archived\n", "claim:\n  by: x\n",
    "items:\n  - id: i\n", "x:\n  " + "k" * 300 + ": v\n", "x: " + "[" * 60 + "]" * 60 + "\n",
    "priority: 7\n", "priority: -1\n", "created: 2026-02-30T00:00:00Z\n",
    "last_modified: 9999-12-31T23:59:59.999999-23:59\n", "a" * 2000,
]


@st.composite
def damaged_text(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed text with a few hostile edits: insertions, deletions, duplicated or swapped
    lines."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 4))
        pos = draw(st.integers(0, len(text)))
        if kind <= 1:
            token = draw(st.sampled_from(HOSTILE_TOKENS) | st.text(max_size=8))
            text = text[:pos] + token + text[pos:]
        elif kind == 2:
            end = draw(st.integers(pos, min(len(text), pos + 40)))
            text = text[:pos] + text[end:]
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            j = draw(st.integers(0, max(0, len(lines) - 1)))
            if kind == 3:
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def encode(text: str, rng_bit: int) -> bytes:
    """UTF-8 bytes of ``text`` (surrogates escaped), sometimes CRLF or with a BOM."""
    data = text.encode("utf-8", "surrogatepass")
    if rng_bit & 1:
        data = data.replace(b"\n", b"\r\n")
    if rng_bit & 2:
        data = b"\xef\xbb\xbf" + data
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)


# --------------------------------------------------------------------------- histories


def seed_history() -> tuple[str, list[str], Record]:
    """A valid history of one task (create, then a few edits) as text, its lines, and the
    record at its head."""
    events, rec = _chain()
    return render_history(events), render_history(events).splitlines(), rec


def _chain(start: Record | None = None, parents: list[str] | None = None,
           who: str = "agent-a", n: int = 3, tag: str = "") -> tuple[list[dict[str, Any]],
                                                                       Record]:
    rec = start or seed_records()[1]
    events: list[dict[str, Any]] = []
    if start is None:
        genesis = new_event(parents=[], at=rec.fields["last_modified"], actor=who,
                            op="create", before_state={}, after_state=rec.state())
        events.append(genesis)
        parents = [genesis["id"]]
    assert parents is not None
    for i in range(n):
        fields = dict(rec.fields)
        fields["response"] = f"{who} step {i}{tag}"
        fields["last_modified"] = f"2026-03-0{1 + i}T00:00:00.00000{len(tag) % 10}Z"
        if i == 1:
            fields["labels"] = [*fields.get("labels", []), f"{who}{tag}"]
        new = make_record(fields, rec.body + f"{who} line {i}{tag}\n")
        e = new_event(parents=parents, at=new.fields["last_modified"], actor=who,
                      op="update", before_state=rec.state(), after_state=new.state())
        events.append(e)
        parents = [e["id"]]
        rec = new
    return events, rec


def seed_branches(n_a: int, n_b: int) -> tuple[str, str, str, Record, Record, Record]:
    """(base, ours, theirs) history texts that fork after a shared prefix, and the three
    head records -- the input of a real merge."""
    base_events, base_rec = _chain(n=2)
    head = [base_events[-1]["id"]]
    a_events, a_rec = _chain(base_rec, head, "agent-a", n_a, "A")
    b_events, b_rec = _chain(base_rec, head, "agent-b", n_b, "B")
    return (render_history(base_events), render_history(base_events + a_events),
            render_history(base_events + b_events), base_rec, a_rec, b_rec)


@st.composite
def damaged_history(draw: st.DrawFn, lines: list[str]) -> str:
    """A history with hostile edits at the JSON level or the text level."""
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 9))
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if not lines:
            lines.append(draw(st.text(max_size=30)))
            continue
        if kind <= 3:  # replace one key of one event with an arbitrary JSON value
            try:
                event = json.loads(lines[i])
            except (ValueError, RecursionError):  # a line an earlier edit nested deeply
                continue
            if isinstance(event, dict):
                key = draw(st.sampled_from(sorted(event) + ["extra", "_line", "meta"]))
                event[key] = draw(json_values)
                lines[i] = json.dumps(event, allow_nan=True)
        elif kind == 4:  # patch operations that are not RFC 6902
            try:
                event = json.loads(lines[i])
            except (ValueError, RecursionError):  # a line an earlier edit nested deeply
                continue
            if isinstance(event, dict):
                event["patch"] = draw(st.lists(
                    st.dictionaries(st.sampled_from(["op", "path", "value", "from"]),
                                    json_values | st.sampled_from(
                                        ["add", "remove", "replace", "move", "copy", "test",
                                         "/fields/title", "/", "", "/fields/-", "/body/0",
                                         "~2", "/fields/~1x"])), max_size=3))
                lines[i] = json.dumps(event, allow_nan=True)
        elif kind == 5:
            del lines[i]
        elif kind == 6:
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
        elif kind == 7:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 8:
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(st.sampled_from(
                ["\x00", "\\u0000", "NaN", "}", "\"", "\\ud800", "1e999", "\u2028", "\r"])
                | st.text(max_size=4)) + lines[i][pos:]
        else:
            depth = draw(st.sampled_from([10, 1000, 100_000]))
            lines.insert(i, "[" * depth + "]" * depth)
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))
