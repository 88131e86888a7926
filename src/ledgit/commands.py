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
from typing import TYPE_CHECKING

from ledgit.argspec import ARG, FLAG, MULTI, VALUE, Param, Spec
from ledgit.errors import BUSY, CHECK_FAILED, NOT_FOUND, OK, USAGE, LedgitError, located

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from ledgit.board import Board
    from ledgit.ops import Change
    from ledgit.record import Record

# lazy: each command imports the board, index, ops, readout, record, history or git it uses:
# `--version` (the unit of every read budget in bench/) imports this module's top only, and a
# read imports no write-path code (tests/test_cli.py, tests/test_startup.py check both).

    Op = Callable[[Record, str, str, int], Change]

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a bug, never a verdict of ledgit

# Copies of ledgit.record's enumerations, so that parsing a command line does not import YAML
# (tests/test_cli.py checks that they agree).
STATUSES = ("open", "in_progress", "waiting", "monitoring", "parked", "done", "dropped",
            "archived")
FINISHED = ("done", "dropped", "archived")  # `list` shows them after the work in play
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
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full stdout (/dev/full, a full disk under a redirect)
            raise _stdout_failed(exc) from None
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
    except OSError as exc:
        # What the machine refuses (read-only or full file system, permissions, quota, I/O;
        # issue 13) is one line and a documented code wherever it is met; other errnos fall
        # through to the internal error below.
        from ledgit.errors import os_failure

        failure = os_failure(exc)
        if failure is None:
            return _internal(exc, debug)
        if debug:
            import traceback

            traceback.print_exc()
        err(f"ledgit: {failure}")
        return failure.code
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs
        return _internal(exc, debug)


def _internal(exc: BaseException, debug: bool) -> int:
    """One ``internal error`` line (a traceback too when ``debug``); returns 70."""
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
    if "project" in values:
        values = dict(values)
        project = values.pop("project")
        if project is not None:
            _PROJECT[:] = [project, any(p.dest == "by" for p in spec.params)]
    module_name, _, attr = spec.run.partition(":")
    module = sys.modules.get(module_name)
    try:
        if module is None:
            import importlib

            module = importlib.import_module(module_name)
        rv = getattr(module, attr)(**values)
    finally:
        _PROJECT.clear()
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
    except OSError as exc:
        raise _stdout_failed(exc) from None


def _stdout_failed(exc: OSError) -> LedgitError:
    """stdout could not take the output (full, an I/O error): exit 74, stdout silenced so
    that the interpreter's last flush does not fail again."""
    from ledgit.errors import IO_ERROR

    _silence_stdout()
    return LedgitError(f"cannot write to stdout: {exc.strerror or exc}", IO_ERROR)


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

JSON = Param(FLAG, "--json", "as_json", help="Print JSON (shapes: ledgit help json).")
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


# [alias, writes] while a command runs with --project ALIAS (set by run_spec)
_PROJECT: list[Any] = []


def _board() -> Board:
    from ledgit.board import find_board

    board = find_board()
    if _PROJECT:
        from ledgit import projects

        alias, writes = _PROJECT
        return projects.open_project(board, alias, write=writes)
    return board


def actor_or_warn(by: str | None, root: Path | str) -> str:
    """:func:`ledgit.actor.actor_name`, plus one stderr warning when no ``--by``,
    ``$LEDGIT_ACTOR`` or Git ``user.name`` names the actor and it falls back to ``unknown``.
    Each writing command calls it once."""
    from ledgit import actor as actors

    actor = actors.actor_name(by, root)
    if actor == "unknown" and not (by or "").strip() \
            and not os.environ.get(actors.ACTOR_ENV, "").strip():
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

    ended: list[str] = []

    def change(record: Record) -> Change:
        ended[:] = _claim_ended(board, record, actor)
        try:
            result = op(record, actor, _now(), ttl)
        except LedgitError as exc:
            if ended:  # the loser of a claim learns who ended it (docs/merge.md)
                raise LedgitError(f"{record.id}: {ended[0]}; {exc.message}", exc.code) from None
            raise
        done.append((record, result))
        return result

    record = board.mutate(tid, change, actor, expect=expect)
    if ended:
        sys.stderr.write(f"ledgit: note: {tid}: {ended[0]}\n")
    before, result = done[-1]
    return record.revision != before.revision, record, result, actor


write_task = _write  # the public name, for other faces (ledgit mcp)


def _claim_ended(board: Board, record: Record, actor: str) -> list[str]:
    """``["completed by B at T; a merge ended A's claim"]`` when ``actor`` lost a claim to
    someone else's completion (or drop, park, archive) in a merge and has not heard of it
    (:func:`ledgit.ops.claim_ended_by`); [] otherwise. Reads the history only for an ended
    task the actor holds no claim on."""
    claim = record.fields.get("claim")
    if record.fields["status"] not in ("done", "dropped", "parked", "archived") or (
            claim and claim.get("by") == actor):
        return []
    from ledgit import ops
    from ledgit.history import HistoryError, parse_events

    text = board.read_history_text(record.id)
    try:
        what = ops.claim_ended_by(parse_events(text or "", record.id), actor)
    except HistoryError:
        return []
    return [f"{what}; a merge ended {actor}'s claim"] if what else []


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
    elif result.op in KEEPS_STATUS:  # not "update -> open": the update did not set it
        out(f"{record.id}: {KEEPS_STATUS[result.op]} (status {record.fields['status']}, "
            f"rev {record.revision[:12]})")
    else:
        out(f"{record.id}: {result.op} -> {record.fields['status']} "
            f"(rev {record.revision[:12]})")
    return OK


def resolve_dependencies(board: Board, texts: Iterable[str]) -> list[str]:
    """:func:`resolve_ids` for ``--depends``: ``ALIAS:ID`` names a task of a registered
    board, resolved there to its full id (ledgit.projects; exit 4 naming the alias when it is
    not registered, cannot be read or holds no such task)."""
    found: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            if ":" in part:
                from ledgit import projects

                alias, task = projects.split_dependency(part)
                assert alias is not None
                full = f"{alias}:{projects.open_project(board, alias).resolve_id(task)}"
            else:
                full = board.resolve_id(part)
            if full not in found:
                found.append(full)
    return found


# Ops that leave the status as it was: their line says what they did, then the status.
KEEPS_STATUS = {"update": "updated", "heartbeat": "claim renewed"}


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

    from ledgit.boardinit import init_board

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
        depends=resolve_dependencies(board, depends), labels=_split(labels),
        owner=owner,
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
    external = [d for d in fields.get("depends_on") or [] if ":" in d]
    if external:
        _add_external(readout, board, str(fields.get("id")), external)
    if as_json:
        out_json(readout)
    else:
        text = render_readout(readout, body=not no_body)
        if external:
            text = _render_external(readout) + text
        out(text, nl=False)
    return OK


def _add_external(readout: dict[str, Any], board: Board, task_id: str,
                  deps: list[str]) -> None:
    """``external_dependencies`` (each ALIAS:ID's status where it was read, or UNKNOWN with
    the reason) and ``dependency_cycle`` (None, or the cycle across boards) in a readout."""
    from ledgit import projects

    cache: dict[str, Any] = {}
    readout["external_dependencies"] = [
        {**projects.external_status(board, d, cache).as_json(), "read_at": _now()}
        for d in deps]
    readout["dependency_cycle"] = projects.find_cycle(board, task_id)


def _render_external(readout: dict[str, Any]) -> str:
    lines = []
    for d in readout["external_dependencies"]:
        where = f" ({d['source']})" if d["source"] else ""
        why = f": {d['reason']}" if d["reason"] else ""
        lines.append(f"external dep:  {d['dependency']} {d['status']}{why}{where}\n")
    if readout.get("dependency_cycle"):
        lines.append(f"dependency cycle: {' -> '.join(readout['dependency_cycle'])}\n")
    return "".join(lines)


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


def row_line(v: dict[str, Any]) -> str:
    """The text line of one :func:`row_view` (list, search, ready): id, status, priority,
    title, the claim's holder and freshness, the outcome kind."""
    prio = "-" if v["priority"] is None else str(v["priority"])
    claim = f"  [{v['claim'].get('by')} {v['freshness']['state']}]" if v["claim"] else ""
    outcome = f"  ({v['outcome']['kind']})" if v.get("outcome") else ""
    return f"{v['id']}  {v['status']:<11}  P{prio}  {v['title']}{claim}{outcome}\n"


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
        lines.append(row_line(v))
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
             limit: int | None, ready: bool, as_json: bool, projects: bool = False) -> int:
    """List tasks: the work in play first, then done and dropped (archived only with --all);
    newest change first within each."""
    if projects:
        if ready:
            return _across_projects("ready", as_json, owner=owner, worker=worker,
                                    label=label, limit=limit)
        return _across_projects("list", as_json, status=status, owner=owner, worker=worker,
                                label=label, outcome=outcome, include_all=include_all,
                                sort=sort, limit=limit)
    board = _board()
    with _index(board) as index:
        filters = _filters(status, owner, worker, label, include_all, outcome)
        wanted = list(status) or [s for s in STATUSES if include_all or s != "archived"]
        rows: list[dict[str, Any]] = []
        for group in ([s for s in wanted if s not in FINISHED],
                      [s for s in wanted if s in FINISHED]):
            left = None if limit is None else limit - len(rows)
            if group and left != 0:
                rows += index.rows(ready=ready, sort=sort, limit=left,
                                   **dict(filters, status=group))
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
              limit: int | None, as_json: bool, projects: bool = False) -> int:
    """Tasks ready to claim: open, every dependency done, no drop/no_change outcome.
    Most urgent first (priority, then oldest)."""
    if projects:
        return _across_projects("ready", as_json, owner=owner, worker=worker, label=label,
                                limit=limit)
    board = _board()
    rows, errors = _ready_rows(board, owner, worker, label, limit)
    why = None
    if not rows and not as_json:
        with _index(board) as index:
            why = why_nothing_ready(index, _filters((), owner, worker, label, False, None))
    _print_rows(rows, as_json, board, errors)
    if why is not None:
        err(f"ledgit ready: {why}")
    return OK


def _ready_rows(board: Board, owner: str | None, worker: str | None, label: tuple[str, ...],
                limit: int | None) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The ready rows of ``board`` (and the index's errors): a task that depends on another
    board's task (``ALIAS:ID``) is ready only once that task is done there."""
    with _index(board) as index:
        filters = _filters((), owner, worker, label, False, None)
        rows = [r for r in index.rows(ready=True, sort="priority", limit=limit, **filters)
                if not _negative(r)]
        pending = [r for r in index.rows(pending_external=True, sort="priority", **filters)
                   if not _negative(r)]
        errors = index.errors()
    if pending:
        from ledgit import projects

        cache: dict[str, Any] = {}
        for row in pending:
            deps = [d for d in row.get("depends_on") or [] if ":" in d]
            if all(projects.external_status(board, d, cache).status == "done" for d in deps):
                rows.append(row)
        rows.sort(key=lambda r: (5 if r.get("priority") is None else r["priority"],
                                 r.get("created") or "", r["id"]))
        rows = rows[:limit] if limit is not None else rows
    return rows, errors


def _across_projects(what: str, as_json: bool, **kw: Any) -> int:
    """``list``/``ready`` over this board and every registered one, each row naming its
    board (``board``: this board's name, or the alias). A registered board that cannot be
    read fails closed (exit 4 or 2, naming the alias)."""
    import time

    from ledgit import projects
    from ledgit.board import find_board

    here = find_board()
    boards = [(projects.board_name(here), here)]
    for alias in sorted(projects.registrations(here)):
        boards.append((alias, projects.open_project(here, alias)))
    views: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    now = time.time()
    for name, board in boards:
        if what == "ready":
            rows, errs = _ready_rows(board, kw["owner"], kw["worker"], kw["label"],
                                     kw["limit"])
        else:
            with _index(board) as index:
                filters = _filters(kw["status"], kw["owner"], kw["worker"], kw["label"],
                                   kw["include_all"], kw["outcome"])
                rows = index.rows(sort=kw["sort"], limit=kw["limit"], **filters)
                errs = index.errors()
        ttl = int(board.config.claim_ttl)
        for row in rows:
            views.append({"board": name, **row_view(row, now, ttl)})
        for path, message in errs:
            err(f"ledgit: warning: {name}: skipped {path}: {message}")
            errors.append({"board": name, "path": path, "message": message})
    if as_json:
        out_json({"tasks": views, "count": len(views), "errors": errors,
                  "boards": [name for name, _ in boards]})
        return OK
    width = max(len(name) for name, _ in boards)
    lines = [f"{v['board']:<{width}}  {row_line(v)}" for v in views]
    out("".join(lines), nl=False)
    return OK


def why_nothing_ready(index: Any, filters: dict[str, Any]) -> str:
    """Why ``ready`` offers nothing, in one line with the next step: how many tasks are open
    and what keeps each from being ready (a dependency not done, named with its status; a
    drop/no_change outcome; a claim), or, with none open, what the tasks are doing."""
    from ledgit.readout import NOT_READY_OUTCOMES

    scope = " with these filters" if set(filters) - {"include_archived"} else ""
    status_of = {r["id"]: r.get("status") for r in index.rows(include_archived=True)}
    rows = index.rows(sort="priority", **dict(filters, include_archived=False))
    open_rows = [r for r in rows if r.get("status") == "open"]
    if not open_rows:
        counts: dict[str, int] = {}
        for r in rows:
            counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
        if not counts:
            if scope:
                return f"nothing is ready: no tasks{scope}"
            return ("nothing is ready: no tasks yet (make one: ledgit create TITLE)"
                    if not status_of else "nothing is ready: every task is archived")
        doing = ", ".join(f"{n} {st}" for st, n in sorted(counts.items(),
                                                          key=lambda kv: STATUSES.index(kv[0])
                                                          if kv[0] in STATUSES else 99))
        return (f"nothing is ready: no open task{scope} ({doing}; ledgit list shows them; "
                f"make one: ledgit create TITLE)")
    blocked: list[str] = []
    negative = claimed = 0
    for r in open_rows:
        waiting = [d for d in r.get("depends_on") or [] if status_of.get(d) != "done"]
        if waiting:
            blocked.append(f"{r['id']} waits for " + ", ".join(
                f"{d} [{status_of.get(d) or 'not on this board'}]" for d in waiting))
        elif (r.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES:
            negative += 1
        elif r.get("claim"):
            claimed += 1
    parts = []
    if blocked:
        shown = "; ".join(blocked[:3]) + ("; ..." if len(blocked) > 3 else "")
        parts.append(f"{len(blocked)} blocked by a dependency not done: {shown}")
    if negative:
        parts.append(f"{negative} with a drop/no_change outcome (ledgit reopen ID offers it "
                     "again)")
    if claimed:
        parts.append(f"{claimed} claimed while open (ledgit check shows why)")
    return f"nothing is ready: {len(open_rows)} open{scope}, " + ", ".join(parts)


# --------------------------------------------------------------------------- claims


def claim_cmd(task: str, note: str | None, take_over: bool, force: bool, by: str | None,
              expect: str | None, as_json: bool) -> int:
    """Claim TASK (status in_progress, a lease renewed by heartbeat). Exit 6 if held."""
    from ledgit import ops

    board = _board()

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        deps = _dependency_statuses(board, r.fields.get("depends_on", []))
        return ops.claim(r, by=actor, now=now, ttl=ttl, note=note, take_over=take_over,
                         force=force, dependency_status=deps)

    def show(rec: Record, ch: Change) -> str:
        took = (ch.meta or {}).get("took_over_from")
        extra = f", took over from {took['by']}" if took else ""
        return (f"{rec.id}: claimed by {rec.fields['claim']['by']}{extra} "
                f"(rev {rec.revision[:12]})")

    return _mutate(task, by, expect, op, as_json, show)


def _dependency_statuses(board: Board, deps: list[str]) -> dict[str, str | None]:
    if any(":" in d for d in deps):  # another board's task (ALIAS:ID): ledgit.projects
        from ledgit import projects

        return projects.dependency_statuses(board, deps)
    return {d: _status_of(board, d) for d in deps}


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
    add = resolve_dependencies(board, depends)
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


def record_cmd(task: str, normalize: bool, by: str | None, as_json: bool) -> int:
    """Record a hand edit of TASK's file as an 'edit' event (refused, exit 2, when the file
    holds what ledgit will not keep: YAML comments, custom quoting or layout)."""
    board = _board()
    tid = board.resolve_id(task)
    loss = board.layout_loss(tid, board.read(tid)) if normalize else None
    event = board.record_edit(tid, actor_or_warn(by, board.root_str), normalize=normalize)
    from ledgit.resolve import stage_if_unmerged

    staged = stage_if_unmerged(board.root, [board.task_path(tid), board.history_path(tid)])
    if as_json:
        out_json({"id": tid, "event": event, "normalized": loss is not None})
        return OK
    if event is None:
        out(f"{tid}: the record matches its history head; nothing to record")
    else:
        out(f"{tid}: recorded {event.get('op', 'edit')} event {event['id'][:12]}")
    if staged and not as_json:
        out(f"{tid}: staged {' '.join(board.rel(p) for p in staged)} (the file was unmerged)")
    if loss is not None:
        out(f"{tid}: rewrote {board.rel(board.task_file(tid))} in the canonical form "
            f"(line {loss[0]}: {loss[1]})")
    return OK


def revert_cmd(task: str, event: str, by: str | None, expect: str | None,
               as_json: bool) -> int:
    """Undo EVENT of TASK with a new 'revert' event (like git revert; EVENT: an id or a
    unique prefix of >= 4 hex digits, as ledgit history shows)."""
    from ledgit import ops

    board = _board()
    tid = board.resolve_id(task)

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        target, before, after, later = event_states(board, tid, event)
        return ops.revert(r, event=target, before=before, after=after, later=later)

    def show(record: Record, change: Change) -> str:
        meta = change.meta or {}
        return (f"{record.id}: revert {str(meta.get('reverts', ''))[:12]}: restored "
                f"{', '.join(meta.get('fields') or []) or 'nothing'} -> "
                f"{record.fields['status']} (rev {record.revision[:12]})")

    return _mutate(tid, by, expect, op, as_json, show)


MIN_EVENT_PREFIX = 4  # hex digits, as Git's shortest abbreviation (core.abbrev minimum)


def event_states(board: Board, tid: str, text: str
                 ) -> tuple[dict[str, Any], Record, Record, dict[str, str]]:
    """(the event of ``tid`` whose id is ``text`` or starts with it, the record at its
    ``parents[0]``, the record after it, field -> "op by actor at ID" of the last later event
    that changed the field). Raises LedgitError: fewer than 4 or non-hex digits (2), no such
    event or an ambiguous prefix (4, listing the candidates), a damaged history (1)."""
    from ledgit.history import HistoryError, parse_checked, replay
    from ledgit.record import record_from_state
    from ledgit.writepath import damaged_history

    want = text.strip().lower()
    if len(want) < MIN_EVENT_PREFIX or any(c not in "0123456789abcdef" for c in want):
        raise LedgitError(f"EVENT: {text!r} is not an event id or a prefix of >= "
                          f"{MIN_EVENT_PREFIX} hex digits (see: ledgit history {tid})")
    try:
        with open(board.history_file(tid), "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise LedgitError(f"{tid}: the task has no history file", NOT_FOUND) from None
    try:
        events = parse_checked(data, tid)
        states = replay(events, tid)
    except HistoryError as exc:
        raise damaged_history(board, tid, exc.problem, data) from None
    found = [e for e in events if e["id"].startswith(want)]
    if not found:
        raise LedgitError(f"{tid}: no event {text!r} (see: ledgit history {tid})", NOT_FOUND)
    if len(found) > 1:
        raise LedgitError(f"{tid}: event {text!r} is ambiguous: "
                          + ", ".join(e["id"][:12] for e in found), NOT_FOUND)
    target = found[0]
    where = board.rel(board.task_file(tid))
    after = record_from_state(states[target["id"]], where)
    # A genesis event has no state before it (ops.revert refuses it): its own stands in.
    before = record_from_state(states[target["parents"][0]], where) if target["parents"] \
        else after
    later: dict[str, str] = {}
    for e in events[events.index(target) + 1:]:
        old = states[e["parents"][0]] if e["parents"] else {}
        new = states[e["id"]]
        of, nf = old.get("fields", {}), new.get("fields", {})
        who = f"{e['op']} by {e['actor']} at {e['at']}, {e['id'][:12]}"
        for key in set(of) | set(nf):
            if of.get(key) != nf.get(key):
                later[key] = who
        if old.get("body") != new.get("body"):
            later["body"] = who
    return {k: v for k, v in target.items() if k != "_line"}, before, after, later


def verify_cmd(tasks: tuple[str, ...], check_all: bool, as_json: bool) -> int:
    """Check records and history continuity; exit 1 with one line per problem."""
    board = _board()
    if tasks and check_all:
        raise LedgitError("give task ids or --all, not both")
    ids = resolve_ids(board, tasks) if tasks else None
    problems = board.verify(ids) + _project_problems(board, ids)
    return report_problems(board, ids, problems, as_json, "verified")


def _project_problems(board: Board, ids: list[str] | None) -> list[Any]:
    """Rule ``project``: every ``ALIAS:ID`` dependency names a registered project, and no
    dependency cycle runs across boards (ledgit.projects)."""
    from ledgit.history import Problem

    with _index(board) as index:
        rows = index.rows(include_archived=True)
    deps = {r["id"]: [d for d in r.get("depends_on") or [] if ":" in d] for r in rows
            if ids is None or r["id"] in ids}
    deps = {k: v for k, v in deps.items() if v}
    if not deps:
        return []
    from ledgit import projects

    problems = [Problem(line.split(":", 1)[0], 0, "project", line.split(": ", 1)[1])
                for line in projects.unregistered(board, deps)]
    for task in deps:
        cycle = projects.find_cycle(board, task)
        if cycle:
            problems.append(Problem(task, 0, "project",
                                    f"dependency cycle across boards: {' -> '.join(cycle)}"))
    return problems


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


def project_add_cmd(alias: str, path: str, ref: str | None, user: bool,
                    as_json: bool) -> int:
    """Register another board as ALIAS (team: .ledgit/projects.yaml; --user: yours)."""
    from ledgit import projects
    from ledgit.board import find_board

    reg = projects.add(find_board(), alias, path, ref, user=user)
    if as_json:
        out_json(_registration_json(reg))
    else:
        pinned = f" at {reg.ref}" if reg.ref else ""
        out(f"project {alias}: {reg.location}{pinned} ({reg.source})")
    return OK


def project_list_cmd(as_json: bool) -> int:
    """The boards this board may reach, by alias, and whether each can be read now."""
    from ledgit import projects
    from ledgit.board import find_board

    board = find_board()
    rows = []
    for _alias, reg in sorted(projects.registrations(board).items()):
        row = _registration_json(reg)
        try:
            projects.open_registration(board, reg)
            row["readable"], row["reason"] = True, None
        except LedgitError as exc:
            row["readable"], row["reason"] = False, exc.message
        rows.append(row)
    if as_json:
        out_json({"board": projects.board_name(board), "projects": rows})
        return OK
    if not rows:
        err("ledgit: no projects registered (ledgit project add ALIAS PATH)")
    for r in rows:
        pinned = f" at {r['ref']}" if r["ref"] else ""
        state = "ok" if r["readable"] else f"UNREADABLE: {r['reason']}"
        out(f"{r['alias']}  {r['path']}{pinned}  ({r['source']})  {state}")
    return OK


def project_remove_cmd(alias: str, user: bool, as_json: bool) -> int:
    """Remove the registration ALIAS (team, or --user: yours)."""
    from ledgit import projects
    from ledgit.board import find_board

    reg = projects.remove(find_board(), alias, user=user)
    if as_json:
        out_json(_registration_json(reg))
    else:
        out(f"project {alias}: removed ({reg.source})")
    return OK


def _registration_json(reg: Any) -> dict[str, Any]:
    return {"alias": reg.alias, "path": reg.path, "location": str(reg.location),
            "ref": reg.ref, "source": reg.source}


def cache_rebuild_cmd(as_json: bool) -> int:
    """Rebuild the index from the task files."""
    board = _board()
    index = _index(board)
    index.rebuild()
    status = index.status()
    for path, message in index.errors():
        err(f"ledgit: warning: skipped {path}: {message}")
    if status.get("path") == ":memory:":
        from ledgit.errors import IO_ERROR
        from ledgit.index import private_dir_refusal
        from ledgit.locate import user_cache_dir

        why = private_dir_refusal(board)
        code = USAGE
        if why is None:
            why, code = (f"{board.private_str} could not take it (no space left on device, "
                         f"or an I/O error)"), IO_ERROR
        cache = user_cache_dir(board.private_str)
        other = ("there is no user cache (HOME and XDG_CACHE_HOME are unset)" if cache is None
                 else f"neither could {cache}")
        raise LedgitError(f"could not keep the index: {why}; {other}; reads build it in "
                          f"memory", code)
    if as_json:
        out_json(status)
    else:
        out(f"rebuilt index: {status.get('tasks', '?')} task(s) in {status.get('path')}")
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


PROJECT = Param(VALUE, "--project", metavar="ALIAS",
                help="Act on the registered board ALIAS (see: ledgit project list).")
PROJECTS = Param(FLAG, "--projects", help="This board and every registered one; each row "
                                          "names its board.")
_NO_PROJECT = ("init", "project")  # commands that do not take --project


def _spec(name: str, run: str, *params: Param) -> Spec:
    """A spec whose help is the docstring of its function in this module; every task
    command also takes ``--project ALIAS`` (handled by :func:`run_spec`)."""
    function = globals()[run]
    if name.split()[0] not in _NO_PROJECT:
        params = (*params, PROJECT)
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
              JSON, PROJECTS),
        _spec("search", "search_cmd",
              Param(ARG, "text"),
              Param(MULTI, "--field", "fields", choices=SEARCH_FIELDS,
                    help="Search only this field (repeatable; default: all)."),
              *LIST_FILTERS, JSON),
        _spec("ready", "ready_cmd", OWNER_FILTER, WORKER_FILTER, LABEL_FILTER, LIMIT, JSON,
              PROJECTS),
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
        _spec("record", "record_cmd", TASK,
              Param(FLAG, "--normalize",
                    help="Accept the canonical form: record, and rewrite the file without "
                         "its YAML comments, custom quoting or layout."),
              BY, JSON),
        _spec("revert", "revert_cmd", TASK, Param(ARG, "event"), *MUTATION),
        _spec("verify", "verify_cmd",
              Param(ARG, "tasks", nargs=-1),
              Param(FLAG, "--all", "check_all", help="Every task (the default without IDs)."),
              JSON),
        _spec("project add", "project_add_cmd",
              Param(ARG, "alias"), Param(ARG, "path"),
              Param(VALUE, "--ref", help="Read the other board at this Git ref (as a "
                                         "submodule pins a commit); read-only then."),
              Param(FLAG, "--user", help="Register it for you only (your user config), "
                                         "not in the board's versioned projects.yaml."),
              JSON),
        _spec("project list", "project_list_cmd", JSON),
        _spec("project remove", "project_remove_cmd", Param(ARG, "alias"),
              Param(FLAG, "--user", help="Remove it from your user config."), JSON),
        _spec("cache rebuild", "cache_rebuild_cmd", JSON),
        _spec("cache status", "cache_status_cmd", JSON),
    ]
    return {s.name: s for s in specs}


SPECS = _specs()
# Groups: name -> help. Their subcommands are the specs named (group, word).
GROUPS = {
    "item": "State items: facts, decisions, questions, blockers, rejected options, artifacts.",
    "cache": "The per-worktree index (derived; safe to delete).",
    "project": "Other boards this board may reach: ledgit --project ALIAS, ALIAS:ID deps.",
}
# What ``python -m ledgit`` runs without click: every spec except ``verify``, whose command
# line belongs to ledgit.gitcli (it adds the CI gate's --rev/--range/--format).
FAST = {name: spec for name, spec in SPECS.items() if name != ("verify",)}
