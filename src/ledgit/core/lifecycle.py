"""The lifecycle invariants of DESIGN §4, as one pure rule shared by :mod:`ledgit.core.record`
(writes)
and :mod:`ledgit.core.readout` (reads). Standard library only, so a read does not import PyYAML."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: An outcome kind that names an ended status belongs to that status (docs/format.md): a done
#: task was not dropped or parked, a dropped one not done or parked, a parked one not done or
#: dropped. The other kinds (watch, no_publish, no_change, blocked) qualify any status; an
#: archived task keeps the outcome it ended with, and wait/monitor from parked keep ``park``.
NAMED_OUTCOMES = {"done": "done", "drop": "dropped", "park": "parked"}


def outcome_contradiction(status: object, outcome: object) -> str | None:
    """Why ``outcome``'s kind contradicts ``status`` (one line), or None when it does not."""
    kind = outcome.get("kind") if isinstance(outcome, dict) else None
    named = NAMED_OUTCOMES.get(kind) if isinstance(kind, str) else None
    if named is None or status == named or status not in NAMED_OUTCOMES.values():
        return None
    return f"outcome kind {kind} contradicts status {status} (kind {kind} means {named})"


def lifecycle_problems(fields: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Lifecycle invariants of DESIGN §4 as (field, message) pairs; empty when all hold."""
    status = fields.get("status")
    problems: list[tuple[str, str]] = []
    if status == "waiting" and not fields.get("waiting_on"):
        problems.append(("waiting_on", "status waiting needs waiting_on"))
    if status in ("parked", "dropped") and not (fields.get("outcome") or {}).get("reason"):
        problems.append(("outcome", f"status {status} needs an outcome with a reason"))
    contradiction = outcome_contradiction(status, fields.get("outcome"))
    if contradiction:
        problems.append(("outcome", contradiction))
    if status == "done" and not fields.get("response"):
        problems.append(("response", "status done needs an account (response)"))
    if status == "archived":
        for k in ("claim", "waiting_on", "next_action"):
            if fields.get(k):
                problems.append((k, f"an archived task holds no {k}"))
    if fields.get("claim") and status in ("done", "dropped", "archived", "parked"):
        problems.append(("claim", f"a {status} task holds no claim"))
    elif fields.get("claim") and status in ("open", "waiting", "monitoring"):
        # Only ``claim`` sets a claim, and it sets in_progress; every way out clears it.
        problems.append(("claim", f"a claim is held but status is {status}"))
    return problems
