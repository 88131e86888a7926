"""The MCP ``sync`` tool (issue 32 item 3): the same outcome as ``ledgit sync --json``, through
the SDK's own client against the real server, on real clones of a bare remote."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from gitutil import git
from leaseutil import clone, lg, make_remote

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

from test_mcp import call, fail, in_process  # noqa: E402

pytest_plugins = ["gitutil"]


def test_an_agent_syncs_over_mcp_and_meets_the_other_clones_edits(tmp_path: Path) -> None:
    """Agent A works and syncs through the server; agent B (the CLI, another clone) edits the
    same task and syncs; A's next sync tool call brings B's edit in and A's readout shows
    both. The answer has sync --json's shape and names its board."""
    remote, _seed, (task,) = make_remote(tmp_path, tasks=1)
    a, b = clone(remote, tmp_path / "A"), clone(remote, tmp_path / "B")

    async def agent_a() -> None:
        async with in_process(a, "legacy") as client:
            await call(client, "update", {"task": task, "response": "A's account",
                                          "by": "agent-a"})
            first = await call(client, "sync", {})
            assert first["committed"]["tasks"] == [task]
            assert first["pushed"]["branch"] == "main" and first["root"] == str(a)
            lg(b, "note", task, "from B", "--by", "agent-b")
            lg(b, "sync")
            second = await call(client, "sync", {"how": "merge"})
            assert [i["how"] for i in second["integrations"]] == ["fast-forward"]
            assert second["changed_tasks"] == [task] and second["pushed"] is None
            readout = await call(client, "get", {"task": task})
            assert readout["response"] == "A's account"
            assert [n["text"] for n in readout["notes"]] == ["from B"]
            git("remote", "remove", "origin", cwd=a)
            error = await fail(client, "sync", {})
            assert error["code"] == 2 and "no remote to share" in error["message"]

    anyio.run(agent_a)
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=b)
    assert json.loads(lg(a, "verify", "--all", "--json").stdout)["ok"] is True
