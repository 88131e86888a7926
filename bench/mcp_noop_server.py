"""A stdio MCP server of no-op tools, on the same SDK as ``ledgit mcp``: the round-trip
floors of bench/mcp_bench.py (the SDK, the transport and the interpreter, no ledgit). ``noop``
is a sync tool (the SDK runs it in a worker thread, as ledgit's writes), ``noop_async`` an
async one (answered on the event loop, as ledgit's reads); both return a typed result, as
ledgit's tools do.

``replay`` (async) is no floor: it returns a stored copy of one of ledgit's results (JSON
file named by ``LEDGIT_BENCH_REPLAY``: {"schema": ledgit's advertised output schema,
"payloads": {name: structured content}, "texts": {name: its text block}}), as ledgit
returns it (the same text block beside the structured content, the same advertised schema,
not re-validated by the server), doing nothing else -- what the SDK and the transport alone
cost to carry that result, reported beside the figures (bench/README.md)."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from typing_extensions import TypedDict

REPLAY_ENV = "LEDGIT_BENCH_REPLAY"


class Nothing(TypedDict):
    ok: bool


class Rows(TypedDict):  # the shape of ledgit.mcp.results.Rows (list and search results)
    tasks: list[dict[str, Any]]
    count: int
    total: int
    next_cursor: str | None
    errors: list[dict[str, str]]


def build(replayed: dict[str, Any] | None = None) -> MCPServer:
    """The no-op server (also used in-process by the bench). ``replayed``: what ``replay``
    returns (the file's shape, module doc; default: the file named by
    ``LEDGIT_BENCH_REPLAY``, else nothing)."""
    if replayed is None:
        path = os.environ.get(REPLAY_ENV)
        with open(path or os.devnull, encoding="utf-8") as fh:
            replayed = json.loads(fh.read() or "{}")
    payloads: dict[str, Any] = replayed.get("payloads", {})
    texts = replayed.get("texts") or {k: json.dumps(v, ensure_ascii=False,
                                                     separators=(",", ":"))
                                      for k, v in payloads.items()}

    def noop() -> Nothing:
        """Do nothing."""
        return Nothing(ok=True)

    async def noop_async() -> Nothing:
        """Do nothing, on the event loop."""
        return Nothing(ok=True)

    async def replay(name: str) -> Annotated[CallToolResult, Rows]:
        """Return a stored result."""
        return CallToolResult(content=[TextContent(type="text", text=texts[name])],
                              structured_content=payloads[name])

    tools = [Tool.from_function(fn) for fn in (noop, noop_async, replay)]
    # As ledgit.mcp.tools: the schema is advertised (the client checks results against
    # it), the server does not validate the result again.
    tools[2].fn_metadata.output_model = None
    if replayed.get("schema"):
        tools[2].fn_metadata.output_schema = replayed["schema"]
    return MCPServer("noop", tools=tools, log_level="WARNING")


if __name__ == "__main__":
    build().run("stdio")
