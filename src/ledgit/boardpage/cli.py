"""The ``ledgit board`` command: ``--html FILE`` writes the page, ``--serve`` serves it live.

Exit codes (DESIGN §9): 0 ok (``--serve``: stopped with Ctrl-C or SIGTERM); 2 usage (neither
or an unusable ``--html`` path, a port that cannot be bound, a malformed ``--token``); 4 no
board; 5 busy index.
"""

from __future__ import annotations

import re
import secrets
import signal
import sys
from importlib.util import find_spec

import click

from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.operations.extrahint import install_hint
from ledgit.storage.board import Board, find_board
from ledgit.storage.index import Index
from ledgit.storage.safefiles import write_output

TOKEN_ENV = "LEDGIT_BOARD_TOKEN"
TOKEN_RE = re.compile(r"[\x21-\x7e]{8,512}")  # visible ASCII: a header value, typed as a password

@click.command("board")
@click.option("--html", "html_path", metavar="FILE",
              type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the board as one self-contained HTML file ('-' = stdout).")
@click.option("--serve", is_flag=True,
              help="Serve the board read-only and update it live (Ctrl-C stops).")
@click.option("--host", default=None, metavar="HOST",
              help="Address to serve on (default 127.0.0.1; anything else is reachable by "
                   "others and needs a token: one is made and printed unless given).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to serve on (0: a free one).")
@click.option("--token", default=None, metavar="TOKEN", envvar=TOKEN_ENV,
              show_envvar=True,
              help="The token every request must show (the password the browser asks for); "
                   "default beyond loopback: a new one, printed once.")
@click.option("--archived", is_flag=True, help="Show the archived column too.")
def board_cmd(html_path: str | None, serve: bool, host: str | None, port: int,
              token: str | None, archived: bool) -> int:
    """The board as a page people can look at: columns per status, lanes per agent, task
    details with their history, plots. --html FILE writes one self-contained file; --serve
    serves it on 127.0.0.1 and updates it live."""
    if not html_path and not serve:
        raise LedgitError("board needs --html FILE or --serve (see: ledgit board --help)",
                          USAGE)
    if host is not None and not serve:
        raise LedgitError("board --host needs --serve", USAGE)
    if token is not None and not serve:
        raise LedgitError(f"board --token (or ${TOKEN_ENV}) needs --serve", USAGE)
    if token is not None and not TOKEN_RE.fullmatch(token):
        raise LedgitError(f"board --token (or ${TOKEN_ENV}): give 8 to 512 visible ASCII "
                          f"characters, no space", USAGE)
    for library in ("jinja2", "cmarkgfm", "orjson"):  # the page's libraries: say what is missing
        if find_spec(library) is None:
            raise LedgitError(f"board needs {library}: {install_hint('board')}", USAGE)
    board = find_board()
    if html_path:
        write_html(board, html_path, archived=archived)
    if serve:
        return serve_board(board, host or "127.0.0.1", port, archived=archived, token=token)
    return OK


def write_html(board: Board, path: str, *, archived: bool) -> None:
    """Write the page of ``board`` to ``path`` atomically (a temp file in the same directory,
    then a rename: a reader never sees half a page), or to stdout for ``-``."""
    # optional: the [board] extra (jinja2, cmarkgfm, orjson); `ledgit --help` runs without it
    from ledgit.boardpage import render, source

    with source.cyclic_gc_paused():
        with Index.open(board) as index:
            model = source.PageSource(board, archived=archived).model(index, details=True)
        page = render.render_page(model, live=False)
    if path == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(page)
        sys.stdout.buffer.flush()
        return
    write_output(path, page, what="board --html")  # a device or FIFO: in place (issue 26)
    click.echo(f"wrote {path}: {model['meta']['total']:,} task(s)", err=True)


def serve_board(board: Board, host: str, port: int, *, archived: bool,
                token: str | None = None) -> int:
    """Serve ``board`` until Ctrl-C or SIGTERM; prints the URL on stdout, and the token on
    the next line when it made one (beyond loopback without ``token``: issue 36; never in
    the URL, which lands in logs and histories). Returns 0."""
    # optional: the [board] extra (jinja2, cmarkgfm, orjson), as above
    from ledgit.boardpage.server import BoardService, is_loopback, make_server

    made = token is None and not is_loopback(host)
    if made:
        token = secrets.token_urlsafe(32)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # a stop while starting up is a stop too: exit 0
    service = BoardService(board, archived=archived)
    server = None
    try:
        service.build_first()
        if not is_loopback(host):
            click.echo(f"ledgit: warning: serving on {host}: anyone who can reach this "
                       f"address and has the token can read the whole board, and plain "
                       f"HTTP shows the token to the network on the way", err=True)
        try:
            server = make_server(service, host, port, token)
        except OSError as exc:
            raise LedgitError(f"board --serve: cannot listen on {host}:{port}: "
                              f"{exc.strerror or exc}", USAGE) from None
        bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        click.echo(f"serving {board.root} at http://{shown}:{bound_port}/ (read-only; "
                   f"Ctrl-C stops)")
        if made:
            click.echo(f"token: {token} (the password the browser asks for, any user name; "
                       f"or send Authorization: Bearer TOKEN; not shown again)")
        sys.stdout.flush()
        service.start_watching()
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        service.stop()
        if server is not None:
            server.server_close()
    return OK
