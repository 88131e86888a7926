"""``ledgit mcp``: the Model Context Protocol face (DESIGN §11), on the official SDK's
``MCPServer`` (``pip install 'ledgit[mcp]'``; no other command imports this package).

This module builds the server (:func:`build_server`: the tools of :mod:`ledgit.mcp.tools`
on the boards of :mod:`ledgit.mcp.boards`, with the instructions that explain their common
arguments) and serves it (:func:`serve`): over stdio, or over streamable HTTP on loopback, or
on another host behind a bearer token (:func:`bearer_only`). Nothing prints on stdout here:
with stdio it is the protocol's.
"""

import hmac
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from ledgit import __version__
from ledgit.core.errors import USAGE, LedgitError
from ledgit.mcp.boards import Boards
from ledgit.mcp.results import MAX_ANSWER_BYTES
from ledgit.mcp.tools import build_tools

TOKEN_ENV = "LEDGIT_MCP_TOKEN"  # the bearer token for --http on another host

# The tools' common arguments (ledgit.mcp.tools: Root, Task, Expect, By), explained once
# here, not in every tool's listing.
INSTRUCTIONS = (
    "ledgit: task state kept in the Git repository. Loop: list/search -> get -> claim -> "
    "update/item/writeback -> complete. Common arguments: task = an id or a unique prefix; "
    "root = the board directory or a registered project alias (default: the server's); "
    "by = the actor (default "
    "$LEDGIT_ACTOR, else git user.name); expect = a revision (>= 12 hex): the write is "
    "refused (stale_revision, with the current one) when the task has moved on. Failures "
    "are tool errors with structuredContent.error = {code, kind, message, ...} (exit codes "
    "and meanings of the CLI). Every answer names its board: root (absolute) and "
    "root_source (argument, environment, start_directory, project_alias); its JSON is "
    "within the server's byte budget, and the text block only sums up structuredContent.")


def build_server(start: Path | None = None, allow_roots: Iterable[str] = (),
                 max_answer_bytes: int = MAX_ANSWER_BYTES) -> tuple[MCPServer, Boards]:
    """The MCP server and its boards (close them when done). ``start``: the directory
    whose board tools act on by default (default: the working directory); ``allow_roots``:
    more directories whose boards a ``root`` may name (:mod:`ledgit.mcp.roots`);
    ``max_answer_bytes``: the budget of every answer's JSON (DESIGN §14)."""
    boards = Boards((start or Path.cwd()).resolve(), allow_roots)
    server = MCPServer("ledgit", version=__version__,
                       tools=build_tools(boards, max_answer_bytes),
                       log_level="WARNING", instructions=INSTRUCTIONS)
    return server, boards


# --------------------------------------------------------------------------- running


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          token: str | None = None, start: Path | None = None,
          allow_roots: Iterable[str] = (), max_answer_bytes: int = MAX_ANSWER_BYTES) -> int:
    """Run the server until its input ends (stdio) or it is interrupted (HTTP); returns the
    exit code. HTTP binds ``host`` (127.0.0.1 unless given); another host needs ``token``
    (bearer) and prints a warning on stderr."""
    server, boards = build_server(start, allow_roots, max_answer_bytes)
    try:
        if not http:
            server.run("stdio")
            return 0
        local = host in ("127.0.0.1", "localhost", "::1")
        if not local and not token:
            raise LedgitError(f"--host {host}: give a bearer token (--token or ${TOKEN_ENV})",
                              USAGE)
        if not local:
            print(f"ledgit: warning: serving MCP on {host}:{port}, reachable from other "
                  "machines; every request needs the bearer token", file=sys.stderr)
        security = None if local else TransportSecuritySettings(
            enable_dns_rebinding_protection=False)
        app: Any = server.streamable_http_app(host=host, transport_security=security)
        if token:
            app = bearer_only(app, token)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        anyio.run(uvicorn.Server(config).serve)
        return 0
    finally:
        boards.close()


def bearer_only(app: Any, token: str) -> Any:
    """An ASGI app that answers 401 to any HTTP request without
    ``Authorization: Bearer <token>`` (compared in constant time), else runs ``app``."""
    want = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, want):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"unauthorized\n"})
                return
        await app(scope, receive, send)

    return guarded
