"""``ledgit mcp``'s claim tool takes, renews and loses remote leases as the CLI does, and its
list tool marks or leaves out leased tasks (issue 24 items 1 and 3, docs/leases.md)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from gitutil import git
from leaseutil import clone, lease_record, lease_refs, lg, make_remote

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

from test_mcp import call, fail, in_process  # noqa: E402

pytest_plugins = ["gitutil"]


def test_mcp_claim_and_heartbeat_hold_the_remote_lease(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LEDGIT_ACTOR", "LEDGIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    remote, _, (task, other) = make_remote(tmp_path, tasks=2, ttl="1s")
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    lg(a, "claim", task, "--by", "alice")

    async def run() -> None:
        async with in_process(b, "legacy") as client:
            error = await fail(client, "claim", {"task": task, "by": "bob"})
            assert error["code"] == 6 and "leased by alice" in error["message"]
            rows = (await call(client, "list", {"fields": ["lease", "holder", "until"]})
                    )["tasks"]
            leased = {r["id"]: r["lease"] for r in rows}
            assert leased[task]["by"] == "alice" and leased[other] is None
            # Who holds it (the remote's lease, while it is live) and until when.
            held = {r["id"]: (r["holder"], r["until"]) for r in rows}
            assert held[task] == (("alice", leased[task]["expires"]) if leased[task]["live"]
                                  else (None, None))
            assert held[other] == (None, None)
            await anyio.sleep(1.3)  # alice's lease runs out
            error = await fail(client, "claim", {"task": task, "by": "bob"})
            assert "claim --take-over" in error["message"]
            await call(client, "claim", {"task": task, "by": "bob", "take_over": True})
            await call(client, "claim", {"task": task, "by": "bob", "action": "heartbeat"})
            ready = (await call(client, "list", {"ready": True}))["tasks"]
            assert [r["id"] for r in ready] == [other]
        async with in_process(a, "legacy") as client:
            error = await fail(client, "claim", {"task": task, "by": "alice",
                                                 "action": "heartbeat"})
            assert error["code"] == 6
            assert "alice's lease was taken over by bob" in error["message"]

    anyio.run(run)
    assert json.loads(lease_record(remote, task).splitlines()[-1])["by"] == "bob"


def test_mcp_release_of_a_task_whose_file_is_not_here_ends_the_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``ledgit release`` (issue 36 item 2): on a branch without the task, the claimant's
    release through the claim tool still ends its own lease; another actor's is 'no task'."""
    for name in ("LEDGIT_ACTOR", "LEDGIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    remote, _, (task,) = make_remote(tmp_path)
    a = clone(remote, tmp_path / "a")
    lg(a, "claim", task, "--by", "alice")
    git("checkout", "-q", "--orphan", "elsewhere", cwd=a)  # a branch without the task
    git("rm", "-rqf", ".", cwd=a)
    lg(a, "init")

    async def run() -> None:
        async with in_process(a, "legacy") as client:
            error = await fail(client, "claim", {"task": task, "by": "bob",
                                                 "action": "release"})
            assert error["code"] == 4
            got = await call(client, "claim", {"task": task, "by": "alice",
                                               "action": "release"})
            assert (got["id"], got["op"], got["written"], got["meta"]) == (
                task, "release", False, {"lease": "released"})
            assert "status" not in got and "revision" not in got  # no task file here

    anyio.run(run)
    assert lease_refs(remote) == {}
