"""Issue 15's deliverables checked as a user and a careless or hostile agent would meet them:
HTTP on loopback with the SDK's streamable HTTP client (bound address, bearer token, another
host), concurrent writes racing on one ``expect``, careless input that must write nothing
(a root that is a file or a symlink loop, a board whose config is invalid, wrong types,
missing arguments, unicode), and no process outliving the command that started it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from test_no_daemon import ours  # noqa: E402

from ledgit.mcp.server import build_server  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task

MODES = ["legacy", "2026-07-28"]  # legacy: the initialize handshake, 2025-11-25


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A board at tmp_path/board with one task; the environment without LEDGIT_*."""
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LEDGIT_ACTOR", "ann")
    board = init_board(tmp_path / "board")
    create_task(board, {"title": "first task"}, "", "ann")
    return board.root


@asynccontextmanager
async def in_process(root: Path, mode: str = "legacy") -> AsyncIterator[Client]:
    server, boards = build_server(root)
    try:
        async with Client(server, mode=mode) as client:
            yield client
    finally:
        boards.close()


@asynccontextmanager
async def over_stdio(root: Path, mode: str = "legacy") -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "ledgit", "mcp"],
                                   cwd=str(root), env=dict(os.environ))
    async with Client(params, mode=mode) as client:
        yield client


def tree(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` with its bytes (symlinks as their target), but for the
    boards' private, ignored directory (.ledgit/.local: the index, the lock files)."""
    out: dict[str, bytes] = {}
    for root in roots:
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not (d == ".local" and
                                               os.path.basename(directory) == ".ledgit")]
            for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
                path = os.path.join(directory, name)
                out[path] = (os.readlink(path).encode() if os.path.islink(path)
                             else Path(path).read_bytes())
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    return out


def error_of(result: Any) -> dict[str, Any]:
    """The ``error`` object of a ledgit tool error (one line, the CLI's code)."""
    assert result.is_error, result
    assert result.structured_content is not None, result
    error: dict[str, Any] = result.structured_content["error"]
    assert isinstance(error["message"], str) and "\n" not in error["message"]
    return error


# --------------------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(root: Path, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ledgit", "mcp", "--http", *args],
                            cwd=root, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_listening(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx2.post(url, json={}, timeout=5)
            return
        except httpx2.TransportError:
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)


def stop(server: subprocess.Popen[bytes]) -> bytes:
    """Stop the server (SIGTERM, as a user's Ctrl-C); its stderr. Asserts it ended and
    wrote nothing on stdout."""
    server.send_signal(signal.SIGTERM)
    stdout, stderr = server.communicate(timeout=30)
    assert stdout == b""
    return stderr


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} print them) of the sockets listening
    on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:  # 0A: TCP_LISTEN
                found.add(address)
    return found


async def http_list(url: str, token: str | None, mode: str = "legacy") -> int:
    """``list`` through the SDK's streamable HTTP client; the count."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as client:
            made = await client.call_tool("create", {"title": f"over http {mode}"})
            assert not made.is_error, made
            rows = await client.call_tool("list", {"fields": ["title"]})
            assert rows.structured_content is not None
            return int(rows.structured_content["count"])


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs /proc/net/tcp")
@pytest.mark.parametrize("mode", MODES)
def test_http_binds_loopback_and_the_sdk_client_needs_the_token(env: Path, mode: str) -> None:
    """``--http`` listens on 127.0.0.1 only; with a token, the SDK's own client is refused
    without it or with a wrong one (and writes nothing), and served with it."""
    port = free_port()
    server = start_http(env, "--port", str(port), env={"LEDGIT_MCP_TOKEN": "s3cret"})
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(url, server)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing else
        before = tree(env)
        for token in (None, "wrong", "s3cret "):
            with pytest.raises(Exception) as refused:  # noqa: B017 (the SDK's error group)
                anyio.run(http_list, url, token, mode)
            assert "error" in repr(refused.value).lower()
        assert tree(env) == before
        assert anyio.run(http_list, url, "s3cret", mode) == 2
    finally:
        assert stop(server) == b""
    assert len(Board(env).list_ids()) == 2


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs /proc/net/tcp")
def test_http_on_another_host_warns_and_serves_only_with_the_token(env: Path) -> None:
    """``--host 127.0.0.2`` (another address than 127.0.0.1) needs the token, warns on
    stderr, binds that address alone, and the SDK's client is served only with the token."""
    port = free_port()
    server = start_http(env, "--host", "127.0.0.2", "--port", str(port), "--token", "tok")
    url = f"http://127.0.0.2:{port}/mcp"
    try:
        wait_listening(url, server)
        assert listening_addresses(port) == {"0200007F"}  # 127.0.0.2 only
        with pytest.raises(Exception):  # noqa: B017 (the SDK's error group)
            anyio.run(http_list, url, None)
        assert anyio.run(http_list, url, "tok") == 2
    finally:
        stderr = stop(server).decode()
    assert stderr.count("warning") == 1 and "127.0.0.2" in stderr, stderr


def test_an_exported_token_does_not_stop_a_stdio_server(
        env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$LEDGIT_MCP_TOKEN set for an HTTP server (a shell profile, a client's env block) does
    not make the stdio server refuse to start; a --token on the command line without --http
    still does."""
    monkeypatch.setenv("LEDGIT_MCP_TOKEN", "for-http")

    async def run() -> None:
        async with over_stdio(env, "2026-07-28") as client:
            rows = await client.call_tool("list", {"fields": ["title"]})
            assert not rows.is_error, rows

    anyio.run(run)
    proc = subprocess.run([sys.executable, "-m", "ledgit", "mcp", "--token", "x"], cwd=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "--http" in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- concurrency


def test_racing_writes_with_one_expect_have_exactly_one_winner(env: Path) -> None:
    """Writers that all read the same revision and write with ``expect`` = it -- in one
    server concurrently, in 3 stdio servers and a CLI process -- : one write lands each
    round, every other is stale_revision naming the revision the winner wrote, and the
    history verifies."""
    board = Board(env)
    tid = board.list_ids()[0]
    rounds = 4

    async def one_server_round(client: Client, r: int) -> None:
        expect = board.read(tid).revision
        results: list[Any] = []

        async def write(n: int) -> None:
            results.append(await client.call_tool("update", {
                "task": tid, "expect": expect, "next_action": f"r{r} w{n}"}))

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(write, n)
        winners = [x for x in results if not x.is_error]
        assert len(winners) == 1, results
        now = board.read(tid).revision
        assert winners[0].structured_content["revision"] == now
        for loser in results:
            if loser.is_error:
                error = error_of(loser)
                assert error["kind"] == "stale_revision", error
                assert error["current_revision"] == now

    async def one_server() -> None:
        async with in_process(env) as client:
            for r in range(rounds):
                await one_server_round(client, r)

    anyio.run(one_server)

    async def processes_round(clients: tuple[Client, ...], r: int) -> None:
        expect = board.read(tid).revision
        outcomes: list[tuple[bool, str | None]] = []

        async def mcp(client: Client, n: int) -> None:
            result = await client.call_tool("update", {
                "task": tid, "expect": expect, "title": f"round {r} by {n}"})
            if result.is_error:
                error = error_of(result)
                assert error["kind"] == "stale_revision", error
                outcomes.append((False, error["current_revision"]))
            else:
                assert result.structured_content is not None
                outcomes.append((True, result.structured_content["revision"]))

        def cli() -> None:
            proc = subprocess.run(
                [sys.executable, "-m", "ledgit", "update", tid, "--expect", expect,
                 "--title", f"round {r} by cli"], cwd=env, capture_output=True, text=True)
            assert proc.returncode in (0, 3), proc.stderr
            outcomes.append((proc.returncode == 0, None))

        async with anyio.create_task_group() as group:
            for n, client in enumerate(clients):
                group.start_soon(mcp, client, n)
            group.start_soon(anyio.to_thread.run_sync, cli)
        assert [ok for ok, _ in outcomes].count(True) == 1, outcomes
        now = board.read(tid).revision
        assert all(rev in (None, now) for _, rev in outcomes), (outcomes, now)

    async def many_processes() -> None:
        async with over_stdio(env) as a, over_stdio(env, "2026-07-28") as b, \
                over_stdio(env) as c:
            for r in range(rounds):
                await processes_round((a, b, c), r)

    anyio.run(many_processes)
    proc = subprocess.run([sys.executable, "-m", "ledgit", "verify", tid], cwd=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = (env / ".ledgit" / "history" / f"{tid}.jsonl").read_text().splitlines()
    assert len(events) == 1 + 2 * rounds  # create + one winner a round, twice


def test_racing_claims_have_one_holder_and_the_others_are_told_who(env: Path) -> None:
    """8 agents claim one open task at once through one server: one holds it, every other
    call is claim_held naming that holder."""
    tid = Board(env).list_ids()[0]
    results: dict[str, Any] = {}

    async def run() -> None:
        async with in_process(env) as client:
            async def claim(n: int) -> None:
                results[f"agent-{n}"] = await client.call_tool(
                    "claim", {"task": tid, "by": f"agent-{n}"})

            async with anyio.create_task_group() as group:
                for n in range(8):
                    group.start_soon(claim, n)

    anyio.run(run)
    holder = Board(env).read(tid).fields["claim"]["by"]
    assert not results[holder].is_error
    for name, result in results.items():
        if name != holder:
            error = error_of(result)
            assert error["kind"] == "claim_held" and error["holder"] == holder, error


# --------------------------------------------------------------------------- careless input


def test_careless_input_is_a_clear_error_and_the_tree_stays_byte_identical(
        env: Path, tmp_path: Path) -> None:
    """Roots that are a file, a symlink loop, a dangling link or a board whose config is
    invalid; wrong types and missing arguments; a lone surrogate: each a tool error, over
    a real stdio server, and not one byte of any board or directory changes."""
    tid = Board(env).list_ids()[0]
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "a-file").write_text("not a board\n")
    os.symlink(odd / "loop-b", odd / "loop-a")
    os.symlink(odd / "loop-a", odd / "loop-b")
    os.symlink(odd / "gone", odd / "dangling")
    in_broken: dict[str, str] = {}  # root -> the id of a task there
    for name, config in (("broken", b"claim_ttl: [never closed\n"),
                         ("negative", b"claim_ttl: -5\n"), ("binary", b"\xff\xfe\x00\x01")):
        made = init_board(tmp_path / name)
        in_broken[str(made.root)] = create_task(made, {"title": f"in {name}"}, "", "ann").id
        (made.root / ".ledgit" / "config.yaml").write_bytes(config)
    roots: list[tuple[str, int]] = [
        (str(odd / "a-file"), 4), (str(odd / "loop-a"), 4), (str(odd / "dangling"), 4),
        *((root, 2) for root in in_broken),
        (str(odd), 4), ("../../../../../../..", 4), ("x" * 5000, 2)]
    writes: list[tuple[str, dict[str, Any]]] = [
        ("create", {"title": "careless"}),
        ("update", {"task": tid, "title": "careless"}),
        ("claim", {"task": tid}),
        ("item", {"task": tid, "text": "careless"}),
        ("complete", {"task": tid, "response": "careless"}),
        ("writeback", {"task": tid, "evidence": "careless"}),
        ("list", {}), ("get", {"task": tid})]
    sdk_refused: list[tuple[str, dict[str, Any]]] = [
        ("get", {}), ("complete", {"task": tid}), ("create", {}),
        ("update", {"task": [tid], "title": "x"}), ("update", {"task": tid, "title": 7}),
        ("create", {"title": "x", "labels": "a,b"}), ("create", {"title": "x", "priority": 9}),
        ("create", {"title": "x", "priority": "high"}), ("list", {"limit": -1}),
        ("list", {"root": 5}), ("item", {"task": tid, "kind": "rumour", "text": "x"}),
        ("claim", {"task": tid, "action": "steal"}), ("update", {"task": tid, "set": ["a"]}),
        ("writeback", {"task": tid}), ("nonexistent_tool", {})]
    ledgit_refused: list[tuple[str, dict[str, Any], int]] = [
        ("create", {"title": "two\nlines"}, 2),
        ("update", {"task": tid, "by": "two\nlines", "title": "x"}, 2),
        ("update", {"task": tid, "set": {"status": "done"}}, 2),
        ("update", {"task": tid, "set": {"claim": "me"}}, 2),
        ("update", {"task": tid, "set": {"depends_on": "T-nowhere"}}, 4),  # issue 36
        ("create", {"title": "bell\x07"}, 2),
        ("update", {"task": "T-\u202e" + tid[2:], "title": "x"}, 4),
        ("get", {"task": "\U0001f680"}, 4),
        ("search", {"text": ""}, 2)]
    before = tree(tmp_path)

    async def run() -> None:
        async with over_stdio(env) as client:
            for root, code in roots:
                for name, args in writes:
                    if "task" in args and root in in_broken:
                        args = {**args, "task": in_broken[root]}
                    error = error_of(await client.call_tool(name, {**args, "root": root}))
                    assert error["code"] == code, (root[:40], name, error)
            for name, args in sdk_refused:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
            for name, args, code in ledgit_refused:
                error = error_of(await client.call_tool(name, args))
                assert error["code"] == code, (name, args, error)
            # The server still answers after all of it.
            rows = await client.call_tool("list", {"fields": ["title"]})
            assert rows.structured_content == {"tasks": [{"id": tid, "title": "first task"}],
                                               "count": 1, "total": 1, "next_cursor": None,
                                               "errors": [], "root": str(env),
                                               "root_source": "start_directory"}
        # A lone surrogate cannot cross stdio (the SDK's client cannot encode it, and its
        # server drops a line that is no valid JSON-RPC without an answer): in-process.
        async with in_process(env) as local:
            for name, args in (("create", {"title": "sur \ud800 rogate"}),
                               ("update", {"task": tid, "next_action": "lone \udfff"})):
                error = error_of(await local.call_tool(name, args))
                assert error["code"] == 2 and "surrogate" in error["message"], error

    anyio.run(run)
    assert tree(tmp_path) == before


def test_unicode_round_trips_over_stdio(env: Path) -> None:
    """Astral-plane, combining, right-to-left and control text written through a stdio
    server reads back as written (NFC-normalised: docs/format.md), from the server and from
    the file."""
    title = "déjà vu \U0001f680 \u05e9\u05dc\u05d5\u05dd e\u0301 \u202etxet\u202c \t tab"
    stored = unicodedata.normalize("NFC", title)
    assert stored != title
    text = "item \U0001f9ea with \u2028 a line separator"

    async def run() -> None:
        async with over_stdio(env, "2026-07-28") as client:
            made = await client.call_tool("create", {"title": title})
            assert not made.is_error, made
            tid = made.structured_content["id"]
            added = await client.call_tool("item", {"task": tid, "text": text})
            assert not added.is_error, added
            got = (await client.call_tool("get", {"task": tid})).structured_content
            assert got is not None and got["title"] == stored
            found = await client.call_tool("search", {"text": "\U0001f680"})
            assert [r["id"] for r in found.structured_content["tasks"]] == [tid]

    anyio.run(run)
    board = Board(env)
    made = [t for t in board.list_ids() if board.read(t).fields["title"] != "first task"]
    assert len(made) == 1
    record = board.read(made[0])
    assert record.fields["title"] == stored
    assert [i["text"] for i in record.fields["items"]] == [text]


def test_an_unknown_status_filter_is_refused_as_by_the_cli(env: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ledgit", "list", "--status", "bogus"],
                          cwd=env, capture_output=True, text=True)
    assert proc.returncode == 2

    async def run() -> None:
        async with in_process(env) as client:
            for name, args in (("list", {"status": ["bogus"]}),
                               ("list", {"outcome": "dropped"}),
                               ("search", {"text": "first", "status": ["Open"]})):
                error = error_of(await client.call_tool(name, args))
                assert error["code"] == 2 and "unknown value" in error["message"]

    anyio.run(run)


# --------------------------------------------------------------------------- no process left


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_stdio_server_ends_with_its_input(env: Path) -> None:
    """``ledgit mcp`` (stdio) is started by its client and ends when the client goes: when
    stdin closes -- the client exited or was killed -- the server exits by itself."""
    marker = uuid.uuid4().hex
    environ = {**os.environ, "LEDGIT_TEST_MARKER": marker}
    server = subprocess.Popen([sys.executable, "-m", "ledgit", "mcp"], cwd=env,
                              env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}
    server.stdin.write(json.dumps(hello).encode() + b"\n")
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    assert answer["result"]["serverInfo"]["name"] == "ledgit"
    assert [pid for pid, _ in ours(marker)] == [server.pid]  # the check can fail
    server.stdin.close()  # the client is gone
    assert server.wait(30) == 0
    assert ours(marker) == []

    async def run() -> None:
        async with over_stdio(env) as client:
            assert not (await client.call_tool("list", {})).is_error
            assert ours(marker) != []

    os.environ["LEDGIT_TEST_MARKER"] = marker
    try:
        anyio.run(run)
    finally:
        del os.environ["LEDGIT_TEST_MARKER"]
    deadline = time.monotonic() + 10
    while ours(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours(marker) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_cli_writes_and_a_big_import_leave_no_process(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes, and an import big enough to fork its history writer, leave no process of
    ledgit running once each command has returned (test_no_daemon covers the reads)."""
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    board = init_board(tmp_path / "board")
    source = tmp_path / "issues.jsonl"
    with source.open("w", encoding="utf-8") as fh:
        for i in range(1_200):
            fh.write(json.dumps({"id": f"bd-{i:04d}", "title": f"imported {i}",
                                 "description": "padding " * 60, "status": "open",
                                 "priority": 2, "issue_type": "task",
                                 "created_at": "2025-11-02T21:58:07.295058-08:00",
                                 "updated_at": "2025-11-02T21:58:07.295058-08:00"}) + "\n")
    assert source.stat().st_size >= 512 * 1024  # HistoryWriter's HELPER_MIN_BYTES
    marker = uuid.uuid4().hex
    environ = {**os.environ, "LEDGIT_TEST_MARKER": marker, "LEDGIT_ACTOR": "ann"}

    def ledgit(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=board.root,
                              env=environ, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    ledgit("import", "beads", str(source))
    assert len(board.list_ids()) == 1_200
    tid = ledgit("create", "by the cli", "--json")
    tid = json.loads(tid)["id"]
    for args in (["claim", tid], ["heartbeat", tid], ["update", tid, "--next-action", "x"],
                 ["item", "add", tid, "--kind", "fact", "--text", "t"],
                 ["complete", tid, "--response", "done"], ["verify", "--all"]):
        ledgit(*args)
    time.sleep(1.0)  # a process started in the background would be running by now
    assert ours(marker) == []


def test_a_write_that_would_pass_the_size_limit_is_refused_and_writes_nothing(
        env: Path, tmp_path: Path) -> None:
    """No tool call writes a task file over the 10 MiB that every read refuses
    (record.MAX_RECORD_BYTES, docs/format.md): each string is under the server's 1,000,000
    characters, but together they would pass it. The write is a clear error, nothing is
    written, and the task stays readable and verifiable by the CLI."""
    chunk = "a" * 999_000
    before = tree(tmp_path)

    async def run() -> str:
        async with in_process(env) as client:
            error = error_of(await client.call_tool("create", {
                "title": "b" * 999_000, "accept": [chunk] * 10}))
            assert error["code"] == 2 and "10 MiB" in error["message"], error
            assert tree(tmp_path) == before
            made = await client.call_tool("create", {"title": "big", "accept": [chunk] * 9})
            assert not made.is_error, made
            tid: str = made.structured_content["id"]  # type: ignore[index]
            grown = tree(tmp_path)
            error = error_of(await client.call_tool("item", {
                "task": tid, "text": chunk, "why": chunk, "evidence": chunk}))
            assert error["code"] == 2 and "nothing written" in error["message"], error
            assert tree(tmp_path) == grown
            # Its readout (9 MB of acceptance) does not fit an answer: refused as such,
            # naming the budget, never cut silently (DESIGN §14); the CLI reads it whole.
            error = error_of(await client.call_tool("get", {"task": tid, "body": False}))
            assert error["kind"] == "too_large" and error["size"] > error["budget"] == 65_536
            assert "--max-answer-bytes" in error["message"]
            return tid

    tid = anyio.run(run)
    for args in (["get", tid, "--json"], ["verify", tid]):
        proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, (args, proc.stderr)
