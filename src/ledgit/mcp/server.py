"""``ledgit mcp``: the Model Context Protocol face (DESIGN §11), on the official SDK's
``MCPServer`` (``pip install 'ledgit[mcp]'``; no other command imports this module).

Ten tools cover the agent loop (docs/mcp.md): ``list``, ``search``, ``get``, ``handoff``,
``create``, ``claim`` (claim / heartbeat / release), ``update``, ``complete``, ``item`` (add /
accept) and ``writeback``. Each is thin: it finds the board, calls the same operations and the
same board write path (per-task locks, write-ahead history) as the CLI, and returns a typed
result. Reads answer from a :class:`ledgit.storage.live.LiveBoard` per board: the index stays open and
the tasks directory is watched in-process. Failures are tool errors (``isError``) whose
structured content carries the CLI's exit code and meaning (``stale_revision`` with the
current revision, ``claim_held`` with the holder, ``not_found`` with candidates).

Every tool takes an optional ``root``: the board to act on (a board root or a directory
inside one; relative paths are taken from the server's start directory), else the board of
the start directory. Nothing prints on stdout here: with stdio it is the protocol's.
"""

import contextlib
import functools
import hmac
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
import anyio.to_thread
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field
from pydantic_core import to_json
from typing_extensions import TypedDict

from ledgit import __version__
from ledgit.core.errors import CLAIM, NOT_FOUND, STALE, USAGE, LedgitError
from ledgit.core.readout import build_readout, handoff_of, now_timestamp
from ledgit.core.schema import OUTCOME_KINDS, STATUSES
from ledgit.operations import claims, projects, stateitems, transitions
from ledgit.operations.arguments import resolve_ids, resolve_or_keep, split_list, status_of
from ledgit.operations.rows import ROW_KEYS, filters_of, is_negative, row_view
from ledgit.operations.writing import write_task
from ledgit.storage.actor import actor_name
from ledgit.storage.board import Board, find_board
from ledgit.storage.index import Index
from ledgit.storage.indexsearch import SEARCH_COLUMNS
from ledgit.storage.live import LiveBoard
from ledgit.storage.locate import CONFIG_NAME, LEDGIT_DIR, find_root, is_board_dir, upward
from ledgit.storage.writepath import create_task

if TYPE_CHECKING:
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

MAX_LIVE_BOARDS = 8  # boards held open at once; more are read without a held index
MAX_TEXT = 1_000_000  # characters of any one string argument (a task file is <= 1 MiB)
MAX_LIMIT = 1_000  # rows a list or search returns at most
# A read that took longer (seconds) sends the next read of its board to a worker thread, so
# that the event loop is not held that long again: its refresh found work the watcher did
# not report (this server's index token had been dropped by another refresh: a stat scan of
# every file, 20-30 ms at 10,000 tasks, more on a loaded machine), or a big search.
SLOW_READ = 0.020
TOKEN_ENV = "LEDGIT_MCP_TOKEN"  # the bearer token for --http on another host

ROW_FIELDS = ROW_KEYS + ("freshness",)
KINDS = {USAGE: "invalid_input", STALE: "stale_revision", NOT_FOUND: "not_found",
         CLAIM: "claim_held", 5: "busy", 1: "check_failed"}


# --------------------------------------------------------------------------- shapes


# Tool results. No docstrings: a TypedDict's docstring lands in every tool's listing
# (docs/mcp.md documents the shapes).
class Rows(TypedDict):
    # each row has the keys asked for in ``fields`` (search adds ``matches``);
    # ``errors``: malformed task files skipped
    tasks: list[dict[str, Any]]
    count: int
    errors: list[dict[str, str]]


class Created(TypedDict):
    id: str
    revision: str
    path: str


class Written(TypedDict):
    # ``written`` false: nothing changed; ``meta``: op details (``item``, ``took_over_from``)
    id: str
    op: str
    status: str
    revision: str
    actor: str
    written: bool
    meta: dict[str, Any]


Readout = dict[str, Any]
# Explained once, in the server's instructions, not in every tool's listing.
Root = str | None
Task = str
Expect = str | None
By = str | None
StrList = list[str] | None
INSTRUCTIONS = (
    "ledgit: task state kept in the Git repository. Loop: list/search -> get -> claim -> "
    "update/item/writeback -> complete. Common arguments: task = an id or a unique prefix; "
    "root = the board directory or a registered project alias (default: the server's); "
    "by = the actor (default "
    "$LEDGIT_ACTOR, else git user.name); expect = a revision (>= 12 hex): the write is "
    "refused (stale_revision, with the current one) when the task has moved on. Failures "
    "are tool errors with structuredContent.error = {code, kind, message, ...} (exit codes "
    "and meanings of the CLI).")


def known_values(name: str, given: list[str] | None, allowed: tuple[str, ...]) -> None:
    """Refuse (LedgitError, exit 2) a filter value outside ``allowed``, as the CLI's
    ``click.Choice`` does: an unknown status would otherwise match nothing and read as an
    empty board."""
    for value in given or ():
        if value not in allowed:
            raise LedgitError(f"{name}: unknown value {value!r} (one of: "
                              f"{', '.join(allowed)})", USAGE)


# --------------------------------------------------------------------------- boards


class Boards:
    """The boards this server acts on: the start directory's, and any ``root`` a call names
    (at most :data:`MAX_LIVE_BOARDS` held open)."""

    def __init__(self, start: Path) -> None:
        self.start = start
        self._lock = threading.Lock()
        self._live: dict[str, LiveBoard] = {}
        self._boards: dict[str, tuple[tuple[int, ...], Board]] = {}
        self._seen: dict[str, int] = {}  # root -> LiveBoard.generation at the last read
        self._slow: set[str] = set()  # roots whose last read took over SLOW_READ

    def board(self, root: str | None) -> Board:
        """The board ``root`` names (None: the start directory's, ``LEDGIT_ROOT`` honoured
        as in the CLI). Raises LedgitError exit 4 when there is none, 2 for a bad path."""
        if root is None:
            found, _pinned = find_root(str(self.start))
            return self._cached(found) if found is not None else find_board(self.start)
        if not isinstance(root, str) or not root.strip() or "\0" in root \
                or len(root) > 4096:
            raise LedgitError("root: give a directory path", USAGE)
        other = self._project(root)
        if other is not None:
            return other
        path = os.path.abspath(os.path.join(self.start, os.path.expanduser(root)))
        if not os.path.isdir(path):
            raise LedgitError(f"root: {path}: not a directory", NOT_FOUND)
        for directory in upward(path):
            if is_board_dir(os.path.join(directory, LEDGIT_DIR)):
                return self._cached(directory)
        raise LedgitError(f"root: no ledgit board in {path} or any parent", NOT_FOUND)

    def by_stats(self, root: str | None) -> bool:
        """True when finding ``root``'s board takes only stats: None or a path, not a name
        that could be a registered project (opening one may read Git: a snapshot at a ref).
        """
        return root is None or not isinstance(root, str) or not _alias_like(root)

    def _project(self, alias: str) -> Board | None:
        """The board registered as ``alias`` by the server's own board (ledgit.operations.projects),
        or None when ``alias`` is no registered alias (then it is taken as a path)."""
        if not _alias_like(alias):
            return None

        found, _pinned = find_root(str(self.start))
        if found is None:
            return None
        here = self._cached(found)
        registered = projects.registrations(here).get(alias)
        return None if registered is None else projects.open_registration(here, registered)

    def _cached(self, root: str) -> Board:
        """One Board per root, made again when its config.yaml changes (a Board reads its
        config once)."""
        try:
            st = os.stat(os.path.join(root, LEDGIT_DIR, CONFIG_NAME))
            stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = ()
        with self._lock:
            cached = self._boards.get(root)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            board = Board(root)
            self._boards[root] = (stamp, board)
            return board

    def quiet(self, board: Board) -> bool:
        """True when a read of ``board`` is one SQLite query: it is held open, watched, its
        watcher has reported no change since the previous call of this (so the index's
        refresh re-checks no file), and its last read was quick (:meth:`took`)."""
        held = self.live(board)
        if held is None or not held.watching:
            return False
        generation = held.generation
        with self._lock:
            quiet = self._seen.get(board.root_str) == generation
            self._seen[board.root_str] = generation
            return quiet and board.root_str not in self._slow

    def took(self, board: Board, seconds: float) -> None:
        """Record how long a read of ``board`` took (wall time of the work, no thread hop):
        over :data:`SLOW_READ`, the next read is not :meth:`quiet`."""
        with self._lock:
            if seconds > SLOW_READ:
                self._slow.add(board.root_str)
            else:
                self._slow.discard(board.root_str)

    def live(self, board: Board) -> LiveBoard | None:
        """The held-open board, opened on first use; None once the limit is reached."""
        key = board.root_str
        with self._lock:
            held = self._live.get(key)
            if held is None and len(self._live) < MAX_LIVE_BOARDS:
                held = self._live[key] = LiveBoard(board)
            return held

    @contextlib.contextmanager
    def index(self, board: Board) -> Iterator[Any]:
        """An up-to-date index of ``board``: the held one, else one opened for this call."""
        held = self.live(board)
        if held is not None:
            yield held.index()
            return
        with Index.open(board) as index:
            yield index

    def close(self) -> None:
        with self._lock:
            for held in self._live.values():
                held.close()
            self._live.clear()


def _alias_like(text: str) -> bool:
    """``text`` has the form of a project alias (``ledgit.operations.projects.ALIAS_RE``)."""

    return projects.ALIAS_RE.fullmatch(text) is not None


# --------------------------------------------------------------------------- errors


def failure(exc: LedgitError, board: Board | None, task: str | None) -> CallToolResult:
    """A tool error carrying the CLI's meaning: ``{"error": {code, kind, message, ...}}``
    with ``current_revision`` (stale), ``holder``/``claim`` (claim held or lost),
    ``candidates`` (not found / ambiguous)."""
    error: dict[str, Any] = {"code": exc.code, "kind": KINDS.get(exc.code, "error"),
                             "message": str(exc)}
    if board is not None and task:
        with contextlib.suppress(LedgitError, OSError):
            if exc.code == NOT_FOUND:
                if not _resolves(board, task):  # else: an item or dependency was not found
                    error["candidates"] = candidates(board, task)
            elif exc.code in (STALE, CLAIM):
                record = board.read(board.resolve_id(task))
                error["current_revision"] = record.revision
                claim = record.fields.get("claim")
                if exc.code == CLAIM:
                    error["holder"] = claim.get("by") if claim else None
                    error["claim"] = claim
    return CallToolResult(content=[TextContent(type="text", text=_json(error))],
                          structured_content={"error": error}, is_error=True)


def _resolves(board: Board, text: str) -> bool:
    try:
        board.resolve_id(text)
    except LedgitError:
        return False
    return True


def candidates(board: Board, text: str, limit: int = 10) -> list[str]:
    """Ids that ``text`` could mean (the prefix rule of :meth:`Board.resolve_id`), at most
    ``limit``."""
    want = text.strip().lower()
    if not want or len(want) > 64:
        return []
    found = [tid for tid in board.list_ids()
             if tid.lower().startswith(want) or tid.lower().partition("-")[2].startswith(want)]
    return found[:limit]


def _check_text(values: dict[str, Any]) -> None:
    """Refuse huge strings before anything is read or written (exit 2)."""
    for name, value in values.items():
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and len(text) > MAX_TEXT:
                raise LedgitError(f"{name}: {len(text):,} characters (at most {MAX_TEXT:,})",
                                  USAGE)


def _ok(value: Any) -> CallToolResult:
    # The text block repeats structuredContent for clients that read only text (the MCP
    # spec's SHOULD for structured results); compact separators: ~10% fewer bytes a row.
    return CallToolResult(content=[TextContent(type="text", text=_json(value))],
                          structured_content=value)


def _json(value: Any) -> str:
    # pydantic-core's serializer (the SDK's own, already loaded): compact, UTF-8 as is --
    # the text of json.dumps(ensure_ascii=False, separators=(",", ":")) for these values,
    # ~3x faster (20 full rows, ~10 KB: 0.10 -> 0.035 ms).
    return to_json(value).decode()


# --------------------------------------------------------------------------- the server


def build_server(start: Path | None = None) -> tuple[MCPServer, Boards]:
    """The MCP server and its boards (close them when done). ``start``: the directory
    whose board tools act on by default (default: the working directory)."""
    boards = Boards((start or Path.cwd()).resolve())
    tools: list[Tool] = []
    read = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                            open_world_hint=False)

    def tool(annotations: ToolAnnotations, name: str | None = None
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool with a compact listing (:func:`compact_schema`)."""
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            made = Tool.from_function(fn, name=name, annotations=annotations,
                                      description=" ".join((fn.__doc__ or "").split()))
            # An argument the tool does not take is refused, naming it, rather than dropped:
            # an agent's `labels` for `labels_add`, or a typo, must not vanish from a write
            # that then reports success (docs/mcp.md: invalid_input).
            made.fn_metadata.arg_model = strict_arguments(made.fn_metadata.arg_model)
            made.parameters = {**compact_schema(made.parameters), "additionalProperties": False}
            if made.fn_metadata.output_schema is not None:
                made.fn_metadata.output_schema = compact_schema(made.fn_metadata.output_schema)
                # The tools build their results as the typed shapes above, so the SDK need
                # not validate each one against the model again (FuncMetadata: a schema with
                # no model is advertised, not re-validated); clients still check results
                # against the advertised schema (the SDK's client does, in the tests).
                made.fn_metadata.output_model = None
            tools.append(made)
            return fn
        return register

    def target(task: str | None, root: str | None, values: dict[str, Any]
               ) -> Board | CallToolResult:
        """The board a call acts on, or the tool error for bad input or no board."""
        try:
            _check_text({**values, "task": task, "root": root})
            return boards.board(root)
        except LedgitError as exc:
            return failure(exc, None, task)

    def answer(board: Board, task: str | None, body: Callable[[Board], Any]
               ) -> CallToolResult:
        try:
            return _ok(body(board))
        except LedgitError as exc:
            return failure(exc, board, task)

    def call(task: str | None, root: str | None, values: dict[str, Any],
             body: Callable[[Board], Any]) -> CallToolResult:
        board = target(task, root, values)
        return board if isinstance(board, CallToolResult) else answer(board, task, body)

    async def read_call(task: str | None, root: str | None, values: dict[str, Any],
                        body: Callable[[Board], Any]) -> CallToolResult:
        """A read tool's answer: on the event loop when it is one SQLite query
        (:meth:`Boards.quiet`: no thread hop), else in a worker thread as the SDK runs a
        sync tool (a refresh that re-checks changed files, a board without a watcher: the
        stat scan of every file, a ``root`` naming a project, a board whose last read was
        slow), so that slow work never blocks other requests."""
        if not boards.by_stats(root):
            return await anyio.to_thread.run_sync(functools.partial(call, task, root, values,
                                                                    body))
        board = target(task, root, values)
        if isinstance(board, CallToolResult):
            return board

        def timed() -> CallToolResult:
            started = time.perf_counter()
            try:
                return answer(board, task, body)
            finally:
                boards.took(board, time.perf_counter() - started)

        if boards.quiet(board):
            return timed()
        return await anyio.to_thread.run_sync(timed)

    def mutation(board: Board, task: str, by: str | None, expect: str | None,
                 op: Callable[..., Any]) -> Written:
        written, record, result, actor = write_task(task, by, expect, op, board)
        return Written(id=record.id, op=result.op, status=record.fields["status"],
                       revision=record.revision, actor=actor, meta=result.meta or {},
                       written=written)

    def rows_of(board: Board, rows: list[dict[str, Any]], fields: list[str] | None,
                errors: list[tuple[str, str]], extra: tuple[str, ...] = ()) -> Rows:
        keep = _fields(fields)
        ttl = int(board.config.claim_ttl)
        now = time.time()
        views = []
        for row in rows:
            view = row_view(row, now, ttl)  # ROW_FIELDS, in order
            out = view if keep is ROW_FIELDS else {k: view[k] for k in keep}
            for k in extra:
                out[k] = row.get(k)
            views.append(out)
        return Rows(tasks=views, count=len(views),
                    errors=[{"path": p, "message": m} for p, m in errors])

    @tool(read, "list")
    async def list_tasks(status: StrList = None, owner: str | None = None,
                   worker: str | None = None, label: StrList = None,
                   outcome: str | None = None, ready: bool = False,
                   include_archived: bool = False,
                   sort: Literal["desc", "asc", "priority", "created"] = "desc",
                   limit: Annotated[int, Field(ge=0, le=MAX_LIMIT)] = 20,
                   fields: StrList = None, root: Root = None
                   ) -> Annotated[CallToolResult, Rows]:
        """Tasks matching every filter (archived hidden unless asked). fields: row keys to
        return (default all: id title status priority owner worker claim labels depends_on
        outcome next_action gate created last_modified path revision freshness)."""
        def body(board: Board) -> Rows:
            known_values("status", status, STATUSES)
            known_values("outcome", [outcome] if outcome else None, OUTCOME_KINDS)
            filters = filters_of(tuple(status or ()), owner, worker,
                                 tuple(label or ()), include_archived, outcome)
            with boards.index(board) as index:
                found = index.rows(ready=ready, sort=sort, limit=limit, **filters)
                errors = index.errors()
            if ready:
                found = [r for r in found if not is_negative(r)]
            return rows_of(board, found, fields, errors)
        return await read_call(None, root, {"owner": owner, "worker": worker, "label": label,
                                 "status": status, "fields": fields}, body)

    @tool(read)
    async def search(text: str, search_fields: StrList = None, status: StrList = None,
               include_archived: bool = False,
               limit: Annotated[int, Field(ge=0, le=MAX_LIMIT)] = 20,
               fields: StrList = None, root: Root = None
               ) -> Annotated[CallToolResult, Rows]:
        """Exact case-insensitive substring search, newest change first; rows add
        `matches`. search_fields: some of title body response items next_action gate
        waiting_on outcome (default title body response items)."""
        def body(board: Board) -> Rows:
            for name in search_fields or ():
                if name not in SEARCH_COLUMNS:
                    raise LedgitError(f"search_fields: unknown field {name!r}", USAGE)
            known_values("status", status, STATUSES)
            filters = filters_of(tuple(status or ()), None, None, (), include_archived,
                                 None)
            with boards.index(board) as index:
                found = index.search(text, fields=search_fields or None, limit=limit,
                                     **filters)
                errors = index.errors()
            return rows_of(board, found, fields, errors, ("matches",))
        return await read_call(None, root, {"text": text, "search_fields": search_fields,
                                 "fields": fields}, body)

    @tool(read)
    async def get(task: Task, body: bool = True, root: Root = None
            ) -> Annotated[CallToolResult, Readout]:
        """The full readout of one task: fields, revision, claim freshness, goal,
        acceptance, locked/candidate items, artifacts, and `unknown` (what is missing,
        contradictory or stale, with the reason)."""
        def run(board: Board) -> Readout:
            fields, text, path, revision = _one(boards, board, task)
            readout = build_readout(fields, text, path=path, revision=revision,
                                    now=now_timestamp(), ttl=int(board.config.claim_ttl))
            if not body:
                readout.pop("body", None)
            return readout
        return await read_call(task, root, {}, run)

    @tool(read)
    async def handoff(task: Task, root: Root = None) -> Annotated[CallToolResult, Readout]:
        """Compact handoff packet: goal, acceptance, status, next action, gate, outcome and
        locked items only."""
        def run(board: Board) -> Readout:
            fields, text, _path, revision = _one(boards, board, task)
            return handoff_of(fields, text, revision)
        return await read_call(task, root, {}, run)

    @tool(write)
    def create(title: str, goal: str | None = None, accept: StrList = None,
               body: str | None = None, priority: Annotated[int | None, Field(ge=0, le=4)]
               = None, depends_on: StrList = None, labels: StrList = None,
               owner: str | None = None, worker: str | None = None, note: str | None = None,
               by: By = None, root: Root = None) -> Annotated[CallToolResult, Created]:
        """Create an open task; accept: acceptance criteria, one per line."""
        def run(board: Board) -> Created:
            fields, text = transitions.create_fields(
                title=title, goal=goal, accept=accept or (), body=body, priority=priority,
                depends=resolve_ids(board, depends_on or ()),
                labels=split_list(labels or ()), owner=owner, worker=worker)
            record = create_task(board, fields, text, actor_name(by, board.root_str), note=note)
            return Created(id=record.id, revision=record.revision,
                           path=board.rel(board.task_path(record.id)))
        return call(None, root, {"title": title, "goal": goal, "accept": accept,
                                 "body": body, "labels": labels, "owner": owner,
                                 "worker": worker, "note": note, "by": by,
                                 "depends_on": depends_on}, run)

    @tool(write)
    def claim(task: Task, action: Literal["claim", "heartbeat", "release"] = "claim",
              note: str | None = None, take_over: bool = False, force: bool = False,
              by: By = None, expect: Expect = None, root: Root = None
              ) -> Annotated[CallToolResult, Written]:
        """Claim a task (in_progress, a lease), renew it (heartbeat) or give it up
        (release). take_over: a stale claim; force: dependencies not done."""
        def run(board: Board) -> Written:
            if action == "heartbeat":
                return mutation(board, task, by, expect,
                                lambda r, a, now, ttl: claims.heartbeat(r, by=a, now=now, ttl=ttl))
            if action == "release":
                return mutation(board, task, by, expect,
                                lambda r, a, now, ttl: claims.release(r, by=a, now=now, ttl=ttl,
                                                                   note=note))

            def op(r: Any, a: str, now: str, ttl: int) -> Any:
                deps = {d: status_of(board, d) for d in r.fields.get("depends_on", [])}
                return claims.claim(r, by=a, now=now, ttl=ttl, note=note, take_over=take_over,
                                 force=force, dependency_status=deps)
            return mutation(board, task, by, expect, op)
        return call(task, root, {"note": note, "by": by, "expect": expect}, run)

    @tool(write)
    def update(task: Task, expect: Expect = None, title: str | None = None,
               priority: Annotated[int | None, Field(ge=0, le=4)] = None,
               response: str | None = None, next_action: str | None = None,
               gate: str | None = None, owner: str | None = None, worker: str | None = None,
               labels_add: StrList = None, labels_remove: StrList = None,
               depends_add: StrList = None, depends_remove: StrList = None,
               commits: StrList = None, set: dict[str, str] | None = None,  # noqa: A002
               note: str | None = None, by: By = None, root: Root = None
               ) -> Annotated[CallToolResult, Written]:
        """Edit fields (lifecycle changes: claim/complete). set: other fields, as the CLI's
        --set FIELD=VALUE."""
        def run(board: Board) -> Written:
            sets = list((set or {}).items())
            if not any(v is not None for v in (title, priority, response, next_action, gate,
                                                owner, worker)) \
                    and not (labels_add or labels_remove or depends_add or depends_remove
                             or commits or sets):
                raise LedgitError("update: nothing to change", USAGE)
            add = resolve_ids(board, depends_add or ())
            remove = [resolve_or_keep(board, t) for t in depends_remove or ()]
            return mutation(board, task, by, expect, lambda r, a, now, ttl: transitions.update(
                r, title=title, priority=priority, response=response, sets=sets,
                add_commits=split_list(commits or ()), depends_add=add,
                depends_remove=remove, labels_add=split_list(labels_add or ()),
                labels_remove=split_list(labels_remove or ()), next_action=next_action,
                gate=gate, owner=owner, worker=worker, note=note))
        return call(task, root, {"title": title, "response": response, "set": list(
            (set or {}).values()), "next_action": next_action, "gate": gate, "note": note,
            "labels_add": labels_add, "commits": commits, "by": by, "expect": expect}, run)

    @tool(write)
    def complete(task: Task, response: str, outcome: str | None = None,
                 reason: str | None = None, by: By = None, expect: Expect = None,
                 root: Root = None) -> Annotated[CallToolResult, Written]:
        """Mark done with an account of the work (response); outcome: optional terminal
        kind (e.g. no_change) with reason."""
        def run(board: Board) -> Written:
            return mutation(board, task, by, expect, lambda r, a, now, ttl: transitions.complete(
                r, by=a, response=response, now=now, ttl=ttl, outcome=outcome, reason=reason))
        return call(task, root, {"response": response, "reason": reason, "by": by}, run)

    @tool(write)
    def item(task: Task, action: Literal["add", "accept"] = "add",
             kind: Literal["fact", "decision", "question", "blocker", "rejected", "artifact",
                           "next_step"] = "fact",
             text: str | None = None, why: str | None = None, evidence: str | None = None,
             lock: bool = False, items: StrList = None, trusted: bool = False,
             by: By = None, expect: Expect = None, root: Root = None
             ) -> Annotated[CallToolResult, Written]:
        """add: a state item (candidate unless lock; meta.item is its id). accept: lock
        candidate items (the owner, or trusted)."""
        def run(board: Board) -> Written:
            if action == "accept":
                if not items:
                    raise LedgitError("item accept: give items", USAGE)
                return mutation(board, task, by, expect, lambda r, a, now, ttl: stateitems.accept(
                    r, items=split_list(items), by=a, now=now, trusted=trusted))
            if not text:
                raise LedgitError("item add: give text", USAGE)
            return mutation(board, task, by, expect, lambda r, a, now, ttl: stateitems.item_add(
                r, kind=kind, text=text, by=a, now=now, why=why, evidence=evidence,
                lock=lock, trusted=trusted))
        return call(task, root, {"text": text, "why": why, "evidence": evidence,
                                 "items": items, "by": by, "expect": expect}, run)

    @tool(write)
    def writeback(task: Task, evidence: str, set: dict[str, str] | None = None,  # noqa: A002
                  artifacts: StrList = None, gate: str | None = None, trusted: bool = False,
                  by: By = None, expect: Expect = None, root: Root = None
                  ) -> Annotated[CallToolResult, Written]:
        """A worker's report: changed fields (set), artifacts, verification evidence,
        remaining gate. Lands as candidate items until the owner accepts."""
        def run(board: Board) -> Written:
            return mutation(board, task, by, expect, lambda r, a, now, ttl: stateitems.writeback(
                r, by=a, now=now, evidence=evidence, sets=list((set or {}).items()),
                artifacts=list(artifacts or ()), gate=gate, trusted=trusted))
        return call(task, root, {"evidence": evidence, "artifacts": artifacts, "gate": gate,
                                 "set": list((set or {}).values()), "by": by}, run)

    server = MCPServer("ledgit", version=__version__, tools=tools, log_level="WARNING",
                       instructions=INSTRUCTIONS)
    return server, boards


def strict_arguments(model: "type[ArgModelBase]") -> "type[ArgModelBase]":
    """``model`` (the SDK's argument model of a tool) refusing unknown arguments: pydantic's
    ``extra="forbid"``, so a call naming one fails validation with its name."""
    strict: type[ArgModelBase] = type(model.__name__, (model,),
                                      {"model_config": ConfigDict(extra="forbid")})
    return strict


def compact_schema(schema: Any) -> Any:
    """A JSON Schema without what only costs an agent's context (and a validator's time):
    ``title`` keywords, null defaults, ``additionalProperties: true`` (JSON Schema's
    default), and ``anyOf [T, null]`` for an optional argument (advertised as T, not
    required; null is still accepted). Property names are kept as they are."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "additionalProperties" and value is True:
            continue  # JSON Schema's default; a validator checks every key for it
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: compact_schema(v) for name, v in value.items()}
        elif key == "description" and isinstance(value, str):
            out[key] = " ".join(value.split())
        else:
            out[key] = compact_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(options) and isinstance(rest[0], dict):
            del out["anyOf"]
            out = {**rest[0], **out}
    return out


def _fields(fields: list[str] | None) -> tuple[str, ...]:
    if not fields:
        return ROW_FIELDS
    unknown = [f for f in fields if f not in ROW_FIELDS]
    if unknown:
        raise LedgitError(f"fields: unknown {', '.join(map(repr, unknown[:5]))} (one of "
                          f"{', '.join(ROW_FIELDS)})", USAGE)
    return ("id", *(f for f in ROW_FIELDS if f in fields and f != "id"))


def _one(boards: Boards, board: Board, task: str) -> tuple[dict[str, Any], str, str, str]:
    """(fields, body, path, revision) of one task, from the held index (which re-checks
    the one file) or the file. A malformed file: exit 2."""
    tid = board.resolve_id(task)
    with boards.index(board) as index:
        row = index.get(tid)
    if row is None:
        raise LedgitError(f"no task {tid}", NOT_FOUND)
    if row.get("error"):
        raise LedgitError(str(row["error"]), USAGE)
    return dict(row["fields"]), str(row["body"]), str(row["path"]), str(row["revision"])


# --------------------------------------------------------------------------- running


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          token: str | None = None, start: Path | None = None) -> int:
    """Run the server until its input ends (stdio) or it is interrupted (HTTP); returns the
    exit code. HTTP binds ``host`` (127.0.0.1 unless given); another host needs ``token``
    (bearer) and prints a warning on stderr."""
    server, boards = build_server(start)
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
