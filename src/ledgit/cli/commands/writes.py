"""The writes of one task as the commands print them, and the writes that are not a status
change: ``create``, ``update`` and ``revert``.

:func:`write_task` applies a pure transition of :mod:`ledgit.operations.transitions` through the
board's write
path (lock, read the truth, check ``--expect``, write the file and its history event);
:func:`mutate` does that and prints the command's line or JSON. :mod:`ledgit.cli.commands.lifecycle`
and :mod:`ledgit.cli.commands.items` are written with them, and ``ledgit mcp`` calls
:func:`write_task` with its own board.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ledgit.cli.commands.output import err, out, out_json
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import OK, LedgitError, located
from ledgit.core.record import MAX_RECORD_BYTES, body_nul_line, size_problem
from ledgit.operations import claims, transitions
from ledgit.operations.arguments import resolve_or_keep, split_list
from ledgit.operations.leasestep import LEASE_DONE, lease_instead
from ledgit.operations.projects import resolve_dependencies, resolve_settings
from ledgit.operations.writing import write_task
from ledgit.storage.actor import actor_or_warn
from ledgit.storage.safefiles import read_input
from ledgit.storage.writepath import create_task

if TYPE_CHECKING:
    from collections.abc import Callable

    from ledgit.core.change import Change
    from ledgit.core.record import Record
    from ledgit.operations.writing import Op

# Ops that leave the status as it was: their line says what they did, then the status.
KEEPS_STATUS = {"update": "updated", "heartbeat": "claim renewed"}
MIN_EVENT_PREFIX = 4  # hex digits, as Git's shortest abbreviation (core.abbrev minimum)


def mutate(task: str, by: str | None, expect: str | None, op: Op, as_json: bool,
           show: Callable[[Record, Change], str] | None = None, *, take_over: bool = False,
           offline: bool = False, lease_op: str | None = None) -> int:
    """Write one task with ``op`` (:func:`write_task`) and print the result: ``show``'s
    line, or the common mutation line / JSON shape ``{id, op, status, revision, actor, meta,
    written, held_by}`` (docs/cli.md); a write on a task someone else holds also says who
    and until when on stderr (:func:`note_holder`). ``take_over``, ``offline``,
    ``lease_op``: see :func:`write_task`; with ``lease_op``, a task whose file is not here
    whose lease the actor holds is released or renewed all the same (JSON ``{id, op, status:
    null, revision: null, actor, meta: {lease}, written: false, held_by: null}``). Returns
    0."""
    board = command_board()
    try:
        written, record, result, actor, held_by = write_task(
            task, by, expect, op, board, take_over=take_over, offline=offline,
            lease_op=lease_op)
    except LedgitError as exc:
        done, actor, said = lease_instead(board, task, lease_op, offline, exc,
                                          lambda: actor_or_warn(by, board.root_str))
        err(f"ledgit: note: {said}")
        if as_json:
            out_json({"id": task.strip(), "op": done, "status": None, "revision": None,
                      "actor": actor, "meta": {"lease": LEASE_DONE[done]},
                      "written": False, "held_by": None})
        else:
            out(f"{task.strip()}: {done}: no task here; the lease {LEASE_DONE[done]}")
        return OK
    note_holder(record.id, held_by)
    if as_json:
        out_json({"id": record.id, "op": result.op, "status": record.fields["status"],
                  "revision": record.revision, "actor": actor, "meta": result.meta or {},
                  "written": written, "held_by": held_by})
    elif not written and (result.meta or {}).get("lease"):
        out(f"{record.id}: {result.op}: no claim here; the lease {(result.meta or {})['lease']} "
            f"(rev {record.revision[:12]})")
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


def note_holder(task: str, held_by: dict[str, str] | None) -> None:
    """One line on stderr when a write landed on a task someone else holds a live claim on:
    ``ledgit: note: T-x: held by B until T (claimed T0); written anyway`` (issue 34)."""
    if held_by:
        sys.stderr.write(f"ledgit: note: {claims.held_line(task, held_by)}\n")


def read_text_option(text: str | None, path: str | None, what: str) -> str | None:
    """The text of ``--WHAT`` or ``--WHAT-file`` (a path, ``-`` for stdin; UTF-8), None when
    neither is given. Raises LedgitError exit 2 for both given, an unreadable or non-UTF-8
    file, or a text over :data:`ledgit.core.record.MAX_RECORD_BYTES` (refused before it is
    read) or holding a NUL character (``PATH:LINE: --WHAT-file: NUL ...``)."""
    if text is not None and path is not None:
        raise LedgitError(f"give --{what} or --{what}-file, not both")
    if path is None:
        return text
    if path == "-":
        data = sys.stdin.read(MAX_RECORD_BYTES + 1)  # characters: refused before any write
        if len(data) > MAX_RECORD_BYTES:
            raise LedgitError(located(size_problem(len(data), f"the {what}") or "", "-", None,
                                      f"--{what}-file"))
    else:
        # at most limit + 1 bytes, whatever the stat size says (/dev/zero: 0; issue 26)
        raw = read_input(path, MAX_RECORD_BYTES, what=f"--{what}-file")
        if len(raw) > MAX_RECORD_BYTES:
            raise LedgitError(located(f"the {what} is over the limit of "
                                      f"{MAX_RECORD_BYTES // 1048576} MiB (keep large content "
                                      f"outside the board and link to it)", path, None,
                                      f"--{what}-file"))
        try:
            data = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            raise LedgitError(f"{path}: not valid UTF-8") from None
    nul = body_nul_line(data)
    if nul is not None:  # named here, by the file's line, before the record refuses it
        raise LedgitError(located(f"NUL character (U+0000); the {what} is text", path, nul,
                                  f"--{what}-file"))
    return data


def create_cmd(title: str, body: str | None, body_file: str | None, goal: str | None,
               accept: tuple[str, ...], priority: int | None, depends: tuple[str, ...],
               allow_unknown_deps: bool, labels: tuple[str, ...], owner: str | None,
               worker: str | None, note: str | None, by: str | None, as_json: bool) -> int:
    """``ledgit create``: a new task titled ``title``
    (:func:`ledgit.operations.transitions.create_fields`),
    its genesis event written; prints its id (JSON: ``{id, revision, path}``). Returns 0;
    LedgitError exit 2 for invalid fields, 4 for a dependency no board holds (unless
    ``allow_unknown_deps``: :func:`ledgit.operations.projects.resolve_dependencies`)."""
    board = command_board()
    text = read_text_option(body, body_file, "body")
    fields, body_text = transitions.create_fields(
        title=title, goal=goal, accept=accept, body=text, priority=priority,
        depends=resolve_dependencies(board, depends, allow_unknown=allow_unknown_deps),
        labels=split_list(labels),
        owner=owner,
        worker=worker)
    actor = actor_or_warn(by, board.root_str)
    record = create_task(board, fields, body_text, actor, note=note)
    if as_json:
        out_json({"id": record.id, "revision": record.revision,
                  "path": board.rel(board.task_path(record.id))})
    else:
        out(record.id)
    return OK


def update_cmd(task: str, title: str | None, priority: int | None, response: str | None,
               sets: tuple[str, ...], commits: tuple[str, ...], depends: tuple[str, ...],
               no_depends: tuple[str, ...], allow_unknown_deps: bool, label: tuple[str, ...],
               no_label: tuple[str, ...], next_action: str | None, gate: str | None,
               owner: str | None, worker: str | None, note: str | None, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """``ledgit update``: edit fields of TASK (:func:`ledgit.operations.transitions.update`; the
    status has its
    own commands). Prints the mutation line. Returns 0; LedgitError exit 2 with nothing to
    change or an invalid value, 3 for a stale ``expect``, 4 for an unknown id or a
    dependency (``--depends``, ``--set depends_on=``) no board holds, unless
    ``allow_unknown_deps``."""
    if not any((title is not None, priority is not None, response is not None, sets,
                commits, depends, no_depends, label, no_label, next_action is not None,
                gate is not None, owner is not None, worker is not None)):
        raise LedgitError("update: nothing to change (see: ledgit update --help)")
    board = command_board()
    assignments = resolve_settings(board, [transitions.parse_assignment(s) for s in sets],
                                   allow_unknown=allow_unknown_deps)
    add = resolve_dependencies(board, depends, allow_unknown=allow_unknown_deps)
    remove = [resolve_or_keep(board, t) for t in split_list(no_depends)]

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return transitions.update(r, title=title, priority=priority, response=response,
                          sets=assignments, add_commits=split_list(commits), depends_add=add,
                          depends_remove=remove, labels_add=split_list(label),
                          labels_remove=split_list(no_label), next_action=next_action,
                          gate=gate, owner=owner, worker=worker, note=note)

    return mutate(task, by, expect, op, as_json)
