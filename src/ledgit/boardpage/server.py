"""``ledgit board --serve``: the page over HTTP, read-only, updated live by server-sent events.

The standard library's :class:`http.server.ThreadingHTTPServer`. Routes (GET and HEAD only;
any other method is 405):

=====================  =====================================================================
``/``                  the page (the same template as ``--html``, without the task details)
``/data.json``         the page model (docs/board.md)
``/task/<ID>.json``    one task's detail (body as HTML, items, timeline)
``/events``            ``text/event-stream``: an ``event: changed`` whenever the board changed
=====================  =====================================================================

One thread watches the board through :class:`ledgit.storage.live.LiveBoard` (the in-process watcher
the MCP face uses too: inotify on the tasks and history directories, no polling of every
task file); on a change it rebuilds the model (only what changed), then wakes every event
stream. Request threads only read the last built bytes.

Who may read it (issue 36): served with a token -- always beyond loopback -- every request
without it is 401, whatever its route, method or client address; the token comes as the
password of HTTP Basic authentication (RFC 7617: the browser asks for it once, then sends it
with every request of the page, its fetches and its event stream) or as
``Authorization: Bearer TOKEN``, never in a URL. On a loopback address, requests whose
``Host`` is not a loopback name are refused (403: DNS rebinding). Every answer carries the
page's Content-Security-Policy (:func:`ledgit.boardpage.render.assets`, plus
``frame-ancestors 'none'``, which only a header can say), ``X-Content-Type-Options:
nosniff`` and no ``Access-Control-Allow-Origin``: another site's page cannot read it.
"""

from __future__ import annotations

import base64
import binascii
import gc
import hmac
import ipaddress
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ledgit.boardpage.render import assets, page_json, render_page
from ledgit.boardpage.source import PageSource, cyclic_gc_paused
from ledgit.core.errors import LedgitError
from ledgit.storage.board import Board
from ledgit.storage.index import Index
from ledgit.storage.live import LiveBoard

KEEPALIVE = 15.0  # seconds between two comment lines on an idle event stream
SETTLE = 0.05  # a rebuild waits for this many quiet seconds after a change (the same write)
SETTLE_MAX = 0.3  # ... but no longer than this
LOOPBACK_NAMES = ("localhost",)
REALM = 'Basic realm="ledgit board", charset="UTF-8"'  # RFC 7617


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BoardService:
    """The served board: the last built page, model and serial number, and the watcher."""

    def __init__(self, board: Board, *, archived: bool = False) -> None:
        self.board = board
        self.source = PageSource(board, archived=archived)
        self.serial = 0
        self.data = b""
        self._model: dict[str, Any] = {}
        self._page: tuple[int, bytes] = (-1, b"")
        self.changed = threading.Condition()
        self.stopping = False
        self._thread: threading.Thread | None = None
        self._source_lock = threading.Lock()

    def build_first(self) -> None:
        """The first build, in the calling thread before any other starts (so the extras
        are computed in forked workers). Raises LedgitError as the index does."""
        with cyclic_gc_paused(), Index.open(self.board) as index:
            self._publish(self.source.model(index, details=False, fork=True))

    def _publish(self, model: dict[str, Any]) -> None:
        with self.changed:
            serial = self.serial + 1
            model["meta"]["serial"] = serial
            data = page_json(model)
            self.serial, self.data, self._model = serial, data, model
            self.changed.notify_all()
        # What the build made lives until a later build replaces it, and holds no cycles
        # (refcounting frees it then): moved out of the cyclic collector's way, so that its
        # collections do not walk a 10,000-task model again and again (~2/3 of a rebuild's
        # time at 10,000 tasks, bench/board_bench.py). One collection first, over what is
        # not frozen yet (this build), so that no cyclic garbage is frozen with it.
        gc.collect()
        gc.freeze()

    def page(self) -> bytes:
        """The page of the last model (rendered on the first request after a change)."""
        with self.changed:
            serial, model = self.serial, self._model
            if self._page[0] == serial:
                return self._page[1]
        page = render_page(model, live=True)
        with self.changed:
            self._page = (serial, page)
        return page

    def start_watching(self) -> None:
        """Start the watcher thread (daemon): rebuild and notify on every change."""
        self._thread = threading.Thread(target=self._watch, name="ledgit-board-watch",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        live = LiveBoard(self.board)
        try:
            live.index()
            seen = live.generation
            while not self.stopping:
                if not live.wait_changed(1.0, since=seen):
                    continue
                # A write appends the history, then renames the task file: one rebuild for
                # both, usually; a change during the rebuild wakes the next wait at once.
                seen = self._settle(live)
                try:
                    with self._source_lock:
                        model = self.source.model(live.index(), details=False, fork=False)
                except LedgitError as exc:  # busy index: the next change (or tick) retries
                    print(f"ledgit: warning: board not refreshed: {exc}", file=sys.stderr)
                    continue
                self._publish(model)
        finally:
            live.close()

    @staticmethod
    def _settle(live: Any) -> int:
        """Wait until ``live`` saw no change for :data:`SETTLE` s (at most
        :data:`SETTLE_MAX` s); its generation then."""
        deadline = time.monotonic() + SETTLE_MAX
        seen = live.generation
        while time.monotonic() < deadline and live.wait_changed(SETTLE, since=seen):
            seen = live.generation
        return int(live.generation)

    def detail(self, task_id: str) -> bytes | None:
        """One task's detail as JSON bytes, None when the last model has no such task."""
        with self._source_lock:
            detail = self.source.detail(task_id)
        return None if detail is None else page_json(detail)

    def wait(self, serial: int, timeout: float) -> int:
        """Block until the serial differs from ``serial`` or ``timeout`` s pass; the serial."""
        with self.changed:
            self.changed.wait_for(lambda: self.serial != serial or self.stopping, timeout)
            return self.serial

    def stop(self) -> None:
        """Wake every event stream and let the watcher end."""
        with self.changed:
            self.stopping = True
            self.changed.notify_all()


class Handler(BaseHTTPRequestHandler):
    """GET/HEAD for the routes of the module docstring; 405 for anything else."""

    service: BoardService
    check_host: bool
    token: bytes | None  # every request must show it (None: served on loopback without one)
    policy: str  # the Content-Security-Policy header
    server_version = "ledgit-board"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Quiet: a page polls nothing, but a log line per request is noise on a terminal."""

    def _host_ok(self) -> bool:
        if not self.check_host:
            return True
        host = urlsplit("//" + (self.headers.get("Host") or "")).hostname or ""
        return is_loopback(host)

    def _authorized(self) -> bool:
        """The request shows the token: as the password of Basic authentication (any user
        name) or as a bearer token, compared in constant time."""
        if self.token is None:
            return True
        scheme, _, value = (self.headers.get("Authorization") or "").strip().partition(" ")
        offered = value.strip().encode("ascii", "replace")
        if scheme.lower() == "basic":
            try:
                offered = base64.b64decode(offered, validate=True).partition(b":")[2]
            except (binascii.Error, ValueError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(offered, self.token)

    def _headers(self, status: HTTPStatus, ctype: str,
                 extra: dict[str, str] | None = None) -> None:
        """The status line and the headers every answer carries (module docstring)."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", self.policy)
        for k, v in (extra or {}).items():
            self.send_header(k, v)

    def _send(self, status: HTTPStatus, body: bytes, ctype: str, head: bool = False,
              extra: dict[str, str] | None = None) -> None:
        self._headers(status, ctype, extra)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str, head: bool = False,
               extra: dict[str, str] | None = None) -> None:
        self._send(status, (message + "\n").encode(), "text/plain; charset=utf-8", head, extra)

    def _admitted(self, head: bool) -> bool:
        """Answer 401 or 403 and return False when the request may not read the board."""
        if not self._authorized():
            self._error(HTTPStatus.UNAUTHORIZED, "this board needs its token: give it as the "
                        "password when the browser asks (any user name), or send "
                        "Authorization: Bearer TOKEN", head, {"WWW-Authenticate": REALM})
            return False
        if not self._host_ok():
            self._error(HTTPStatus.FORBIDDEN, "this board is served for loopback names only",
                        head)
            return False
        return True

    def _route(self, head: bool) -> None:
        if not self._admitted(head):
            return
        url = urlsplit(self.path)
        path = url.path
        service = self.service
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, service.page(), "text/html; charset=utf-8", head)
        elif path == "/data.json":
            self._send(HTTPStatus.OK, service.data, "application/json", head)
        elif path.startswith("/task/") and path.endswith(".json"):
            body = service.detail(path[len("/task/"):-len(".json")])
            if body is None:
                self._error(HTTPStatus.NOT_FOUND, "no such task on this board", head)
            else:
                self._send(HTTPStatus.OK, body, "application/json", head)
        elif path == "/events":
            if head:
                self._send(HTTPStatus.OK, b"", "text/event-stream", head=True)
            else:
                self._events(parse_qs(url.query).get("since", [""])[0])
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found", head)

    def _events(self, since: str) -> None:
        self._headers(HTTPStatus.OK, "text/event-stream")
        self.end_headers()
        self.close_connection = True
        service = self.service
        seen = int(since) if since.isdigit() else service.serial
        try:
            self.wfile.write(b"retry: 1000\n\n")
            self.wfile.flush()
            while not service.stopping:
                serial = service.wait(seen, KEEPALIVE)
                if serial != seen:
                    seen = serial
                    self.wfile.write(f"event: changed\ndata: {serial}\n\n".encode())
                else:
                    self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            return

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """Answer a GET."""
        self._route(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        """Answer a HEAD (a GET without the body)."""
        self._route(head=True)

    def _refuse(self) -> None:
        if self._admitted(head=False):
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "read-only: only GET and HEAD",
                        extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse


def make_server(service: BoardService, host: str, port: int,
                token: str | None = None) -> ThreadingHTTPServer:
    """A threading HTTP server for ``service`` bound to (host, port); port 0 picks a free
    one. ``token``: every request must show it (module docstring); the caller makes one for
    an address beyond loopback. Raises OSError as bind does."""
    handler = type("BoardHandler", (Handler,), {
        "service": service, "check_host": is_loopback(host),
        "token": None if token is None else token.encode("ascii"),
        "policy": f"{assets().policy}; frame-ancestors 'none'"})
    server = type("BoardServer", (ThreadingHTTPServer,), {
        "daemon_threads": True,
        "address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
    made: ThreadingHTTPServer = server((host, port), handler)
    return made
