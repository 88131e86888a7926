"""The ``ledgit`` command line (DESIGN §9): thin click commands over board, index and ops.

Each command parses its arguments, calls the board (writes), the index (reads) or the pure
transitions in :mod:`ledgit.ops`, prints, and returns an exit code. Startup cost is a budget
(DESIGN §10): this module imports only click at the top; everything else is imported inside the
command that needs it, and subcommands are found through :data:`COMMANDS`, a lazy table of
``name -> "module:attribute"`` so that other modules register commands with one line and
``ledgit list`` never imports write-path code.

Errors: a :class:`ledgit.errors.LedgitError` prints its one line on stderr and exits with its
code; click usage errors print one line and exit 2; anything unexpected prints one line
``ledgit: internal error: ...`` and exits 70 (a traceback only with ``LEDGIT_DEBUG=1``).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ledgit import __version__
from ledgit.errors import BUSY, CHECK_FAILED, OK, USAGE, LedgitError, located

if TYPE_CHECKING:
    from pathlib import Path

    from ledgit.board import Board
    from ledgit.ops import Change
    from ledgit.record import Record

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a bug, never a verdict of ledgit

# Subcommand name -> "module:attribute" of a click.Command. One line per command; other
# modules add theirs here (e.g. "merge-driver": "ledgit.mergedriver:command").
COMMANDS: dict[str, str] = {
    "init": "ledgit.cli:init_cmd",
    "create": "ledgit.cli:create_cmd",
    "get": "ledgit.cli:get_cmd",
    "list": "ledgit.cli:list_cmd",
    "search": "ledgit.cli:search_cmd",
    "ready": "ledgit.cli:ready_cmd",
    "claim": "ledgit.cli:claim_cmd",
    "heartbeat": "ledgit.cli:heartbeat_cmd",
    "release": "ledgit.cli:release_cmd",
    "update": "ledgit.cli:update_cmd",
    "complete": "ledgit.cli:complete_cmd",
    "wait": "ledgit.cli:wait_cmd",
    "monitor": "ledgit.cli:monitor_cmd",
    "park": "ledgit.cli:park_cmd",
    "drop": "ledgit.cli:drop_cmd",
    "archive": "ledgit.cli:archive_cmd",
    "reopen": "ledgit.cli:reopen_cmd",
    "item": "ledgit.cli:item_group",
    "accept": "ledgit.cli:accept_cmd",
    "revise": "ledgit.cli:revise_cmd",
    "writeback": "ledgit.cli:writeback_cmd",
    "handoff": "ledgit.cli:handoff_cmd",
    "history": "ledgit.cli:history_cmd",
    "record": "ledgit.cli:record_cmd",
    "check": "ledgit.check:check_cmd",
    "verify": "ledgit.gitcli:verify_cmd",  # cli.verify_cmd + the CI gate options
    "cache": "ledgit.cli:cache_group",
    "demo": "ledgit.demo:demo_cmd",
    "import": "ledgit.interop.cli:import_group",
    "export": "ledgit.interop.cli:export_group",
    "install": "ledgit.gitcli:install_cmd",
    "uninstall": "ledgit.gitcli:uninstall_cmd",
    "doctor": "ledgit.gitcli:doctor_cmd",
    "resolve": "ledgit.gitcli:resolve_cmd",
    "hook": "ledgit.gitcli:hook_cmd",
    "merge-driver": "ledgit.gitcli:merge_driver_cmd",
}

# Copies of ledgit.record's enumerations, so building the CLI does not import YAML
# (tests/test_cli.py checks that they agree).
STATUSES = ("open", "in_progress", "waiting", "monitoring", "parked", "done", "dropped",
            "archived")
OUTCOME_KINDS = ("drop", "watch", "park", "no_publish", "no_change", "blocked", "done")
ITEM_KINDS = ("fact", "decision", "question", "blocker", "rejected", "artifact", "next_step")
SEARCH_FIELDS = ("title", "body", "response", "items")

F = TypeVar("F", bound=Callable[..., Any])


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use from a name table."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy if lazy is not None else {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.lazy.get(cmd_name)
        if spec is None:
            return None
        module_name, _, attr = spec.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{spec} is not a click command")
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h",
                                                                                    "--help"]})
@click.version_option(__version__, "--version", prog_name="ledgit",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """ledgit: task state for coding agents, kept in the Git repository.

    Exit codes: 0 ok, 1 check failed / merge conflict, 2 usage or invalid input, 3 stale
    revision, 4 not found / ambiguous, 5 busy, 6 claim held or lost, 70 internal error.
    """


# --------------------------------------------------------------------------- running


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: sys.argv[1:]) and return the exit code."""
    debug = os.environ.get("LEDGIT_DEBUG", "") not in ("", "0")
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="ledgit",
                      standalone_mode=False)
    except LedgitError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        _err(f"ledgit: {exc}")
        return exc.code
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "ledgit --help")
        return OK
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "ledgit"
        _err(f"{where}: {exc.format_message()} (see: {where} --help)")
        return USAGE
    except click.ClickException as exc:
        _err(f"ledgit: {exc.format_message()}")
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        _err("ledgit: interrupted")
        return 130
    except (_PipeClosed, BrokenPipeError):
        _silence_stdout()
        return OK
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs
        if debug:
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split())
        _err(f"ledgit: internal error: {type(exc).__name__}: {message} "
             f"(set LEDGIT_DEBUG=1 for a traceback)")
        return INTERNAL_ERROR
    return rv if isinstance(rv, int) else OK


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


class _PipeClosed(Exception):
    """The reader of stdout went away (``ledgit list | head``): stop quietly, exit 0.

    Not an OSError, so click's own EPIPE handling (which exits 1) never sees it."""


def _echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    try:
        click.echo(text, err=err, nl=nl)
    except BrokenPipeError:
        _silence_stdout()
        raise _PipeClosed() from None


def _err(line: str) -> None:
    _echo(line, err=True)


def _out(text: str = "", nl: bool = True) -> None:
    _echo(text, nl=nl)


def _json(value: Any) -> None:
    import json

    _out(json.dumps(value, ensure_ascii=False, indent=2))


# --------------------------------------------------------------------------- shared options


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print JSON (shape: docs/cli.md).")(f)


def by_option(f: F) -> F:
    return click.option("--by", "by", metavar="WHO",
                        help="Actor (default: $LEDGIT_ACTOR, else git user.name).")(f)


def expect_option(f: F) -> F:
    return click.option("--expect", metavar="REV",
                        help="Refuse (exit 3) unless the task is at this revision "
                             "(full or >= 12 hex prefix).")(f)


def mutation(f: F) -> F:
    """--by, --expect and --json for a command that writes one task."""
    return json_option(expect_option(by_option(f)))


def _board() -> Board:
    from ledgit.board import find_board

    return find_board()


def actor_or_warn(by: str | None, root: Path) -> str:
    """:func:`ledgit.board.actor_name`, plus one stderr warning when no ``--by``,
    ``$LEDGIT_ACTOR`` or Git ``user.name`` names the actor and it falls back to ``unknown``.
    Each writing command calls it once."""
    from ledgit import board as board_mod

    actor = board_mod.actor_name(by, root)
    if actor == "unknown" and not (by or "").strip() \
            and not os.environ.get(board_mod.ACTOR_ENV, "").strip():
        _err("ledgit: warning: no --by, $LEDGIT_ACTOR or git user.name: writing as 'unknown'")
    return actor


def _now() -> str:
    """Now as canonical RFC 3339 UTC with microseconds (= record.now_timestamp, without
    importing record.py and PyYAML on read paths)."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


Op = Callable[["Record", str, str, int], "Change"]


def _write(task: str, by: str | None, expect: str | None,
           op: Op) -> tuple[bool, Record, Change, str]:
    """Apply ``op(record, actor, now, ttl)`` to one task through the board's write path
    (lock, read the truth, check --expect, write); returns (written?, record now on disk,
    change, actor). A change that alters nothing writes nothing (written = False).
    """
    board = _board()
    tid = board.resolve_id(task)
    actor = actor_or_warn(by, board.root)
    ttl = int(board.config.claim_ttl)
    done: list[tuple[Record, Change]] = []

    def change(record: Record) -> Change:
        result = op(record, actor, _now(), ttl)
        done.append((record, result))
        return result

    record = board.mutate(tid, change, actor, expect=expect)
    before, result = done[-1]
    return record.revision != before.revision, record, result, actor


def _mutate(task: str, by: str | None, expect: str | None, op: Op, as_json: bool,
            show: Callable[[Record, Change], str] | None = None) -> int:
    """Write one task with ``op`` and print the result: ``show``'s line, or the common
    mutation line / JSON shape (docs/cli.md)."""
    written, record, result, actor = _write(task, by, expect, op)
    if as_json:
        _json({"id": record.id, "op": result.op, "status": record.fields["status"],
               "revision": record.revision, "actor": actor, "meta": result.meta or {},
               "written": written})
    elif not written:
        _out(f"{record.id}: {result.op}: nothing changed (rev {record.revision[:12]})")
    elif show is not None:
        _out(show(record, result))
    else:
        _out(f"{record.id}: {result.op} -> {record.fields['status']} "
             f"(rev {record.revision[:12]})")
    return OK


def _resolve_ids(board: Board, texts: Iterable[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        for part in text.replace(",", " ").split():
            tid = board.resolve_id(part)
            if tid not in out:
                out.append(tid)
    return out


def _split(texts: Iterable[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        for part in text.split(","):
            if part.strip() and part.strip() not in out:
                out.append(part.strip())
    return out


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


@click.command("init")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--prefix", "id_prefix", default="T", show_default=True,
              help="Task id prefix (ids look like T-k3v9q2mz7a).")
@json_option
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
        _json({"root": str(board.root), "dir": str(board.dir)})
    else:
        _out(f"initialised ledgit board in {board.dir}")
    return OK


@click.command("create")
@click.argument("title")
@click.option("--body", help="Markdown body text.")
@click.option("--body-file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the body from a file ('-' = stdin).")
@click.option("--goal", help="The goal (becomes the '## Goal' section).")
@click.option("--accept", "accept", multiple=True, metavar="TEXT",
              help="One acceptance criterion (repeatable; the '## Acceptance' section).")
@click.option("--priority", type=click.IntRange(0, 4), help="0 (most urgent) to 4.")
@click.option("--depends", multiple=True, metavar="ID", help="Dependency (repeatable).")
@click.option("--label", "labels", multiple=True, help="Label (repeatable).")
@click.option("--owner", help="Business owner (accepts writebacks).")
@click.option("--worker", help="Default executor.")
@click.option("--note", help="Note for the create event.")
@by_option
@json_option
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
        depends=_resolve_ids(board, depends), labels=_split(labels), owner=owner,
        worker=worker)
    actor = actor_or_warn(by, board.root)
    record = board.create(fields, body_text, actor, note=note)
    if as_json:
        _json({"id": record.id, "revision": record.revision,
               "path": board.rel(board.task_path(record.id))})
    else:
        _out(record.id)
    return OK


# --------------------------------------------------------------------------- reads


@click.command("get")
@click.argument("task")
@click.option("--no-body", is_flag=True, help="Leave the Markdown body out of the text.")
@json_option
def get_cmd(task: str, no_body: bool, as_json: bool) -> int:
    """The readout of one task: record, path, revision, claim freshness, UNKNOWNs."""
    from ledgit.readout import build_readout, render_readout

    board = _board()
    fields, body, path, revision = _one_task(board, task)
    _warn_markers(fields.get("id"), body, path)
    readout = build_readout(fields, body, path=path, revision=revision, now=_now(),
                            ttl=int(board.config.claim_ttl))
    if as_json:
        _json(readout)
    else:
        _out(render_readout(readout, body=not no_body), nl=False)
    return OK


def _warn_markers(task_id: Any, body: Any, path: Any) -> None:
    """One stderr line when a task's body holds conflict markers (a line merge committed)."""
    from ledgit.markers import has_markers

    if isinstance(body, str) and has_markers(body):
        _err(f"ledgit: warning: {task_id}: the body holds conflict markers "
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


def _row_view(row: dict[str, Any], now: float, ttl: int) -> dict[str, Any]:
    """A list/search/ready row in the documented shape, with claim freshness.

    Uses ledgit.readout (standard library only), not ops/record: no YAML on a list.
    """
    from ledgit.readout import epoch_seconds, format_duration, format_ttl

    out = {k: row.get(k) for k in ROW_KEYS}
    for k in ("labels", "depends_on"):
        out[k] = list(out[k] or [])
    claim = out["claim"]
    if claim:
        last = claim.get("heartbeat") or claim.get("at")
        age = max(now - epoch_seconds(last), 0.0)
        state = "stale" if age > ttl else "fresh"
        if row.get("contested"):
            state = "contested"
        beat = "last heartbeat" if claim.get("heartbeat") else "claimed"
        out["freshness"] = {"state": state,
                            "reason": f"claim by {claim.get('by')} {beat} {format_duration(age)} "
                                      f"ago, TTL {format_ttl(ttl)}"}
    else:
        out["freshness"] = {"state": "none", "reason": "nobody holds a claim"}
    return out


def _print_rows(rows: list[dict[str, Any]], as_json: bool, board: Board,
                errors: list[tuple[str, str]]) -> None:
    import time

    ttl = int(board.config.claim_ttl)
    now = time.time()
    views = [_row_view(r, now, ttl) for r in rows]
    for r in rows:
        _warn_markers(r.get("id"), r.get("body"), r.get("path"))
    for path, message in errors:
        _err(f"ledgit: warning: skipped {path}: {message}" if path not in message
             else f"ledgit: warning: skipped: {message}")
    if as_json:
        _json({"tasks": views, "count": len(views),
               "errors": [{"path": p, "message": m} for p, m in errors]})
        return
    for v in views:
        prio = "-" if v["priority"] is None else str(v["priority"])
        claim = ""
        if v["claim"]:
            claim = f"  [{v['claim'].get('by')} {v['freshness']['state']}]"
        outcome = f"  ({v['outcome']['kind']})" if v.get("outcome") else ""
        _out(f"{v['id']}  {v['status']:<11}  P{prio}  {v['title']}{claim}{outcome}")


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


def list_filters(f: F) -> F:
    """The filter options shared by list, search and ready."""
    for deco in reversed((
        click.option("--status", multiple=True, type=click.Choice(STATUSES),
                     help="Only this status (repeatable)."),
        click.option("--owner", help="Only tasks with this owner."),
        click.option("--worker", help="Only tasks with this worker."),
        click.option("--label", multiple=True, help="Only tasks with this label (repeatable)."),
        click.option("--outcome", type=click.Choice(OUTCOME_KINDS),
                     help="Only tasks whose outcome has this kind."),
        click.option("--all", "include_all", is_flag=True, help="Include archived tasks."),
        click.option("--sort", type=click.Choice(("asc", "desc")), default="desc",
                     show_default=True, help="Order by last_modified."),
        click.option("--limit", type=click.IntRange(min=1), help="At most N tasks."),
    )):
        f = deco(f)
    return f


def _index(board: Board) -> Any:
    from ledgit.index import Index

    return Index.open(board)


@click.command("list")
@list_filters
@click.option("--ready", is_flag=True, help="Only ready tasks (see: ledgit ready).")
@json_option
def list_cmd(status: tuple[str, ...], owner: str | None, worker: str | None,
             label: tuple[str, ...], outcome: str | None, include_all: bool, sort: str,
             limit: int | None, ready: bool, as_json: bool) -> int:
    """List tasks (archived hidden unless --all), newest change first."""
    board = _board()
    index = _index(board)
    filters = _filters(status, owner, worker, label, include_all, outcome)
    rows = index.rows(ready=ready, sort=sort, limit=limit, **filters)
    if ready:
        rows = [r for r in rows if not _negative(r)]
    _print_rows(rows, as_json, board, index.errors())
    return OK


def _negative(row: dict[str, Any]) -> bool:
    from ledgit.readout import NOT_READY_OUTCOMES

    return (row.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES


@click.command("search")
@click.argument("text")
@click.option("--field", "fields", multiple=True, type=click.Choice(SEARCH_FIELDS),
              help="Search only this field (repeatable; default: all).")
@list_filters
@json_option
def search_cmd(text: str, fields: tuple[str, ...], status: tuple[str, ...],
               owner: str | None, worker: str | None, label: tuple[str, ...],
               outcome: str | None, include_all: bool, sort: str, limit: int | None,
               as_json: bool) -> int:
    """Exact, case-insensitive substring search over title, body, response and items."""
    if not text:
        raise LedgitError("search needs non-empty TEXT")
    board = _board()
    index = _index(board)
    filters = _filters(status, owner, worker, label, include_all, outcome)
    rows = index.search(text, fields=list(fields) or None, sort=sort, limit=limit, **filters)
    _print_rows(rows, as_json, board, index.errors())
    return OK


@click.command("ready")
@click.option("--owner", help="Only tasks with this owner.")
@click.option("--worker", help="Only tasks with this worker.")
@click.option("--label", multiple=True, help="Only tasks with this label (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), help="At most N tasks.")
@json_option
def ready_cmd(owner: str | None, worker: str | None, label: tuple[str, ...],
              limit: int | None, as_json: bool) -> int:
    """Tasks ready to claim: open, every dependency done, no drop/no_change outcome.
    Most urgent first (priority, then oldest)."""
    board = _board()
    index = _index(board)
    filters = _filters((), owner, worker, label, False, None)
    rows = [r for r in index.rows(ready=True, sort="priority", limit=limit, **filters)
            if not _negative(r)]
    _print_rows(rows, as_json, board, index.errors())
    return OK


# --------------------------------------------------------------------------- claims


@click.command("claim")
@click.argument("task")
@click.option("--note", help="What you are about to do (kept verbatim in the claim).")
@click.option("--take-over", is_flag=True, help="Take a stale claim from its holder.")
@click.option("--force", is_flag=True, help="Claim even though dependencies are not done.")
@mutation
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


@click.command("heartbeat")
@click.argument("task")
@mutation
def heartbeat_cmd(task: str, by: str | None, expect: str | None, as_json: bool) -> int:
    """Renew your claim on TASK. Exit 6 if it is held by someone else or was lost."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.heartbeat(r, by=actor, now=now, ttl=ttl),
                   as_json)


@click.command("release")
@click.argument("task")
@click.option("--note", help="Why (kept in the event).")
@mutation
def release_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Give up your claim on TASK (in_progress goes back to open)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.release(r, by=actor, now=now, ttl=ttl,
                                                          note=note),
                   as_json)


# --------------------------------------------------------------------------- update


@click.command("update")
@click.argument("task")
@click.option("--title", help="New title.")
@click.option("--priority", type=click.IntRange(0, 4), help="0 (most urgent) to 4.")
@click.option("--response", help="Your account of the work so far.")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE",
              help="Set a field (empty VALUE unsets; x.KEY for extensions; repeatable).")
@click.option("--add-commit", "commits", multiple=True, metavar="SHA",
              help="Add a commit pointer (repeatable).")
@click.option("--depends", multiple=True, metavar="ID", help="Add a dependency (repeatable).")
@click.option("--no-depends", multiple=True, metavar="ID",
              help="Remove a dependency (repeatable).")
@click.option("--label", multiple=True, help="Add a label (repeatable).")
@click.option("--no-label", multiple=True, help="Remove a label (repeatable).")
@click.option("--next-action", help="The next step.")
@click.option("--gate", help="The decision that blocks the next step.")
@click.option("--owner", help="Business owner (accepts writebacks).")
@click.option("--worker", help="Default executor.")
@click.option("--note", help="Note for the event.")
@mutation
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
    add = _resolve_ids(board, depends)
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


@click.command("complete")
@click.argument("task")
@click.option("--response", help="Your account of the work (required).")
@click.option("--outcome", type=click.Choice(OUTCOME_KINDS),
              help="Record a terminal outcome too (e.g. no_change).")
@click.option("--reason", help="Reason for the outcome.")
@mutation
def complete_cmd(task: str, response: str | None, outcome: str | None, reason: str | None,
                 by: str | None, expect: str | None, as_json: bool) -> int:
    """Mark TASK done with an account of the work (--response, required)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.complete(
                       r, by=actor, response=response, now=now, ttl=ttl, outcome=outcome,
                       reason=reason),
                   as_json)


@click.command("wait")
@click.argument("task")
@click.option("--on", "on", help="The person, condition or date it waits on (required).")
@mutation
def wait_cmd(task: str, on: str | None, by: str | None, expect: str | None,
             as_json: bool) -> int:
    """Put TASK in waiting (--on required); its claim is released."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.wait(r, by=actor, on=on, now=now, ttl=ttl),
                   as_json)


@click.command("monitor")
@click.argument("task")
@click.option("--signal", help="The signal to observe (required).")
@mutation
def monitor_cmd(task: str, signal: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Put TASK in monitoring (observe --signal; manufactures no work)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.monitor(r, by=actor, signal=signal, now=now,
                                                          ttl=ttl),
                   as_json)


@click.command("park")
@click.argument("task")
@click.option("--reason", help="Why it is parked (required).")
@click.option("--reuse", help="What is worth reusing later.")
@mutation
def park_cmd(task: str, reason: str | None, reuse: str | None, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """Park TASK with a reason (outcome park)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.park(r, by=actor, reason=reason, now=now,
                                                       ttl=ttl, reuse=reuse),
                   as_json)


@click.command("drop")
@click.argument("task")
@click.option("--reason", help="Why it is dropped (required).")
@click.option("--reuse", help="What is worth reusing (a negative result is knowledge).")
@click.option("--kind", type=click.Choice(OUTCOME_KINDS), default="drop", show_default=True,
              help="Outcome kind (e.g. no_change, no_publish).")
@mutation
def drop_cmd(task: str, reason: str | None, reuse: str | None, kind: str, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """Drop TASK with a reason: a first-class negative result."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.drop(r, by=actor, reason=reason, now=now,
                                                       ttl=ttl, reuse=reuse, kind=kind),
                   as_json)


@click.command("archive")
@click.argument("task")
@click.option("--note", help="Note for the event.")
@mutation
def archive_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """Archive TASK (clears claim, waiting_on, next_action; hidden from list)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.archive(r, by=actor, now=now, ttl=ttl,
                                                          note=note),
                   as_json)


@click.command("reopen")
@click.argument("task")
@click.option("--note", help="Note for the event.")
@mutation
def reopen_cmd(task: str, note: str | None, by: str | None, expect: str | None,
               as_json: bool) -> int:
    """Reopen TASK (its earlier outcome is kept as a candidate item)."""
    from ledgit import ops

    return _mutate(task, by, expect,
                   lambda r, actor, now, ttl: ops.reopen(r, by=actor, now=now, note=note),
                   as_json)


# --------------------------------------------------------------------------- items


@click.group("item")
def item_group() -> None:
    """State items: facts, decisions, questions, blockers, rejected options, artifacts."""


@item_group.command("add")
@click.argument("task")
@click.option("--kind", required=True, type=click.Choice(ITEM_KINDS), help="Item kind.")
@click.option("--text", required=True, help="What the item says.")
@click.option("--why", help="Why (for a rejected option: why it was rejected).")
@click.option("--evidence", help="Verification evidence.")
@click.option("--lock", is_flag=True, help="Add it locked (owner or --trusted only).")
@click.option("--trusted", is_flag=True, help="Act as a trusted workflow.")
@mutation
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
        _out(str(meta.get("item")))
        return OK
    item = next(i for i in record.fields["items"] if i["id"] == meta.get("item"))
    _json({"id": item["id"], "task": record.id, "trust": item["trust"], "item": item,
           "revision": record.revision, "meta": meta})
    return OK


@item_group.command("list")
@click.argument("task")
@click.option("--trust", "trusts", multiple=True,
              type=click.Choice(("candidate", "locked", "deprecated")),
              help="Only items with this trust (repeatable).")
@json_option
def item_list_cmd(task: str, trusts: tuple[str, ...], as_json: bool) -> int:
    """List TASK's state items (all trust levels unless --trust)."""
    board = _board()
    record = board.read(board.resolve_id(task))
    items = [i for i in record.fields.get("items", []) if not trusts or i["trust"] in trusts]
    if as_json:
        _json({"task": record.id, "items": items})
        return OK
    for i in items:
        extra = f" -> {', '.join(i['superseded_by'])}" if i.get("superseded_by") else ""
        _out(f"{i['id']}  {i['trust']:<10}  {i['kind']:<9}  {i['text']}{extra}")
    return OK


@click.command("accept")
@click.argument("task")
@click.argument("items", nargs=-1, required=True)
@click.option("--trusted", is_flag=True, help="Act as a trusted workflow (not the owner).")
@mutation
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


@click.command("revise")
@click.argument("task")
@click.option("--supersedes", multiple=True, required=True, metavar="ITEM",
              help="Item the revision supersedes (repeatable).")
@click.option("--text", required=True, help="The revised statement.")
@click.option("--kind", type=click.Choice(ITEM_KINDS),
              help="Kind of the new item (default: the superseded item's).")
@click.option("--why", help="Why it changed.")
@click.option("--evidence", help="Verification evidence.")
@click.option("--trusted", is_flag=True, help="Act as a trusted workflow (locks the new item).")
@mutation
def revise_cmd(task: str, supersedes: tuple[str, ...], text: str, kind: str | None,
               why: str | None, evidence: str | None, trusted: bool, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """A state revision: a new item superseding ITEMs (they become deprecated)."""
    from ledgit import ops

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return ops.revise(r, supersedes=_split(supersedes), text=text, by=actor, now=now,
                          kind=kind, why=why, evidence=evidence, trusted=trusted)

    return _item_mutation(task, by, expect, op, as_json)


@click.command("writeback")
@click.argument("task")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE",
              help="A field change to propose (repeatable).")
@click.option("--artifact", "artifacts", multiple=True, help="An artifact (repeatable).")
@click.option("--evidence", help="Verification evidence (required).")
@click.option("--gate", help="The remaining gate.")
@click.option("--trusted", is_flag=True, help="Act as a trusted workflow (applies at once).")
@mutation
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


@click.command("handoff")
@click.argument("task")
@json_option
def handoff_cmd(task: str, as_json: bool) -> int:
    """A compact handoff packet: goal, acceptance, status, next action, gate, locked items."""
    from ledgit.readout import handoff_of, render_handoff

    board = _board()
    fields, body, _path, revision = _one_task(board, task)
    packet = handoff_of(fields, body, revision)
    if as_json:
        _json(packet)
    else:
        _out(render_handoff(packet), nl=False)
    return OK


# --------------------------------------------------------------------------- audit


@click.command("history")
@click.argument("task")
@json_option
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
        _json({"id": tid, "events": events})
        return OK
    for e in events:
        note = f"  {e['note']}" if e.get("note") else ""
        _out(f"{e['at']}  {e['id'][:12]}  {e['actor']}  {e['op']}{note}")
    return OK


@click.command("record")
@click.argument("task")
@by_option
@json_option
def record_cmd(task: str, by: str | None, as_json: bool) -> int:
    """Record a hand edit of TASK's file as an 'edit' event."""
    board = _board()
    tid = board.resolve_id(task)
    event = board.record_edit(tid, actor_or_warn(by, board.root))
    if as_json:
        _json({"id": tid, "event": event})
    elif event is None:
        _out(f"{tid}: the record matches its history head; nothing to record")
    else:
        _out(f"{tid}: recorded {event.get('op', 'edit')} event {event['id'][:12]}")
    return OK


@click.command("verify")
@click.argument("tasks", nargs=-1)
@click.option("--all", "check_all", is_flag=True, help="Every task (the default without IDs).")
@json_option
def verify_cmd(tasks: tuple[str, ...], check_all: bool, as_json: bool) -> int:
    """Check records and history continuity; exit 1 with one line per problem."""
    board = _board()
    if tasks and check_all:
        raise LedgitError("give task ids or --all, not both")
    ids = _resolve_ids(board, tasks) if tasks else None
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
        _json(doc)
    else:
        for line in actions or []:
            _out(line)
        for p in problems:
            _out(str(p))
        if not problems:
            count = len(ids) if ids is not None else len(board.list_ids())
            _err(f"ledgit: {verb} {count} task(s): ok")
    return CHECK_FAILED if problems else OK


@click.group("cache")
def cache_group() -> None:
    """The per-worktree index (derived; safe to delete)."""


@cache_group.command("rebuild")
@json_option
def cache_rebuild_cmd(as_json: bool) -> int:
    """Rebuild the index from the task files."""
    board = _board()
    index = _index(board)
    index.rebuild()
    status = index.status()
    if as_json:
        _json(status)
    else:
        _out(f"rebuilt index: {status.get('tasks', '?')} task(s)")
    for path, message in index.errors():
        _err(f"ledgit: warning: skipped {path}: {message}")
    return OK


@cache_group.command("status")
@json_option
def cache_status_cmd(as_json: bool) -> int:
    """Where the index is and what it holds."""
    status = _index(_board()).status()
    if as_json:
        _json(status)
    else:
        for key, value in status.items():
            _out(f"{key}: {value}")
    return OK


__all__ = ["COMMANDS", "INTERNAL_ERROR", "LazyGroup", "cli", "run"]
