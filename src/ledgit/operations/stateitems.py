"""State items, trust and handoff (DESIGN §5): adding an item, the owner accepting (locking)
candidates, a state revision that supersedes items, a worker's writeback, the handoff
packet. Pure: ``Record (+ arguments) -> Change``.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import NOT_FOUND, LedgitError
from ledgit.core.readout import (
    handoff_of,
)
from ledgit.core.record import Record
from ledgit.core.revision import sha256_hex
from ledgit.core.schema import ITEM_KINDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
from ledgit.operations.changes import (
    check_settable,
    copy_fields,
    fail,
    finish,
    need_text,
    set_field,
)

# --------------------------------------------------------------------------- items


def item_id(task: str, by: str, now: str, kind: str, text: str, salt: int = 0) -> str:
    """A short item id derived from its content: ``i-`` + 8 lower-case base32 characters
    (40 bits of sha256). Deterministic, so a replayed or merged item keeps its id."""

    digest = bytes.fromhex(sha256_hex(f"{task}\0{by}\0{now}\0{kind}\0{text}\0{salt}".encode()))
    return "i-" + base64.b32encode(digest).decode("ascii")[:8].lower()


def new_item(record: Record, *, kind: str, text: str, by: str, now: str,
              why: str | None = None, evidence: str | None = None, trust: str = "candidate",
              supersedes: Sequence[str] = (), extra: Mapping[str, Any] | None = None,
              taken: Iterable[str] = ()) -> dict[str, Any]:
    if kind not in ITEM_KINDS:
        raise fail(f"unknown item kind {kind!r} (one of {', '.join(ITEM_KINDS)})")
    text = need_text(text, "an item needs text: --text TEXT")
    used = {i["id"] for i in record.fields.get("items", [])} | set(taken)
    salt = 0
    iid = item_id(record.id, by, now, kind, text)
    while iid in used:
        salt += 1
        iid = item_id(record.id, by, now, kind, text, salt)
    item: dict[str, Any] = {"id": iid, "kind": kind, "text": text}
    if why and why.strip():
        item["why"] = why.strip()
    if evidence and evidence.strip():
        item["evidence"] = evidence.strip()
    item.update({"trust": trust, "by": by, "at": now})
    if supersedes:
        item["supersedes"] = list(supersedes)
    if extra:
        item["x"] = dict(extra)
    return item


def may_lock(record: Record, by: str, trusted: bool) -> bool:
    """True when ``by`` may lock state: the task's owner, or a trusted workflow."""
    return trusted or (bool(record.fields.get("owner")) and record.fields.get("owner") == by)


def _lock_refusal(record: Record, by: str, what: str) -> LedgitError:
    owner = record.fields.get("owner")
    who = f"the owner ({owner})" if owner else "the owner (none set: update --owner)"
    return fail(f"{record.id}: only {who} or --trusted may {what}; {by} is not the owner")


def resolve_item(record: Record, text: str) -> dict[str, Any]:
    """The item whose id is ``text`` or starts with it (unique); exit 4 otherwise."""
    items: list[dict[str, Any]] = record.fields.get("items", [])
    exact = [i for i in items if i["id"] == text]
    if exact:
        return exact[0]
    found = [i for i in items if text and i["id"].startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise fail(f"{record.id}: no item {text!r}", NOT_FOUND)
    raise fail(f"{record.id}: item {text!r} is ambiguous: "
               + ", ".join(i["id"] for i in found), NOT_FOUND)


def item_add(record: Record, *, kind: str, text: str, by: str, now: str,
             why: str | None = None, evidence: str | None = None, lock: bool = False,
             trusted: bool = False) -> Change:
    """Add a state item, candidate by default (``lock`` needs the owner or ``trusted``).
    The new id is in the meta as ``item``."""
    if lock and not may_lock(record, by, trusted):
        raise _lock_refusal(record, by, "add locked items")
    item = new_item(record, kind=kind, text=text, by=by, now=now, why=why,
                     evidence=evidence, trust="locked" if lock else "candidate")
    f = copy_fields(record)
    f["items"] = [*f.get("items", []), item]
    return finish(record, f, "item", f"{kind}: {item['text']}",
                  {"item": item["id"], "trust": item["trust"]})


def _apply_proposal(f: dict[str, Any], item: Mapping[str, Any]) -> str | None:
    """Apply a writeback's proposed field (``x.field``/``x.value``) on acceptance."""
    x = item.get("x") or {}
    name = x.get("field")
    if not name:
        return None
    set_field(f, str(name), str(x.get("value", "")))
    return str(name)


def accept(record: Record, *, items: Sequence[str], by: str, now: str,
           trusted: bool = False) -> Change:
    """Lock candidate items (only the owner or ``trusted``; exit 2 otherwise).

    Accepting an item that supersedes others deprecates them; accepting a writeback's field
    proposal applies it. Refused: unknown item (exit 4), a deprecated item, nothing to lock.
    """
    if not items:
        raise fail("accept needs at least one ITEM id")
    if not may_lock(record, by, trusted):
        raise _lock_refusal(record, by, "accept items")
    f = copy_fields(record)
    by_id = {i["id"]: i for i in f.get("items", [])}
    chosen: list[str] = []
    for text in items:
        iid = resolve_item(record, text)["id"]
        item = by_id[iid]
        if item["trust"] == "deprecated":
            raise fail(f"{record.id}: item {iid} is deprecated{_superseded_by(item)}")
        if item["trust"] == "candidate" and iid not in chosen:
            chosen.append(iid)
    if not chosen:
        raise fail(f"{record.id}: nothing to accept: already locked")
    deprecated: list[str] = []
    applied: list[str] = []
    for iid in chosen:
        item = by_id[iid]
        item["trust"] = "locked"
        for old in item.get("supersedes", []):
            target = by_id.get(old)
            if target is not None and target["trust"] != "deprecated":
                _deprecate(target, iid)
                deprecated.append(old)
        name = _apply_proposal(f, item)
        if name:
            applied.append(name)
    f["items"] = list(by_id.values())
    meta: dict[str, Any] = {"accepted": chosen, "trusted": trusted}
    if deprecated:
        meta["supersedes"] = deprecated
    if applied:
        meta["fields"] = applied
    return finish(record, f, "accept", None, meta)


def _superseded_by(item: Mapping[str, Any]) -> str:
    """`` (superseded by A, B)`` naming the items that superseded ``item``; empty when none
    is recorded (e.g. imported deprecated, or deprecated by a merge): "deprecated" alone."""
    later = [str(i) for i in item.get("superseded_by") or []]
    return f" (superseded by {', '.join(later)})" if later else ""


def _deprecate(item: dict[str, Any], by_item: str) -> None:
    item["trust"] = "deprecated"
    later = list(item.get("superseded_by", []))
    if by_item not in later:
        later.append(by_item)
    item["superseded_by"] = later


def revise(record: Record, *, supersedes: Sequence[str], text: str, by: str, now: str,
           kind: str | None = None, why: str | None = None, evidence: str | None = None,
           trusted: bool = False) -> Change:
    """A state revision: a new item that supersedes ``supersedes`` (which become deprecated,
    with ``superseded_by``); the event meta lists ``supersedes`` and the new ``item``.

    The new item is locked when ``by`` is the owner or ``trusted``, else candidate. Locked
    state is the owner's: a non-owner may supersede only candidate items (exit 2 otherwise),
    so a worker cannot silently unlock accepted state. ``kind`` defaults to the first
    superseded item's kind.
    """
    if not supersedes:
        raise fail("revise needs --supersedes ITEM")
    owner_ok = may_lock(record, by, trusted)
    f = copy_fields(record)
    by_id = {i["id"]: i for i in f.get("items", [])}
    olds: list[str] = []
    for t in supersedes:
        item = resolve_item(record, t)
        if item["trust"] == "deprecated":
            later = item.get("superseded_by") or []
            raise fail(f"{record.id}: item {item['id']} is already deprecated"
                       f"{_superseded_by(item)}; "
                       + ("revise the newer item" if later else "revise a current item"))
        if item["trust"] == "locked" and not owner_ok:
            raise _lock_refusal(record, by, f"supersede locked item {item['id']}")
        if item["id"] not in olds:
            olds.append(item["id"])
    new = new_item(record, kind=kind or by_id[olds[0]]["kind"], text=text, by=by, now=now,
                    why=why, evidence=evidence,
                    trust="locked" if owner_ok else "candidate", supersedes=olds)
    for old in olds:
        _deprecate(by_id[old], new["id"])
    f["items"] = [*by_id.values(), new]
    return finish(record, f, "revise", None,
                  {"item": new["id"], "supersedes": olds, "trust": new["trust"]})


# --------------------------------------------------------------------------- writeback


def writeback(record: Record, *, by: str, now: str, evidence: str | None,
              sets: Sequence[tuple[str, str]] = (), artifacts: Sequence[str] = (),
              gate: str | None = None, trusted: bool = False) -> Change:
    """A worker's report: changed fields, artifacts, verification ``evidence`` (required,
    exit 2) and the remaining ``gate``.

    From anyone but the owner (or ``trusted``) it lands as candidate items only: an
    ``artifact`` item per artifact, a ``fact`` item per proposed field change (``x.field``,
    ``x.value``; applied when the owner accepts it), a ``blocker`` item proposing the gate,
    and with none of those one ``fact`` item holding the evidence. From the owner the items are
    locked and the fields are set at once. The meta lists the new ``items``.
    """
    proof = (evidence or "").strip()
    if not proof:
        raise fail(f"{record.id}: writeback needs verification evidence: --evidence TEXT")
    owner_ok = may_lock(record, by, trusted)
    trust = "locked" if owner_ok else "candidate"
    proposals = list(sets)
    if gate is not None and gate.strip():
        proposals.append(("gate", gate))
    f = copy_fields(record)
    new: list[dict[str, Any]] = []

    def add(kind: str, text: str, extra: Mapping[str, Any] | None = None) -> None:
        new.append(new_item(record, kind=kind, text=text, by=by, now=now, evidence=proof,
                             trust=trust, extra=extra, taken=[i["id"] for i in new]))

    for name, value in proposals:
        check_settable(name)
        set_field(dict(f), name, value)  # validate the value now, not at accept time
        kind = "blocker" if name == "gate" else "fact"
        add(kind, f"{name}: {value.strip() or '(unset)'}", {"field": name, "value": value})
    for artifact in artifacts:
        add("artifact", artifact)
    if not new:
        add("fact", proof)
    applied: list[str] = []
    if owner_ok:
        for item in new:
            proposed = _apply_proposal(f, item)
            if proposed:
                applied.append(proposed)
    f["items"] = [*f.get("items", []), *new]
    meta: dict[str, Any] = {"items": [i["id"] for i in new], "trust": trust}
    if proposals:
        meta["proposed"] = [n for n, _ in proposals]
    if applied:
        meta["fields"] = applied
    return finish(record, f, "writeback", proof, meta)


# --------------------------------------------------------------------------- handoff


def handoff_packet(record: Record) -> dict[str, Any]:
    """The compact handoff packet of a record: see :func:`ledgit.core.readout.handoff_of`."""
    return handoff_of(record.fields, record.body, record.revision)
