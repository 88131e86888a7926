"""Beads ``issues.jsonl`` objects <-> ledgit records (docs/interop.md, "Beads"). Pure.

The mapping is deterministic (the same source object gives the same record, whatever the
order of its keys) and lossless up to what "not set" means: Beads leaves empty values out
(``""``, ``[]``, ``null``), so :func:`normalize_beads` drops them before mapping, and text is
NFC-normalised with LF line ends like every ledgit record. The law, checked by the tests on
the whole real snapshot: ``record_to_beads(beads_to_record(o)) == normalize_beads(o)``.

Where things go:

- first-class fields: ``id`` → ``id`` (when it is a valid ledgit id), ``title``, ``status``
  (:data:`STATUS_MAP`), ``priority`` (int 0-4), ``assignee`` → ``worker``, ``owner``,
  ``labels``, ``close_reason`` → ``response``, blocking ``dependencies`` → ``depends_on``,
  ``created_at`` → ``created``, ``updated_at`` → ``last_modified`` (the same instant, UTC, µs);
- the body: ``description``, then ``design``, ``acceptance_criteria`` and ``notes`` as
  sections, each opened by a heading and a marker comment (so Git merges them line by line);
- ``x.beads``: everything else, verbatim when it is a string or a list of strings; any other
  value (an int, a bool, an object) is kept as its canonical JSON text under ``x.beads.json``.
  ``dependencies`` and ``comments`` are maps (keyed by target id / by content) so that two
  branches adding different entries merge as a union. A timestamp whose text is not already
  the canonical UTC form is kept verbatim beside the converted instant.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.merge import NO_ACCOUNT
from ledgit.core.record import Record, make_record
from ledgit.core.schema import is_valid_id
from ledgit.core.timestamps import format_timestamp, normalize_timestamp, parse_timestamp
from ledgit.interop.sources import read_jsonl

if TYPE_CHECKING:
    from ledgit.interop.incoming import Incoming, Skip

SOURCE = "beads"

#: Beads status -> ledgit status. Statuses not listed map to ``open`` and keep their name in
#: ``x.beads.status``; so does every status whose inverse (:data:`STATUS_BACK`) is another.
STATUS_MAP = {
    "open": "open",
    "in_progress": "in_progress",
    "closed": "done",  # needs an account: close_reason, else CLOSED_FALLBACK
    "tombstone": "archived",  # deleted_at/deleted_by/delete_reason/original_type under x.beads
    "blocked": "waiting",  # waiting_on = BLOCKED_WAITING_ON
    "deferred": "parked",  # outcome {kind: park, reason: DEFERRED_REASON}
    "pinned": "monitoring",  # kept in view, manufactures no work
    "hooked": "in_progress",  # on an agent's hook (Gas Town): being worked; x.beads.status
}
#: ledgit status -> Beads status, for :func:`record_to_beads`.
STATUS_BACK = {
    "open": "open",
    "in_progress": "in_progress",
    "done": "closed",
    "archived": "tombstone",
    "waiting": "blocked",
    "parked": "deferred",
    "monitoring": "pinned",
    "dropped": "closed",
}
CLOSED_FALLBACK = NO_ACCOUNT  # "(closed without an account)"
BLOCKED_WAITING_ON = "a blocker (Beads status 'blocked'; see depends_on)"
DEFERRED_REASON = "deferred in Beads"
#: Dependency types that gate readiness (the dependent waits for the target to be done).
#: ``parent-child`` does not: an epic closes after its children.
BLOCKING_TYPES = ("blocks", "blocked-by")
#: Text fields kept as body sections after the description: (key, heading).
SECTIONS = (("design", "Design"), ("acceptance_criteria", "Acceptance Criteria"),
            ("notes", "Notes"))
_TEXT_KEYS = ("description", *(k for k, _ in SECTIONS))
_MARKER = "<!-- beads:{} -->"
_MARKER_LINE = re.compile(r"^<!-- beads:(?:design|acceptance_criteria|notes) -->$", re.M)
_SECTION_HEAD = re.compile(r"^## [^\n]*\n<!-- beads:(design|acceptance_criteria|notes) -->\n",
                           re.M)
_BREAKS = ("\n", "\r", "\u2028", "\u2029", "\x85")
_BREAK = re.compile("[" + "".join(_BREAKS) + "]")
#: What Beads writes (Go's RFC 3339 with a local offset): converted by datetime's C parser.
_OFFSET_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,6}[+-]\d\d:\d\d")
_KNOWN = frozenset(("id", "title", "status", "priority", "assignee", "owner", "labels",
                    "dependencies", "comments", "close_reason", "created_at", "updated_at",
                    "description", *(k for k, _ in SECTIONS)))


def normalize_beads(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without empty values (``None``, ``""``, ``[]``, ``{}``): Beads' own
    serializer leaves them out, so they carry no information."""
    return {k: v for k, v in obj.items() if v not in (None, "", [], {})}


#: Keys whose lists are sets in Beads (rows of SQL tables): compared without order.
SET_KEYS = ("labels", "dependencies", "comments")


def beads_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two normalised Beads objects hold the same data (SET_KEYS without order)."""
    return set(a) == set(b) and all(same_value(k, a[k], b[k]) for k in a)


def same_value(key: str, a: Any, b: Any) -> bool:
    """Equality of one key's values; lists under SET_KEYS compare as multisets."""
    if key in SET_KEYS and isinstance(a, list) and isinstance(b, list):
        return sorted(_json_text(v) for v in a) == sorted(_json_text(v) for v in b)
    return bool(_json_text(a) == _json_text(b))


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pack(mapping: Mapping[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A source mapping as an ``x`` mapping: strings and non-empty lists of strings verbatim,
    anything else (and a key named ``json``) as canonical JSON text under ``json``. Keys
    sorted; ``skip`` left out."""
    out: dict[str, Any] = {}
    encoded: dict[str, str] = {}
    for key in sorted(mapping):
        if key in skip:
            continue
        value = mapping[key]
        if key != "json" and (isinstance(value, str) or (
                isinstance(value, list) and value and all(isinstance(v, str) for v in value))):
            out[key] = list(value) if isinstance(value, list) else value
        else:
            encoded[key] = _json_text(value)
    if encoded:
        out["json"] = encoded
    return out


def unpack(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`pack` (values under ``json`` decoded; ``null`` means absent)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if key == "json" and isinstance(value, Mapping):
            for jkey, jtext in value.items():
                try:
                    out[jkey] = json.loads(jtext)
                except (TypeError, ValueError, RecursionError):
                    out[jkey] = jtext
        else:
            out[key] = value
    return {k: v for k, v in out.items() if v is not None}


def derived_id(source_id: str) -> str:
    """A ledgit id for a source id that is not a valid one: ``B-`` + 12 base32 characters of
    its sha256 (deterministic; the source id is kept in ``x.beads.id``)."""
    digest = hashlib.sha256(source_id.encode("utf-8")).digest()
    return "B-" + base64.b32encode(digest).decode("ascii").lower()[:12]


def _one_line(text: str) -> bool:
    if text.isascii():  # the common case: only \n and \r of _BREAKS are ASCII
        return "\n" not in text and "\r" not in text and bool(text.strip())
    return bool(text.strip()) and not _BREAK.search(text)


def _timestamp(value: Any, key: str, where: str) -> tuple[str, str | None]:
    """(canonical UTC µs text, the source text when it differs). Raises LedgitError."""
    if not isinstance(value, str):
        raise LedgitError(located(f"expected an RFC 3339 timestamp, got {_json_text(value)}",
                                  where, None, key), USAGE)
    try:
        canonical = _fast_timestamp(value) or normalize_timestamp(value)
    except ValueError as exc:
        raise LedgitError(located(str(exc), where, None, key), USAGE) from None
    return canonical, (None if canonical == value else value)


def _fast_timestamp(text: str) -> str | None:
    """:func:`normalize_timestamp` of the form Beads writes (``.123456-08:00``), parsed by
    ``datetime.fromisoformat`` directly (what normalize_timestamp does after its own regex
    and rebuilding of the text); None for any other form, or when the parse fails (the
    caller then gets normalize_timestamp's own answer or error)."""
    if not _OFFSET_TIMESTAMP.fullmatch(text):
        return None

    try:
        moment = datetime.fromisoformat(text).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None
    # format_timestamp's text, by the C formatter: "+00:00" -> "Z" (checked on every
    # timestamp of the real snapshot; isoformat zero-pads the year to four digits too).
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


def _dependencies(deps: list[Any], issue_id: str) -> dict[str, Any] | None:
    """Dependencies as a map keyed by target id (None when an entry is not an object with a
    string ``depends_on_id``): two branches adding different targets merge as a union."""
    out: dict[str, Any] = {}
    for dep in deps:
        if not isinstance(dep, Mapping) or not isinstance(dep.get("depends_on_id"), str):
            return None
        target = dep["depends_on_id"]
        key, n = target, 1
        while key in out:
            n += 1
            key = f"{target}#{n}"
        skip = ["depends_on_id"] if key == target else []
        if dep.get("issue_id") == issue_id:
            skip.append("issue_id")
        out[key] = pack(dep, tuple(skip))
    return out


def _comments(comments: list[Any], issue_id: str) -> dict[str, Any] | None:
    """Comments as a map keyed by a hash of their content (their ``id`` and ``created_at``
    are not stable across branches): additions on two branches merge as a union."""
    out: dict[str, Any] = {}
    for comment in comments:
        if not isinstance(comment, Mapping):
            return None
        material = {k: v for k, v in comment.items() if k not in ("id", "created_at",
                                                                  "issue_id")}
        base = "c-" + hashlib.sha256(_json_text(material).encode("utf-8")).hexdigest()[:12]
        key, n = base, 1
        while key in out:
            n += 1
            key = f"{base}-{n}"
        skip = ("issue_id",) if comment.get("issue_id") == issue_id else ()
        out[key] = pack(comment, skip)
    return out


def _body(texts: Mapping[str, str]) -> str:
    """description, then one section per SECTIONS text; each text gets one ``\\n`` so the
    inverse knows exactly where it ended."""
    segments: list[str] = []
    if "description" in texts:
        segments.append(texts["description"] + "\n")
    for key, heading in SECTIONS:
        if key in texts:
            segments.append(f"## {heading}\n{_MARKER.format(key)}\n{texts[key]}\n")
    return "\n".join(segments)


def split_body(body: str) -> dict[str, str]:
    """Inverse of the body layout: ``{"description": ..., "design": ..., ...}``."""
    out: dict[str, str] = {}
    if not body:
        return out
    marks = list(_SECTION_HEAD.finditer(body))
    bounds = [m.start() for m in marks] + [len(body)]
    head = body[:bounds[0]]
    if head:
        out["description"] = _strip_tail(head, last=not marks)
    for i, m in enumerate(marks):
        chunk = body[m.end():bounds[i + 1]]
        out[m.group(1)] = _strip_tail(chunk, last=i == len(marks) - 1)
    return {k: v for k, v in out.items() if v}


def _strip_tail(chunk: str, *, last: bool) -> str:
    for suffix in (("\n",) if last else ("\n\n", "\n")):
        if chunk.endswith(suffix):
            return chunk[:-len(suffix)]
    return chunk


def beads_to_record(obj: Any, where: str = "<beads>") -> Record:
    """Map one Beads issue object onto a validated Record (deterministic, see the module doc).

    Raises LedgitError (exit 2) naming ``where`` and the field when the object cannot be a
    task: not an object; ``id``, ``title`` or ``status`` missing or not a string; a
    ``created_at``/``updated_at`` that is not an RFC 3339 timestamp.
    """
    if obj.__class__ is not dict and not isinstance(obj, Mapping):  # (dict: the fast test)
        raise LedgitError(located("expected a JSON object (one issue per line)", where), USAGE)
    src = normalize_beads(obj)
    for key in ("id", "title", "status", "created_at"):
        if not isinstance(src.get(key), str):
            what = "missing" if key not in src else "not a string"
            raise LedgitError(located(f"{what} (a Beads issue needs it)", where, None, key),
                              USAGE)
    sid: str = src["id"]
    fields: dict[str, Any] = {}
    x: dict[str, Any] = {}
    rest = {k: v for k, v in src.items() if k not in _KNOWN}

    fields["id"] = sid if is_valid_id(sid) else derived_id(sid)
    if fields["id"] != sid:
        x["id"] = sid
    title: str = src["title"]
    if _one_line(title):
        fields["title"] = title
    else:
        fields["title"] = " ".join(title.split()) or "(untitled)"
        x["title"] = title

    status: str = src["status"]
    mapped = STATUS_MAP.get(status, "open")
    fields["status"] = mapped
    if STATUS_BACK[mapped] != status:
        x["status"] = status
    if mapped == "waiting":
        fields["waiting_on"] = BLOCKED_WAITING_ON
    elif mapped == "parked":
        fields["outcome"] = {"kind": "park", "reason": DEFERRED_REASON}

    priority = src.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool) and 0 <= priority <= 4:
        fields["priority"] = priority
    elif "priority" in src:
        rest["priority"] = priority
    for key, target in (("assignee", "worker"), ("owner", "owner")):
        value = src.get(key)
        if isinstance(value, str) and _one_line(value):
            fields[target] = value
        elif key in src:
            rest[key] = value

    labels = src.get("labels")
    if (isinstance(labels, list) and all(isinstance(v, str) and _one_line(v) and v == v.strip()
                                         for v in labels) and len(set(labels)) == len(labels)):
        fields["labels"] = list(labels)
    elif "labels" in src:
        rest["labels"] = labels

    deps = src.get("dependencies")
    dep_map = _dependencies(deps, sid) if isinstance(deps, list) else None
    if dep_map is not None and isinstance(deps, list):
        x["dependencies"] = dep_map
        fields["depends_on"] = [
            d["depends_on_id"] for d in deps
            if d.get("type") in BLOCKING_TYPES and is_valid_id(d["depends_on_id"])
            and d["depends_on_id"] != fields["id"]]
    elif "dependencies" in src:
        rest["dependencies"] = deps
    comments = src.get("comments")
    comment_map = _comments(comments, sid) if isinstance(comments, list) else None
    if comment_map is not None:
        x["comments"] = comment_map
    elif "comments" in src:
        rest["comments"] = comments

    close_reason = src.get("close_reason")
    if isinstance(close_reason, str):
        fields["response"] = close_reason
        if close_reason == CLOSED_FALLBACK:
            x["close_reason"] = close_reason  # so the inverse cannot mistake it for "none"
    elif "close_reason" in src:
        rest["close_reason"] = close_reason
    if mapped == "done" and "response" not in fields:
        fields["response"] = CLOSED_FALLBACK

    fields["created"], verbatim = _timestamp(src["created_at"], "created_at", where)
    if verbatim is not None:
        x["created_at"] = verbatim
    if "updated_at" in src:
        fields["last_modified"], verbatim = _timestamp(src["updated_at"], "updated_at", where)
        if verbatim is not None:
            x["updated_at"] = verbatim
    else:
        fields["last_modified"] = fields["created"]

    texts = {k: src[k] for k in _TEXT_KEYS if isinstance(src.get(k), str)}
    for key in _TEXT_KEYS:
        if key in src and key not in texts:
            rest[key] = src[key]
    texts = {k: v.replace("\r\n", "\n").replace("\r", "\n") for k, v in texts.items()}
    if any(_MARKER_LINE.search(v) for v in texts.values()):
        x.update(texts)  # a text holding our own marker line stays out of the body
        body = ""
    else:
        body = _body(texts)

    packed = pack(rest)
    for key, value in packed.items():
        if key == "json":
            x.setdefault("json", {}).update(value)
        else:
            x[key] = value
    if "updated_at" not in src:
        x.setdefault("json", {})["updated_at"] = "null"
    if "json" in x:
        x["json"] = dict(sorted(x["json"].items()))
    if x:
        fields["x"] = {SOURCE: dict(sorted(x.items()))}
    return make_record(fields, body, where)


def record_to_beads(record: Record) -> dict[str, Any]:
    """Inverse of :func:`beads_to_record`, normalised (no empty values).

    Also reads records changed in ledgit: first-class fields win over stale copies in
    ``x.beads`` (a verbatim timestamp is used only while it is the same instant; a stored
    Beads status only while it still maps to the record's status; a blocking dependency
    removed from ``depends_on`` is left out, one added there becomes a ``blocks`` entry).
    """
    f = record.fields
    xb_raw: Mapping[str, Any] = f.get("x", {}).get(SOURCE, {})
    dep_map = xb_raw.get("dependencies")
    comment_map = xb_raw.get("comments")
    xb = unpack({k: v for k, v in xb_raw.items()
                 if not (k in ("dependencies", "comments") and isinstance(v, Mapping))})
    out: dict[str, Any] = {}
    sid = str(xb.pop("id", record.id))
    out["id"] = sid
    out["title"] = xb.pop("title", f["title"])
    for key, value in split_body(record.body).items():
        out[key] = value
    for key in ("description", *(k for k, _ in SECTIONS)):
        if key in xb:
            out[key] = xb.pop(key)

    status = f["status"]
    stored = xb.pop("status", None)
    out["status"] = (stored if isinstance(stored, str) and STATUS_MAP.get(stored, "open") == status
                     else STATUS_BACK[status])
    if "priority" in f:
        out["priority"] = f["priority"]
        xb.pop("priority", None)
    for key, source in (("worker", "assignee"), ("owner", "owner")):
        if key in f:
            out[source] = f[key]
            xb.pop(source, None)
    if "labels" in f:
        out["labels"] = list(f["labels"])
        xb.pop("labels", None)

    depends_on = list(f.get("depends_on", []))
    if isinstance(dep_map, Mapping):
        deps: list[dict[str, Any]] = []
        seen: set[str] = set()
        for key, value in dep_map.items():
            dep = unpack(value) if isinstance(value, Mapping) else {}
            target = str(dep.pop("depends_on_id", key))
            if dep.get("type") in BLOCKING_TYPES and is_valid_id(target) \
                    and target != record.id and target not in depends_on:
                continue  # removed in ledgit
            seen.add(target)
            deps.append({"issue_id": dep.pop("issue_id", sid), "depends_on_id": target, **dep})
        for target in depends_on:
            if target not in seen:
                deps.append({"issue_id": sid, "depends_on_id": target, "type": "blocks"})
        out["dependencies"] = deps
    elif depends_on and "dependencies" not in xb:
        out["dependencies"] = [{"issue_id": sid, "depends_on_id": t, "type": "blocks"}
                               for t in depends_on]
    if isinstance(comment_map, Mapping):
        comments = []
        for value in comment_map.values():
            c = unpack(value) if isinstance(value, Mapping) else {}
            comments.append({"issue_id": sid, **c})
        out["comments"] = comments

    response = f.get("response")
    stored_reason = xb.pop("close_reason", None)
    if isinstance(response, str) and response != CLOSED_FALLBACK:
        out["close_reason"] = response
    elif stored_reason is not None:
        out["close_reason"] = stored_reason

    no_update = (xb_raw.get("json", {}).get("updated_at") == "null"
                 and f["last_modified"] == f["created"])
    for key, field in (("created_at", "created"), ("updated_at", "last_modified")):
        verbatim = xb.pop(key, None)
        if key == "updated_at" and no_update:
            continue
        if isinstance(verbatim, str) and _same_instant(verbatim, f[field]):
            out[key] = verbatim
        else:
            out[key] = f[field]
    out.update(xb)
    return normalize_beads(out)


def _same_instant(text: str, canonical: str) -> bool:
    try:
        return format_timestamp(parse_timestamp(text)) == canonical
    except ValueError:
        return False


def load_beads(path: str) -> tuple[list[Incoming], list[Skip]]:
    """Read a Beads ``issues.jsonl``: one Incoming per issue, one Skip per malformed line
    (with its line number). Raises LedgitError when the file cannot be read."""

    def source_id(obj: Any) -> str:
        return str(obj.get("id", "?")) if isinstance(obj, Mapping) else "?"

    return read_jsonl(path, beads_to_record, source_id)
