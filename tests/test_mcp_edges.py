"""The MCP face's hard edges (issue 26): a tool's ``root`` is confined to what the server
serves, arguments are strictly typed (a boolean is not a number), and a fuzz of random JSON
types for every argument of every tool writes nothing of a wrong type and nothing at all on a
refusal. The SDK's real client, in process and over stdio.

The fuzz runs ``LEDGIT_MCP_FUZZ`` calls (default 400; the issue's figure is 10,000).
"""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

from mcp import Client, StdioServerParameters  # noqa: E402

from ledgit.mcp.server import build_server  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.boardcheck import verify_board  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task  # noqa: E402

FUZZ_CALLS = int(os.environ.get("LEDGIT_MCP_FUZZ", "400"))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A board at tmp_path/board with one task; the environment without LEDGIT_*."""
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LEDGIT_ACTOR", "ann")
    monkeypatch.setenv("LEDGIT_WATCH", "0")
    board = init_board(tmp_path / "board")
    create_task(board, {"title": "first task"}, "", "ann")
    return board.root


@asynccontextmanager
async def in_process(root: Path, allow: tuple[str, ...] = ()) -> AsyncIterator[Client]:
    server, boards = build_server(root, allow)
    try:
        async with Client(server, mode="legacy") as client:  # type: ignore[arg-type]
            yield client
    finally:
        boards.close()


def files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for sub in ("tasks", "history")
            for p in sorted((root / ".ledgit" / sub).iterdir())}


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    assert result.structured_content is not None, result
    error: dict[str, Any] = result.structured_content["error"]
    return error


def text_of(result: Any) -> str:
    return " ".join(c.text for c in result.content if hasattr(c, "text"))


# --------------------------------------------------------------------------- roots


def test_root_outside_the_server_is_refused_naming_the_rule(env: Path, tmp_path: Path) -> None:
    """What was seen: ``update`` with ``root`` naming an unrelated repository's board (by an
    absolute path or ``../other``) wrote there."""
    other = init_board(tmp_path / "other")
    tid = create_task(other, {"title": "theirs"}, "", "bob").id
    link = env / "sub-link"
    link.symlink_to(other.root)  # a link under the start directory leads out: refused too
    before = files(other.root)

    async def run() -> None:
        async with in_process(env) as client:
            for root in (str(other.root), "../other", str(link)):
                for name, args in (("update", {"task": tid, "title": "pwned"}),
                                   ("create", {"title": "pwned"}), ("list", {}),
                                   ("get", {"task": tid})):
                    error = error_of(await client.call_tool(name, {**args, "root": root}))
                    assert error["code"] == 2 and error["rule"] == "root-confined", error
                    assert "ledgit mcp --allow-root" in error["message"]
            assert (await client.call_tool("list", {})).is_error is False  # its own board

    anyio.run(run)
    assert files(other.root) == before


def test_allow_root_widens_and_boards_under_start_are_served(env: Path,
                                                            tmp_path: Path) -> None:
    other = init_board(tmp_path / "other")
    inner = init_board(env / "nested")

    async def run() -> None:
        async with in_process(env, (str(tmp_path / "other"),)) as client:
            made = await client.call_tool("create", {"title": "ok", "root": "../other"})
            assert not made.is_error, made
            assert other.list_ids() == [made.structured_content["id"]]  # type: ignore[index]
            nested = await client.call_tool("create", {"title": "in", "root": "nested"})
            assert not nested.is_error, nested
            assert len(inner.list_ids()) == 1

    anyio.run(run)


def test_allow_root_on_the_command_line(env: Path, tmp_path: Path) -> None:
    other = init_board(tmp_path / "other")

    async def run() -> None:
        for extra, refused in (([], True), (["--allow-root", str(tmp_path / "other")], False)):
            params = StdioServerParameters(command=sys.executable,
                                           args=["-m", "ledgit", "mcp", *extra],
                                           cwd=str(env), env=dict(os.environ))
            async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
                result = await client.call_tool("list", {"root": str(other.root)})
                assert result.is_error is refused, result

    anyio.run(run)


# --------------------------------------------------------------------------- strict types


def test_a_boolean_is_not_a_number(env: Path) -> None:
    """What was seen: ``update {"priority": false}`` wrote ``priority: 0``; true -> 1; 1.0 ->
    1. Each is refused naming the argument, and nothing is written."""
    tid = Board(env).list_ids()[0]
    before = files(env)
    wrong: list[tuple[str, dict[str, Any], str]] = [
        ("update", {"task": tid, "priority": False}, "priority"),
        ("update", {"task": tid, "priority": True}, "priority"),
        ("update", {"task": tid, "priority": 1.0}, "priority"),
        ("update", {"task": tid, "priority": "1"}, "priority"),
        ("create", {"title": "x", "priority": True}, "priority"),
        ("list", {"limit": True}, "limit"), ("list", {"limit": 2.0}, "limit"),
        ("list", {"ready": "yes"}, "ready"), ("list", {"ready": 1}, "ready"),
        ("claim", {"task": tid, "force": 0}, "force"),
        ("item", {"task": tid, "text": "x", "lock": "true"}, "lock"),
        ("update", {"task": tid, "labels_add": "a,b"}, "labels_add"),
        ("update", {"task": tid, "title": 5}, "title"),
        ("get", {"task": tid, "body": "false"}, "body"),
    ]

    async def run() -> None:
        async with in_process(env) as client:
            for name, args, argument in wrong:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
                assert argument in text_of(result), (name, args, text_of(result))

    anyio.run(run)
    assert files(env) == before


# --------------------------------------------------------------------------- fuzz

ODD_VALUES: list[Any] = [None, True, False, 0, 1, -1, 4, 5, 1.0, 2.5, -0.0, 1e300, "", "x",
                         "true", "1", "T-", "../..", "\u0000", [], ["x"], [1], [True], [None],
                         [[]], {}, {"a": 1}, {"a": "b"}, {"title": "x"}, "\U0001f680" * 3]


def _valid(name: str, schema: dict[str, Any], tid: str, rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if name == "task":
        return tid
    if name in ("root", "expect", "by", "outcome"):
        return None
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), min(int(schema.get("maximum", 4)), 4))
    if kind == "boolean":
        return rng.choice([True, False])
    if kind == "array":
        return [rng.choice(["a", "b", "fact"])]
    if kind == "object":
        return {rng.choice(["x_note", "title"]): "v"}
    return rng.choice(["x", "fuzz", "a b"])


def _stat_sig(root: Path) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for sub in ("tasks", "history", ""):
        with os.scandir(root / ".ledgit" / sub) as entries:
            for e in entries:
                if e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    out.append((e.path, st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(sorted(out))


def _type_problems(board: Board) -> list[str]:
    """Fields of any task whose value has a type no schema allows: a boolean priority, a
    non-string title, a list holding a non-string."""
    found = []
    for tid in board.list_ids():
        fields = board.read(tid).fields
        priority = fields.get("priority")
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
            found.append(f"{tid}: priority {priority!r}")
        for key in ("title", "status", "owner", "worker", "next_action", "gate", "response"):
            if key in fields and fields[key] is not None and not isinstance(fields[key], str):
                found.append(f"{tid}: {key} {fields[key]!r}")
        for key in ("labels", "depends_on", "commits"):
            value = fields.get(key)
            if value is not None and not all(isinstance(v, str) for v in value):
                found.append(f"{tid}: {key} {value!r}")
    return found


def test_fuzz_every_argument_with_random_json_types(env: Path) -> None:
    rng = random.Random(int(os.environ.get("LEDGIT_MCP_FUZZ_SEED", "26")))
    board = Board(env)
    tid = board.list_ids()[0]
    stats = {"calls": 0, "ok": 0, "refused_by_type": 0, "refused_by_ledgit": 0}
    internal: list[str] = []
    changed_on_refusal: list[str] = []

    async def run() -> None:
        async with in_process(env) as client:
            tools = (await client.list_tools()).tools
            for n in range(FUZZ_CALLS):
                tool = tools[n % len(tools)]
                props: dict[str, Any] = tool.input_schema.get("properties", {})
                # 0, 1, 2 or every argument of a random JSON type, the rest valid or left
                # out: each argument of each tool meets every type, alone and in company
                names = list(props)
                odd = set(rng.sample(names, min(len(names), rng.choice([0, 0, 0, 1, 1, 2, 99]))))
                args: dict[str, Any] = {}
                for name, schema in props.items():
                    if name in odd:
                        args[name] = rng.choice(ODD_VALUES)
                    elif rng.random() < 0.6 or name in tool.input_schema.get("required", ()):
                        value = _valid(name, schema, tid, rng)
                        if value is not None:
                            args[name] = value
                before = _stat_sig(env)
                result = await client.call_tool(tool.name, args)
                stats["calls"] += 1
                text = text_of(result)
                if not result.is_error:
                    stats["ok"] += 1
                    continue
                error = (result.structured_content or {}).get("error")
                if isinstance(error, dict) and "problems" in error:  # an argument refused
                    stats["refused_by_type"] += 1
                elif isinstance(error, dict):
                    stats["refused_by_ledgit"] += 1
                elif re.search(r"\d+ validation errors? for ", text):  # the SDK's own text
                    stats["refused_by_type"] += 1
                else:
                    internal.append(f"{tool.name} {args!r}: {text[:300]}")
                if "Traceback" in text:
                    internal.append(f"{tool.name} {args!r}: traceback")
                if _stat_sig(env) != before:
                    changed_on_refusal.append(f"{tool.name} {args!r}: {text[:200]}")

    anyio.run(run)
    print(f"mcp fuzz: {stats}")
    assert stats["calls"] == FUZZ_CALLS
    assert internal == [], internal[:5]
    assert changed_on_refusal == [], changed_on_refusal[:5]
    assert _type_problems(board) == []
    assert stats["ok"] > 0 and stats["refused_by_type"] > 0  # both paths exercised
    assert verify_board(board) == []
