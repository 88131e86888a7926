"""The state item commands (DESIGN §5, Stateframe): ``item add``, ``accept``, ``revise`` and
``writeback`` -- each one pure transition of :mod:`ledgit.operations.transitions` written through
:func:`ledgit.cli.commands.writes.write_task`. (``item list`` and ``handoff`` are reads:
:mod:`ledgit.cli.commands.reads`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.running import command_board
from ledgit.cli.commands.writes import mutate, note_holder
from ledgit.core.errors import OK
from ledgit.operations import stateitems, transitions
from ledgit.operations.arguments import split_list
from ledgit.operations.writing import write_task

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record
    from ledgit.operations.writing import Op


def item_add_cmd(task: str, kind: str, text: str, why: str | None, evidence: str | None,
                 lock: bool, trusted: bool, by: str | None, expect: str | None,
                 as_json: bool) -> int:
    """``ledgit item add``: a new state item on TASK
    (:func:`ledgit.operations.transitions.item_add`; candidate
    unless ``lock``, which needs the owner or ``trusted``); prints its id. Returns 0."""
    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return stateitems.item_add(r, kind=kind, text=text, by=actor, now=now, why=why,
                            evidence=evidence, lock=lock, trusted=trusted)

    return _item_mutation(task, by, expect, op, as_json)


def _item_mutation(task: str, by: str | None, expect: str | None, op: Op,
                   as_json: bool) -> int:
    """Write with an op that creates one item; print its id (JSON: the item as ``id``, and
    ``held_by``)."""
    _written, record, result, _actor, held_by = write_task(task, by, expect, op,
                                                           command_board())
    note_holder(record.id, held_by)
    meta = result.meta or {}
    if not as_json:
        out(str(meta.get("item")))
        return OK
    item = next(i for i in record.fields["items"] if i["id"] == meta.get("item"))
    out_json({"id": item["id"], "task": record.id, "trust": item["trust"], "item": item,
              "revision": record.revision, "meta": meta, "held_by": held_by})
    return OK


def accept_cmd(task: str, items: tuple[str, ...], trusted: bool, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """``ledgit accept``: lock candidate ITEMS of TASK
    (:func:`ledgit.operations.transitions.accept`; the owner,
    or ``trusted``); prints what was locked and deprecated. Returns 0."""
    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return stateitems.accept(r, items=split_list(items), by=actor, now=now, trusted=trusted)

    def show(rec: Record, ch: Change) -> str:
        meta = ch.meta or {}
        line = f"{rec.id}: locked {', '.join(meta.get('accepted', []))}"
        if meta.get("supersedes"):
            line += f"; deprecated {', '.join(meta['supersedes'])}"
        return line + f" (rev {rec.revision[:12]})"

    return mutate(task, by, expect, op, as_json, show)


def revise_cmd(task: str, supersedes: tuple[str, ...], text: str, kind: str | None,
               why: str | None, evidence: str | None, trusted: bool, by: str | None,
               expect: str | None, as_json: bool) -> int:
    """``ledgit revise``: a state revision (:func:`ledgit.operations.transitions.revise`): a new
    item that
    supersedes ``supersedes`` (they become deprecated); prints its id. Returns 0."""
    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return stateitems.revise(r, supersedes=split_list(supersedes), text=text, by=actor, now=now,
                          kind=kind, why=why, evidence=evidence, trusted=trusted)

    return _item_mutation(task, by, expect, op, as_json)


def writeback_cmd(task: str, sets: tuple[str, ...], artifacts: tuple[str, ...],
                  evidence: str | None, gate: str | None, trusted: bool, by: str | None,
                  expect: str | None, as_json: bool) -> int:
    """``ledgit writeback``: a worker's writeback
    (:func:`ledgit.operations.transitions.writeback`): field
    changes, artifacts, evidence and gate as candidate items until the owner accepts them
    (applied at once when ``trusted``). Returns 0."""
    assignments = [transitions.parse_assignment(s) for s in sets]

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return stateitems.writeback(r, by=actor, now=now, evidence=evidence, sets=assignments,
                             artifacts=list(artifacts), gate=gate, trusted=trusted)

    def show(rec: Record, ch: Change) -> str:
        meta = ch.meta or {}
        return (f"{rec.id}: writeback as {meta.get('trust')} items "
                f"{', '.join(meta.get('items', []))} (rev {rec.revision[:12]})")

    return mutate(task, by, expect, op, as_json, show)
