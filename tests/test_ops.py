"""Pure transitions of ledgit.operations (transitions, claims, stateitems) and the readout of
ledgit.core.readout (no disk, no click)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from ledgit.core import change, lifecycle, readout
from ledgit.core.errors import CLAIM, NOT_FOUND, USAGE, LedgitError
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.readout import build_readout, epoch_seconds, render_readout
from ledgit.core.record import Record, parse_record
from ledgit.core.render import render_record
from ledgit.operations import claims, stateitems, transitions

T0 = datetime(2026, 8, 29, 10, 0, tzinfo=timezone.utc)
TTL = 1800


def ts(minutes: float = 0) -> str:
    moment = T0 + timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_task(**kw: Any) -> Record:
    args: dict[str, Any] = {"task_id": "T-abc", "title": "Fix the dialer",
                            "goal": "Calls connect.", "accept": ["dials", "hangs up"]}
    args.update(kw)
    fields, body = transitions.create_fields(**args)
    fields.update(id="T-abc", created=ts(), last_modified=ts())
    return Record(fields, body)


def apply(change: change.Change) -> Record:
    assert not lifecycle_problems(change.record.fields)
    # every result survives the file format
    assert parse_record(render_record(change.record)) == change.record
    return change.record


def claimed(by: str = "agent-a", at: float = 0, **kw: Any) -> Record:
    return apply(claims.claim(new_task(**kw), by=by, now=ts(at), ttl=TTL, note="on it"))


def code_of(excinfo: pytest.ExceptionInfo[LedgitError]) -> int:
    return excinfo.value.code


# --------------------------------------------------------------------------- create / body


def test_create_builds_goal_and_acceptance_sections() -> None:
    r = new_task(body="Free text.\n")
    assert r.body == (
        "## Goal\nCalls connect.\n\n## Acceptance\n- dials\n- hangs up\n\n## Notes\nFree text.\n")
    assert r.fields["status"] == "open"
    assert readout.goal_of(r.body) == "Calls connect."
    assert readout.acceptance_of(r.body) == ["dials", "hangs up"]


def test_create_refuses_duplicate_sections_and_self_dependency() -> None:
    with pytest.raises(LedgitError):
        new_task(body="## Goal\nother\n")
    with pytest.raises(LedgitError):
        new_task(depends=["T-abc"])
    with pytest.raises(LedgitError):
        new_task(title="  ")


def test_acceptance_parsing_strips_markers_and_stops_at_next_heading() -> None:
    body = "## Acceptance\n- [ ] one\n* two\n1. three\nprose\n\n## Notes\n- not a criterion\n"
    assert readout.acceptance_of(body) == ["one", "two", "three"]
    assert readout.acceptance_of("## Acceptance\nfirst\nsecond\n") == ["first", "second"]
    assert readout.acceptance_of("no sections\n") is None
    assert readout.goal_of("## goal\n\n") is None


# --------------------------------------------------------------------------- claims


def test_claim_sets_in_progress_and_lease() -> None:
    r = claimed()
    assert r.fields["status"] == "in_progress"
    assert r.fields["claim"] == {"by": "agent-a", "at": ts(), "heartbeat": ts(), "note": "on it"}


def test_claim_held_by_other_is_refused_fresh_or_stale() -> None:
    r = claimed()
    with pytest.raises(LedgitError) as fresh:
        claims.claim(r, by="agent-b", now=ts(5), ttl=TTL)
    assert fresh.value.code == CLAIM and "agent-a" in str(fresh.value)
    assert "fresh" in str(fresh.value)
    with pytest.raises(LedgitError) as stale:
        claims.claim(r, by="agent-b", now=ts(45), ttl=TTL)
    assert stale.value.code == CLAIM and "stale" in str(stale.value)
    assert "--take-over" in str(stale.value)
    with pytest.raises(LedgitError) as forced:
        claims.claim(r, by="agent-b", now=ts(5), ttl=TTL, take_over=True)
    assert forced.value.code == CLAIM


def test_take_over_of_stale_claim_is_recorded() -> None:
    r = claimed()
    change = claims.claim(r, by="agent-b", now=ts(45), ttl=TTL, take_over=True, note="resuming")
    assert change.meta is not None
    assert change.meta["took_over_from"]["by"] == "agent-a"
    assert change.note is not None and "took over from agent-a" in change.note
    assert change.record.fields["claim"]["by"] == "agent-b"


def test_reclaim_by_holder_refreshes_and_keeps_at() -> None:
    r = claimed()
    again = apply(claims.claim(r, by="agent-a", now=ts(10), ttl=TTL))
    assert again.fields["claim"]["at"] == ts()
    assert again.fields["claim"]["heartbeat"] == ts(10)
    assert again.fields["claim"]["note"] == "on it"


def test_claim_needs_dependencies_done_unless_forced() -> None:
    r = new_task(depends=["T-dep"])
    with pytest.raises(LedgitError) as exc:
        claims.claim(r, by="a", now=ts(), ttl=TTL, dependency_status={"T-dep": "open"})
    assert exc.value.code == USAGE and "T-dep (open)" in str(exc.value)
    ok = claims.claim(r, by="a", now=ts(), ttl=TTL, dependency_status={"T-dep": "done"})
    assert ok.record.fields["status"] == "in_progress"
    forced = claims.claim(r, by="a", now=ts(), ttl=TTL, force=True)
    assert forced.meta == {"forced": True}


def test_claim_refused_on_ended_or_parked_tasks() -> None:
    r = apply(transitions.park(new_task(), by="a", reason="later", now=ts(), ttl=TTL))
    with pytest.raises(LedgitError, match="reopen"):
        claims.claim(r, by="a", now=ts(), ttl=TTL)


def test_heartbeat_rules() -> None:
    r = claimed()
    beat = apply(claims.heartbeat(r, by="agent-a", now=ts(20), ttl=TTL))
    assert beat.fields["claim"]["heartbeat"] == ts(20)
    with pytest.raises(LedgitError) as other:
        claims.heartbeat(r, by="agent-b", now=ts(1), ttl=TTL)
    assert other.value.code == CLAIM
    with pytest.raises(LedgitError) as none:
        claims.heartbeat(new_task(), by="agent-a", now=ts(1), ttl=TTL)
    assert none.value.code == CLAIM


def contested_record() -> Record:
    r = claimed("agent-a")
    fields = dict(r.fields)
    fields["contested"] = [{"by": "agent-b", "at": ts(1), "heartbeat": ts(1)}]
    return Record(fields, r.body)


def test_loser_of_a_contested_claim_is_refused() -> None:
    r = contested_record()
    for call in (lambda: claims.heartbeat(r, by="agent-b", now=ts(2), ttl=TTL),
                 lambda: transitions.complete(r, by="agent-b", response="x", now=ts(2), ttl=TTL),
                 lambda: claims.claim(r, by="agent-b", now=ts(2), ttl=TTL)):
        with pytest.raises(LedgitError) as exc:
            call()
        assert exc.value.code == CLAIM
        assert "claim lost to agent-a (contested in a merge)" in str(exc.value)
    # the winner keeps working
    apply(claims.heartbeat(r, by="agent-a", now=ts(2), ttl=TTL))


def test_freshness_states() -> None:
    assert claims.claim_freshness(new_task(), ts(), TTL).state == "none"
    r = claimed()
    assert claims.claim_freshness(r, ts(10), TTL).state == "fresh"
    stale = claims.claim_freshness(r, ts(45), TTL)
    assert stale.state == "stale"
    assert stale.reason == "claim by agent-a last heartbeat 45m ago, TTL 30m"
    assert claims.claim_freshness(contested_record(), ts(1), TTL).state == "contested"


def test_release() -> None:
    r = claimed()
    with pytest.raises(LedgitError) as exc:
        claims.release(r, by="agent-b", now=ts(), ttl=TTL)
    assert exc.value.code == CLAIM
    out = apply(claims.release(r, by="agent-a", now=ts(), ttl=TTL))
    assert out.fields["status"] == "open" and "claim" not in out.fields


# --------------------------------------------------------------------------- lifecycle


def test_complete_needs_account_and_holder() -> None:
    r = claimed()
    for response in (None, "", "   "):
        with pytest.raises(LedgitError) as exc:
            transitions.complete(r, by="agent-a", response=response, now=ts(), ttl=TTL)
        assert exc.value.code == USAGE
    with pytest.raises(LedgitError) as other:
        transitions.complete(r, by="agent-b", response="done", now=ts(), ttl=TTL)
    assert other.value.code == CLAIM
    done = apply(transitions.complete(r, by="agent-a", response="fixed it", now=ts(), ttl=TTL))
    assert done.fields["status"] == "done" and "claim" not in done.fields
    nochange = apply(transitions.complete(new_task(), by="x", response="already fine", now=ts(),
                                  ttl=TTL, outcome="no_change", reason="works"))
    assert nochange.fields["outcome"] == {"kind": "no_change", "reason": "works"}


@pytest.mark.parametrize("call", [
    lambda r: transitions.wait(r, by="a", on=None, now=ts(), ttl=TTL),
    lambda r: transitions.monitor(r, by="a", signal="", now=ts(), ttl=TTL),
    lambda r: transitions.park(r, by="a", reason=None, now=ts(), ttl=TTL),
    lambda r: transitions.drop(r, by="a", reason=" ", now=ts(), ttl=TTL),
])
def test_transitions_need_their_reason(call: Any) -> None:
    with pytest.raises(LedgitError) as exc:
        call(new_task())
    assert exc.value.code == USAGE and "\n" not in str(exc.value)


def test_wait_monitor_park_drop_archive_reopen() -> None:
    r = claimed()
    w = apply(transitions.wait(r, by="agent-a", on="review by Kim", now=ts(), ttl=TTL))
    assert w.fields["status"] == "waiting" and w.fields["waiting_on"] == "review by Kim"
    assert "claim" not in w.fields
    m = apply(transitions.monitor(w, by="x", signal="error rate", now=ts(), ttl=TTL))
    assert m.fields["status"] == "monitoring" and "waiting_on" not in m.fields
    p = apply(transitions.park(m, by="x", reason="no budget", reuse="spike notes", now=ts(),
                               ttl=TTL))
    assert p.fields["outcome"] == {"kind": "park", "reason": "no budget", "reuse": "spike notes"}
    d = apply(transitions.drop(p, by="x", reason="disproved", now=ts(), ttl=TTL))
    assert d.fields["status"] == "dropped" and d.fields["outcome"]["kind"] == "drop"
    with pytest.raises(LedgitError, match="reopen"):
        transitions.drop(d, by="x", reason="again", now=ts(), ttl=TTL)
    a = apply(transitions.archive(d, by="x", now=ts(), ttl=TTL))
    assert a.fields["status"] == "archived"
    reopened = transitions.reopen(a, by="x", now=ts())
    o = apply(reopened)
    assert o.fields["status"] == "open" and "outcome" not in o.fields
    assert reopened.meta is not None
    assert reopened.meta["previous_outcome"]["kind"] == "drop"
    item = o.fields["items"][-1]
    assert item["kind"] == "rejected" and "disproved" in item["text"]


def test_other_worker_cannot_change_status_of_claimed_task() -> None:
    r = claimed()
    with pytest.raises(LedgitError) as exc:
        transitions.park(r, by="agent-b", reason="x", now=ts(), ttl=TTL)
    assert exc.value.code == CLAIM


def test_archive_clears_next_action() -> None:
    r = apply(transitions.update(new_task(), next_action="ship"))
    a = apply(transitions.archive(r, by="x", now=ts(), ttl=TTL))
    assert "next_action" not in a.fields


def test_is_ready_excludes_negative_outcomes() -> None:
    r = new_task()
    assert transitions.is_ready(r.fields, {})
    f = dict(r.fields, outcome={"kind": "no_change", "reason": "x"})
    assert not transitions.is_ready(f, {})
    f = dict(r.fields, depends_on=["T-x"])
    assert not transitions.is_ready(f, {"T-x": "open"})
    assert transitions.is_ready(f, {"T-x": "done"})


# --------------------------------------------------------------------------- update


def test_update_fields_and_sets() -> None:
    r = new_task(labels=["a"])
    ch = transitions.update(r, title="New", priority=1,
                           sets=[("x.team", "core"), ("gate", "review")],
                           add_commits=["0123abc"], labels_add=["b"], labels_remove=["a"],
                    depends_add=["T-y"])
    out = apply(ch)
    assert out.fields["title"] == "New" and out.fields["priority"] == 1
    assert out.fields["x"] == {"team": "core"} and out.fields["gate"] == "review"
    assert out.fields["commits"] == ["0123abc"] and out.fields["labels"] == ["b"]
    assert ch.meta is not None and "title" in ch.meta["fields"]


@pytest.mark.parametrize("field", ["status", "claim", "items", "outcome", "nope"])
def test_update_refuses_lifecycle_and_unknown_fields(field: str) -> None:
    with pytest.raises(LedgitError) as exc:
        transitions.update(new_task(), sets=[(field, "x")])
    assert exc.value.code == USAGE


def test_update_cannot_break_invariants() -> None:
    w = apply(transitions.wait(new_task(), by="a", on="x", now=ts(), ttl=TTL))
    with pytest.raises(LedgitError, match="waiting_on"):
        transitions.update(w, sets=[("waiting_on", "")])


# --------------------------------------------------------------------------- items


def add_item(r: Record, text: str, by: str = "worker", kind: str = "fact") -> tuple[Record, str]:
    ch = stateitems.item_add(r, kind=kind, text=text, by=by, now=ts())
    assert ch.meta is not None
    return apply(ch), ch.meta["item"]


def test_item_add_is_candidate_with_short_id() -> None:
    r, iid = add_item(new_task(), "the dialer uses UDP")
    assert iid.startswith("i-") and len(iid) == 10
    item = r.fields["items"][0]
    assert item["trust"] == "candidate" and item["by"] == "worker"
    r2, iid2 = add_item(r, "the dialer uses UDP")  # same text, same moment: distinct id
    assert iid2 != iid


def test_accept_only_by_owner_or_trusted() -> None:
    r, iid = add_item(new_task(owner="olga"), "x")
    with pytest.raises(LedgitError, match="only the owner"):
        stateitems.accept(r, items=[iid], by="worker", now=ts())
    locked = apply(stateitems.accept(r, items=[iid[:5]], by="olga", now=ts()))
    assert locked.fields["items"][0]["trust"] == "locked"
    apply(stateitems.accept(r, items=[iid], by="ci", now=ts(), trusted=True))
    with pytest.raises(LedgitError) as exc:
        stateitems.accept(r, items=["i-zzzz"], by="olga", now=ts())
    assert exc.value.code == NOT_FOUND
    with pytest.raises(LedgitError, match="already locked"):
        stateitems.accept(locked, items=[iid], by="olga", now=ts())


def test_revise_by_owner_locks_and_deprecates() -> None:
    r, iid = add_item(new_task(owner="olga"), "uses UDP")
    r = apply(stateitems.accept(r, items=[iid], by="olga", now=ts()))
    ch = stateitems.revise(r, supersedes=[iid], text="uses TCP", by="olga", now=ts(1))
    out = apply(ch)
    assert ch.meta is not None and ch.meta["supersedes"] == [iid]
    old, new = out.fields["items"]
    assert old["trust"] == "deprecated" and old["superseded_by"] == [new["id"]]
    assert new["trust"] == "locked" and new["supersedes"] == [iid] and new["kind"] == "fact"
    with pytest.raises(LedgitError, match="already deprecated"):
        stateitems.revise(out, supersedes=[iid], text="again", by="olga", now=ts())


def test_revise_by_worker_is_candidate_and_cannot_touch_locked() -> None:
    r, iid = add_item(new_task(owner="olga"), "guess")
    ch = stateitems.revise(r, supersedes=[iid], text="better guess", by="worker", now=ts(1))
    out = apply(ch)
    assert out.fields["items"][1]["trust"] == "candidate"
    assert out.fields["items"][0]["trust"] == "deprecated"
    locked = apply(stateitems.accept(r, items=[iid], by="olga", now=ts()))
    with pytest.raises(LedgitError, match="only the owner"):
        stateitems.revise(locked, supersedes=[iid], text="no", by="worker", now=ts())


def test_writeback_needs_evidence_and_stays_candidate() -> None:
    r = new_task(owner="olga")
    with pytest.raises(LedgitError) as exc:
        stateitems.writeback(r, by="worker", now=ts(), evidence="", artifacts=["out.txt"])
    assert exc.value.code == USAGE
    ch = stateitems.writeback(r, by="worker", now=ts(), evidence="tests pass",
                       sets=[("next_action", "deploy")], artifacts=["build/app"],
                       gate="ops approval")
    out = apply(ch)
    assert "next_action" not in out.fields and "gate" not in out.fields  # not overwritten
    kinds = [(i["kind"], i["trust"]) for i in out.fields["items"]]
    assert kinds == [("fact", "candidate"), ("blocker", "candidate"), ("artifact", "candidate")]
    assert all(i["evidence"] == "tests pass" for i in out.fields["items"])
    assert ch.meta is not None
    # the owner accepts the proposal: the field is applied
    accepted = apply(stateitems.accept(out, items=[ch.meta["items"][0]], by="olga", now=ts()))
    assert accepted.fields["next_action"] == "deploy"


def test_writeback_by_owner_applies_at_once() -> None:
    r = new_task(owner="olga")
    out = apply(stateitems.writeback(r, by="olga", now=ts(), evidence="checked", gate="legal"))
    assert out.fields["gate"] == "legal"
    assert out.fields["items"][0]["trust"] == "locked"


def test_handoff_has_only_locked_items() -> None:
    r = new_task(owner="olga")
    ids = []
    for n in range(5):
        r, iid = add_item(r, f"item {n}")
        ids.append(iid)
    r = apply(stateitems.accept(r, items=ids[:2], by="olga", now=ts()))
    r = apply(stateitems.revise(r, supersedes=[ids[2]], text="item 2 v2", by="worker", now=ts(2)))
    trusts = sorted(i["trust"] for i in r.fields["items"])
    assert trusts == ["candidate"] * 3 + ["deprecated"] + ["locked"] * 2
    packet = stateitems.handoff_packet(r)
    assert sorted(i["text"] for i in packet["items"]) == ["item 0", "item 1"]
    md = readout.render_handoff(packet)
    assert "item 0" in md and "item 1" in md
    assert not any(f"item {n}" in md for n in (2, 3, 4))
    assert packet["goal"] == "Calls connect." and packet["acceptance"] == ["dials", "hangs up"]


# --------------------------------------------------------------------------- readout


def test_readout_reports_unknowns_with_reasons() -> None:
    r = claimed()
    out = build_readout(r.fields, r.body, path=".ledgit/tasks/T-abc.md", revision=r.revision,
                        now=ts(45), ttl=TTL)
    assert out["freshness"]["state"] == "stale"
    reasons = {u["field"]: u["reason"] for u in out["unknown"]}
    assert reasons["claim"] == "claim by agent-a last heartbeat 45m ago, TTL 30m"
    assert reasons["next_action"] == "not set"
    assert out["goal"] == "Calls connect." and out["acceptance"] == ["dials", "hangs up"]
    text = render_readout(out)
    assert "UNKNOWN (not set)" in text and "stale" in text and "on it" in text


def test_readout_of_complete_task_has_no_spurious_unknowns() -> None:
    r = apply(transitions.complete(claimed(), by="agent-a", response="done", now=ts(), ttl=TTL))
    out = build_readout(r.fields, r.body, path="p", revision=r.revision, now=ts(100),
                        ttl=TTL)
    assert out["unknown"] == []
    assert out["freshness"]["state"] == "none"


def test_epoch_seconds_accepts_canonical_and_other_forms() -> None:
    base = T0.timestamp()
    assert epoch_seconds("2026-08-29T10:00:00.000000Z") == base
    assert epoch_seconds("2026-08-29T12:00:00+02:00") == base
    assert epoch_seconds("2026-08-29T10:00:00.5Z") == base + 0.5


@pytest.mark.parametrize(("fields", "expected"), [
    ({"status": "open"}, []),
    ({"status": "waiting"}, [("waiting_on", "status waiting needs waiting_on")]),
    ({"status": "waiting", "waiting_on": "kim"}, []),
    ({"status": "parked", "outcome": {"kind": "park"}},
     [("outcome", "status parked needs an outcome with a reason")]),
    ({"status": "dropped", "outcome": None},
     [("outcome", "status dropped needs an outcome with a reason")]),
    ({"status": "parked", "outcome": {"kind": "park", "reason": "r"}}, []),
    ({"status": "done"}, [("response", "status done needs an account (response)")]),
    ({"status": "done", "response": "did it", "claim": {"by": "a"}},
     [("claim", "a done task holds no claim")]),
    ({"status": "archived", "claim": {"by": "a"}, "waiting_on": "kim", "next_action": "go"},
     [("claim", "an archived task holds no claim"),
      ("waiting_on", "an archived task holds no waiting_on"),
      ("next_action", "an archived task holds no next_action"),
      ("claim", "a archived task holds no claim")]),
    ({"status": "in_progress", "claim": {"by": "a"}}, []),
    ({"status": "open", "claim": {"by": "a"}}, [("claim", "a claim is held but status is open")]),
])
def test_lifecycle_rules(fields: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert lifecycle.lifecycle_problems(fields) == expected
    assert readout.lifecycle_problems is lifecycle.lifecycle_problems


def test_durations() -> None:
    assert readout.format_duration(45) == "45s"
    assert readout.format_duration(45 * 60) == "45m"
    assert readout.format_duration(3 * 3600 + 5 * 60) == "3h05m"
    assert readout.format_ttl(1800) == "30m" and readout.format_ttl(90) == "90s"
    assert readout.format_ttl(7200) == "2h"
