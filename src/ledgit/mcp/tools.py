"""The tools of ``ledgit mcp`` (DESIGN §11; :func:`build_tools`), registered with a compact
listing (:func:`compact_schema`) and strict arguments (:func:`strict_arguments`).

Eleven tools cover the agent loop (docs/mcp.md): ``list``, ``search``, ``get``, ``handoff``,
``create``, ``claim`` (claim / heartbeat / release), ``update``, ``complete``, ``item`` (add /
accept), ``writeback`` and ``sync`` (the board shared through Git: ledgit sync). Each is
thin: it finds the board (:mod:`ledgit.mcp.boards`), calls
the same operations and the same board write path (per-task locks, write-ahead history) as the
CLI, and returns a typed result or a tool error (:mod:`ledgit.mcp.results`).

Every tool takes an optional ``root``: the board to act on (a board root or a directory
inside one; relative paths are taken from the server's start directory), else the board of
the start directory.
"""

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
import anyio.to_thread
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import ConfigDict, Field

from ledgit.core.errors import NOT_FOUND, USAGE, LedgitError
from ledgit.core.readout import build_readout, handoff_of, now_timestamp
from ledgit.core.schema import OUTCOME_KINDS, STATUSES
from ledgit.integration.sync import SyncOptions
from ledgit.integration.sync import sync as run_sync
from ledgit.mcp.args import CheckedTool
from ledgit.mcp.boards import Boards
from ledgit.mcp.pages import body_piece, rows_page
from ledgit.mcp.results import (
    MAX_ANSWER_BYTES,
    Created,
    Readout,
    Rows,
    Where,
    Written,
    answer_bytes,
    envelope_bytes,
    failure,
    ok,
)
from ledgit.operations import claims, notes, paging, stateitems, transitions
from ledgit.operations.arguments import resolve_ids, resolve_or_keep, split_list, status_of
from ledgit.operations.leases import board_leases
from ledgit.operations.leasestep import LEASE_DONE, lease_instead
from ledgit.operations.projects import resolve_settings
from ledgit.operations.rows import filters_of
from ledgit.operations.writing import write_task
from ledgit.storage.actor import actor_name
from ledgit.storage.board import Board
from ledgit.storage.indexsearch import SEARCH_COLUMNS
from ledgit.storage.writepath import create_task

if TYPE_CHECKING:
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

MAX_TEXT = 1_000_000  # characters of any one string argument (a task file is <= 1 MiB)

# Explained once, in the server's instructions, not in every tool's listing.
Root = str | None
Task = str
Expect = str | None
By = str | None
StrList = list[str] | None
# Strict at the face (issue 26): a JSON boolean is not a number (false would be priority 0,
# the most urgent), a float not an integer, a string not a flag; each refusal names the
# argument (pydantic's error location).
Flag = Annotated[bool, Field(strict=True)]
Priority = Annotated[int | None, Field(ge=0, le=4, strict=True)]
Limit = Annotated[int | None, Field(ge=1, strict=True)]  # None: the default page
Offset = Annotated[int, Field(ge=0, strict=True)]


def known_values(name: str, given: list[str] | None, allowed: tuple[str, ...]) -> None:
    """Refuse (LedgitError, exit 2) a filter value outside ``allowed``, as the CLI's
    ``click.Choice`` does: an unknown status would otherwise match nothing and read as an
    empty board."""
    for value in given or ():
        if value not in allowed:
            raise LedgitError(f"{name}: unknown value {value!r} (one of: "
                              f"{', '.join(allowed)})", USAGE)


def _check_text(values: dict[str, Any]) -> None:
    """Refuse huge strings before anything is read or written (exit 2)."""
    for name, value in values.items():
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and len(text) > MAX_TEXT:
                raise LedgitError(f"{name}: {len(text):,} characters (at most {MAX_TEXT:,})",
                                  USAGE)


# --------------------------------------------------------------------------- the tools


def build_tools(boards: Boards, budget: int = MAX_ANSWER_BYTES) -> list[Tool]:
    """The tools, acting on ``boards`` (the server closes them when done); every answer
    within ``budget`` bytes of JSON (:mod:`ledgit.mcp.results`)."""
    tools: list[Tool] = []
    read = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                            open_world_hint=False)

    def tool(annotations: ToolAnnotations, name: str | None = None
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool with a compact listing (:func:`compact_schema`)."""
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            # (argument errors in ledgit's error shape: ledgit.mcpargs)
            made = CheckedTool.from_function(fn, name=name, annotations=annotations,
                                             description=" ".join((fn.__doc__ or "").split()))
            # An argument the tool does not take is refused, naming it, rather than dropped:
            # an agent's `labels` for `labels_add`, or a typo, must not vanish from a write
            # that then reports success (docs/mcp.md: invalid_input).
            made.fn_metadata.arg_model = strict_arguments(made.fn_metadata.arg_model)
            made.parameters = {**compact_schema(made.parameters), "additionalProperties": False}
            if made.fn_metadata.output_schema is not None:
                made.fn_metadata.output_schema = compact_schema(made.fn_metadata.output_schema,
                                                                 nullable=True)
                # The tools build their results as the typed shapes (ledgit.mcp.results), so
                # the SDK need not validate each one against the model again (FuncMetadata: a
                # schema with no model is advertised, not re-validated); clients still check
                # results against the advertised schema (the SDK's client does, in the tests).
                made.fn_metadata.output_model = None
            tools.append(made)
            return fn
        return register

    def target(task: str | None, root: str | None, values: dict[str, Any]
               ) -> Where | CallToolResult:
        """The board a call acts on and how it was found, or the tool error for bad input
        or no board."""
        try:
            _check_text({**values, "task": task, "root": root})
            return Where(*boards.locate(root))
        except LedgitError as exc:
            return failure(exc, None, task)

    def answer(where: Where, task: str | None, body: Callable[[Board], Any]
               ) -> CallToolResult:
        """``body``'s result in the envelope every answer shares (root, root_source, the
        budget: :func:`ledgit.mcp.results.ok`), or its failure."""
        try:
            return ok(body(where.board), where, budget)
        except LedgitError as exc:
            return failure(exc, where, task)

    def call(task: str | None, root: str | None, values: dict[str, Any],
             body: Callable[[Board], Any]) -> CallToolResult:
        where = target(task, root, values)
        return where if isinstance(where, CallToolResult) else answer(where, task, body)

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
        where = target(task, root, values)
        if isinstance(where, CallToolResult):
            return where

        def timed() -> CallToolResult:
            started = time.perf_counter()
            try:
                return answer(where, task, body)
            finally:
                boards.took(where.board, time.perf_counter() - started)

        if boards.quiet(where.board):
            return timed()
        return await anyio.to_thread.run_sync(timed)

    def mutation(board: Board, task: str, by: str | None, expect: str | None,
                 op: Callable[..., Any], *, take_over: bool = False,
                 offline: bool = False, lease_op: str | None = None) -> Written:
        try:
            written, record, result, actor, held_by = write_task(
                task, by, expect, op, board, take_over=take_over, offline=offline,
                lease_op=lease_op)
        except LedgitError as exc:
            # As ledgit release/heartbeat: the actor's own lease on a task whose file is
            # not on this branch is released or renewed all the same (issue 36 item 2).
            done, actor, _ = lease_instead(board, task, lease_op, offline, exc,
                                           lambda: actor_name(by, board.root_str))
            return Written(id=task.strip(), op=done, actor=actor,
                           meta={"lease": LEASE_DONE[done]}, written=False)
        shape = Written(id=record.id, op=result.op, status=record.fields["status"],
                        revision=record.revision, actor=actor, meta=result.meta or {},
                        written=written)
        if held_by:
            shape["held_by"] = held_by
        return shape

    @tool(read, "list")
    async def list_tasks(status: StrList = None, owner: str | None = None,
                   worker: str | None = None, label: StrList = None,
                   outcome: str | None = None, ready: Flag = False,
                   include_archived: Flag = False,
                   sort: Literal["desc", "asc", "priority", "created"] = "desc",
                   limit: Limit = None, cursor: str | None = None,
                   fields: StrList = None, root: Root = None
                   ) -> Annotated[CallToolResult, Rows]:
        """Tasks matching every filter (archived hidden unless asked). A page: limit rows
        (default 20 within 8 KB) or what fits the answer budget; total counts every match;
        next_cursor (null at the end) goes on as cursor. Rows are brief (id title status
        priority, holder until while held); fields: the keys wanted instead (id title status
        priority owner worker claim labels depends_on outcome next_action gate created
        last_modified path revision freshness lease holder until)."""
        def body(board: Board) -> Rows:
            known_values("status", status, STATUSES)
            known_values("outcome", [outcome] if outcome else None, OUTCOME_KINDS)
            query = {"what": "list", "status": sorted(status or ()), "owner": owner,
                     "worker": worker, "label": sorted(label or ()), "outcome": outcome,
                     "ready": ready, "all": include_archived, "sort": sort}
            after = paging.decode_cursor(cursor, query, "cursor", paging.cursor_fits(sort))
            filters = filters_of(tuple(status or ()), owner, worker,
                                 tuple(label or ()), include_archived, outcome)
            leases = board_leases(board)
            with boards.index(board) as index:
                # leased on the remote: not ready (docs/leases.md)
                listing = paging.task_rows(index, sort=sort, after=after,
                                           chunk=paging.chunk_of(limit or 20), ready=ready,
                                           leases=leases if ready else None, **filters)
                return rows_page(listing, query, board=board, budget=budget, limit=limit,
                                 fields=fields, errors=index.errors(), leases=leases)
        return await read_call(None, root, {"owner": owner, "worker": worker, "label": label,
                                 "status": status, "fields": fields, "cursor": cursor}, body)

    @tool(read)
    async def search(text: str, search_fields: StrList = None, status: StrList = None,
               include_archived: Flag = False, limit: Limit = None,
               cursor: str | None = None, fields: StrList = None, root: Root = None
               ) -> Annotated[CallToolResult, Rows]:
        """Exact case-insensitive substring search, newest change first; paged as list;
        rows add `matches`. search_fields: some of title body response items next_action
        gate waiting_on outcome (default title body response items)."""
        def body(board: Board) -> Rows:
            for name in search_fields or ():
                if name not in SEARCH_COLUMNS:
                    raise LedgitError(f"search_fields: unknown field {name!r}", USAGE)
            known_values("status", status, STATUSES)
            query = {"what": "search", "text": text, "fields": sorted(search_fields or ()),
                     "status": sorted(status or ()), "all": include_archived}
            after = paging.decode_cursor(cursor, query, "cursor", paging.cursor_fits("desc"))
            filters = filters_of(tuple(status or ()), None, None, (), include_archived,
                                 None)
            with boards.index(board) as index:
                listing = paging.found_rows(index, text, search_fields or None, sort="desc",
                                            after=after, chunk=paging.chunk_of(limit or 20),
                                            **filters)
                return rows_page(listing, query, board=board, budget=budget, limit=limit,
                                 fields=fields, errors=index.errors(), extra=("matches",))
        return await read_call(None, root, {"text": text, "search_fields": search_fields,
                                 "fields": fields, "cursor": cursor}, body)

    @tool(read)
    async def get(task: Task, body: Flag = True, body_offset: Offset = 0, root: Root = None
            ) -> Annotated[CallToolResult, Readout]:
        """The full readout of one task: fields, revision, claim freshness, goal,
        acceptance, locked/candidate items, artifacts, and `unknown` (what is missing,
        contradictory or stale, with the reason). body_length: the body's characters; a
        body that does not fit comes in pieces: body_next_offset (null at the end) goes on
        as body_offset."""
        def run(board: Board) -> Readout:
            fields, text, path, revision = _one(boards, board, task)
            readout = build_readout(fields, text, path=path, revision=revision,
                                    now=now_timestamp(), ttl=int(board.config.claim_ttl))
            readout.pop("body", None)
            readout.update(body_length=len(text), body_next_offset=None)
            if body:
                room = budget - answer_bytes(readout, "") - envelope_bytes(board) - 16
                readout["body"], readout["body_next_offset"] = body_piece(text, body_offset,
                                                                          room)
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
               body: str | None = None, priority: Priority = None,
               depends_on: StrList = None, labels: StrList = None,
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
              note: str | None = None, take_over: Flag = False, force: Flag = False,
              offline: Flag = False, by: By = None, expect: Expect = None, root: Root = None
              ) -> Annotated[CallToolResult, Written]:
        """Claim a task (in_progress, a lease), renew it (heartbeat) or give it up
        (release). take_over: a stale claim or an expired remote lease; force: dependencies
        not done; offline: no remote lease (docs/leases.md). heartbeat/release of a task
        here showing no claim of yours still renew/release your remote lease (written
        false, meta.lease)."""
        def run(board: Board) -> Written:
            if action == "heartbeat":
                return mutation(board, task, by, expect,
                                lambda r, a, now, ttl: claims.heartbeat(r, by=a, now=now,
                                                                        ttl=ttl),
                                offline=offline, lease_op="heartbeat")
            if action == "release":
                return mutation(board, task, by, expect,
                                lambda r, a, now, ttl: claims.release(r, by=a, now=now, ttl=ttl,
                                                                   note=note),
                                lease_op="release")

            def op(r: Any, a: str, now: str, ttl: int) -> Any:
                deps = {d: status_of(board, d) for d in r.fields.get("depends_on", [])}
                return claims.claim(r, by=a, now=now, ttl=ttl, note=note, take_over=take_over,
                                 force=force, dependency_status=deps)
            return mutation(board, task, by, expect, op, take_over=take_over, offline=offline)
        return call(task, root, {"note": note, "by": by, "expect": expect}, run)

    @tool(write)
    def update(task: Task, expect: Expect = None, title: str | None = None,
               priority: Priority = None,
               response: str | None = None, next_action: str | None = None,
               gate: str | None = None, owner: str | None = None, worker: str | None = None,
               labels_add: StrList = None, labels_remove: StrList = None,
               depends_add: StrList = None, depends_remove: StrList = None,
               commits: StrList = None, set: dict[str, str] | None = None,  # noqa: A002
               add_note: str | None = None, note: str | None = None, by: By = None,
               root: Root = None) -> Annotated[CallToolResult, Written]:
        """Edit fields (lifecycle changes: claim/complete). set: other fields, as the CLI's
        --set FIELD=VALUE. add_note: append one line to the task's notes (alone: op note)."""
        def run(board: Board) -> Written:
            sets = resolve_settings(board, list((set or {}).items()))  # as --set (issue 36)
            if not any(v is not None for v in (title, priority, response, next_action, gate,
                                                owner, worker)) \
                    and not (labels_add or labels_remove or depends_add or depends_remove
                             or commits or sets):
                if add_note is None:
                    raise LedgitError("update: nothing to change", USAGE)
                return mutation(board, task, by, expect, lambda r, a, now, ttl: notes.note(
                    r, text=add_note, by=a, now=now))
            add = resolve_ids(board, depends_add or ())
            remove = [resolve_or_keep(board, t) for t in depends_remove or ()]

            def op(r: Any, a: str, now: str, ttl: int) -> Any:
                change = transitions.update(
                    r, title=title, priority=priority, response=response, sets=sets,
                    add_commits=split_list(commits or ()), depends_add=add,
                    depends_remove=remove, labels_add=split_list(labels_add or ()),
                    labels_remove=split_list(labels_remove or ()), next_action=next_action,
                    gate=gate, owner=owner, worker=worker, note=note)
                if add_note is not None:
                    change = notes.with_note(change, text=add_note, by=a, now=now)
                return change
            return mutation(board, task, by, expect, op)
        return call(task, root, {"title": title, "response": response, "set": list(
            (set or {}).values()), "next_action": next_action, "gate": gate, "note": note,
            "add_note": add_note, "labels_add": labels_add, "commits": commits, "by": by,
            "expect": expect}, run)

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
             lock: Flag = False, items: StrList = None, trusted: Flag = False,
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
                  artifacts: StrList = None, gate: str | None = None, trusted: Flag = False,
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

    syncing = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=True)

    @tool(syncing)
    async def sync(remote: str | None = None, branch: str | None = None,
                   how: Literal["rebase", "merge"] | None = None, message: str | None = None,
                   push: bool = True, root: Root = None) -> Annotated[CallToolResult, Readout]:
        """ledgit sync: commit the board, fetch, merge tasks, check, push with a lease.
        branch: also bring it in (a branch per agent: main)."""
        def run(board: Board) -> Readout:
            try:
                report = run_sync(board, SyncOptions(remote=remote, branch=branch, how=how,
                                                     message=message, push=push))
            except LedgitError as exc:  # one line per problem on the CLI; one line here
                raise LedgitError("; ".join(exc.message.splitlines()), exc.code) from None
            # the shape of sync --json (docs/cli.md), advertised as an object only: the
            # listing's token budget (docs/mcp.md)
            return report.as_json()
        # fetch and push wait on the network: never on the server's event loop
        return await anyio.to_thread.run_sync(functools.partial(
            call, None, root, {"remote": remote, "branch": branch, "message": message}, run))

    return tools


def strict_arguments(model: "type[ArgModelBase]") -> "type[ArgModelBase]":
    """``model`` (the SDK's argument model of a tool) refusing unknown arguments: pydantic's
    ``extra="forbid"``, so a call naming one fails validation with its name."""
    strict: type[ArgModelBase] = type(model.__name__, (model,),
                                      {"model_config": ConfigDict(extra="forbid")})
    return strict


def compact_schema(schema: Any, nullable: bool = False) -> Any:
    """A JSON Schema without what only costs an agent's context (and a validator's time):
    ``title`` keywords, null defaults, ``additionalProperties: true`` (JSON Schema's
    default), and ``anyOf [T, null]`` for an optional argument (advertised as T, not
    required; null is still accepted). ``nullable`` (an output schema, whose members may be
    null: ``next_cursor`` at the end): ``anyOf [{type: T}, null]`` becomes ``{type: [T,
    "null"]}`` instead. Property names are kept as they are."""
    if isinstance(schema, list):
        return [compact_schema(s, nullable) for s in schema]
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
            out[key] = {name: compact_schema(v, nullable) for name, v in value.items()}
        elif key == "description" and isinstance(value, str):
            out[key] = " ".join(value.split())
        else:
            out[key] = compact_schema(value, nullable)
    options = out.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(options) and isinstance(rest[0], dict):
            if not nullable:
                del out["anyOf"]
                out = {**rest[0], **out}
            elif set(rest[0]) == {"type"} and isinstance(rest[0]["type"], str):
                del out["anyOf"]
                out = {"type": [rest[0]["type"], "null"], **out}
    return out


def _one(boards: Boards, board: Board, task: str) -> tuple[dict[str, Any], str, str, str]:
    """(fields, body, path, revision) of one task, from the held index (which re-checks
    the one file) or the file. A malformed file: exit 2 (1 for conflict markers in its front
    matter: check_failed, naming ledgit resolve)."""
    tid = board.resolve_id(task)
    with boards.index(board) as index:
        row = index.get(tid)
    if row is None:
        raise LedgitError(f"no task {tid}", NOT_FOUND)
    if row.get("error"):
        # The file again, for its error's own code (1 for a line merge's conflict markers).
        record = board.read(tid)
        return dict(record.fields), record.body, board.rel(board.task_path(tid)), \
            record.revision
    return dict(row["fields"]), str(row["body"]), str(row["path"]), str(row["revision"])


