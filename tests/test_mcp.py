"""``ledgit mcp``: the SDK's own client against the server, in-process (memory transport)
and over a real stdio subprocess, at both protocol revisions; real boards, real files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from ledgit.mcp.boards import ROOT_SOURCES  # noqa: E402
from ledgit.mcp.results import TEXT_BYTES  # noqa: E402
from ledgit.mcp.server import build_server  # noqa: E402
from ledgit.mcp.tools import compact_schema  # noqa: E402
from ledgit.operations import projects  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task

MODES = ["legacy", "2026-07-28"]  # legacy: the initialize handshake, 2025-11-25
PROTOCOL = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
LISTING_BUDGET_TOKENS = 3_000  # characters / 4


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A board at tmp_path/board with one task; the environment without LEDGIT_*."""
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LEDGIT_ACTOR", "ann")
    board = init_board(tmp_path / "board")
    create_task(board, {"title": "first task"}, "## Goal\n\nsay hi\n\n## Acceptance\n\n- hi said\n",
                 "ann")
    return board.root


Session = Callable[[str, dict[str, Any]], Awaitable[Any]]


@asynccontextmanager
async def in_process(root: Path, mode: str, allow: tuple[str, ...] = (),
                     max_answer_bytes: int = 65_536) -> AsyncIterator[Client]:
    server, boards = build_server(root, allow, max_answer_bytes)
    try:
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            assert client.protocol_version == PROTOCOL[mode]
            yield client
    finally:
        boards.close()


def stdio_params(root: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items()}
    return StdioServerParameters(command=sys.executable, args=["-m", "ledgit", "mcp"],
                                 cwd=str(root), env=env)


@asynccontextmanager
async def over_stdio(root: Path, mode: str) -> AsyncIterator[Client]:
    async with Client(stdio_params(root), mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == PROTOCOL[mode]
        yield client


async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A successful call's structured content (asserts it is no error, names its board, and
    that its text block sums it up without repeating it: DESIGN §14)."""
    result = await client.call_tool(name, args)
    assert not result.is_error, result
    value = result.structured_content
    assert value is not None
    assert os.path.isabs(value["root"]) and value["root_source"] in ROOT_SOURCES
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert text["root"] == value["root"] and text["root_source"] == value["root_source"]
    for key, shown in text.items():  # each member as it is, or what it is
        assert shown == value.get(key) or (isinstance(shown, str) and shown.endswith(
            "in structuredContent>")), (key, shown)
    assert len(result.content[0].text) <= TEXT_BYTES  # type: ignore[union-attr]
    return value


async def fail(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A failing call's ``error`` object (asserts it is a tool error)."""
    result = await client.call_tool(name, args)
    assert result.is_error, result
    assert result.structured_content is not None, result
    error: dict[str, Any] = result.structured_content["error"]
    assert isinstance(error["message"], str) and "\n" not in error["message"]
    return error


async def agent_loop(client: Client, root: Path) -> None:
    """The agent loop through every tool, with the failures the CLI would give."""
    board = Board(root)
    rows = await call(client, "list", {"fields": ["title"]})
    assert rows["count"] == 1 and set(rows["tasks"][0]) == {"id", "title"}
    first = rows["tasks"][0]["id"]
    made = await call(client, "create", {"title": "second task", "goal": "do it",
                                         "accept": ["done"], "labels": ["mcp"],
                                         "priority": 1})
    tid = made["id"]
    assert board.read(tid).fields["labels"] == ["mcp"]  # on disk, through the write path
    found = await call(client, "search", {"text": "SECOND"})
    assert [r["id"] for r in found["tasks"]] == [tid] and found["tasks"][0]["matches"] == [
        "title"]
    readout = await call(client, "get", {"task": tid[:6], "body": False})
    assert readout["id"] == tid and readout["goal"] == "do it" and "body" not in readout
    assert {u["field"] for u in readout["unknown"]} >= {"next_action", "gate"}
    claimed = await call(client, "claim", {"task": tid, "by": "bob"})
    assert claimed["status"] == "in_progress" and claimed["written"] is True
    held = await fail(client, "claim", {"task": tid, "by": "carol"})
    assert held["kind"] == "claim_held" and held["code"] == 6 and held["holder"] == "bob"
    stale = await fail(client, "update", {"task": tid, "expect": readout["revision"],
                                          "next_action": "x", "by": "bob"})
    assert stale["kind"] == "stale_revision" and stale["code"] == 3
    assert stale["current_revision"] == claimed["revision"] == board.read(tid).revision
    updated = await call(client, "update", {"task": tid, "expect": claimed["revision"],
                                            "next_action": "write it", "gate": "review",
                                            "labels_add": ["x"], "by": "bob"})
    assert board.read(tid).fields["next_action"] == "write it"
    beat = await call(client, "claim", {"task": tid, "action": "heartbeat", "by": "bob"})
    assert beat["op"] == "heartbeat"
    added = await call(client, "item", {"task": tid, "kind": "decision", "text": "use MCP",
                                        "by": "bob"})
    item_id = added["meta"]["item"]
    refused = await fail(client, "item", {"task": tid, "action": "accept",
                                          "items": [item_id], "by": "bob"})
    assert refused["code"] == 2
    await call(client, "item", {"task": tid, "action": "accept", "items": [item_id],
                                "trusted": True, "by": "bob"})
    back = await call(client, "writeback", {"task": tid, "evidence": "tests pass",
                                            "artifacts": ["src/x.py"], "by": "bob"})
    assert back["written"] is True
    packet = await call(client, "handoff", {"task": tid})
    assert [i["id"] for i in packet["items"]] == [item_id]
    assert (await fail(client, "complete", {"task": tid, "response": "done",
                                            "by": "carol"}))["kind"] == "claim_held"
    done = await call(client, "complete", {"task": tid, "response": "did it", "by": "bob"})
    assert done["status"] == "done" and updated["revision"] != done["revision"]
    missing = await fail(client, "get", {"task": "T-zzzzzzzz"})
    assert missing["kind"] == "not_found" and missing["candidates"] == []
    ambiguous = await fail(client, "get", {"task": "T-"})  # a prefix of both tasks
    assert ambiguous["kind"] == "not_found" and sorted(ambiguous["candidates"]) == sorted(
        [first, tid])
    no_item = await fail(client, "item", {"task": first, "action": "accept", "items": ["I-x"],
                                          "trusted": True, "by": "bob"})
    assert no_item["code"] == 4 and "candidates" not in no_item  # the task was found
    assert (await call(client, "list", {"status": ["done"]}))["count"] == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", [in_process, over_stdio], ids=["in_process", "stdio"])
def test_the_agent_loop(env: Path, mode: str,
                        transport: Callable[[Path, str], AbstractAsyncContextManager[Client]]
                        ) -> None:
    async def run() -> None:
        async with transport(env, mode) as client:
            await agent_loop(client, env)

    anyio.run(run)


def test_the_tool_listing_is_small_and_typed(env: Path) -> None:
    async def run() -> list[dict[str, Any]]:
        async with in_process(env, "legacy") as client:
            tools = (await client.list_tools()).tools
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for t in tools]

    tools = anyio.run(run)
    assert len(tools) <= 12
    assert {t["name"] for t in tools} == {"list", "search", "get", "handoff", "create",
                                          "claim", "update", "complete", "item", "writeback",
                                          "sync"}
    for tool in tools:
        assert tool["inputSchema"]["type"] == "object"
        assert "root" in tool["inputSchema"]["properties"], tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        assert tool["description"]
    size = len(json.dumps(tools))
    assert size / 4 <= LISTING_BUDGET_TOKENS, size
    assert '"additionalProperties": true' not in json.dumps(tools)  # the default, dropped


def test_a_change_on_disk_is_seen_by_the_next_read(env: Path) -> None:
    """The held index follows writes made by other processes (a CLI writer)."""
    async def run() -> None:
        async with in_process(env, "legacy") as client:
            assert (await call(client, "list", {}))["count"] == 1
            proc = subprocess.run([sys.executable, "-m", "ledgit", "create", "from the cli"],
                                  cwd=env, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            titles = {r["title"] for r in (await call(client, "list", {}))["tasks"]}
            assert titles == {"first task", "from the cli"}

    anyio.run(run)


@pytest.mark.parametrize("watch", ["1", "0"])
def test_every_read_sees_the_write_before_it(env: Path, monkeypatch: pytest.MonkeyPatch,
                                             watch: str) -> None:
    """Reads answer on the event loop while the watcher has reported nothing new, else in a
    worker thread (always, without a watcher): either way a read sees the write just made,
    by a CLI process or through the server, and a repeated read answers the same."""
    monkeypatch.setenv("LEDGIT_WATCH", watch)
    first = Board(env).list_ids()[0]

    async def run() -> None:
        async with in_process(env, "legacy") as client:
            for i in range(4):
                proc = subprocess.run([sys.executable, "-m", "ledgit", "update", first,
                                       "--next-action", f"cli step {i}"],
                                      cwd=env, capture_output=True, text=True)
                assert proc.returncode == 0, proc.stderr
                assert (await call(client, "get", {"task": first}))["next_action"] == \
                    f"cli step {i}"
                found = await call(client, "search", {"text": f"cli step {i}",
                                                      "search_fields": ["next_action"]})
                assert [r["id"] for r in found["tasks"]] == [first]
                await call(client, "update", {"task": first, "next_action": f"mcp {i}"})
                for _ in range(2):
                    rows = await call(client, "list", {"fields": ["next_action"]})
                    assert rows["tasks"] == [{"id": first, "next_action": f"mcp {i}"}]

    anyio.run(run)


def test_quiet_means_no_change_reported_since_the_last_read(
        env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Boards.quiet (a read is one SQLite query, answered on the event loop): not for the
    first read of a board, nor after the watcher reported a change or a slow read; never
    without a watcher."""
    server, boards = build_server(env)
    try:
        board = boards.board(None)
        assert not boards.quiet(board)
        assert boards.quiet(board)
        held = boards.live(board)
        assert held is not None and held.watching
        since = held.generation
        create_task(Board(env), {"title": "another"}, "", "ann")
        assert held.wait_changed(10, since)
        assert not boards.quiet(board)
        assert boards.quiet(board)
        boards.took(board, 1.0)  # a slow read (e.g. a stat scan): the next goes to a thread
        assert not boards.quiet(board)
        boards.took(board, 0.0)
        assert boards.quiet(board)
    finally:
        boards.close()
    monkeypatch.setenv("LEDGIT_WATCH", "0")
    server, boards = build_server(env)
    try:
        board = boards.board(None)
        assert not boards.quiet(board) and not boards.quiet(board)
    finally:
        boards.close()


def test_compact_schema_keeps_the_meaning() -> None:
    schema = {"title": "Rows", "type": "object", "properties": {
        "tasks": {"title": "Tasks", "type": "array",
                  "items": {"type": "object", "additionalProperties": True}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "errors": {"type": "array", "items": {"type": "object",
                                              "additionalProperties": {"type": "string"}}}}}
    assert compact_schema(schema) == {"type": "object", "properties": {
        "tasks": {"type": "array", "items": {"type": "object"}},
        "note": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object",
                                              "additionalProperties": {"type": "string"}}}}}


# --------------------------------------------------------------------------- hostile input


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under .ledgit/tasks and .ledgit/history with its bytes."""
    out = {}
    for sub in ("tasks", "history"):
        for path in sorted((root / ".ledgit" / sub).iterdir()):
            out[str(path)] = path.read_bytes()
    return out


def test_hostile_input_is_a_clear_error_and_writes_nothing(env: Path, tmp_path: Path) -> None:
    outside = tmp_path / "nowhere"
    outside.mkdir()
    tid = Board(env).list_ids()[0]
    huge = "x" * 2_000_000
    calls: list[tuple[str, dict[str, Any], int]] = [
        ("create", {"title": huge}, 2),
        ("create", {"title": "ok", "body": huge}, 2),
        ("update", {"task": tid, "response": huge}, 2),
        ("item", {"task": tid, "text": huge}, 2),
        ("search", {"text": huge}, 2),
        ("get", {"task": huge}, 2),
        ("get", {"task": "../../etc/passwd"}, 4),
        ("get", {"task": ""}, 2),
        ("claim", {"task": "T-\u0000"}, 4),
        ("update", {"task": "T-nope", "title": "x"}, 4),
        ("list", {"root": "/"}, 4),
        ("list", {"root": str(outside)}, 4),
        ("create", {"title": "x", "root": "../.."}, 4),
        ("create", {"title": "x", "root": str(env / "missing")}, 4),
        ("create", {"title": "x", "root": "bad\u0000path"}, 2),
        ("list", {"fields": ["nope"]}, 2),
        ("search", {"text": "a", "search_fields": ["nope"]}, 2),
        ("update", {"task": tid}, 2),
        ("update", {"task": tid, "expect": "zz", "title": "x"}, 2),
        ("create", {"title": "x", "depends_on": ["T-nope"]}, 4),
        ("item", {"task": tid, "action": "accept"}, 2),
    ]
    before = snapshot(env)

    async def run() -> None:
        async with in_process(env, "legacy") as client:
            for name, args, code in calls:
                error = await fail(client, name, args)
                assert error["code"] == code, (name, args, error)
                assert len(error["message"]) < 2_000, (name, error["message"][:200])
            # A schema violation (a bad type) is the SDK's argument error, still no write.
            bad = await client.call_tool("create", {"title": 5, "priority": 9})
            assert bad.is_error
            # An argument the tool does not take is refused, naming it, not dropped: a
            # write that kept the rest would report success for half of what was asked.
            for args in ({"task": tid, "labels": ["x"], "next_action": "y"},
                         {"task": tid, "priority": 1, "prioritty": 2},
                         {"task": tid, "bogus": 1}):
                result = await client.call_tool("update", args)
                assert result.is_error, args
                text = " ".join(c.text for c in result.content if hasattr(c, "text"))
                extra = next(k for k in args if k not in ("task", "next_action", "priority"))
                assert extra in text, (args, text)

    anyio.run(run)
    assert snapshot(env) == before
    assert not any(outside.iterdir())


def test_root_names_another_board(env: Path, tmp_path: Path) -> None:
    other = init_board(tmp_path / "other")

    async def run() -> None:
        # a board outside the start directory is served when allowed (issue 26)
        async with in_process(env, "legacy", (str(other.root),)) as client:
            made = await call(client, "create", {"title": "elsewhere", "root": str(other.root)})
            assert other.list_ids() == [made["id"]]
            sub = other.root / "sub"
            sub.mkdir()
            rows = await call(client, "list", {"root": str(sub)})  # inside a board: found
            assert [r["id"] for r in rows["tasks"]] == [made["id"]]
            assert (await call(client, "list", {}))["count"] == 1  # the default board

    anyio.run(run)


def test_root_may_name_a_registered_project(env: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``root`` accepts an alias of ledgit.operations.projects (issue 17); a pinned one is
    read-only and
    an unregistered name is taken as a path (and fails as one)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lib = init_board(tmp_path / "lib")
    task = create_task(lib, {"title": "lib task"}, "", "ann").id
    here = Board(env)
    projects.add(here, "lib", str(lib.root), None, user=False)
    subprocess.run(["git", "init", "-q", str(lib.root)], check=True)
    subprocess.run(["git", "-C", str(lib.root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(lib.root), "commit", "-qm", "lib"], check=True)
    projects.add(here, "libv1", str(lib.root), "HEAD", user=False)

    async def run() -> None:
        async with in_process(env, "legacy") as client:
            rows = await call(client, "list", {"root": "lib"})
            assert [r["id"] for r in rows["tasks"]] == [task]
            got = await call(client, "get", {"task": task, "root": "libv1"})
            assert got["id"] == task
            error = await fail(client, "update", {"task": task, "title": "x", "root": "libv1"})
            assert "read at ref HEAD" in error["message"]
            error = await fail(client, "list", {"root": "nolib"})
            assert "not a directory" in error["message"]

    anyio.run(run)
    assert lib.read(task).fields["title"] == "lib task"


def test_only_ledgit_mcp_imports_the_sdk(env: Path) -> None:
    probe = ("import sys, runpy; sys.argv = ['ledgit', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('ledgit', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('SDK' if 'mcp' in sys.modules or any(m.startswith('ledgit.mcp.') for m in "
             "sys.modules) else 'NOSDK', file=sys.stderr)\n")
    for args in (["list"], ["get", Board(env).list_ids()[0]], ["--help"], ["mcp", "--help"],
                 ["create", "x"], ["doctor"]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=env,
                              capture_output=True, text=True)
        assert proc.stderr.strip().splitlines()[-1] == "NOSDK", (args, proc.stderr)


def test_http_on_another_host_needs_a_token(env: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ledgit", "mcp", "--http", "--host",
                           "0.0.0.0"], cwd=env, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "LEDGIT_MCP_TOKEN"})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "token" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "ledgit", "mcp", "--token", "x"], cwd=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--http" in proc.stderr


# --------------------------------------------------------------------------- concurrency


def test_four_servers_and_cli_writers_lose_no_write(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """4 ``ledgit mcp`` processes and 2 CLI writers add items to the same 3 tasks of one
    board in a Git repository: every acknowledged write is there exactly once and every
    history verifies."""
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    board = init_board(repo)
    ids = [create_task(board, {"title": f"shared {i}"}, "", "ann").id for i in range(3)]
    per_writer = 12
    acknowledged: list[tuple[str, str]] = []

    async def server_writer(n: int) -> None:
        async with over_stdio(repo, "legacy" if n % 2 else "2026-07-28") as client:
            for k in range(per_writer):
                tid, text = ids[k % 3], f"mcp-{n}-{k}"
                result = await client.call_tool("item", {"task": tid, "text": text,
                                                         "by": f"server-{n}"})
                if not result.is_error:
                    acknowledged.append((tid, text))
                else:  # only "busy" may refuse a write here
                    assert result.structured_content["error"]["code"] == 5, result

    def cli_writer(n: int) -> None:
        for k in range(per_writer // 2):
            tid, text = ids[k % 3], f"cli-{n}-{k}"
            proc = subprocess.run([sys.executable, "-m", "ledgit", "item", "add", tid,
                                   "--kind", "fact", "--text", text, "--by", f"cli-{n}"],
                                  cwd=repo, capture_output=True, text=True)
            if proc.returncode == 0:
                acknowledged.append((tid, text))
            else:
                assert proc.returncode == 5, proc.stderr

    async def run() -> None:
        async with anyio.create_task_group() as group:
            for n in range(4):
                group.start_soon(server_writer, n)
            for n in range(2):
                group.start_soon(anyio.to_thread.run_sync, cli_writer, n)

    anyio.run(run)
    assert len(acknowledged) >= 4 * per_writer  # busy refusals are rare, not the rule
    for tid in ids:
        texts = [i["text"] for i in board.read(tid).fields.get("items", [])]
        mine = sorted(t for t_id, t in acknowledged if t_id == tid)
        assert sorted(texts) == mine, tid
    proc = subprocess.run([sys.executable, "-m", "ledgit", "verify", "--all"], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("mode", MODES)
def test_streamable_http_with_a_bearer_token(env: Path, mode: str) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "ledgit", "mcp", "--http", "--port",
                               str(port)], cwd=env, env={**os.environ,
                                                          "LEDGIT_MCP_TOKEN": "s3cret"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx2.post(url, json={}, timeout=5)
                break
            except httpx2.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert answer.status_code == 401  # no token
        assert httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"},
                           timeout=5).status_code == 401

        async def run() -> None:
            async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"},
                                          timeout=30) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                    assert client.protocol_version == PROTOCOL[mode]
                    rows = await call(client, "list", {"fields": ["title"]})
                    assert [r["title"] for r in rows["tasks"]] == ["first task"]

        anyio.run(run)
    finally:
        server.terminate()
        server.wait(30)
        assert server.stdout is not None and server.stdout.read() == b""
