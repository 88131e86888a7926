"""The task commands of the ``ledgit`` CLI (DESIGN §9), without click.

Each command is a :class:`ledgit.argspec.Spec` in :data:`SPECS` (its parameters, declared
once) and a function here that takes the parsed keywords, calls the board (writes), the index
(reads) or the pure transitions in :mod:`ledgit.ops`, prints, and returns an exit code.
:mod:`ledgit.cli` builds the click commands from the same specs; ``python -m ledgit`` runs a
spec directly through :func:`ledgit.argspec.parse` when the command line is a plain one,
which keeps click (~20 ms) out of every read and write (DESIGN §10).

Startup cost is a budget: this module imports only the standard library pieces that every
command needs; everything else is imported inside the command that needs it.

Errors: a :class:`ledgit.errors.LedgitError` prints its one line on stderr and exits with its
code; anything unexpected prints one line ``ledgit: internal error: ...`` and exits 70 (a
traceback only with ``LEDGIT_DEBUG=1``); see :func:`guarded`.
"""

from __future__ import annotations

import os
import sys

from ledgit.argspec import ARG, FLAG, MULTI, VALUE, Param, Spec
from ledgit.errors import BUSY, CHECK_FAILED, OK, USAGE, LedgitError, located

TYPE_CHECKING = False  # typing is not imported at run time (startup budget)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from ledgit.board import Board
    from ledgit.ops import Change
    from ledgit.record import Record

    Op = Callable[[Record, str, str, int], Change]

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a bug, never a verdict of ledgit

# Copies of ledgit.record's enumerations, so that parsing a command line does not import YAML
# (tests/test_cli.py checks that they agree).
STATUSES = ("open", "in_progress", "waiting", "monitoring", "parked", "done", "dropped",
            "archived")
OUTCOME_KINDS = ("drop", "watch", "park", "no_publish", "no_change", "blocked", "done")
ITEM_KINDS = ("fact", "decision", "question", "blocker", "rejected", "artifact", "next_step")
SEARCH_FIELDS = ("title", "body", "response", "items")
TRUSTS = ("candidate", "locked", "deprecated")


# --------------------------------------------------------------------------- running


def guarded(call: Callable[[], int]) -> int:
    """Run ``call`` and turn what it raises into the CLI's exit code (DESIGN §9): a
    LedgitError prints its line and returns its code; Ctrl-C 130; a closed stdout pipe 0
    (quietly); anything else one ``internal error`` line and 70. stdout is flushed here, so a
    reader that went away is noticed before the interpreter's exit."""
    debug = os.environ.get("LEDGIT_DEBUG", "") not in ("", "0")
    try:
        code = call()
        sys.stdout.flush()
        return code
    except LedgitError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        err(f"ledgit: {exc}")
        return exc.code
    except KeyboardInterrupt:
        err("ledgit: interrupted")
        return 130
    except (PipeClosed, BrokenPipeError):
        _silence_stdout()
        return OK
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs
        if debug:
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split())
        err(f"ledgit: internal error: {type(exc).__name__}: {message} "
            f"(set LEDGIT_DEBUG=1 for a traceback)")
        return INTERNAL_ERROR


def run_spec(spec: Spec, values: dict[str, Any]) -> int:
    """Call ``spec``'s function with the parsed keywords; returns its exit code. Raises
    LedgitError exit 2 for an argument holding bytes the locale could not decode (surrogate
    escapes: no task holds them, and SQLite could not be asked about them)."""
    for param in spec.params:
        value = values.get(param.dest)
        for text in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    name = param.flag.upper() if param.kind == ARG else param.flag
                    raise LedgitError(f"{spec.name[-1]} {name}: holds bytes that cannot be "
                                      f"decoded (not UTF-8, or not this locale's encoding)",
                                      USAGE) from None
    module_name, _, attr = spec.run.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        import importlib

        module = importlib.import_module(module_name)
    rv = getattr(module, attr)(**values)
    return rv if isinstance(rv, int) else OK


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


class PipeClosed(Exception):
    """The reader of stdout went away (``ledgit list | head``): stop quietly, exit 0."""


def out(text: str = "", nl: bool = True) -> None:
    """Write ``text`` (and a newline) to stdout."""
    try:
        sys.stdout.write(text + "\n" if nl else text)
    except BrokenPipeError:
        _silence_stdout()
        raise PipeClosed() from None


def err(line: str) -> None:
    """Write one line to stderr (flushed: it must not wait behind stdout)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or full stderr: the exit code still tells
        pass


def out_json(value: Any) -> None:
    """Print ``value`` as indented JSON (shapes: docs/cli.md)."""
    import json

    out(json.dumps(value, ensure_ascii=False, indent=2))


# --------------------------------------------------------------------------- shared params

JSON = Param(FLAG, "--json", "as_json", help="Print JSON (shape: docs/cli.md).")
BY = Param(VALUE, "--by", metavar="WHO",
           help="Actor (default: $LEDGIT_ACTOR, else git user.name).")
EXPECT = Param(VALUE, "--expect", metavar="REV",
               help="Refuse (exit 3) unless the task is at this revision "
                    "(full or >= 12 hex prefix).")
MUTATION = (BY, EXPECT, JSON)  # a command that writes one task
TASK = Param(ARG, "task")
OWNER = Param(VALUE, "--owner", help="Business owner (accepts writebacks).")
WORKER = Param(VALUE, "--worker", help="Default executor.")
NOTE = Param(VALUE, "--note", help="Note for the event.")
PRIORITY = Param(VALUE, "--priority", int_range=(0, 4), help="0 (most urgent) to 4.")
TRUSTED = Param(FLAG, "--trusted", help="Act as a trusted workflow (not the owner).")
EVIDENCE = Param(VALUE, "--evidence", help="Verification evidence.")
LIMIT = Param(VALUE, "--limit", int_range=(1, None), help="At most N tasks.")
LABEL_FILTER = Param(MULTI, "--label", help="Only tasks with this label (repeatable).")
OWNER_FILTER = Param(VALUE, "--owner", help="Only tasks with this owner.")
WORKER_FILTER = Param(VALUE, "--worker", help="Only tasks with this worker.")
LIST_FILTERS = (  # list, search
    Param(MULTI, "--status", choices=STATUSES, help="Only this status (repeatable)."),
    OWNER_FILTER, WORKER_FILTER, LABEL_FILTER,
    Param(VALUE, "--outcome", choices=OUTCOME_KINDS,
          help="Only tasks whose outcome has this kind."),
    Param(FLAG, "--all", "include_all", help="Include archived tasks."),
    Param(VALUE, "--sort", choices=("asc", "desc"), default="desc", show_default=True,
          help="Order by last_modified."),
    LIMIT,
)


def _board() -> Board:
    from ledgit.board import find_board

    return find_board()


def actor_or_warn(by: str | None, root: Path | str) -> str:
    """:func:`ledgit.board.actor_name`, plus one stderr warning when no ``--by``,
    ``$LEDGIT_ACTOR`` or Git ``user.name`` names the actor and it falls back to ``unknown``.
    Each writing command calls it once."""
    from ledgit import board as board_mod

    actor = board_mod.actor_name(by, root)
    if actor == "unknown" and not (by or "").strip() \
            and not os.environ.get(board_mod.ACTOR_ENV, "").strip():
        err("ledgit: warning: no --by, $LEDGIT_ACTOR or git user.name: writing as 'unknown'")
    return actor


def _now() -> str:
    """Now as canonical RFC 3339 UTC (:func:`ledgit.readout.now_timestamp`: no record.py on
    read paths)."""
    from ledgit.readout import now_timestamp

    return now_timestamp()


def _write(task: str, by: str | None, expect: str | None,
           op: Op, board: Board | None = None) -> tuple[bool, Record, Change, str]:
    """Apply ``op(record, actor, now, ttl)`` to one task through the board's write path
    (lock, read the truth, check --expect, write); returns (written?, record now on disk,
    change, actor). A change that alters nothing writes nothing (written = False).
    ``board``: the board to write (default: the working directory's; ``ledgit mcp`` passes
    its own).
    """
    board = board if board is not None else _board()
    tid = board.resolve_id(task)
    actor = actor_or_warn(by, board.root_str)
    ttl = int(board.config.claim_ttl)
    done: list[tuple[Record, Change]] = []

    def change(record: Record) -> Change:
        result = op(record, actor, _now(), ttl)
        done.append((record, result))
        return result

    record = board.mutate(tid, change, actor, expect=expect)
    before, result = done[-1]
    return record.revision != before.revision, record, result, actor


write_task = _write  # the public name, for other faces (ledgit mcp)


def _mutate(task: str, by: str | None, expect: str | None, op: Op, as_json: bool,
            show: Callable[[Record, Change], str] | None = None) -> int:
    """Write one task with ``op`` and print the result: ``show``'s line, or the common
    mutation line / JSON shape (docs/cli.md)."""
    written, record, result, actor = _write(task, by, expect, op)
    if as_json:
        out_json({"id": record.id, "op": result.op, "status": record.fields["status"],
                  "revision": record.revision, "actor": actor, "meta": result.meta or {},
                  "written": written})
    elif not written:
        out(f"{record.id}: {result.op}: nothing changed (rev {record.revision[:12]})")
    elif show is not None:
        out(show(record, result))
    else:
        out(f"{record.id}: {result.op} -> {record.fields['status']} "
            f"(rev {record.revision[:12]})")
    return OK


def resolve_ids(board: Board, texts: Iterable[str]) -> list[str]:
    """Full task ids for ``texts`` (each may hold several, separated by commas or spaces),
    in order, without repeats. Raises LedgitError (exit 4) for an unknown or ambiguous id."""
    ids: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            tid = board.resolve_id(part)
            if tid not in ids:
                ids.append(tid)
    return ids


def _split(texts: Iterable[str]) -> list[str]:
    parts: list[str] = []
    for text in texts:
        for part in text.split(","):
            if part.strip() and part.strip() not in parts:
                parts.append(part.strip())
    return parts


def _read_text_option(text: str | None, path: str | None, what: str) -> str | None:
    if text is not None and path is not None:
        raise LedgitError(f"give --{what} or --{what}-file, not both")
    if path is None:
        return text
    from ledgit.record import MAX_RECORD_BYTES, size_problem

    if path == "-":
        data = sys.stdin.read(MAX_RECORD_BYTES + 1)  # characters: refused before any write
        if len(data) > MAX_RECORD_BYTES:
            raise LedgitError(located(size_problem(len(data), f"the {what}") or "", "-", None,
                                      f"--{what}-file"))
        return data
    try:
        with open(path, encoding="utf-8") as fh:
            message = size_problem(os.fstat(fh.fileno()).st_size, f"the {what}")
            if message is not None:  # refused before it is read
                raise LedgitError(located(message, path, None, f"--{what}-file"))
            return fh.read()
    except OSError as exc:
        raise LedgitError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise LedgitError(f"{path}: not valid UTF-8") from None


# --------------------------------------------------------------------------- init / create


def init_cmd(path: str | None, id_prefix: str, as_json: bool) -> int:
    """Create a board (.ledgit/) in PATH (default: the top of the Git work tree, else the
    current directory). Idempotent."""
    from pathlib import Path

    from ledgit.board import init_board

    if path is None:
        from ledgit import git

        top = git.toplevel(Path.cwd())
        path = str(top) if top is not None else os.getcwd()
    board = init_board(Path(path), id_prefix=id_prefix)
    if as_json:
        out_json({"root": str(board.root), "dir": str(board.dir)})
    else:
        out(f"initialised ledgit board in {board.dir}")
    return OK


def create_cmd(title: str, body: str | None, body_file: str | None, goal: str | None,
               accept: tuple[str, ...], priority: int | None, depends: tuple[str, ...],
               labels: tuple[str, ...], owner: str | None, worker: str | None,
               note: str | None, by: str | None, as_json: bool) -> int:
    """Create a task titled TITLE; prints its id."""
    from ledgit.ops import create_fields

    board = _board()
    text = _read_text_option(body, body_file, "body")
    fields, body_text = create_fields(
        title=title, goal=goal, accept=accept, body=text, priority=priority,
        depends=resolve_ids(board, depends), labels=_split(labels), owner=owner,
        worker=worker)
    actor = actor_or_warn(by, board.root_str)
    record = board.create(fields, body_text, actor, note=note)
    if as_json:
        out_json({"id": record.id, "revision": record.revision,
                  "path": board.rel(board.task_path(record.id))})
    else:
        out(record.id)
    return OK


# --------------------------------------------------------------------------- reads


def get_cmd(task: str, no_body: bool, as_json: bool) -> int:
    """The readout of one task: record, path, revision, claim freshness, UNKNOWNs."""
    from ledgit.readout import build_readout, render_readout

    board = _board()
    fields, body, path, revision = _one_task(board, task)
    _warn_markers(fields.get("id"), body, path)
    readout = build_readout(fields, body, path=path, revision=revision, now=_now(),
                            ttl=int(board.config.claim_ttl))
    if as_json:
        out_json(readout)
    else:
        out(render_readout(readout, body=not no_body), nl=False)
    return OK


def _warn_markers(task_id: Any, body: Any, path: Any) -> None:
    """One stderr line when a task's body holds conflict markers (a line merge committed)."""
    if not isinstance(body, str) or not ("<<<<<<<" in body or ">>>>>>>" in body
                                         or "|||||||" in body):
        return  # no marker can be there (ledgit.markers: 7 or more of <, > or |)
    from ledgit.markers import has_markers

    if has_markers(body):
        err(f"ledgit: warning: {task_id}: the body holds conflict markers "
            f"(run: ledgit resolve {path}, or edit it, then: ledgit record {task_id})")


def _one_task(board: Board, task: str) -> tuple[dict[str, Any], str, str, str]:
    """(fields, body, path relative to the board root, revision) of one task: from the index
    when this worktree has one (it re-checks the one file by stat and content, no board scan,
    no YAML for an unchanged file), else by parsing the file. A malformed file: exit 2."""
    tid = board.resolve_id(task)
    row = None
    try:
        from ledgit.index import Index

        index = Index.open_existing(board)
        if index is not None:
            try:
                row = index.get(tid)
            finally:
                index.close()
    except LedgitError as exc:
        if exc.code != BUSY:
            raise
    except Exception:  # noqa: BLE001 - the index is derived: fall back to the file
        if os.environ.get("LEDGIT_DEBUG", "") not in ("", "0"):
            raise
        row = None
    if row is not None and row.get("error"):
        raise LedgitError(str(row["error"]), USAGE)
    if row is not None and row.get("fields") is not None:
        return dict(row["fields"]), str(row["body"]), str(row["path"]), str(row["revision"])
    record = board.read(tid)
    return dict(record.fields), record.body, board.rel(board.task_path(tid)), record.revision


ROW_KEYS = ("id", "title", "status", "priority", "owner", "worker", "claim", "labels",
            "depends_on", "outcome", "next_action", "gate", "created", "last_modified",
            "path", "revision")


def row_view(row: dict[str, Any], now: float, ttl: int) -> dict[str, Any]:
    """A list/search/ready row in the documented shape (docs/cli.md), with the claim's
    freshness (``now`` and ``ttl`` in seconds). Uses ledgit.readout (standard library
    only), not ops/record: no YAML on a list."""
    from ledgit.readout import epoch_seconds, format_duration, format_ttl

    view = {k: row.get(k) for k in ROW_KEYS}
    for k in ("labels", "depends_on"):
        view[k] = list(view[k] or [])
    claim = view["claim"]
    if claim:
        last = claim.get("heartbeat") or claim.get("at")
        age = max(now - epoch_seconds(last), 0.0)
        state = "stale" if age > ttl else "fresh"
        if row.get("contested"):
            state = "contested"
        beat = "last heartbeat" if claim.get("heartbeat") else "claimed"
        view["freshness"] = {"state": state,
                             "reason": f"claim by {claim.get('by')} {beat} "
                                       f"{format_duration(age)} ago, TTL {format_ttl(ttl)}"}
    else:
        view["freshness"] = {"state": "none", "reason": "nobody holds a claim"}
    return view


def _print_rows(rows: list[dict[str, Any]], as_json: bool, board: Board,
                errors: list[tuple[str, str]]) -> None:
    import time

    ttl = int(board.config.claim_ttl)
    now = time.time()
    views = [row_view(r, now, ttl) for r in rows]
    for r in rows:
        _warn_markers(r.get("id"), r.get("body"), r.get("path"))
    for path, message in errors:
        err(f"ledgit: warning: skipped {path}: {message}" if path not in message
            else f"ledgit: warning: skipped: {message}")
    if as_json:
        out_json({"tasks": views, "count": len(views),
                  "errors": [{"path": p, "message": m} for p, m in errors]})
        return
    lines = []
    for v in views:
        prio = "-" if v["priority"] is None else str(v["priority"])
        claim = ""
        if v["claim"]:
            claim = f"  [{v['claim'].get('by')} {v['freshness']['state']}]"
        outcome = f"  ({v['outcome']['kind']})" if v.get("outcome") else ""
        lines.append(f"{v['id']}  {v['status']:<11}  P{prio}  {v['title']}{claim}{outcome}\n")
    out("".join(lines), nl=False)


def _filters(status: Sequence[str], owner: str | None, worker: str | None,
             label: Sequence[str], include_all: bool, outcome: str | None) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    if status:
        filters["status"] = list(status)
    if owner:
        filters["owner"] = owner
    if worker:
        filters["worker"] = worker
    if label:
        filters["label"] = _split(label)
    if outcome:
        filters["outcome"] = outcome
    filters["include_archived"] = include_all or "archived" in status
    return filters


def _index(board: Board) -> Any:
    from ledgit.index import Index

    return Index.open(board)


def list_cmd(status: tuple[str, ...], owner: str | None, worker: str | None,
             label: tuple[str, ...], outcome: str | None, include_all: bool, sort: str,
             limit: int | None, ready: bool, as_json: bool) -> int:
    """List tasks (archived hidden unless --all), newest change first."""
    board = _board()
    with _index(board) as index:
        filters = _filters(status, owner, worker, label, include_all, outcome)
        rows = index.rows(ready=ready, sort=sort, limit=limit, **filters)
        if ready:
            rows = [r for r in rows if not _negative(r)]
        errors = index.errors()
    _print_rows(rows, as_json, board, errors)
    return OK


def _negative(row: dict[str, Any]) -> bool:
    from ledgit.readout import NOT_READY_OUTCOMES

    return (row.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES


def search_cmd(text: str, fields: tuple[str, ...], status: tuple[str, ...],
               owner: str | None, worker: str | None, label: tuple[str, ...],
               outcome: str | None, include_all: bool, sort: str, limit: int | None,
               as_json: bool) -> int:
    """Exact, case-insensitive substring search over title, body, response and items."""
    if not text:
        raise LedgitError("search needs non-empty TEXT")
    board = _board()
    with _index(board) as index:
        filters = _filters(status, owner, worker, label, include_all, outcome)
        rows = index.search(text, fields=list(fields) or None, sort=sort, limit=limit,
                            **filters)
        errors = index.errors()
    _print_rows(rows, as_json, board, errors)
    return OK


def ready_cmd(owner: str | None, worker: str | None, label: tuple[str, ...],
              limit: int | None, as_json: bool) -> int:
    """Tasks ready to claim: open, every dependency done, no drop/no_change outcome.
    Most urgent first (priority, then oldest)."""
    board = _board()
    with _index(board) as index:
        filters = _filters((), owner, worker, label, False, None)
        rows = [r for r in index.rows(ready=True, sort="priority", limit=limit, **filters)
                if not _negative(r)]
        errors = index.errors()
    _print_rows(rows, as_json, board, errors)
    return OK


# --------------------------------------------------------------------------- claims


def claim_cmd(task: str, note: str | None, take_over: bool, force: bool, by: str | None,
              expect: str | None, as_json: bool) -> int:
    """Claim TASK (status in_progress, a lease renewed by heartbeat). Exit 6 if held."""
    from ledgit import ops

    board = _board()

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        deps = {d: _status_of(board, d) for d in r.fields.get("depends_on", [])}
        return ops.claim(r, by=actor, now=now, ttl=ttl, note=note, take_over=take_over,
                         force=force, dependency_status=deps)

    def show(rec: Record, ch: Change) -> str:
        took = (ch.meta or {}).get("took_over_from")
        extra = f", took over from {took['by']}" if took else ""
        return (f"{rec.id}: claimed by {rec.fields['claim']['by']}{extra} "
                f"(rev {rec.revision[:12]})")

    return _mutate(task, by, expect, op, as_json, show)


def _status_of(board: Board, task: str) -> str | None:
    try:
        return str(board.read(task).fields["status"])
    except LedgitError:
        return None


def heartbeat_cmd(task: str, by: str | None, expect: str | None, as_json: bool) -> int:
    """Renew your claim on TASK. Exit 6 if it is held by someone else or was lost."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.heartbeat(r, by=actor, now=now, ttl=ttl),
                   as_json)


def release_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Give up your claim on TASK (in_progress goes back to open)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.release(r, by=actor, now=now, ttl=ttl,
                                                          note=note),
                   as_json)


# --------------------------------------------------------------------------- update


def update_cmd(task: str, title: str | None, priority: int | None, response: str | None,
               sets: tuple[str, ...], commits: tuple[str, ...], depends: tuple[str, ...],
               no_depends: tuple[str, ...], label: tuple[str, ...],
               no_label: tuple[str, ...], next_action: str | None, gate: str | None,
               owner: str | None, worker: str | None, note: str | None, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """Edit fields of TASK (lifecycle changes have their own commands)."""
    from ledgit import ops

    if not any((title is not None, priority is not None, response is not None, sets,
                commits, depends, no_depends, label, no_label, next_action is not None,
                gate is not None, owner is not None, worker is not None)):
        raise LedgitError("update: nothing to change (see: ledgit update --help)")
    assignments = [ops.parse_assignment(s) for s in sets]
    board = _board()
    add = resolve_ids(board, depends)
    remove = [_resolve_or_keep(board, t) for t in _split(no_depends)]

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.update(r, title=title, priority=priority, response=response,
                          sets=assignments, add_commits=_split(commits), depends_add=add,
                          depends_remove=remove, labels_add=_split(label),
                          labels_remove=_split(no_label), next_action=next_action, gate=gate,
                          owner=owner, worker=worker, note=note)

    return _mutate(task, by, expect, op, as_json)


def _resolve_or_keep(board: Board, text: str) -> str:
    try:
        return board.resolve_id(text)
    except LedgitError:
        return text


# --------------------------------------------------------------------------- lifecycle


def complete_cmd(task: str, response: str | None, outcome: str | None, reason: str | None,
                 by: str | None, expect: str | None, as_json: bool) -> int:
    """Mark TASK done with an account of the work (--response, required)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.complete(
                       r, by=actor, response=response, now=now, ttl=ttl, outcome=outcome,
                       reason=reason),
                   as_json)


def wait_cmd(task: str, on: str | None, by: str | None, expect: str | None,
             as_json: bool) -> int:
    """Put TASK in waiting (--on required); its claim is released."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.wait(r, by=actor, on=on, now=now, ttl=ttl),
                   as_json)


def monitor_cmd(task: str, signal: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Put TASK in monitoring (observe --signal; manufactures no work)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.monitor(r, by=actor, signal=signal, now=now,
                                                          ttl=ttl),
                   as_json)


def park_cmd(task: str, reason: str | None, reuse: str | None, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """Park TASK with a reason (outcome park)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.park(r, by=actor, reason=reason, now=now,
                                                       ttl=ttl, reuse=reuse),
                   as_json)


def drop_cmd(task: str, reason: str | None, reuse: str | None, kind: str, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """Drop TASK with a reason: a first-class negative result."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.drop(r, by=actor, reason=reason, now=now,
                                                       ttl=ttl, reuse=reuse, kind=kind),
                   as_json)


def archive_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Archive TASK (clears claim, waiting_on, next_action; hidden from list)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.archive(r, by=actor, now=now, ttl=ttl,
                                                          note=note),
                   as_json)


def reopen_cmd(task: str, note: str | None, by: str | None, expect: str | None,
               as_json: bool) -> int:
    """Reopen TASK (its earlier outcome is kept as a candidate item)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.reopen(r, by=actor, now=now, note=note),
                   as_json)


# --------------------------------------------------------------------------- items


def item_add_cmd(task: str, kind: str, text: str, why: str | None, evidence: str | None,
                 lock: bool, trusted: bool, by: str | None, expect: str | None,
                 as_json: bool) -> int:
    """Add a state item to TASK (candidate unless --lock); prints the item id."""
    from ledgit import ops

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.item_add(r, kind=kind, text=text, by=actor, now=now, why=why,
                            evidence=evidence, lock=lock, trusted=trusted)

    return _item_mutation(task, by, expect, op, as_json)


def _item_mutation(task: str, by: str | None, expect: str | None, op: Op,
                   as_json: bool) -> int:
    """Write with an op that creates one item; print its id (JSON: the item as ``id``)."""
    _written, record, result, _actor = _write(task, by, expect, op)
    meta = result.meta or {}
    if not as_json:
        out(str(meta.get("item")))
        return OK
    item = next(i for i in record.fields["items"] if i["id"] == meta.get("item"))
    out_json({"id": item["id"], "task": record.id, "trust": item["trust"], "item": item,
              "revision": record.revision, "meta": meta})
    return OK


def item_list_cmd(task: str, trusts: tuple[str, ...], as_json: bool) -> int:
    """List TASK's state items (all trust levels unless --trust)."""
    board = _board()
    record = board.read(board.resolve_id(task))
    items = [i for i in record.fields.get("items", []) if not trusts or i["trust"] in trusts]
    if as_json:
        out_json({"task": record.id, "items": items})
        return OK
    for i in items:
        extra = f" -> {', '.join(i['superseded_by'])}" if i.get("superseded_by") else ""
        out(f"{i['id']}  {i['trust']:<10}  {i['kind']:<9}  {i['text']}{extra}")
    return OK


def accept_cmd(task: str, items: tuple[str, ...], trusted: bool, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """Lock candidate ITEMS of TASK (the owner, or --trusted)."""
    from ledgit import ops

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.accept(r, items=_split(items), by=actor, now=now, trusted=trusted)

    def show(rec: Record, ch: Change) -> str:
        meta = ch.meta or {}
        line = f"{rec.id}: locked {', '.join(meta.get('accepted', []))}"
        if meta.get("supersedes"):
            line += f"; deprecated {', '.join(meta['supersedes'])}"
        return line + f" (rev {rec.revision[:12]})"

    return _mutate(task, by, expect, op, as_json, show)


def revise_cmd(task: str, supersedes: tuple[str, ...], text: str, kind: str | None,
               why: str | None, evidence: str | None, trusted: bool, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """A state revision: a new item superseding ITEMs (they become deprecated)."""
    from ledgit import ops

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.revise(r, supersedes=_split(supersedes), text=text, by=actor, now=now,
                          kind=kind, why=why, evidence=evidence, trusted=trusted)

    return _item_mutation(task, by, expect, op, as_json)


def writeback_cmd(task: str, sets: tuple[str, ...], artifacts: tuple[str, ...],
                  evidence: str | None, gate: str | None, trusted: bool, by: str | None,
                  expect: str | None, as_json: bool) -> int:
    """A worker's writeback: lands as candidate items until the owner accepts it."""
    from ledgit import ops

    assignments = [ops.parse_assignment(s) for s in sets]

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.writeback(r, by=actor, now=now, evidence=evidence, sets=assignments,
                             artifacts=list(artifacts), gate=gate, trusted=trusted)

    def show(rec: Record, ch: Change) -> str:
        meta = ch.meta or {}
        return (f"{rec.id}: writeback as {meta.get('trust')} items "
                f"{', '.join(meta.get('items', []))} (rev {rec.revision[:12]})")

    return _mutate(task, by, expect, op, as_json, show)


def handoff_cmd(task: str, as_json: bool) -> int:
    """A compact handoff packet: goal, acceptance, status, next action, gate, locked items."""
    from ledgit.readout import handoff_of, render_handoff

    board = _board()
    fields, body, _path, revision = _one_task(board, task)
    packet = handoff_of(fields, body, revision)
    if as_json:
        out_json(packet)
    else:
        out(render_handoff(packet), nl=False)
    return OK


# --------------------------------------------------------------------------- audit


def history_cmd(task: str, as_json: bool) -> int:
    """TASK's events, oldest first."""
    from ledgit.history import HistoryError, parse_events, strip_lines

    board = _board()
    tid = board.resolve_id(task)
    text = board.read_history_text(tid)
    if text is None:
        raise LedgitError(f"{tid}: the task has no history file (record it: ledgit record {tid})",
                          CHECK_FAILED)
    try:
        events = strip_lines(parse_events(text, tid))
    except HistoryError as exc:
        raise LedgitError(str(exc), CHECK_FAILED) from None
    if as_json:
        out_json({"id": tid, "events": events})
        return OK
    for e in events:
        note = f"  {e['note']}" if e.get("note") else ""
        out(f"{e['at']}  {e['id'][:12]}  {e['actor']}  {e['op']}{note}")
    return OK


def record_cmd(task: str, by: str | None, as_json: bool) -> int:
    """Record a hand edit of TASK's file as an 'edit' event."""
    board = _board()
    tid = board.resolve_id(task)
    event = board.record_edit(tid, actor_or_warn(by, board.root_str))
    if as_json:
        out_json({"id": tid, "event": event})
    elif event is None:
        out(f"{tid}: the record matches its history head; nothing to record")
    else:
        out(f"{tid}: recorded {event.get('op', 'edit')} event {event['id'][:12]}")
    return OK


def verify_cmd(tasks: tuple[str, ...], check_all: bool, as_json: bool) -> int:
    """Check records and history continuity; exit 1 with one line per problem."""
    board = _board()
    if tasks and check_all:
        raise LedgitError("give task ids or --all, not both")
    ids = resolve_ids(board, tasks) if tasks else None
    return report_problems(board, ids, board.verify(ids), as_json, "verified")


def report_problems(board: Board, ids: list[str] | None, problems: list[Any], as_json: bool,
                    verb: str, actions: list[str] | None = None) -> int:
    """Print a validator's findings (``verify``, ``check``): JSON ``{ok, [actions,] problems}``
    or the action lines, one line per problem and a summary on stderr. Returns the exit code
    (1 while any problem remains)."""
    if as_json:
        doc: dict[str, Any] = {"ok": not problems}
        if actions is not None:
            doc["actions"] = actions
        doc["problems"] = [{"task": p.task, "line": p.line, "rule": p.rule,
                            "message": p.message} for p in problems]
        out_json(doc)
    else:
        for line in actions or []:
            out(line)
        for p in problems:
            out(str(p))
        if not problems:
            count = len(ids) if ids is not None else len(board.list_ids())
            err(f"ledgit: {verb} {count} task(s): ok")
    return CHECK_FAILED if problems else OK


def cache_rebuild_cmd(as_json: bool) -> int:
    """Rebuild the index from the task files."""
    board = _board()
    index = _index(board)
    index.rebuild()
    status = index.status()
    if as_json:
        out_json(status)
    else:
        out(f"rebuilt index: {status.get('tasks', '?')} task(s)")
    for path, message in index.errors():
        err(f"ledgit: warning: skipped {path}: {message}")
    return OK


def cache_status_cmd(as_json: bool) -> int:
    """Where the index is and what it holds."""
    status = _index(_board()).status()
    if as_json:
        out_json(status)
    else:
        for key, value in status.items():
            out(f"{key}: {value}")
    return OK


# --------------------------------------------------------------------------- the table


def _spec(name: str, run: str, *params: Param) -> Spec:
    """A spec whose help is the docstring of its function in this module."""
    function = globals()[run]
    return Spec(tuple(name.split()), f"ledgit.commands:{run}", function.__doc__ or "",
                params)


def _specs() -> dict[tuple[str, ...], Spec]:
    specs = [
        _spec("init", "init_cmd",
              Param(ARG, "path", required=False, path="dir"),
              Param(VALUE, "--prefix", "id_prefix", default="T", show_default=True,
                    help="Task id prefix (ids look like T-k3v9q2mz7a)."),
              JSON),
        _spec("create", "create_cmd",
              Param(ARG, "title"),
              Param(VALUE, "--body", help="Markdown body text."),
              Param(VALUE, "--body-file", path="file",
                    help="Read the body from a file ('-' = stdin)."),
              Param(VALUE, "--goal", help="The goal (becomes the '## Goal' section)."),
              Param(MULTI, "--accept", metavar="TEXT",
                    help="One acceptance criterion (repeatable; the '## Acceptance' "
                         "section)."),
              PRIORITY,
              Param(MULTI, "--depends", metavar="ID", help="Dependency (repeatable)."),
              Param(MULTI, "--label", "labels", help="Label (repeatable)."),
              OWNER, WORKER,
              Param(VALUE, "--note", help="Note for the create event."),
              BY, JSON),
        _spec("get", "get_cmd", TASK,
              Param(FLAG, "--no-body", help="Leave the Markdown body out of the text."),
              JSON),
        _spec("list", "list_cmd", *LIST_FILTERS,
              Param(FLAG, "--ready", help="Only ready tasks (see: ledgit ready)."),
              JSON),
        _spec("search", "search_cmd",
              Param(ARG, "text"),
              Param(MULTI, "--field", "fields", choices=SEARCH_FIELDS,
                    help="Search only this field (repeatable; default: all)."),
              *LIST_FILTERS, JSON),
        _spec("ready", "ready_cmd", OWNER_FILTER, WORKER_FILTER, LABEL_FILTER, LIMIT, JSON),
        _spec("claim", "claim_cmd", TASK,
              Param(VALUE, "--note",
                    help="What you are about to do (kept verbatim in the claim)."),
              Param(FLAG, "--take-over", help="Take a stale claim from its holder."),
              Param(FLAG, "--force", help="Claim even though dependencies are not done."),
              *MUTATION),
        _spec("heartbeat", "heartbeat_cmd", TASK, *MUTATION),
        _spec("release", "release_cmd", TASK,
              Param(VALUE, "--note", help="Why (kept in the event)."), *MUTATION),
        _spec("update", "update_cmd", TASK,
              Param(VALUE, "--title", help="New title."),
              PRIORITY,
              Param(VALUE, "--response", help="Your account of the work so far."),
              Param(MULTI, "--set", "sets", metavar="FIELD=VALUE",
                    help="Set a field (empty VALUE unsets; x.KEY for extensions; "
                         "repeatable)."),
              Param(MULTI, "--add-commit", "commits", metavar="SHA",
                    help="Add a commit pointer (repeatable)."),
              Param(MULTI, "--depends", metavar="ID", help="Add a dependency (repeatable)."),
              Param(MULTI, "--no-depends", metavar="ID",
                    help="Remove a dependency (repeatable)."),
              Param(MULTI, "--label", help="Add a label (repeatable)."),
              Param(MULTI, "--no-label", help="Remove a label (repeatable)."),
              Param(VALUE, "--next-action", help="The next step."),
              Param(VALUE, "--gate", help="The decision that blocks the next step."),
              OWNER, WORKER, NOTE, *MUTATION),
        _spec("complete", "complete_cmd", TASK,
              Param(VALUE, "--response", help="Your account of the work (required)."),
              Param(VALUE, "--outcome", choices=OUTCOME_KINDS,
                    help="Record a terminal outcome too (e.g. no_change)."),
              Param(VALUE, "--reason", help="Reason for the outcome."),
              *MUTATION),
        _spec("wait", "wait_cmd", TASK,
              Param(VALUE, "--on", help="The person, condition or date it waits on "
                                        "(required)."),
              *MUTATION),
        _spec("monitor", "monitor_cmd", TASK,
              Param(VALUE, "--signal", help="The signal to observe (required)."), *MUTATION),
        _spec("park", "park_cmd", TASK,
              Param(VALUE, "--reason", help="Why it is parked (required)."),
              Param(VALUE, "--reuse", help="What is worth reusing later."), *MUTATION),
        _spec("drop", "drop_cmd", TASK,
              Param(VALUE, "--reason", help="Why it is dropped (required)."),
              Param(VALUE, "--reuse",
                    help="What is worth reusing (a negative result is knowledge)."),
              Param(VALUE, "--kind", choices=OUTCOME_KINDS, default="drop", show_default=True,
                    help="Outcome kind (e.g. no_change, no_publish)."),
              *MUTATION),
        _spec("archive", "archive_cmd", TASK, NOTE, *MUTATION),
        _spec("reopen", "reopen_cmd", TASK, NOTE, *MUTATION),
        _spec("item add", "item_add_cmd", TASK,
              Param(VALUE, "--kind", choices=ITEM_KINDS, required=True, help="Item kind."),
              Param(VALUE, "--text", required=True, help="What the item says."),
              Param(VALUE, "--why",
                    help="Why (for a rejected option: why it was rejected)."),
              EVIDENCE,
              Param(FLAG, "--lock", help="Add it locked (owner or --trusted only)."),
              Param(FLAG, "--trusted", help="Act as a trusted workflow."),
              *MUTATION),
        _spec("item list", "item_list_cmd", TASK,
              Param(MULTI, "--trust", "trusts", choices=TRUSTS,
                    help="Only items with this trust (repeatable)."),
              JSON),
        _spec("accept", "accept_cmd", TASK,
              Param(ARG, "items", nargs=-1, required=True),
              TRUSTED, *MUTATION),
        _spec("revise", "revise_cmd", TASK,
              Param(MULTI, "--supersedes", required=True, metavar="ITEM",
                    help="Item the revision supersedes (repeatable)."),
              Param(VALUE, "--text", required=True, help="The revised statement."),
              Param(VALUE, "--kind", choices=ITEM_KINDS,
                    help="Kind of the new item (default: the superseded item's)."),
              Param(VALUE, "--why", help="Why it changed."),
              EVIDENCE,
              Param(FLAG, "--trusted",
                    help="Act as a trusted workflow (locks the new item)."),
              *MUTATION),
        _spec("writeback", "writeback_cmd", TASK,
              Param(MULTI, "--set", "sets", metavar="FIELD=VALUE",
                    help="A field change to propose (repeatable)."),
              Param(MULTI, "--artifact", "artifacts", help="An artifact (repeatable)."),
              Param(VALUE, "--evidence", help="Verification evidence (required)."),
              Param(VALUE, "--gate", help="The remaining gate."),
              Param(FLAG, "--trusted",
                    help="Act as a trusted workflow (applies at once)."),
              *MUTATION),
        _spec("handoff", "handoff_cmd", TASK, JSON),
        _spec("history", "history_cmd", TASK, JSON),
        _spec("record", "record_cmd", TASK, BY, JSON),
        _spec("verify", "verify_cmd",
              Param(ARG, "tasks", nargs=-1),
              Param(FLAG, "--all", "check_all", help="Every task (the default without IDs)."),
              JSON),
        _spec("cache rebuild", "cache_rebuild_cmd", JSON),
        _spec("cache status", "cache_status_cmd", JSON),
    ]
    return {s.name: s for s in specs}


SPECS = _specs()
# Groups: name -> help. Their subcommands are the specs named (group, word).
GROUPS = {
    "item": "State items: facts, decisions, questions, blockers, rejected options, artifacts.",
    "cache": "The per-worktree index (derived; safe to delete).",
}
# What ``python -m ledgit`` runs without click: every spec except ``verify``, whose command
# line belongs to ledgit.gitcli (it adds the CI gate's --rev/--range/--format).
FAST = {name: spec for name, spec in SPECS.items() if name != ("verify",)}
