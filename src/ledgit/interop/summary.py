"""What an import did, for people: the :class:`Summary` (and its :class:`Conflict` s), the line
and lists printed at the end, and a :class:`Progress` bar on a terminal."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ledgit.interop.incoming import Skip


MAX_LISTED = 20  # skip reasons printed one per line; the rest are counted


class Conflict(NamedTuple):
    """A re-imported record that changed both at the source and on the board in the same
    place: the board's value was kept for each of ``fields`` (paths as
    :func:`ledgit.operations.revert.clashes` names them, ``body`` for overlapping body
    edits)."""

    task: str
    where: str
    fields: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.where}: {self.task}: changed on the board and at the source: "
                f"{', '.join(self.fields)} (kept the board's)")


class Summary:
    """What an import did. ``line()`` is the summary line of the CLI. (A plain class, not a
    dataclass: an import does not pay for importing dataclasses.)"""

    def __init__(self, source: str, imported: int = 0, updated: int = 0, unchanged: int = 0,
                 skipped: list[Skip] | None = None, ids: list[str] | None = None,
                 seconds: float = 0.0, merged: int = 0,
                 conflicts: list[Conflict] | None = None) -> None:
        self.source, self.imported, self.updated, self.unchanged = (source, imported, updated,
                                                                    unchanged)
        self.skipped: list[Skip] = [] if skipped is None else skipped
        self.ids: list[str] = [] if ids is None else ids
        self.seconds = seconds
        self.merged = merged  # changed on both sides, merged without a conflict
        self.conflicts: list[Conflict] = [] if conflicts is None else conflicts

    def __repr__(self) -> str:
        return (f"Summary({self.source!r}, imported={self.imported}, updated={self.updated}, "
                f"merged={self.merged}, conflicts={len(self.conflicts)}, "
                f"unchanged={self.unchanged}, skipped={len(self.skipped)})")

    def line(self) -> str:
        reasons = Counter(_reason_kind(s.reason) for s in self.skipped)
        why = "; ".join(f"{n} {k}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return (f"import {self.source}: imported {self.imported}, updated {self.updated}, "
                f"merged {self.merged}, conflicts {len(self.conflicts)}, "
                f"unchanged {self.unchanged}, skipped {len(self.skipped)}"
                + (f" ({why})" if why else ""))

    def as_json(self) -> dict[str, Any]:
        return {"source": self.source, "imported": self.imported, "updated": self.updated,
                "merged": self.merged,
                "conflicts": [{"id": c.task, "where": c.where, "fields": list(c.fields)}
                              for c in self.conflicts],
                "unchanged": self.unchanged,
                "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
                "ids": self.ids, "seconds": round(self.seconds, 3)}


def _reason_kind(reason: str) -> str:
    """The first words of a reason, for the grouped count on the summary line."""
    head = reason.split(":", 1)[0] if ": " in reason else reason
    return head.split("(")[0].strip()


class Progress:
    """A one-line progress bar on ``stream`` (stderr), only when it is a terminal; at most
    ten redraws a second. ``NO_COLOR`` needs nothing: the bar is plain text."""

    def __init__(self, label: str, total: int, stream: IO[str] | None = None,
                 enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled) and total > 0
        self.label, self.total, self.done = label, total, 0.0
        self._last = 0.0

    def advance(self, n: float = 1) -> None:
        """Count ``n`` more tasks done (a fraction for one step of a task's writes)."""
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            width = 30
            filled = int(width * self.done // self.total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'-' * (width - filled)}] "
                              f"{int(self.done)}/{self.total}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (len(self.label) + 50) + "\r")
            self.stream.flush()


def print_summary(summary: Summary, out: IO[str], err: IO[str]) -> None:
    """The summary line on ``out``; conflicts and skipped entries on ``err``, at most
    MAX_LISTED of each."""
    for conflict in summary.conflicts[:MAX_LISTED]:
        err.write(f"ledgit: conflict: {conflict}\n")
    if len(summary.conflicts) > MAX_LISTED:
        err.write(f"ledgit: ... and {len(summary.conflicts) - MAX_LISTED} more conflicts "
                  f"(see: --json)\n")
    for skip in summary.skipped[:MAX_LISTED]:
        err.write(f"ledgit: skipped {skip}\n")
    if len(summary.skipped) > MAX_LISTED:
        err.write(f"ledgit: ... and {len(summary.skipped) - MAX_LISTED} more skipped "
                  f"(see: --json)\n")
    out.write(summary.line() + "\n")
