"""Issue 34, item 6: a write by another actor on a task someone holds (a live claim) lands,
and says in one line who holds it and until when; ``--json`` carries it as ``held_by``, and
so does an MCP write result."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from gitutil import CliRun

from ledgit.core.readout import claim_expiry, epoch_seconds
from ledgit.core.record import make_record
from ledgit.operations.claims import held_by_other

T0 = "2026-01-01T10:00:00.000000Z"
NOTE = re.compile(r"ledgit: note: (T-\w+): held by (\S+) until (\S+) \(claimed (\S+)\); "
                  r"written anyway\n")


def claimed(lg: CliRun, holder: str = "agent-a") -> str:
    code, out, err = lg("create", "shared work", "--by", "olga")
    assert code == 0, err
    tid = out.strip()
    assert lg("claim", tid, "--by", holder)[0] == 0
    return tid


def test_an_update_by_another_actor_names_the_holder_and_lands(lg: CliRun) -> None:
    tid = claimed(lg)
    code, out, err = lg("update", tid, "--priority", "1", "--by", "olga")
    assert code == 0 and out.startswith(f"{tid}: updated")
    [line] = err.splitlines(keepends=True)
    match = NOTE.fullmatch(line)
    assert match, err
    assert match.group(1, 2) == (tid, "agent-a")
    claim = lg.board().read(tid).fields["claim"]
    assert match.group(4) == claim["at"]
    assert epoch_seconds(match.group(3)) == pytest.approx(
        epoch_seconds(claim["heartbeat"]) + 30 * 60, abs=1e-6)  # the default TTL, 30m
    assert lg.board().read(tid).fields["priority"] == 1  # the write landed


def test_json_carries_held_by_and_the_holder_own_writes_are_quiet(lg: CliRun) -> None:
    tid = claimed(lg)
    code, out, err = lg("update", tid, "--label", "x", "--by", "olga", "--json")
    assert code == 0
    shape = json.loads(out)
    claim = lg.board().read(tid).fields["claim"]
    assert shape["held_by"] == {"by": "agent-a", "since": claim["at"],
                                "until": claim_expiry(claim, 30 * 60)}
    assert shape["written"] is True and "held by agent-a" in err
    code, out, err = lg("update", tid, "--label", "y", "--by", "agent-a", "--json")
    assert code == 0 and json.loads(out)["held_by"] is None and err == ""
    code, out, err = lg("update", tid, "--label", "y", "--by", "olga", "--json")
    assert code == 0 and json.loads(out)["written"] is False  # nothing changed: nothing said
    assert json.loads(out)["held_by"] is None and err == ""


def test_notes_and_items_name_the_holder_too_and_complete_is_still_refused(
        lg: CliRun) -> None:
    tid = claimed(lg)
    code, _, err = lg("note", tid, "the lock is the clock", "--by", "bob")
    assert code == 0 and NOTE.fullmatch(err), err
    code, out, err = lg("item", "add", tid, "--kind", "fact", "--text", "x", "--by", "bob",
                        "--json")
    assert code == 0 and json.loads(out)["held_by"]["by"] == "agent-a" and NOTE.fullmatch(err)
    code, _, err = lg("complete", tid, "--response", "done", "--by", "bob")
    assert code == 6 and "claimed by agent-a" in err
    # a claim refused on this clone's copy says where a release made elsewhere comes from
    code, _, err = lg("claim", tid, "--by", "bob")
    assert code == 6 and "claimed by agent-a" in err and "ledgit sync" in err


def test_only_a_live_claim_of_someone_else_is_named() -> None:
    claim = {"by": "agent-a", "at": T0, "heartbeat": "2026-01-01T10:20:00.000000Z"}
    record = make_record({"id": "T-abc", "title": "t", "status": "in_progress", "claim": claim,
                          "created": T0, "last_modified": T0}, "")
    ttl = 30 * 60
    live = held_by_other(record, "olga", "2026-01-01T10:49:59.000000Z", ttl)
    assert live == {"by": "agent-a", "since": T0, "until": "2026-01-01T10:50:00.000000Z"}
    assert held_by_other(record, "agent-a", "2026-01-01T10:30:00.000000Z", ttl) is None
    assert held_by_other(record, "olga", "2026-01-01T10:50:01.000000Z", ttl) is None  # stale
    free = make_record({"id": "T-abc", "title": "t", "status": "open", "created": T0,
                        "last_modified": T0}, "")
    assert held_by_other(free, "olga", T0, ttl) is None


def test_an_mcp_write_result_carries_held_by(lg: CliRun) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")
    from mcp import Client

    from ledgit.mcp.server import build_server

    tid = claimed(lg)

    async def run() -> dict[str, Any]:
        server, boards = build_server(lg.root)
        try:
            async with Client(server) as client:  # type: ignore[arg-type]
                result = await client.call_tool("update", {"task": tid, "priority": 2,
                                                           "by": "olga"})
                assert not result.is_error, result
                assert result.structured_content is not None
                return result.structured_content
        finally:
            boards.close()

    written = anyio.run(run)
    claim = lg.board().read(tid).fields["claim"]
    assert written["held_by"] == {"by": "agent-a", "since": claim["at"],
                                  "until": claim_expiry(claim, 30 * 60)}
    assert written["written"] is True and lg.board().read(tid).fields["priority"] == 2
