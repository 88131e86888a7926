"""The history a newly imported task gets (docs/interop.md): one genesis ``create`` event,
its canonical JSON line built directly from the record's encoded body and fields (the bulk
import's hot loop), or the source's own history carried over as a hash-linked chain."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ledgit.core.canonjson import plain_encoder
from ledgit.core.history import new_event

if TYPE_CHECKING:
    from ledgit.core.history import Event
    from ledgit.core.record import Record
    from ledgit.interop.incoming import Incoming


IMPORT_OP = "import"


def genesis_events(item: Incoming, actor: str, source: str) -> list[Event]:
    """The history of a newly imported task: the source's steps as a hash-linked chain (the
    first one the genesis), then one ``import`` event if the record differs from the last
    step; or a single genesis ``create`` event at the record's ``last_modified``."""

    meta_base = {"source": source, "source_id": item.source_id}
    if not item.steps:
        return [_genesis(item.record, item.record.fields["last_modified"], actor,
                         f"imported from {source} {item.source_id}", meta_base)]
    events: list[Event] = []
    state: dict[str, Any] = {}
    for n, step in enumerate(item.steps):
        after = step.record.state()
        if n and after == state:
            continue
        op = "create" if n == 0 else IMPORT_OP
        meta = dict(meta_base)
        if step.op != op:
            meta["source_op"] = step.op
        if step.meta:
            meta.update(step.meta)
        if n == 0:
            event = _genesis(step.record, step.at, step.actor, step.note, meta)
        else:
            event = new_event(parents=[events[-1]["id"]], at=step.at, actor=step.actor, op=op,
                              before_state=state, after_state=after, note=step.note, meta=meta)
        events.append(event)
        state = after
    final = item.record.state()
    if final != state:
        events.append(new_event(parents=[events[-1]["id"]],
                                at=item.record.fields["last_modified"], actor=actor,
                                op=IMPORT_OP, before_state=state, after_state=final,
                                note=f"current state of {source} {item.source_id}",
                                meta=meta_base))
    return events


def _canonical(value: Any) -> bytes:
    """Canonical JSON of ``value`` as bytes (revision.canonical_json without its float walk:
    a Record's state never holds a float -- make_record refuses them -- and neither do the
    notes and meta built here); the C encoder is built once (ledgit.core.canonjson)."""
    return _encode(value).encode("utf-8")


_encode = plain_encoder()


def _genesis(record: Record, at: str, actor: str, note: str | None,
             meta: Mapping[str, Any] | None) -> Event:
    """A genesis ``create`` event for ``record``, its patch written directly: adding the
    body, then the fields, to ``{}`` (history.new_event's jsonpatch would add them in the
    other order; both replay to the same state, and these are the bytes imports write)."""
    return json.loads(_genesis_line(record, at, actor, note, meta))  # type: ignore[no-any-return]


def _genesis_line(record: Record, at: str, actor: str, note: str | None,
                  meta: Mapping[str, Any] | None) -> bytes:
    """The history line (canonical JSON + ``\n``) of :func:`_genesis`'s event, built with the
    body and the fields encoded once: the state's hash, the patch and the event id all reuse
    those two texts (canonical JSON sorts keys: the event's are actor, after, at, before, id,
    meta, note, op, parents, patch; a patch operation's are op, path, value)."""
    return _genesis_encoded(_encoded(record), at, actor, note, meta)


def _encoded(record: Record) -> tuple[bytes, bytes, str]:
    """(canonical JSON of the body, of the fields, the record's revision: the sha256 of the
    state's canonical JSON ``{"body":...,"fields":...}``, as revision.revision_of computes
    it), each text encoded once."""
    body = _canonical(record.body)
    fields = _canonical(record.fields)
    return body, fields, hashlib.sha256(b'{"body":' + body + b',"fields":' + fields
                                        + b"}").hexdigest()


def _genesis_encoded(encoded: tuple[bytes, bytes, str], at: str, actor: str,
                     note: str | None, meta: Mapping[str, Any] | None) -> bytes:
    """:func:`_genesis_line` from the record's :func:`_encoded` texts."""
    body, fields, after = encoded
    head = (b'{"actor":' + _canonical(actor) + b',"after":"' + after.encode("ascii")
            + b'","at":' + _canonical(at) + b',"before":null')
    tail = ((b',"meta":' + _canonical(dict(meta)) if meta else b"")
            + (b',"note":' + _canonical(note) if note else b"")
            + b',"op":"create","parents":[],"patch":[{"op":"add","path":"/body","value":'
            + body + b'},{"op":"add","path":"/fields","value":' + fields + b"}]}")
    event_id = hashlib.sha256(head + tail).hexdigest().encode("ascii")
    return head + b',"id":"' + event_id + b'"' + tail + b"\n"


def history_bytes(item: Incoming, actor: str, source: str) -> bytes:
    """The history file a newly imported ``item`` gets: :func:`genesis_events`, one
    canonical JSON line each (the single-genesis case without building the event twice)."""
    return history_and_revision(item, actor, source)[0]


def history_and_revision(item: Incoming, actor: str, source: str) -> tuple[bytes, str]:
    """(:func:`history_bytes`, the revision of ``item.record``): the single-genesis case
    encodes the record once for both."""
    encoded = _encoded(item.record)
    if not item.steps:
        return _genesis_encoded(encoded, item.record.fields["last_modified"], actor,
                                f"imported from {source} {item.source_id}",
                                {"source": source, "source_id": item.source_id}), encoded[2]
    return (b"".join(_canonical(e) + b"\n" for e in genesis_events(item, actor, source)),
            encoded[2])
