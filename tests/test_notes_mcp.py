"""Notes over MCP (issue 24 item 2): the ``update`` tool's ``add_note`` appends one line to a
task's notes -- alone as op ``note``, with other fields in the same event."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402

from ledgit.mcp.server import build_server  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task  # noqa: E402


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)
    board = init_board(tmp_path / "board")
    create_task(board, {"title": "noted"}, "", "ann")
    return board.root


def test_update_add_note(root: Path) -> None:
    board = Board(root)
    tid = board.list_ids()[0]

    async def run() -> list[Any]:
        server, boards = build_server(root)
        try:
            async with Client(server, mode="legacy") as client:  # type: ignore[arg-type]
                alone = await client.call_tool("update", {"task": tid, "add_note": "first",
                                                          "by": "ann"})
                both = await client.call_tool("update", {"task": tid, "add_note": "second",
                                                         "priority": 1, "by": "bob"})
                empty = await client.call_tool("update", {"task": tid, "add_note": " "})
                return [alone, both, empty]
        finally:
            boards.close()

    alone, both, empty = anyio.run(run)
    assert not alone.is_error and alone.structured_content["op"] == "note"
    assert not both.is_error and both.structured_content["op"] == "update"
    assert both.structured_content["meta"]["note"]["text"] == "second"
    assert empty.is_error and empty.structured_content["error"]["code"] == 2
    rec = Board(root).read(tid)
    assert [(n["by"], n["text"]) for n in rec.fields["notes"]] == [("ann", "first"),
                                                                  ("bob", "second")]
    assert rec.fields["priority"] == 1
