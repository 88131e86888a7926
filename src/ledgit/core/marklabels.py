"""Conflict-marker labels for the two sides of a task body that both changed (issue 28): a
person must see which side is theirs. Pure.

* Git named the sides (the branch ``git merge`` merges, a rebase's branch and commit, Git
  2.44's ``%X``/``%Y``: :mod:`ledgit.git.mergenames`): ``<name> (<last_modified>)``.
* Else (cherry-pick, stash, revert): the side's last actor the record names -- the latest
  ``by`` of its claim (taken or renewed), items and contested claims -- and the time of its
  last event (``last_modified``): ``ledgit: <actor> at <last_modified>``; ``ledgit: edited at
  <last_modified>`` when the record names nobody.

The two labels are never equal: when they would be, each gets the first 8 hex of its body's
sha256. The fallback labels depend on the sides' content only, not on which one Git calls
ours, so a merge's bytes are the same either way (DESIGN §7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledgit.core.revision import sha256_hex


def last_actor(fields: Mapping[str, Any]) -> str | None:
    """The actor of the latest mark the record holds: ``claim.by`` at its heartbeat or ``at``,
    ``items[].by`` at their ``at``, ``contested[].by`` at their ``at``; None when it holds
    none. Ties go to the greater name (a rule, so both sides compute the same)."""
    marks: list[tuple[str, str]] = []
    claim = fields.get("claim")
    if isinstance(claim, Mapping) and claim.get("by"):
        when = str(claim.get("heartbeat") or claim.get("at") or "")
        marks.append((when, str(claim["by"])))
    for key in ("items", "contested"):
        for entry in fields.get(key) or []:
            if isinstance(entry, Mapping) and entry.get("by"):
                marks.append((str(entry.get("at") or ""), str(entry["by"])))
    return max(marks)[1] if marks else None


def _content_label(fields: Mapping[str, Any]) -> str:
    actor = last_actor(fields)
    when = str(fields.get("last_modified", ""))
    return f"ledgit: {actor} at {when}" if actor else f"ledgit: edited at {when}"


def marker_labels(a: tuple[Mapping[str, Any], str], b: tuple[Mapping[str, Any], str],
                  names: tuple[str | None, str | None] = (None, None)) -> tuple[str, str]:
    """The labels of sides ``a`` and ``b`` (each ``(fields, body)``), ``names`` their names
    from Git (None: unnamed). Two different strings, always."""
    labels = []
    for (fields, _), name in zip((a, b), names, strict=True):
        when = str(fields.get("last_modified", ""))
        labels.append(f"{name} ({when})" if name else _content_label(fields))
    if labels[0] == labels[1]:
        labels = [f"{label} {sha256_hex(body.encode('utf-8', 'surrogatepass'))[:8]}"
                  for label, (_, body) in zip(labels, (a, b), strict=True)]
    if labels[0] == labels[1]:  # the same body: only the order tells them apart
        labels = [f"{labels[0]} (1)", f"{labels[1]} (2)"]
    return labels[0], labels[1]
