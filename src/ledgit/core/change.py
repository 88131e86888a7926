"""What an operation did (:class:`Change`): the value every transition of
:mod:`ledgit.operations.transitions`
returns and the board's write path reads. Pure.

This module alone has no ``from __future__ import annotations``, on purpose: typing.NamedTuple
turns each string annotation into a ForwardRef, compiling it, which cost 1.2 ms of every
write (four fields, the first compile of the process); real types cost nothing more.
"""

from typing import Any, NamedTuple

from ledgit.core.record import Record


class Change(NamedTuple):
    """What an operation did: the new record, the event's op name, its note and its
    JSON-ready meta (None when absent). A tuple, as the board's write path reads it."""

    record: Record
    op: str
    note: str | None = None
    meta: dict[str, Any] | None = None
