"""``ledgit mcp``: serve the board over the Model Context Protocol (docs/mcp.md), or print the
JSON that registers this installation's server with a client (``--print-config``,
:mod:`ledgit.cli.mcpconfig`).

A module of its own so that no other command loads what only this one needs (the install
hint's reading of the installation's origin, importlib.metadata) when the command line starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ledgit.cli.mcpconfig import CLIENTS, client_config
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.operations.extrahint import install_hint


@click.command("mcp")
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP address; another than 127.0.0.1 needs a bearer token.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True,
              help="HTTP port.")
@click.option("--token", default=None, envvar="LEDGIT_MCP_TOKEN",
              help="Bearer token required on every HTTP request (or $LEDGIT_MCP_TOKEN).")
@click.option("--allow-root", "allow_roots", multiple=True, metavar="PATH",
              help="Also serve boards under PATH to a tool's root (repeatable; default: the "
                   "start board, its registered projects, boards under the start directory).")
@click.option("--root", "start", type=click.Path(exists=True, file_okay=False,
                                                 path_type=Path),
              default=None, metavar="DIR",
              help="Start in DIR: its board is the default one (default: the working "
                   "directory; LEDGIT_ROOT still pins it).")
@click.option("--max-answer-bytes", type=click.IntRange(8_192, None), default=65_536,
              show_default=True, metavar="N",
              help="The most bytes of JSON in one answer; lists page and bodies come in "
                   "pieces to fit.")
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the JSON that registers this server with an MCP client (the "
                   "absolute command of this installation, the board root) and exit.")
@click.option("--client", type=click.Choice(CLIENTS), default=None,
              help="With --print-config: the client's shape (default generic: mcpServers).")
@click.option("--by", "actor", default=None, metavar="WHO",
              help="With --print-config: the agent's name (LEDGIT_ACTOR in the entry's env; "
                   "each agent needs its own).")
def mcp_cmd(http: bool, host: str, port: int, token: str | None,
            allow_roots: tuple[str, ...] = (), start: Path | None = None,
            max_answer_bytes: int = 65_536, print_config: bool = False,
            client: str | None = None, actor: str | None = None) -> int:
    """Serve the board to agents over the Model Context Protocol (docs/mcp.md): stdio by
    default. Needs the extra: pip install -e '.[mcp]' in a checkout of ledgit."""
    if (client is not None or actor is not None) and not print_config:
        raise LedgitError(f"{'--client' if client is not None else '--by'} needs "
                          f"--print-config", USAGE)
    if print_config:
        if http or allow_roots:
            raise LedgitError("--print-config prints the stdio server's entry: give it "
                              "without --http and --allow-root", USAGE)
        click.echo(json.dumps(client_config(client or "generic", start, actor), indent=2))
        return OK
    # $LEDGIT_MCP_TOKEN exported for an HTTP server must not stop a stdio one: only a
    # --token given on the command line is refused without --http.
    given = click.get_current_context().get_parameter_source("token")
    if not http and (host != "127.0.0.1" or (token and given is not
                                             click.core.ParameterSource.ENVIRONMENT)):
        raise LedgitError("--host and --token need --http", USAGE)
    try:
        from ledgit.mcp.server import serve  # optional: the [mcp] extra
    except ImportError as exc:
        raise LedgitError(f"ledgit mcp needs the MCP SDK: {install_hint('mcp')} ({exc})",
                          USAGE) from None
    return serve(http=http, host=host, port=port, token=token, allow_roots=allow_roots,
                 start=start, max_answer_bytes=max_answer_bytes)
