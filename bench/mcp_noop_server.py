"""A stdio MCP server with one no-op tool, on the same SDK as ``ledgit mcp``: the round-trip
floor of bench/mcp_bench.py (the SDK, the transport and the interpreter, no ledgit)."""

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

    return server


if __name__ == "__main__":
    build().run("stdio")
