"""Merges keep the lifecycle (issue 12 item 6): every record ``merge_records`` produces from
sides built by the real lifecycle operations passes ``lifecycle_problems`` (what ``verify``
and the pre-commit hook apply), whichever side is ours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgit.core import change
from ledgit.core.errors import LedgitError
from ledgit.core.history import heads, new_event, parse_events, render_history
from ledgit.core.historycheck import verify
from ledgit.core.historymerge import merge_histories
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.merge import merge_records
from ledgit.core.readout import build_readout
from ledgit.core.record import Record, make_record
from ledgit.core.render import render_record
from ledgit.operations import claims, transitions

T0 = "2026-01-01T00:00:00.000000Z"
HOUR = 3600


def ts(sec: int) -> str:
    return f"2026-01-01T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.000000Z"


def start() -> Record:
    return make_record({"id": "T-abc", "title": "t", "status": "open", "created": T0,
                        "last_modified": T0}, "## Goal\ng\n\n## Acceptance\n- a\n")


Step = tuple[str, str, int]  # (operation, actor, ttl)
OPERATIONS = ["claim", "take_over", "heartbeat", "release", "wait", "monitor", "complete",
              "park", "drop", "reopen", "update"]


def apply(record: Record, step: Step, now: str) -> Record:
    """``record`` after one real lifecycle operation at ``now``; unchanged when ops refuses it
    (as the CLI would: nothing written)."""
    name, by, ttl = step
    calls: dict[str, Callable[[], change.Change]] = {
        "claim": lambda: claims.claim(record, by=by, now=now, ttl=ttl),
        "take_over": lambda: claims.claim(record, by=by, now=now, ttl=ttl, take_over=True),
        "heartbeat": lambda: claims.heartbeat(record, by=by, now=now, ttl=ttl),
        "release": lambda: claims.release(record, by=by, now=now, ttl=ttl),
        "wait": lambda: transitions.wait(record, by=by, on="review", now=now, ttl=ttl),
        "monitor": lambda: transitions.monitor(record, by=by, signal="ci", now=now, ttl=ttl),
        "complete": lambda: transitions.complete(record, by=by, response=f"{by} did it", now=now,
                                         ttl=ttl),
        "park": lambda: transitions.park(record, by=by, reason="later", now=now, ttl=ttl),
        "drop": lambda: transitions.drop(record, by=by, reason="no", now=now, ttl=ttl),
        "reopen": lambda: transitions.reopen(record, by=by, now=now),
        "update": lambda: transitions.update(record, priority=len(by) % 5,
                                             next_action=f"{by} next"),
    }
    try:
        change = calls[name]()
    except LedgitError:
        return record
    fields = dict(change[0].fields, last_modified=now)
    return make_record(fields, change[0].body)


steps = st.lists(st.tuples(st.sampled_from(OPERATIONS), st.sampled_from(["amy", "bob"]),
                           st.sampled_from([1, HOUR])), min_size=1, max_size=5)


def run(record: Record, plan: list[Step], clock: int, gaps: list[int]) -> list[Record]:
    """The records after each step of ``plan`` (unchanged steps left out)."""
    out: list[Record] = []
    for step, gap in zip(plan, gaps, strict=False):
        clock += gap
        new = apply(record, step, ts(clock))
        if new != record:
            out.append(new)
            record = new
    return out


@st.composite
def triples(draw: st.DrawFn) -> tuple[Record, list[Record], list[Record]]:
    """(base, ours' records, theirs' records) from real operations; the sides start at the
    same time so equal ``last_modified`` (the tie rule) comes up too."""
    base_plan = draw(st.lists(st.tuples(st.sampled_from(["claim", "heartbeat", "update"]),
                                        st.sampled_from(["amy", "bob"]), st.just(HOUR)),
                              max_size=3))
    base_steps = run(start(), base_plan, 0, [1] * len(base_plan))
    base = base_steps[-1] if base_steps else start()
    gaps = st.lists(st.integers(0, 3), min_size=5, max_size=5)
    ours = run(base, draw(steps), 100, draw(gaps))
    theirs = run(base, draw(steps), 100, draw(gaps))
    return base, ours, theirs


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(triples())
def test_merged_records_keep_the_lifecycle_and_are_symmetric(
        t: tuple[Record, list[Record], list[Record]]) -> None:
    base, ours_steps, theirs_steps = t
    ours = ours_steps[-1] if ours_steps else base
    theirs = theirs_steps[-1] if theirs_steps else base
    for side in (base, ours, theirs):
        assert not lifecycle_problems(side.fields)  # the operations keep it on each side
    one = merge_records(base, ours, theirs)
    other = merge_records(base, theirs, ours)
    assert render_record(one.record) == render_record(other.record)
    assert lifecycle_problems(one.record.fields) == [], render_record(one.record)
    f = one.record.fields
    assert bool(f.get("claim")) == (f["status"] == "in_progress") or (
        f["status"] == "in_progress" and not f.get("claim")
        and not (ours.fields.get("claim") or theirs.fields.get("claim")))
    unknown = build_readout(f, one.record.body, path="tasks/T-abc.md",
                            revision=one.record.revision, now=ts(200), ttl=HOUR)["unknown"]
    assert not [u for u in unknown if u["reason"].startswith("contradictory")], unknown


def _history(base: Record, steps_: list[Record], actor: str) -> str:
    events: list[dict[str, Any]] = []
    prev: dict[str, Any] = {}
    shared = [start(), *([] if base == start() else [base])]
    for r in [*shared, *steps_]:
        e = new_event(parents=[events[-1]["id"]] if events else [],
                      at=r.fields["last_modified"],
                      actor="lead" if len(events) < len(shared) else actor,
                      op="create" if not events else "update", before_state=prev,
                      after_state=r.state())
        events.append(e)
        prev = r.state()
    return render_history(events)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(triples())
def test_merged_histories_keep_the_lifecycle_and_agree_with_the_task_merge(
        t: tuple[Record, list[Record], list[Record]]) -> None:
    base, ours_steps, theirs_steps = t
    btext = _history(base, [], "x")
    otext, ttext = _history(base, ours_steps, "o"), _history(base, theirs_steps, "t")
    one = merge_histories(btext, otext, ttext, "T-abc")
    assert one.text == merge_histories(btext, ttext, otext, "T-abc").text
    events = parse_events(one.text, "T-abc")
    assert len(heads(events)) == 1
    task = merge_records(base, ours_steps[-1] if ours_steps else base,
                         theirs_steps[-1] if theirs_steps else base).record
    assert verify("T-abc", one.text, task) == []
    assert not lifecycle_problems(task.fields)


def _claimed_by_amy() -> Record:
    return apply(start(), ("claim", "amy", HOUR), ts(1))


@pytest.mark.parametrize("end", ["release", "wait", "monitor"])
def test_ending_a_claim_wins_over_a_later_heartbeat_of_it(end: str) -> None:
    """The claim's end is a decision, a heartbeat only renews the lease: whichever is later,
    the merge keeps the end and no claim (the issue's case: a fresh claim was left on an
    open, waiting or monitoring task)."""
    base = _claimed_by_amy()
    ended = apply(base, (end, "amy", HOUR), ts(10))
    renewed = apply(base, ("heartbeat", "amy", HOUR), ts(20))
    want = {"release": "open", "wait": "waiting", "monitor": "monitoring"}[end]
    for ours, theirs in ((ended, renewed), (renewed, ended)):
        merged = merge_records(base, ours, theirs).record.fields
        assert merged["status"] == want and "claim" not in merged
        assert merged["last_modified"] == ts(20)


def test_a_later_takeover_beats_an_earlier_release_and_sets_in_progress() -> None:
    base = _claimed_by_amy()
    released = apply(base, ("release", "amy", HOUR), ts(3000))
    taken = apply(base, ("take_over", "bob", 1), ts(4000))  # amy's claim is stale for ttl 1
    assert taken.fields["claim"]["by"] == "bob"
    for ours, theirs in ((released, taken), (taken, released)):
        merged = merge_records(base, ours, theirs).record.fields
        assert merged["status"] == "in_progress" and merged["claim"]["by"] == "bob"
    earlier_take = apply(base, ("take_over", "bob", 1), ts(2000))
    merged = merge_records(base, released, earlier_take).record.fields
    assert merged["status"] == "open" and "claim" not in merged


def test_a_claim_beside_a_held_status_is_a_lifecycle_problem() -> None:
    """What verify and the hook now refuse (they accepted it before)."""
    for status in ("open", "waiting", "monitoring"):
        fields = {"status": status, "claim": {"by": "amy", "at": T0}, "waiting_on": "x"}
        assert ("claim", f"a claim is held but status is {status}") in \
            lifecycle_problems(fields)
    assert lifecycle_problems({"status": "in_progress", "claim": {"by": "amy", "at": T0}}) == []


@pytest.mark.parametrize(("end", "status", "outcome"), [
    ("drop", "done", None), ("park", "done", None),
    ("complete_no_change", "done", {"kind": "no_change", "reason": "fine"})])
def test_the_outcome_follows_the_status_that_won(end: str, status: str,
                                                  outcome: dict[str, str] | None) -> None:
    """One side completed, the other (later) dropped or parked: done wins (DESIGN §7), and the
    later side's drop/park outcome, which would contradict it, gives way to the completing
    side's outcome (none here), whichever side is ours, in the task file and the history."""
    base = _claimed_by_amy()
    done = apply(base, ("complete", "amy", HOUR), ts(10))
    if end == "complete_no_change":
        done = make_record(dict(transitions.complete(base, by="amy", response="x", now=ts(10),
                                             ttl=HOUR, outcome="no_change",
                                             reason="fine").record.fields), base.body)
        later = apply(base, ("drop", "amy", HOUR), ts(20))
    else:
        later = apply(base, (end, "amy", HOUR), ts(20))
    one = merge_records(base, done, later)
    other = merge_records(base, later, done)
    assert render_record(one.record) == render_record(other.record)
    f = one.record.fields
    assert f["status"] == status and f.get("outcome") == outcome, f
    kind = later.fields["outcome"]["kind"]
    assert one.notes == other.notes == [
        f"outcome kind {kind} contradicts status done (kind {kind} means "
        f"{ {'drop': 'dropped', 'park': 'parked'}[kind]}): the outcome follows the merged "
        f"status"]
    # Where the kept outcome came from: the completing side (ours in ``one``), or nowhere.
    assert one.provenance.get("outcome") == ("ours" if outcome else None)
    assert other.provenance.get("outcome") == ("theirs" if outcome else None)
    assert lifecycle_problems(f) == []
    btext = _history(base, [], "x")
    hist = merge_histories(btext, _history(base, [done], "o"), _history(base, [later], "t"),
                           "T-abc")
    assert verify("T-abc", hist.text, one.record) == []


@pytest.mark.parametrize("kind", ["blocked", "no_change", "watch"])
@pytest.mark.parametrize("order", ["drop_later", "drop_earlier"])
def test_an_outcome_that_came_with_a_lost_drop_gives_way(kind: str, order: str) -> None:
    """A drop whose outcome kind fits any status (blocked, no_change, ...) merged with a
    completion: done wins, and the dropper's outcome and reason, which describe an ending that
    did not happen, give way to the completing side's outcome (none here, or its own), in
    either order and whichever side is ours; the task file and the history agree."""
    base = _claimed_by_amy()
    drop_at, done_at = (ts(20), ts(10)) if order == "drop_later" else (ts(10), ts(20))
    dropped = make_record(dict(transitions.drop(base, by="amy", reason="amy gave up", now=drop_at,
                                        ttl=HOUR, kind=kind).record.fields,
                               last_modified=drop_at), base.body)
    for done_outcome in (None, {"kind": "no_publish", "reason": "internal"}):
        extra = ({"outcome": "no_publish", "reason": "internal"} if done_outcome else {})
        done = make_record(dict(transitions.complete(base, by="amy", response="x", now=done_at,
                                             ttl=HOUR, **extra).record.fields,
                                last_modified=done_at), base.body)
        one, other = merge_records(base, done, dropped), merge_records(base, dropped, done)
        assert render_record(one.record) == render_record(other.record)
        f = one.record.fields
        assert f["status"] == "done" and f.get("outcome") == done_outcome, f
        # Said when the field-wise merge had taken the dropper's outcome: it changed alone,
        # or both changed it and the drop was later.
        said = done_outcome is None or order == "drop_later"
        assert one.notes == other.notes == ([
            f"outcome kind {kind} came with status dropped, which done beat: the outcome "
            f"follows the merged status"] if said else [])
        assert lifecycle_problems(f) == []
        hist = merge_histories(_history(base, [], "x"), _history(base, [done], "o"),
                               _history(base, [dropped], "t"), "T-abc")
        assert verify("T-abc", hist.text, one.record) == []


def test_an_outcome_set_without_a_status_change_is_kept() -> None:
    """The rule is about an outcome that came with a lost status: a side that only records an
    outcome on a task whose status the other side moved keeps it (changed on one side)."""
    fields = {k: v for k, v in _claimed_by_amy().fields.items() if k != "claim"}
    base = make_record(dict(fields, status="dropped",
                            outcome={"kind": "drop", "reason": "no"}), "")
    noted = make_record(dict(base.fields, outcome={"kind": "no_change", "reason": "same"},
                             last_modified=ts(10)), "")
    archived = make_record(dict(base.fields, status="archived", last_modified=ts(20)), "")
    for ours, theirs in ((noted, archived), (archived, noted)):
        f = merge_records(base, ours, theirs).record.fields
        assert f["status"] == "archived"
        assert f["outcome"] == {"kind": "no_change", "reason": "same"}


def test_dropped_beats_parked_and_keeps_its_own_outcome() -> None:
    base = _claimed_by_amy()
    dropped = apply(base, ("drop", "amy", HOUR), ts(10))
    parked = apply(base, ("park", "amy", HOUR), ts(20))  # later: its outcome won as a scalar
    for ours, theirs in ((dropped, parked), (parked, dropped)):
        f = merge_records(base, ours, theirs).record.fields
        assert f["status"] == "dropped" and f["outcome"] == {"kind": "drop", "reason": "no"}


@pytest.mark.parametrize(("status", "kind", "bad"), [
    ("done", "drop", True), ("done", "park", True), ("dropped", "done", True),
    ("dropped", "park", True), ("parked", "drop", True), ("parked", "done", True),
    ("done", "no_change", False), ("done", "no_publish", False), ("done", "done", False),
    ("dropped", "no_change", False), ("dropped", "blocked", False),
    ("parked", "blocked", False), ("archived", "drop", False), ("archived", "park", False),
    ("waiting", "park", False), ("monitoring", "park", False)])
def test_an_outcome_kind_that_names_another_ended_status_is_a_lifecycle_problem(
        status: str, kind: str, bad: bool) -> None:
    """What verify and the hook now refuse; the combinations the operations make stay valid
    (complete --outcome no_change, drop --kind no_change, archive keeps the outcome, wait or
    monitor from parked keeps ``park``)."""
    fields = {"status": status, "response": "r", "outcome": {"kind": kind, "reason": "why"},
              **({"waiting_on": "w"} if status == "waiting" else {})}
    meaning = {"drop": "dropped", "park": "parked", "done": "done"}.get(kind)
    expected = [("outcome", f"outcome kind {kind} contradicts status {status} (kind {kind} "
                            f"means {meaning})")] if bad else []
    assert lifecycle_problems(fields) == expected


@pytest.mark.parametrize(("call", "message"), [
    (lambda r: transitions.complete(r, by="amy", response="x", now=ts(9), ttl=HOUR, outcome="drop",
                            reason="no"),
     "T-abc: outcome: outcome kind drop contradicts status done (kind drop means dropped)"),
    (lambda r: transitions.drop(r, by="amy", reason="no", now=ts(9), ttl=HOUR, kind="done"),
     "T-abc: outcome: outcome kind done contradicts status dropped (kind done means done)")])
def test_the_operations_refuse_a_contradicting_outcome(
        call: Callable[[Record], change.Change], message: str) -> None:
    with pytest.raises(LedgitError) as exc:
        call(_claimed_by_amy())
    assert str(exc.value) == message and exc.value.code == 2
