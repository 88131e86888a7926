"""``ledgit revert TASK EVENT``: undo one event with a new ``revert`` event (DESIGN §8, like
``git revert``), from the states the task's history replays (:func:`event_states`). A module
apart from the other writes so that they load neither the merge policy nor the history's
replay it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.cli.commands.running import command_board
from ledgit.cli.commands.writes import MIN_EVENT_PREFIX, mutate
from ledgit.core.errors import NOT_FOUND, LedgitError, located
from ledgit.core.history import HistoryError, replay
from ledgit.core.historycheck import parse_checked
from ledgit.core.record import record_from_state
from ledgit.operations.revert import revert
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file
from ledgit.storage.writepath import damaged_history

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record
    from ledgit.storage.board import Board


def revert_cmd(task: str, event: str, by: str | None, expect: str | None,
               as_json: bool) -> int:
    """``ledgit revert``: undo EVENT of TASK with a new ``revert`` event (like git revert;
    :func:`ledgit.operations.revert.revert`, with :func:`event_states`). Prints what was
    restored.
    Returns 0; LedgitError as :func:`event_states`, 2 for a genesis or merge event, 1 when
    a later event changed the same value again."""
    board = command_board()
    tid = board.resolve_id(task)

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        target, before, after, later = event_states(board, tid, event)
        return revert(r, event=target, before=before, after=after, later=later)

    def show(record: Record, change: Change) -> str:
        meta = change.meta or {}
        return (f"{record.id}: revert {str(meta.get('reverts', ''))[:12]}: restored "
                f"{', '.join(meta.get('fields') or []) or 'nothing'} -> "
                f"{record.fields['status']} (rev {record.revision[:12]})")

    return mutate(tid, by, expect, op, as_json, show)


def event_states(board: Board, tid: str, text: str
                 ) -> tuple[dict[str, Any], Record, Record, dict[str, str]]:
    """(the event of ``tid`` whose id is ``text`` or starts with it, the record at its
    ``parents[0]``, the record after it, field -> "op by actor at ID" of the last later event
    that changed the field). Raises LedgitError: fewer than 4 or non-hex digits (2), no such
    event or an ambiguous prefix (4, listing the candidates), a damaged history (1)."""
    want = text.strip().lower()
    if len(want) < MIN_EVENT_PREFIX or any(c not in "0123456789abcdef" for c in want):
        raise LedgitError(f"EVENT: {text!r} is not an event id or a prefix of >= "
                          f"{MIN_EVENT_PREFIX} hex digits (see: ledgit history {tid})")
    try:
        data = read_board_file(board.history_file(tid), BOARD_FILE_LIMIT)
    except FileNotFoundError:
        raise LedgitError(f"{tid}: the task has no history file", NOT_FOUND) from None
    except OSError as exc:
        raise LedgitError(located(f"cannot read: {exc.strerror}",
                                  board.rel(board.history_file(tid)))) from None
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
    # A genesis event has no state before it (revert refuses it): its own stands in.
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
