"""The history a newly imported task gets (docs/interop.md): its import root -- a genesis
``create`` event that depends on the task's id and ``created`` alone
(:mod:`ledgit.core.importroot`), so that every import of one task shares it -- then one
``import`` event bringing the record, its canonical JSON line built directly from the
record's encoded body and fields (the bulk import's hot loop); or the source's own history
carried over as a hash-linked chain of ``import`` events under the root."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ledgit.core.canonjson import plain_encoder
from ledgit.core.history import new_event
from ledgit.core.importroot import ROOT_ACTOR, ROOT_NOTE, root_fields, root_record

if TYPE_CHECKING:
    from ledgit.core.history import Event
    from ledgit.core.record import Record
    from ledgit.interop.incoming import Incoming


IMPORT_OP = "import"


def genesis_events(item: Incoming, actor: str, source: str) -> list[Event]:
    """The history of a newly imported task: its import root (:func:`root_line`), then the
    source's steps as a hash-linked chain of ``import`` events (``meta.source_op``: the
    source's operation), then one more if the record differs from the last step; or, with
    no steps, one ``import`` event of the record at its ``last_modified``."""
    line, root_id, root_after = root_line(item.record)
    root: Event = json.loads(line)
    meta_base = {"source": source, "source_id": item.source_id}
    if not item.steps:
        return [root, json.loads(_import_line(
            _encoded(item.record), item.record.fields["last_modified"], (root_id, root_after),
            actor, source, item.source_id))]
    events: list[Event] = [root]
    state: dict[str, Any] = root_record(item.record.id, item.record.fields["created"]).state()
    for step in item.steps:
        after = step.record.state()
        if after == state:
            continue
        meta = dict(meta_base)
        if step.op != IMPORT_OP:
            meta["source_op"] = step.op
        if step.meta:
            meta.update(step.meta)
        event = new_event(parents=[events[-1]["id"]], at=step.at, actor=step.actor,
                          op=IMPORT_OP, before_state=state, after_state=after, note=step.note,
                          meta=meta)
        events.append(event)
        state = after
    final = item.record.state()
    if final != state:
        events.append(new_event(parents=[events[-1]["id"]],
                                at=item.record.fields["last_modified"], actor=actor,
                                op=IMPORT_OP, before_state=state, after_state=final,
                                note=f"current state of {source} {item.source_id}",
                                meta=meta_base))
    assert events[0]["id"] == root_id
    return events


def _canonical(value: Any) -> bytes:
    """Canonical JSON of ``value`` as bytes (revision.canonical_json without its float walk:
    a Record's state never holds a float -- make_record refuses them -- and neither do the
    notes and meta built here); the C encoder is built once (ledgit.core.canonjson)."""
    return _encode(value).encode("utf-8")


_encode = plain_encoder()


def _encoded(record: Record) -> tuple[bytes, bytes, str]:
    """(canonical JSON of the body, of the fields, the record's revision: the sha256 of the
    state's canonical JSON ``{"body":...,"fields":...}``, as revision.revision_of computes
    it), each text encoded once."""
    body = _canonical(record.body)
    fields = _canonical(record.fields)
    return body, fields, hashlib.sha256(b'{"body":' + body + b',"fields":' + fields
                                        + b"}").hexdigest()


def _line(head: bytes, tail: bytes) -> bytes:
    """An event line (canonical JSON + ``\n``) from its members before ``id`` (``head``:
    actor, after, at, before) and after it (``tail``: meta, note, op, parents, patch, with
    the closing brace): canonical JSON sorts keys, so the id goes between the two."""
    event_id = hashlib.sha256(head + tail).hexdigest().encode("ascii")
    return head + b',"id":"' + event_id + b'"' + tail + b"\n"


def root_line(record: Record) -> tuple[bytes, str, str]:
    """(the history line of the import root of ``record``'s id and ``created``
    (:mod:`ledgit.core.importroot`), its event id, its revision). Its patch is ``[add
    /fields, add /body]`` on ``{}``."""
    created = record.fields["created"]
    # the root of a valid record's id and time is valid (verify replays it in
    # tests/test_interop_import.py): encoded without make_record's checks, half the cost
    body, fields = b'""', _canonical(root_fields(record.id, created))
    after = hashlib.sha256(b'{"body":"","fields":' + fields + b"}").hexdigest()
    head = (b'{"actor":' + _canonical(ROOT_ACTOR) + b',"after":"' + after.encode("ascii")
            + b'","at":' + _canonical(created) + b',"before":null')
    tail = (b',"note":' + _canonical(ROOT_NOTE)
            + b',"op":"create","parents":[],"patch":[{"op":"add","path":"/fields","value":'
            + fields + b'},{"op":"add","path":"/body","value":' + body + b"}]}")
    line = _line(head, tail)
    return line, line[line.index(b',"id":"') + 7:][:64].decode("ascii"), after


def _import_line(encoded: tuple[bytes, bytes, str], at: str, root: tuple[str, str],
                 actor: str, source: str, source_id: str) -> bytes:
    """The ``import`` event line taking the import root (``root``: its event id and
    revision) to the record whose :func:`_encoded` texts are ``encoded``, stamped ``at``
    (the record's ``last_modified``), built directly: patch ``[replace /fields, replace
    /body]``, ``meta {source, source_id}``."""
    body, fields, after = encoded
    root_id, root_after = root
    head = (b'{"actor":' + _canonical(actor) + b',"after":"' + after.encode("ascii")
            + b'","at":' + _canonical(at) + b',"before":"' + root_after.encode("ascii") + b'"')
    tail = (b',"meta":' + _canonical({"source": source, "source_id": source_id})
            + b',"note":' + _canonical(f"imported from {source} {source_id}")
            + b',"op":"import","parents":["' + root_id.encode("ascii")
            + b'"],"patch":[{"op":"replace","path":"/fields","value":' + fields
            + b'},{"op":"replace","path":"/body","value":' + body + b"}]}")
    return _line(head, tail)


def history_bytes(item: Incoming, actor: str, source: str) -> bytes:
    """The history file a newly imported ``item`` gets: :func:`genesis_events`, one
    canonical JSON line each (the single-genesis case without building the event twice)."""
    return history_and_revision(item, actor, source)[0]


def history_and_revision(item: Incoming, actor: str, source: str) -> tuple[bytes, str]:
    """(:func:`history_bytes`, the revision of ``item.record``): the case without steps
    encodes the record once for both."""
    encoded = _encoded(item.record)
    if not item.steps:
        root, root_id, root_after = root_line(item.record)
        return root + _import_line(encoded, item.record.fields["last_modified"],
                                   (root_id, root_after), actor, source,
                                   item.source_id), encoded[2]
    return (b"".join(_canonical(e) + b"\n" for e in genesis_events(item, actor, source)),
            encoded[2])
