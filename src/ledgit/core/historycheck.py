"""History continuity checks (DESIGN §6; docs/history.md): :func:`verify` (every rule, one
Problem each) and :func:`verify_with_head`, and :func:`parse_checked` (the line rules, for
the write path). Pure.

Most of the cost of a check is hashing and replaying; the fast paths here (a strict decoder
that tells float-free events apart, hashing the line as written, genesis states cut out of
their line, patches applied without copying) give the same problems as the plain rules of
docs/history.md. The events themselves (parsing, ids, replay) are :mod:`ledgit.core.history`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ledgit.core.canonjson import plain_encoder
from ledgit.core.history import (
    EVENT_KEYS,
    MAX_EVENT_DEPTH,
    MAX_EVENT_LINE,
    HistoryError,
    Problem,
    _check_depth,
    _check_size,
    _not_json,
    _parse_lines,
    _shape_problem,
    apply_patch,
    heads,
)
from ledgit.core.record import Record, record_from_state
from ledgit.core.revision import canonical_json, sha256_function, sha256_hex

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ledgit.core.history import Event, State


def parse_checked(text: str | bytes, task: str) -> list[Event]:
    """:func:`ledgit.core.history.parse_events` plus the line rules of :func:`verify` --
    ``parse`` (bytes that are not UTF-8 too), ``hash``, ``duplicate``, ``parent-order``,
    ``genesis`` -- for the write path, which must not append to a damaged history
    (docs/history.md, "Writing order").
    Raises HistoryError naming the first broken rule and its line.

    Its cost is one sha256 per line: a line passes when the hash of its bytes without the
    ``,"id":"…"`` member equals its id, which every line ledgit writes does and no damaged
    line can (any changed byte changes the hash); only a line that fails is encoded and
    checked the slow way, to word the problem. The replay rules, and lines a foreign writer
    hashed without making them canonical, are :func:`verify`'s."""
    sha = sha256_function()
    events: list[Event] = []
    seen: set[str] = set()
    for raw, event in _parse_lines(text, task):
        n = event.pop("_line")
        eid = event["id"]
        line = raw.removesuffix("\r")
        member = ',"id":"' + eid + '"'
        at = line.find(',"id":"')
        try:
            if not (line.startswith(member, at) and at > 0 and sha(
                    (line[:at] + line[at + len(member):]).encode("utf-8", "surrogatepass")
            ).hexdigest() == eid) and _hash_ok(raw, event) is None:
                message, _ = _hash_problem(raw, event)
                if message:
                    raise HistoryError(Problem(task, n, "hash", message))
        except ValueError:  # NaN or Infinity: no JSON text (RFC 8259) holds one, no id either
            raise HistoryError(Problem(task, n, "hash", _FLOAT_MESSAGE)) from None
        if eid in seen:
            raise HistoryError(Problem(task, n, "duplicate", f"event {eid[:12]} appears twice"))
        for p in event["parents"]:
            if p not in seen:
                raise HistoryError(Problem(task, n, "parent-order",
                                           f"parent {p[:12]} does not precede this event"))
        if not event["parents"] and events:
            raise HistoryError(Problem(task, n, "genesis",
                                       "a second genesis event (only the first line has none)"))
        if event["parents"] and not events:
            raise HistoryError(Problem(task, n, "genesis", "the first event is not a genesis"))
        seen.add(eid)
        event["_line"] = n
        events.append(event)
    return events


def _read_events(text: str | bytes, task: str
                 ) -> tuple[list[int], list[str], list[Event], set[int]]:
    """:func:`_parse_lines` for :func:`verify`: (line numbers, line texts, events without
    ``_line``, numbers of the lines holding a float). Lines are decoded by :data:`_STRICT`;
    one holding a float literal (or NaN, Infinity) is decoded again by json.loads and named
    in the set, so every other event holds no float at any depth. Raises HistoryError."""
    numbers: list[int] = []
    raws: list[str] = []
    events: list[Event] = []
    floats: set[int] = set()
    decode = _STRICT.decode
    required, allowed = _REQUIRED_KEYS, EVENT_KEYS
    if isinstance(text, bytes):
        lines: Iterable[str | bytes] = text.split(b"\n")
        brackets = text.count(b"[") + text.count(b"{")
    else:
        lines = text.split("\n")
        brackets = text.count("[") + text.count("{")
    # No line is longer than the text, nor nests deeper than the text's brackets: the two
    # per-line limits are then checked once for the whole text.
    check_size, check_depth = len(text) > MAX_EVENT_LINE, brackets > MAX_EVENT_DEPTH
    n = 0
    for raw in lines:
        n += 1
        if raw.__class__ is bytes:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise HistoryError(Problem(task, n, "parse", "not valid UTF-8")) from None
        else:
            line = raw  # type: ignore[assignment]
        if not line or line.isspace():
            continue
        if check_size:
            _check_size(line, task, n)
        try:
            try:
                event = decode(line)
            except _FloatFound:
                event = json.loads(line)
                floats.add(n)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise HistoryError(Problem(task, n, "parse", _not_json(exc))) from None
        if check_depth:
            _check_depth(line, event, task, n)
        # The common shape, checked in a few C calls; anything else is worded below.
        if not (event.__class__ is dict and required <= event.keys() <= allowed
                and event["parents"].__class__ is list
                and event["patch"].__class__ is list
                and event["id"].__class__ is str and event["after"].__class__ is str
                and event["at"].__class__ is str and event["actor"].__class__ is str
                and event["op"].__class__ is str
                and all(p.__class__ is str for p in event["parents"])):
            problem = _shape_problem(event)
            if problem:
                raise HistoryError(Problem(task, n, "parse", problem))
        numbers.append(n)
        raws.append(line)
        events.append(event)
    return numbers, raws, events, floats


_REQUIRED_KEYS = frozenset(("id", "parents", "at", "actor", "op", "patch", "after"))


class _FloatFound(Exception):
    """Raised by :data:`_STRICT` at a float literal (not a ValueError: not a parse error)."""


def _no_float(text: str) -> Any:
    raise _FloatFound(text)


# Decodes exactly like json.JSONDecoder().decode, except that a float literal (or NaN,
# Infinity, -Infinity) raises _FloatFound: what it returns holds no float, so it can be
# hashed without revision.canonical_json's walk (see _ENCODE).
_STRICT = json.JSONDecoder(parse_float=_no_float, parse_constant=_no_float)


_ENCODE = plain_encoder()  # canonical_json without its float walk (see _STRICT)
_FLOAT_MESSAGE = "floats are not allowed in hashed content"  # = revision.canonical_json's


def verify(task: str, text: str | bytes | None, record: Record | None,
           record_error: str | None = None, *, revision: str | None = None) -> list[Problem]:
    """Check a task's history continuity (DESIGN §6); one Problem per broken rule.

    ``text``: the history file as text or bytes (None = missing); ``record``: the parsed task
    file (None when missing or unparsable; pass ``record_error`` to say why). Rules: missing,
    parse, hash, duplicate, parent-order, genesis, replay, before, after, heads, record-head,
    schema (docs/history.md).

    ``revision``: the revision of a task file already known to be a *valid* record (parsed
    and validated, or read from a fresh index row); it replaces ``record`` for
    ``record-head``, and when it equals the head's ``after`` the head state is that valid
    record, so its ``schema`` check is skipped.
    """
    return verify_with_head(task, text, record, record_error, revision=revision)[0]


def verify_with_head(task: str, text: str | bytes | None, record: Record | None,
                     record_error: str | None = None, *, revision: str | None = None
                     ) -> tuple[list[Problem], State | None]:
    """:func:`verify`, also returning the state at the head when there is no problem (then
    it *is* the task file's state: their revisions are equal), else None. The state shares
    values with the parsed events: read it, never modify it. Used by ``Board.verify``."""
    if text is None:
        return [Problem(task, 0, "missing", "the task has no history file")], None
    try:
        numbers, raws, events, floats = _read_events(text, task)
    except HistoryError as exc:
        return [exc.problem], None
    if not events:
        return [Problem(task, 0, "genesis", "the history is empty")], None
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    # The genesis state's canonical JSON, cut from its line, and its body's.
    genesis: tuple[str, str] | None = None
    for line, raw, e in zip(numbers, raws, events, strict=True):
        if line in floats:  # decoded by json.loads: the only events holding a float
            problems.append(Problem(task, line, "hash", _FLOAT_MESSAGE))
            continue  # no hash at all: nothing to link to
        canon = _hash_ok(raw, e)
        if canon is None:
            message, hashed = _hash_problem(raw, e)
            if message:
                problems.append(Problem(task, line, "hash", message))
            if not hashed:  # e.g. a lone surrogate
                continue
        elif not e["parents"] and line == numbers[0]:
            genesis = _genesis_state_json(canon, e)
        eid = e["id"]
        if eid in seen:
            problems.append(Problem(task, line, "duplicate",
                                    f"event {eid[:12]} already on line {seen[eid]}"))
        for p in e["parents"]:
            if p not in seen:
                problems.append(Problem(task, line, "parent-order",
                                        f"parent {p[:12]} does not precede this event"))
        seen.setdefault(eid, line)
    geneses = [i for i, e in enumerate(events) if not e["parents"]]
    if len(geneses) != 1:
        problems.append(Problem(task, numbers[geneses[1]] if len(geneses) > 1 else 0, "genesis",
                                f"expected exactly one genesis event, found {len(geneses)}"))
    elif geneses[0] != 0:
        problems.append(Problem(task, numbers[geneses[0]], "genesis",
                                "the genesis event must be the first line"))
    if problems:
        return problems, None
    # No float anywhere (checked above), so states hash with _ENCODE. Ids are unique here.
    states: dict[str, State] = {}
    revisions: dict[str, str] = {}
    bodies: dict[str, str] = {}  # id -> the encoded body of its state (see _state_json)
    sha256, state_json = sha256_function(), _state_json
    for line, e in zip(numbers, events, strict=True):
        parents = e["parents"]
        if parents:
            base, expected_before = states[parents[0]], revisions[parents[0]]
        else:
            base, expected_before = {}, None
        patch = e["patch"]
        state: State | None
        if genesis is not None:  # [add /fields F, add /body B] on {} (shape checked)
            state = {"fields": patch[0]["value"], "body": patch[1]["value"]}
        else:
            state = _apply_shared(base, patch)
        if state is None:  # not the common shape: jsonpatch itself (and its error message)
            try:
                state = apply_patch(base, patch)
            except ValueError as exc:
                problems.append(Problem(task, line, "replay", str(exc)))
                return problems, None
        eid = e["id"]
        states[eid] = state
        if e.get("before") != expected_before:
            problems.append(Problem(task, line, "before",
                                    "before does not equal the revision at parents[0]"))
        try:
            if genesis is not None:  # the first event (genesis: checked above)
                text, body_json = genesis
                genesis = None
            else:
                text, body_json = state_json(state, base, bodies.get(parents[0], "")
                                             if parents else "")
            if body_json:
                bodies[eid] = body_json
            after = sha256(text.encode("utf-8")).hexdigest()
        except ValueError as exc:
            problems.append(Problem(task, line, "replay", str(exc)))
            return problems, None
        revisions[eid] = after
        if after != e["after"]:
            problems.append(Problem(task, line, "after",
                                    "replaying the patch does not give the recorded 'after'"))
    hs = heads(events)
    if len(hs) != 1:
        problems.append(Problem(task, 0, "heads",
                                f"expected one head, found {len(hs)}: "
                                + ", ".join(h[:12] for h in hs)
                                + " (merge it: ledgit resolve)"))
    head, head_revision = (states[hs[0]], revisions[hs[0]]) if len(hs) == 1 else (None, "")
    if revision is not None:
        if not problems and revision != head_revision:
            problems.append(Problem(task, 0, "record-head", _RECORD_HEAD.format(task=task)))
    elif record is None:
        problems.append(Problem(task, 0, "record-head",
                                record_error or "the task file is missing"))
    elif not problems:
        if record.revision != head_revision:
            problems.append(Problem(task, 0, "record-head", _RECORD_HEAD.format(task=task)))
        else:
            # The head state must itself be a valid record.
            assert head is not None  # one head: no "heads" problem
            try:
                record_from_state(head)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                problems.append(Problem(task, 0, "schema", f"head state is invalid: {exc}"))
    return problems, (head if not problems else None)


_RECORD_HEAD = "record differs from its history head (hand edit? run: ledgit record {task})"


def _hash_ok(raw: str, event: Event) -> str | None:
    """True when ``raw`` is the canonical JSON of ``event`` (no private keys, no floats) and
    the event's id is the sha256 of it without the id: one encode and one hash.

    The canonical line is ``{"actor":…,"after":…,"at":…[,"before":…],"id":"…",…}``: keys
    sorted, ``id`` never first (``actor`` is required). Outside the strings of a JSON text,
    ``,"id":`` is always a member named id, and it cannot occur in a string (quotes in it are
    escaped; after its closing quote comes ``:``, ``,``, ``]`` or ``}``); so when ``before``
    is a string or null the first ``,"id":`` of the line is the top-level id member, and
    removing that member gives the canonical JSON of the event without its id, byte for
    byte. Returns that canonical line (without ``\r``); anything else answers None (the
    caller then words the problem the slow way, :func:`_hash_problem`).
    """
    canon: str = _ENCODE(event)
    if canon != raw and canon != raw.removesuffix("\r"):
        return None
    before = event.get("before")
    if before is not None and before.__class__ is not str:
        return None
    member = ',"id":' + _ENCODE(event["id"])
    at = canon.find(',"id":')
    if at < 0 or not canon.startswith(member, at):
        return None
    try:
        data = (canon[:at] + canon[at + len(member):]).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    return canon if sha256_hex(data) == event["id"] else None


_GENESIS_MARK = ',"parents":[],"patch":[{"op":"add","path":"/fields","value":'
_GENESIS_BODY = '},{"op":"add","path":"/body","value":'


def _genesis_state_json(canon: str, event: Event) -> tuple[str, str] | None:
    """(the canonical JSON of the state a genesis event of the usual shape creates, that of
    its body), cut out of ``canon``, its canonical line (as :func:`_hash_ok` returned it):
    the patch ``[add /fields F, add /body B]`` replayed on ``{}`` gives ``{"body": B,
    "fields": F}``, whose canonical JSON is ``{"body":`` E(B) ``,"fields":`` E(F) ``}``, and
    E(F) is written in the line already. None for any other shape (the state is then
    encoded).

    The cut is exact: keys are sorted, ``patch`` is the last key an event may have, and
    every member before ``parents`` is a string or null here (no ``meta``; ``note`` a
    string), so the first ``,"parents":[],"patch":[…`` of the line is the event's own (a
    JSON string cannot hold an unescaped quote), and the line ends with the body op.
    """
    patch = event["patch"]
    if len(patch) != 2 or "meta" in event or event.get("note", "").__class__ is not str:
        return None
    first, second = patch
    if not (first.__class__ is dict and second.__class__ is dict
            and len(first) == 3 and len(second) == 3
            and first.get("op") == "add" and first.get("path") == "/fields"
            and second.get("op") == "add" and second.get("path") == "/body"):
        return None
    fields, body = first.get("value"), second.get("value")
    if fields.__class__ is not dict or body.__class__ is not str:
        return None
    body_json: str = _ENCODE(body)
    tail = _GENESIS_BODY + body_json + "}]}"
    start = canon.find(_GENESIS_MARK)
    if start < 0 or not canon.endswith(tail):
        return None
    start += len(_GENESIS_MARK)
    end = len(canon) - len(tail)
    if end < start:
        return None
    return '{"body":' + body_json + ',"fields":' + canon[start:end] + "}", body_json


def _state_json(state: State, base: State, base_body: str) -> tuple[str, str]:
    """(the canonical JSON of ``state``, that of its body or "") for states holding no
    float, encoding the body only when it changed: the canonical JSON of a mapping with
    exactly the keys ``body`` and ``fields`` is ``{"body":`` E(body) ``,"fields":``
    E(fields) ``}`` (keys sorted: ``body`` < ``fields``; no whitespace), so when ``body``
    is a string and the very object of ``base["body"]``, whose encoding ``base_body`` is,
    only E(fields) is encoded. Any other state is encoded whole (second value "").

    Strings are immutable and states are never modified (see :func:`_apply_shared`), so an
    identical body object has the same encoding. tests/test_history.py checks the result
    against the plain encoder.
    """
    if len(state) == 2 and "fields" in state:
        body = state.get("body")
        if body.__class__ is str:
            if not base_body or body is not base.get("body"):
                base_body = _ENCODE(body)
            return '{"body":' + base_body + ',"fields":' + _ENCODE(state["fields"]) + "}", \
                base_body
    return _ENCODE(state), ""


def _hash_problem(raw: str, event: Event) -> tuple[str | None, bool]:
    """(the ``hash`` problem of a line :func:`_hash_ok` did not accept or None when it is
    fine, whether the event could be hashed at all)."""
    body = {k: v for k, v in event.items() if k != "id" and k != "_line"}
    try:
        computed = sha256_hex(canonical_json(body))
    except ValueError as exc:
        return str(exc), False
    if computed != event["id"]:
        return (f"id {event['id'][:12]} does not match the event's content "
                f"(sha256 {computed[:12]}): the line was edited"), True
    if raw.removesuffix("\r") != canonical_json(dict(body, id=event["id"])).decode("utf-8"):
        # Same content, other bytes (e.g. "\u001F" for "\u001f"): still an edit.
        return "the line is not the canonical JSON of its event: the line was edited", True
    return None, True


_FAST_OPS = frozenset(("add", "replace", "remove"))


def _apply_shared(state: State, patch: Any) -> State | None:
    """``apply_patch(state, patch)`` for the common shape, without copying the state: only
    ``add``/``replace``/``remove`` of object members, through objects, with paths free of
    ``~`` escapes. Containers on a patched path are copied (path copying), so ``state`` and
    the patch's values are never changed, and the result shares the rest with them: nothing
    may modify it. None when the patch has another shape or would fail: the caller then
    runs jsonpatch, which gives the same result or the same error.
    """
    if state.__class__ is not dict or patch.__class__ is not list:
        return None
    root: dict[str, Any] = state.copy()
    owned: dict[int, dict[str, Any]] = {id(root): root}  # copied here; kept alive: ids stay
    for op in patch:
        if op.__class__ is not dict:
            return None
        path = op.get("path")
        if path.__class__ is not str or path[:1] != "/" or "~" in path:
            return None
        kind = op.get("op")
        node = root
        if path.count("/") == 1:
            key = path[1:]
        else:
            parts = path[1:].split("/")
            key = parts.pop()
            for part in parts:
                child = node.get(part)
                if child.__class__ is not dict:
                    return None
                if id(child) not in owned:
                    child = child.copy()
                    owned[id(child)] = child
                    node[part] = child
                node = child
        if kind == "add" or kind == "replace":
            if "value" not in op or (kind == "replace" and key not in node):
                return None
            node[key] = op["value"]
        elif kind == "remove" and key in node:
            del node[key]
        else:
            return None
    return root
