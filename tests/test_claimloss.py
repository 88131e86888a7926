"""How someone's claim ended, read from history (ledgit.claimloss; issue 24 item 3)."""

from __future__ import annotations

from typing import Any

from ledgit.core.claimloss import claim_loss


def ev(op: str, actor: str, at: str) -> dict[str, Any]:
    return {"op": op, "actor": actor, "at": at}


def test_the_event_that_ended_a_claim_is_named() -> None:
    base = [ev("create", "s", "t0"), ev("claim", "alice", "t1"), ev("heartbeat", "alice", "t2")]
    assert claim_loss(base, "alice") is None  # still holds it
    assert claim_loss([*base, ev("claim", "bob", "t3")], "alice") == "taken over by bob at t3"
    assert claim_loss([*base, ev("update", "bob", "t3"), ev("complete", "bob", "t4")],
                      "alice") == "completed by bob at t4"
    assert claim_loss([*base, ev("drop", "carol", "t3")], "alice") == "dropped by carol at t3"
    # ended it oneself, or never claimed: nothing to tell
    assert claim_loss([*base, ev("release", "alice", "t3"), ev("claim", "bob", "t4")],
                      "alice") is None
    assert claim_loss(base, "bob") is None
    # a new claim after the loss starts afresh
    assert claim_loss([*base, ev("claim", "bob", "t3"), ev("claim", "alice", "t4")],
                      "alice") is None
