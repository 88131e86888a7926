"""A stdio MCP server with two no-op tools, on the same SDK as ``ledgit mcp``: the round-trip
floors of bench/mcp_bench.py (the SDK, the transport and the interpreter, no ledgit). ``noop``
is a sync tool (the SDK runs it in a worker thread, as ledgit's writes), ``noop_async`` an
async one (answered on the event loop, as ledgit's reads); both return a typed result, as
ledgit's tools do."""

from __future__ import annotations

from mcp.server import MCPServer
from typing_extensions import TypedDict


class Nothing(TypedDict):
    ok: bool


def build() -> MCPServer:
    """The no-op server (also used in-process by the bench)."""
    server = MCPServer("noop", log_level="WARNING")

    @server.tool()
    def noop() -> Nothing:
        """Do nothing."""
        return Nothing(ok=True)

    @server.tool()
    async def noop_async() -> Nothing:
        """Do nothing, on the event loop."""
        return Nothing(ok=True)

    return server


if __name__ == "__main__":
    build().run("stdio")
