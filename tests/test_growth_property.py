"""Acceptance of issue 12, "a history only grows": over random histories built in-process,
the hook's staged check (:func:`ledgit.integration.precommit.check_staged`) and the gate's
per-task check (:func:`ledgit.integration.taskcheck.check_growth`, which both call) refuse every
lossy child -- the last k events cut, one branch's events dropped, a middle event removed --
and refuse no lossless merge or rebase made by the merge policy
(:func:`ledgit.core.merge.merge_histories`, what the driver writes). The end-to-end cases on
real Git are in test_growth.py."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

from ledgit.core.history import event_line, head_state, new_event, parse_events, strip_lines
from ledgit.core.historygrowth import lost_events, lost_in_text
from ledgit.core.historymerge import merge_histories
from ledgit.core.record import make_record, record_from_state
from ledgit.core.render import render_record
from ledgit.integration.precommit import check_staged
from ledgit.integration.taskcheck import (
    GROWTH_RULE,
    MAX_LOST_LINES,
    Finding,
    check_growth,
    task_paths,
)

TID = "T-growth1"
MD, HIST = task_paths("", TID)
CASES = 210  # of each kind: >= 200 lossy and >= 200 lossless in all (issue 12, Acceptance)
ACTORS = ("agent-a", "agent-b", "lead", "bot")


def _ts(n: int) -> str:
    """``n`` seconds after 2026-03-01T00:00:00Z, RFC 3339 with microseconds."""
    moment = datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(seconds=n)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


STATES: dict[str, dict[str, Any]] = {}  # event id -> state after it (saves replays)


def _genesis(rng: random.Random) -> list[dict[str, Any]]:
    r = make_record({"id": TID, "title": f"task {rng.randrange(10**6)}", "status": "open",
                     "created": _ts(0), "last_modified": _ts(0)}, "## Goal\nGrow.\n")
    event = new_event(parents=[], at=_ts(0), actor="lead", op="create", before_state={},
                      after_state=r.state())
    STATES[event["id"]] = r.state()
    return [event]


def _extend(events: list[dict[str, Any]], k: int, rng: random.Random,
            clock: list[int]) -> list[dict[str, Any]]:
    """``events`` plus ``k`` random field edits, each on the previous head."""
    out = list(events)
    state = STATES.get(out[-1]["id"]) or head_state(out, TID)[1]
    for _ in range(k):
        clock[0] += rng.randrange(1, 5000)
        fields = dict(state["fields"])
        choice = rng.randrange(3)
        if choice == 0:
            fields["priority"] = rng.randrange(5)
        elif choice == 1:
            fields["labels"] = sorted({*fields.get("labels", []), f"l{rng.randrange(30)}"})
        else:
            fields["title"] = f"task {rng.randrange(10**6)}"
        fields["last_modified"] = _ts(clock[0])
        after = make_record(fields, state["body"]).state()
        if after == state:
            continue
        out.append(new_event(parents=[out[-1]["id"]], at=_ts(clock[0]),
                             actor=rng.choice(ACTORS), op="update", before_state=state,
                             after_state=after))
        STATES[out[-1]["id"]] = state = after
    return out


def _text(events: list[dict[str, Any]]) -> bytes:
    return "".join(event_line(e) for e in events).encode()


def _record(history: bytes) -> bytes:
    """The task file that agrees with ``history``'s head."""
    events = parse_events(history, TID)
    state = STATES.get(events[-1]["id"]) or head_state(events, TID)[1]
    return render_record(record_from_state(state)).encode()


def _hook(parent: bytes, child: bytes, child_md: bytes = b"") -> list[Finding]:
    """The pre-commit hook's check of one staged task (its file ``child_md``, its history
    ``child``) whose HEAD holds ``parent``; HEAD's task file is only read for a removal."""
    head = {MD: b"", HIST: parent}
    return check_staged("", {HIST: child, MD: child_md}, head.get, [], [])


def _gate(parent: bytes, child: bytes, base: bytes | None = None) -> list[Finding]:
    """The gate's growth check of one task against one parent commit (its task file is only
    read for a removal)."""
    found, _ = check_growth(TID, MD, HIST, (b"", parent), (b"", child), against="parent",
                            base_history=base)
    return found


def _growth(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.rule == GROWTH_RULE]


def _assert_refused(parent: bytes, child: bytes, lost: int) -> None:
    assert lost > 0
    want = min(lost, MAX_LOST_LINES) + (lost > MAX_LOST_LINES)
    assert len(_growth(_gate(parent, child))) == want
    assert len(_growth(_hook(parent, child))) == want


def _branches(rng: random.Random) -> tuple[bytes, bytes, bytes]:
    """(base, ours, theirs): a common history and two branches of it, each with >= 1 event."""
    clock = [10]
    base = _extend(_genesis(rng), rng.randrange(0, 6), rng, clock)
    ours = _extend(base, rng.randrange(1, 6), rng, [clock[0]])
    theirs = _extend(base, rng.randrange(1, 6), rng, [clock[0] + rng.randrange(-50, 50)])
    return _text(base), _text(ours), _text(theirs)


def test_every_lossy_child_is_refused_by_the_hook_and_the_gate() -> None:
    rng = random.Random(12)
    refused = 0
    for n in range(CASES):
        kind = n % 3
        if kind == 0:  # the last k events cut (perhaps with new events after the cut)
            events = _extend(_genesis(rng), rng.randrange(2, 16), rng, [10])
            k = rng.randrange(1, len(events))
            kept = events[:-k]
            if rng.random() < 0.5:
                kept = _extend(kept, rng.randrange(1, 3), rng, [10**6])
            parent, child, lost = _text(events), _text(kept), k
        elif kind == 1:  # one branch's events dropped (checkout --ours, merge -s ours)
            base, ours, theirs = _branches(rng)
            parent = theirs
            lost = len(parse_events(theirs, TID)) - len(parse_events(base, TID))
            if rng.random() < 0.5:
                child = ours
            else:  # a resolution that kept the merge event but lost theirs' lines
                merged = merge_histories(base.decode(), ours.decode(), theirs.decode(), TID)
                theirs_only = set(theirs.splitlines()) - set(base.splitlines())
                child = b"".join(line + b"\n" for line in merged.text.encode().splitlines()
                                 if line not in theirs_only)
        else:  # a middle event removed
            events = _extend(_genesis(rng), rng.randrange(3, 12), rng, [10])
            i = rng.randrange(1, len(events) - 1)
            parent, child, lost = _text(events), _text(events[:i] + events[i + 1:]), 1
        _assert_refused(parent, child, lost)
        refused += 1
    assert refused == CASES


def test_no_lossless_merge_or_rebase_is_refused() -> None:
    rng = random.Random(13)
    for n in range(CASES):
        base, ours, theirs = _branches(rng)
        merged = merge_histories(base.decode(), ours.decode(), theirs.decode(), TID)
        assert not merged.conflict
        child = merged.text.encode()
        md = _record(child)
        if n % 2 == 0:  # a merge commit: both sides are parents
            for parent in (ours, theirs):
                assert _gate(parent, child) == []
                assert _hook(parent, child, md) == []
        else:  # a rebase step: HEAD is upstream (ours); it takes what the commit added
            assert _hook(ours, child, md) == []
            assert _gate(ours, child) == []
            assert _gate(theirs, child, base=base) == []
        grown = _text(_extend(strip_lines(parse_events(child, TID)), rng.randrange(1, 4), rng,
                                   [10**7]))
        assert _gate(child, grown) == [] and _hook(child, grown, _record(grown)) == []


def test_lost_events_names_each_lost_event_in_parent_order() -> None:
    rng = random.Random(14)
    events = _extend(_genesis(rng), 6, rng, [10])
    child = events[:2] + events[4:]
    assert [e["id"] for e in lost_events(events, child)] == [events[2]["id"], events[3]["id"]]
    assert lost_in_text(_text(events), _text(child)) == lost_events(events, child)
    assert lost_in_text(_text(events), None) == lost_events(events, [])
    # formatting is not loss: the same event on a re-encoded line is kept
    spaced = _text(events).replace(b'","', b'", "')
    assert lost_in_text(_text(events), spaced) == []
    # a cherry-pick takes only what the picked commit added to its parent
    assert lost_in_text(_text(events), _text(events[:3]), base=_text(events[:3])) == \
        lost_events(events[3:], [])


def test_a_long_loss_is_named_event_by_event_up_to_a_count() -> None:
    rng = random.Random(15)
    events = _extend(_genesis(rng), MAX_LOST_LINES + 5, rng, [10])
    lost = len(events) - 1
    found = _growth(_gate(_text(events), _text(events[:1])))
    assert len(found) == MAX_LOST_LINES + 1
    assert f"loses {lost - MAX_LOST_LINES} more event(s) of parent" in found[-1].message
