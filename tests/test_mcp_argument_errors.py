"""Issue 28, "MCP argument errors are raw": every argument of every tool, given a value of
the wrong kind, and an argument no tool takes, come back in ledgit's error shape
(``{"error": {"code": 2, "kind": "invalid_input", "message", "argument", "expected"}}``),
never pydantic's text and its errors.pydantic.dev link. The SDK's own client, in-process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402

from ledgit.mcp.args import expected_of  # noqa: E402
from ledgit.mcp.server import build_server  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task  # noqa: E402


def _wrong_value(schema: dict[str, Any]) -> Any:
    """A value no property of this kind accepts."""
    return 5 if schema.get("type") == "object" else {"not": ["this"]}


def _assert_shape(error: dict[str, Any], argument: str) -> None:
    assert error["code"] == 2 and error["kind"] == "invalid_input", error
    assert argument in [p["argument"] for p in error["problems"]], error
    assert error["argument"] and error["expected"], error
    assert "\n" not in error["message"] and "pydantic" not in error["message"], error


def test_every_argument_of_every_tool_is_refused_in_ledgit_s_shape(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("LEDGIT_")]:
        monkeypatch.delenv(name)
    board = init_board(tmp_path / "board")
    tid = create_task(board, {"title": "t"}, "", "ann").id
    before = sorted(p.name for p in (tmp_path / "board" / ".ledgit" / "tasks").iterdir())

    async def run() -> int:
        server, boards = build_server(board.root)
        checked = 0
        try:
            async with Client(server) as client:  # type: ignore[arg-type]
                for tool in (await client.list_tools()).tools:
                    props: dict[str, Any] = tool.input_schema.get("properties", {})
                    required = {k: "x" for k in tool.input_schema.get("required", [])}
                    if "task" in required:
                        required["task"] = tid
                    for arg, schema in props.items():
                        result = await client.call_tool(
                            tool.name, {**required, arg: _wrong_value(schema)})
                        assert result.is_error and result.structured_content, (tool.name, arg)
                        _assert_shape(result.structured_content["error"], arg)
                        checked += 1
                    result = await client.call_tool(tool.name, {**required, "bogus_arg": 1})
                    error = result.structured_content["error"]  # type: ignore[index]
                    _assert_shape(error, "bogus_arg")
                    assert error["allowed"] == sorted(props), error
        finally:
            boards.close()
        return checked

    assert anyio.run(run) > 40
    after = sorted(p.name for p in (tmp_path / "board" / ".ledgit" / "tasks").iterdir())
    assert after == before  # no refused call wrote anything


def test_the_message_names_the_argument_and_what_was_expected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("LEDGIT_")]:
        monkeypatch.delenv(name)
    board = init_board(tmp_path / "board")

    async def run() -> list[dict[str, Any]]:
        server, boards = build_server(board.root)
        try:
            async with Client(server) as client:  # type: ignore[arg-type]
                out = []
                for args in ({"title": "x", "priority": 9}, {"title": "x", "priorty": 1}, {}):
                    result = await client.call_tool("create", args)
                    out.append(result.structured_content["error"])  # type: ignore[index]
                return out
        finally:
            boards.close()

    nine, typo, missing = anyio.run(run)
    assert nine["message"] == "create: priority: 9 is not accepted; expected an integer from 0 to 4"
    assert (nine["argument"], nine["expected"]) == ("priority", "an integer from 0 to 4")
    assert typo["argument"] == "priorty" and "priority" in typo["allowed"]
    assert missing["argument"] == "title" and missing["problem"] == "required, not given"


@pytest.mark.parametrize("schema, words", [
    ({"type": "integer", "minimum": 0, "maximum": 4}, "an integer from 0 to 4"),
    ({"type": "integer", "minimum": 1}, "an integer, 1 or more"),
    ({"enum": ["claim", "release"]}, "one of: claim, release"),
    ({"type": "array", "items": {"type": "string"}}, "a list of strings"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "an object of strings"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "a string"),
    ({"type": "boolean"}, "true or false"),
])
def test_expected_of_words_a_schema(schema: dict[str, Any], words: str) -> None:
    assert expected_of(schema) == words
