"""What an importer hands the bulk import (:mod:`ledgit.interop.bulkimport`): the records it
read (:class:`Incoming`, with the source's own history as :class:`Step` s) and the entries it
could not (:class:`Skip`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ledgit.core.record import Record


class Skip(NamedTuple):
    """A source entry that was not imported: where it is (``file:line``) and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class Step(NamedTuple):
    """One event of a source's own history, carried over: the record after it, when, who,
    the source's operation name (kept in ``meta``) and a note."""

    record: Record
    at: str
    actor: str
    op: str
    note: str | None = None
    meta: dict[str, Any] | None = None


class Incoming(NamedTuple):
    """A record to import. ``steps``: the source's history, oldest first, whose last record
    may differ from ``record`` (an unrecorded edit: one more event is added); empty → one
    genesis event. ``source_id`` names it in notes and meta."""

    record: Record
    where: str
    source_id: str
    steps: tuple[Step, ...] = ()


def source_meta(record: Record, source: str) -> Mapping[str, Any]:
    """The record's ``x.<source>`` map (empty when absent)."""
    value = record.fields.get("x", {}).get(source, {})
    return value if isinstance(value, Mapping) else {}
