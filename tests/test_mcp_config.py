"""``ledgit mcp --print-config`` (issue 34, item 5): each client's JSON names this
installation's absolute command and the board, and what it prints starts a working server
from the MCP SDK's real stdio client with an empty ``PATH``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from gitutil import CliRun

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

from mcp import Client, StdioServerParameters  # noqa: E402

from ledgit.cli.mcpconfig import CLIENTS  # noqa: E402
from ledgit.integration.hookblock import ENTRY_CODE  # noqa: E402


def printed(lg: CliRun, *args: str) -> Any:
    code, out, err = lg("mcp", "--print-config", *args)
    assert code == 0, err
    return json.loads(out)


def entry_of(config: Any, client: str) -> dict[str, Any]:
    if client == "entry":
        return dict(config)
    [(key, servers)] = config.items()
    assert key == ("servers" if client == "vscode" else "mcpServers")
    return dict(servers["ledgit"])


@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_gets_the_absolute_command_and_the_board(lg: CliRun, client: str) -> None:
    entry = entry_of(printed(lg, "--client", client), client)
    assert entry["command"] == sys.executable and os.path.isabs(entry["command"])
    assert entry["args"] == ["-c", ENTRY_CODE, "mcp"]
    assert entry["env"]["LEDGIT_ROOT"] == str(lg.root.resolve())
    assert ("type" in entry) is (client in ("claude", "vscode", "entry"))
    assert entry.get("type", "stdio") == "stdio"


def test_the_default_is_the_generic_shape_and_misuse_is_refused(
        lg: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert printed(lg) == printed(lg, "--client", "generic") == printed(lg, "--client",
                                                                         "cursor")
    code, _, err = lg("mcp", "--client", "vscode")
    assert code == 2 and err == "ledgit: --client needs --print-config\n"
    code, _, err = lg("mcp", "--by", "agent-a")
    assert code == 2 and err == "ledgit: --by needs --print-config\n"
    assert "LEDGIT_ACTOR" not in printed(lg)["mcpServers"]["ledgit"]["env"]
    named = printed(lg, "--client", "entry", "--by", "agent-a")
    assert named["env"]["LEDGIT_ACTOR"] == "agent-a"
    code, _, err = lg("mcp", "--print-config", "--by", "two\nlines")
    assert code == 2 and len(err.splitlines()) == 1
    code, _, err = lg("mcp", "--print-config", "--http")
    assert code == 2 and len(err.splitlines()) == 1
    code, _, err = lg("mcp", "--print-config", "--client", "emacs")
    assert code == 2 and "emacs" in err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = lg("mcp", "--print-config")
    assert code == 4 and out == "" and "no ledgit board" in err


async def _use(params: StdioServerParameters, task: str) -> tuple[Any, Any]:
    async with Client(params) as client:  # type: ignore[arg-type]
        listed = await client.call_tool("list", {})
        written = await client.call_tool("update", {"task": task, "priority": 1,
                                                    "by": "agent-a"})
        return listed, written


def test_the_printed_config_starts_the_server_with_an_empty_path(
        lg: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = lg("create", "reach me", "--by", "olga")
    task = out.strip()
    entry = entry_of(printed(lg), "generic")
    monkeypatch.setenv("PATH", "")  # the client's: a desktop app may start servers so
    start = tmp_path / "anywhere"  # a client's working directory, outside the board
    start.mkdir()
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env=entry["env"], cwd=str(start))
    listed, written = anyio.run(_use, params, task)
    assert not listed.is_error, listed
    assert [t["id"] for t in listed.structured_content["tasks"]] == [task]
    assert not written.is_error and written.structured_content["written"] is True
    assert lg.board().read(task).fields["priority"] == 1
    # without the PATH the config gives, the server starts (its command is absolute) but
    # cannot run git: why the config carries one (the list asks `git remote` again once its
    # kept answer is gone: ledgit.git.remotenames)
    Path(lg.board().private_str, "remotes.json").unlink(missing_ok=True)
    bare = StdioServerParameters(command=entry["command"], args=entry["args"],
                                 env={"LEDGIT_ROOT": entry["env"]["LEDGIT_ROOT"]},
                                 cwd=str(start))
    listed, _ = anyio.run(_use, bare, task)
    assert listed.is_error and "git" in listed.structured_content["error"]["message"]
