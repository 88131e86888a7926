"""The audit layer: hash-linked events in a DAG, replay and continuity checks (DESIGN §6). Pure.

A history file holds one event per line, each the canonical JSON of::

    {"id", "parents", "at", "actor", "op", "patch", "before", "after", "note"?, "meta"?}

``id`` is the sha256 of the canonical JSON of the event without ``id``; ``patch`` is an
RFC 6902 JSON Patch turning the state at ``parents[0]`` (``{}`` for the genesis event) into
the new state ``{"fields": ..., "body": ...}``; ``before``/``after`` are record revisions.
"""

from __future__ import annotations

import copy
import heapq
import json
from typing import TYPE_CHECKING

from ledgit.core.canonjson import plain_encoder
from ledgit.core.patch import make_patch as rfc6902_patch
from ledgit.core.record import MAX_RECORD_BYTES, Record, record_from_state
from ledgit.core.revision import canonical_json, revision_of, sha256_function, sha256_hex

EVENT_KEYS = frozenset(("id", "parents", "at", "actor", "op", "patch", "before", "after", "note",
                        "meta"))
GENESIS_OP = "create"
MERGE_OP = "merge"

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    Event = dict[str, Any]
    State = dict[str, Any]
else:
    Event = State = dict  # the same aliases at run time, for callers that import them


class Problem:
    """One broken continuity rule: ``task``, 1-based ``line`` (0 = whole file), ``rule``,
    ``message``. Immutable; equal when all four are."""

    __slots__ = ("task", "line", "rule", "message")

    task: str
    line: int
    rule: str
    message: str

    def __init__(self, task: str, line: int, rule: str, message: str) -> None:
        for name, value in (("task", task), ("line", line), ("rule", rule),
                            ("message", message)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Problem is immutable: cannot set {name}")

    def _key(self) -> tuple[str, int, str, str]:
        return (self.task, self.line, self.rule, self.message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Problem(task={!r}, line={!r}, rule={!r}, message={!r})".format(*self._key())

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "history"
        return f"{self.task}: {where}: {self.rule}: {self.message}"


class HistoryError(ValueError):
    """A history that cannot be read or replayed; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _not_json(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "not JSON: nested too deeply"
    return f"not JSON: {exc}"


#: The longest event line, in characters (issue 7; docs/format.md "Size limits"): an event
#: holds at most one body (MAX_RECORD_BYTES), which JSON escaping can make up to six times
#: longer (``\\u0001``). A longer line is refused before it is decoded.
MAX_EVENT_LINE = 8 * MAX_RECORD_BYTES


def _check_size(line: str, task: str, n: int) -> None:
    if len(line) > MAX_EVENT_LINE:
        raise HistoryError(Problem(task, n, "parse", f"the line is {len(line) / 1048576:.1f} "
                                   f"Mi characters; the limit is "
                                   f"{MAX_EVENT_LINE // 1048576} Mi"))


#: Nesting levels an event line may have (issue 7). A valid event nests about 40 deep at
#: most (a record's front matter nests 32 below its top mapping); deeper values would make
#: hashing and patching recurse past Python's limit.
MAX_EVENT_DEPTH = 64


def _check_depth(line: str, event: Any, task: str, n: int) -> None:
    """Raise HistoryError (``parse``) when ``event`` nests deeper than MAX_EVENT_DEPTH. Only
    a line holding more brackets than that is walked (two C scans otherwise)."""
    if line.count("[") + line.count("{") <= MAX_EVENT_DEPTH:
        return
    stack: list[tuple[Any, int]] = [(event, 1)]
    while stack:
        value, depth = stack.pop()
        if value.__class__ is dict:
            children: Iterable[Any] = value.values()
        elif value.__class__ is list:
            children = value
        else:
            continue
        if depth > MAX_EVENT_DEPTH:
            raise HistoryError(Problem(task, n, "parse", f"nested more than {MAX_EVENT_DEPTH} "
                                                         "levels deep"))
        stack.extend((child, depth + 1) for child in children)


def event_id(event: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``event`` without its ``id`` (DESIGN §6).

    The parser's private ``_line`` key is not content and is left out too.
    """
    body = {k: v for k, v in event.items() if k != "id" and k != "_line"}
    return sha256_hex(canonical_json(body))


def make_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 patch turning ``before`` into ``after``: jsonpatch's, made by
    :func:`ledgit.core.patch.make_patch` (which imports jsonpatch only for lists and moves)."""
    return rfc6902_patch(before, after)


def apply_patch(state: Mapping[str, Any], patch: Sequence[Mapping[str, Any]]) -> State:
    """Apply an RFC 6902 patch to a copy of ``state``. Raises ValueError when it does not apply."""
    import jsonpatch  # lazy: 2.7 ms; replay applies the usual patches itself (_apply_shared)

    try:
        result: State = jsonpatch.apply_patch(copy.deepcopy(dict(state)), list(patch),
                                              in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError,
            IndexError, TypeError, RecursionError) as exc:
        raise ValueError(f"patch does not apply: {exc}") from None
    return result


def new_event(*, parents: Sequence[str], at: str, actor: str, op: str,
              before_state: Mapping[str, Any], after_state: Mapping[str, Any],
              note: str | None = None, meta: Mapping[str, Any] | None = None) -> Event:
    """Build a hashed event from the state at ``parents[0]`` (``{}`` for genesis) to the new one."""
    event: Event = {
        "parents": list(parents),
        "at": at,
        "actor": actor,
        "op": op,
        "patch": make_patch(before_state, after_state),
        "before": revision_of(before_state) if parents else None,
        "after": revision_of(after_state),
    }
    if note:
        event["note"] = note
    if meta:
        event["meta"] = dict(meta)
    event["id"] = event_id(event)
    return event


def event_line(event: Mapping[str, Any]) -> str:
    """The file line of an event: its canonical JSON plus ``\\n``."""
    return canonical_json(dict(event)).decode("utf-8") + "\n"


def render_history(events: Iterable[Mapping[str, Any]]) -> str:
    """A whole history file: one :func:`event_line` per event."""
    return "".join(event_line(e) for e in events)


def parse_events(text: str | bytes, task: str) -> list[Event]:
    """Parse history text (or the file's bytes) into events; ids are checked by :func:`verify`.

    Each event gets a private ``_line`` key (1-based file line). Raises HistoryError (rule
    ``parse``) naming the first line that is not UTF-8 or not a JSON event object.
    """
    return [event for _, event in _parse_lines(text, task)]


def parse_checked(text: str | bytes, task: str) -> list[Event]:
    """:func:`parse_events` plus the line rules of :func:`verify` -- ``parse`` (bytes that are
    not UTF-8 too), ``hash``, ``duplicate``, ``parent-order``, ``genesis`` -- for the write
    path, which must not append to a damaged history (docs/history.md, "Writing order").
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
        if not (line.startswith(member, at) and at > 0 and sha(
                (line[:at] + line[at + len(member):]).encode("utf-8", "surrogatepass")
        ).hexdigest() == eid) and _hash_ok(raw, event) is None:
            message, _ = _hash_problem(raw, event)
            if message:
                raise HistoryError(Problem(task, n, "hash", message))
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


def _parse_lines(text: str | bytes, task: str) -> list[tuple[str, Event]]:
    """(line text, event) per non-blank line. Raises HistoryError (rule ``parse``)."""
    out: list[tuple[str, Event]] = []
    lines: Iterable[str | bytes] = text.split(b"\n") if isinstance(text, bytes) else \
        text.split("\n")
    for n, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise HistoryError(Problem(task, n, "parse", "not valid UTF-8")) from None
        else:
            line = raw
        if not line.strip():
            continue
        _check_size(line, task, n)
        try:
            event = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise HistoryError(Problem(task, n, "parse", _not_json(exc))) from None
        _check_depth(line, event, task, n)
        problem = _shape_problem(event)
        if problem:
            raise HistoryError(Problem(task, n, "parse", problem))
        event["_line"] = n
        out.append((line, event))
    return out


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


def _shape_problem(event: Any) -> str | None:
    if not isinstance(event, dict):
        return "an event must be a JSON object"
    for key in ("id", "parents", "at", "actor", "op", "patch", "after"):
        if key not in event:
            return f"missing key {key!r}"
    unknown = set(event) - EVENT_KEYS
    if unknown:
        return f"unknown key {sorted(unknown)[0]!r}"
    if not isinstance(event["parents"], list) or not all(
            isinstance(p, str) for p in event["parents"]):
        return "parents must be a list of event ids"
    if not isinstance(event["patch"], list):
        return "patch must be a list of RFC 6902 operations"
    for key in ("id", "at", "actor", "op", "after"):
        if not isinstance(event[key], str):
            return f"{key} must be a string"
    return None


def strip_lines(events: Iterable[Event]) -> list[Event]:
    """Events without the parser's private ``_line`` key (for hashing and rendering)."""
    return [{k: v for k, v in e.items() if k != "_line"} for e in events]


def heads(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of events that are nobody's parent, sorted."""
    referenced = {p for e in events for p in e["parents"]}
    return sorted(e["id"] for e in events if e["id"] not in referenced)


def replay(events: Sequence[Mapping[str, Any]], task: str = "?") -> dict[str, State]:
    """Replay every event's patch from its ``parents[0]``: ``{event id: state after it}``.

    Raises HistoryError at the first event whose parent is unknown or whose patch fails.
    """
    states: dict[str, State] = {}
    for e in events:
        line = int(e.get("_line", 0))
        parents = e["parents"]
        if parents:
            if parents[0] not in states:
                raise HistoryError(Problem(task, line, "parent-order",
                                           f"parent {parents[0][:12]} does not precede it"))
            base = states[parents[0]]
        else:
            base = {}
        try:
            states[e["id"]] = apply_patch(base, e["patch"])
        except ValueError as exc:
            raise HistoryError(Problem(task, line, "replay", str(exc))) from None
    return states


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


def head_state(events: Sequence[Mapping[str, Any]], task: str = "?") -> tuple[str, State]:
    """(head id, state at the head) of a history with exactly one head. Raises HistoryError."""
    states = replay(events, task)
    hs = heads(events)
    if len(hs) != 1:
        raise HistoryError(Problem(task, 0, "heads", f"expected one head, found {len(hs)}"))
    return hs[0], states[hs[0]]


def ancestors(events: Sequence[Mapping[str, Any]], start: str) -> set[str]:
    """Every event id reachable from ``start`` through parents, ``start`` included."""
    parents = {e["id"]: e["parents"] for e in events}
    seen: set[str] = set()
    stack = [start]
    while stack:
        eid = stack.pop()
        if eid in seen or eid not in parents:
            continue
        seen.add(eid)
        stack.extend(parents[eid])
    return seen


def topological_order(events: Iterable[Mapping[str, Any]]) -> list[Event]:
    """Events in a deterministic topological order: parents first, ties by (at, id).

    Independent of the input order, so a merge of A into B and B into A agree byte for byte.
    """
    by_id: dict[str, Event] = {}
    for e in events:
        by_id.setdefault(e["id"], {k: v for k, v in e.items() if k != "_line"})
    pending = {eid: sum(1 for p in set(e["parents"]) if p in by_id) for eid, e in by_id.items()}
    children: dict[str, list[str]] = {}
    for eid, e in by_id.items():
        for p in set(e["parents"]):
            if p in by_id:
                children.setdefault(p, []).append(eid)
    ready = [(by_id[eid]["at"], eid) for eid, n in pending.items() if n == 0]

    heapq.heapify(ready)
    out: list[Event] = []
    while ready:
        _, eid = heapq.heappop(ready)
        out.append(by_id[eid])
        for c in children.get(eid, ()):
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, (by_id[c]["at"], c))
    if len(out) != len(by_id):  # a cycle cannot come from hashes; keep what is left stable
        rest = sorted((e for eid, e in by_id.items() if e not in out),
                      key=lambda e: (e["at"], e["id"]))
        out.extend(rest)
    return out


# --------------------------------------------------------------------------- growth (DESIGN §8)


def lost_events(parent: Iterable[Mapping[str, Any]],
                child: Iterable[Mapping[str, Any]]) -> list[Event]:
    """The events of ``parent`` whose id is not in ``child``, in ``parent``'s order: what a
    commit would lose of its parent's history ("a history only grows", DESIGN §8). Empty
    when ``child`` keeps every parent event; extra child events are the growth allowed."""
    kept = {e.get("id") for e in child}
    return [{k: v for k, v in e.items() if k != "_line"} for e in parent
            if e.get("id") not in kept]


def lost_in_text(parent: str | bytes | None, child: str | bytes | None,
                 base: str | bytes | None = None) -> list[Event]:
    """:func:`lost_events` on two history files' texts (None: no file). Pure and lenient.

    ``base``: only the events ``parent`` adds to ``base`` must be kept -- what a cherry-pick
    or a rebase step takes from the picked commit (``parent``) and its parent (``base``).

    Fast path: every non-blank line of ``parent`` appears verbatim in ``child`` (events are
    canonical JSON, one per line), so no JSON is decoded. Otherwise the parent's missing lines
    are decoded (a line that is no event object is skipped: continuity reports it) and an
    event is lost unless some line of ``child`` that decodes carries its id. A damaged child
    line keeps nothing: damage is the continuity check's to name.
    """
    if not parent:
        return []
    wanted = [line for line in _as_bytes(parent).split(b"\n") if line.strip()]
    if base:
        had = _as_bytes(base).split(b"\n")
        had_set = set(had)
        wanted = [line for line in wanted if line not in had_set]
        if wanted:
            known = {e["id"] for e in map(_lenient_event, had) if e is not None}
            wanted = [line for line in wanted
                      if (_lenient_event(line) or {}).get("id") not in known]
    child_lines = _as_bytes(child).split(b"\n") if child else []
    present = set(child_lines)
    missing = [line for line in wanted if line not in present]
    if not missing:
        return []
    candidates = [e for e in map(_lenient_event, missing) if e is not None]
    if not candidates:
        return []
    kept = (_lenient_event(line) for line in child_lines if line.strip())
    return lost_events(candidates, [e for e in kept if e is not None])


def _as_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")


def _lenient_event(line: bytes) -> Event | None:
    """The JSON object on one history line with a str ``id``, else None."""
    try:
        event = json.loads(line.decode("utf-8").strip())
    except (ValueError, RecursionError):
        return None
    if event.__class__ is not dict or event.get("id").__class__ is not str:
        return None
    return event


def describe_event(event: Mapping[str, Any]) -> str:
    """``op by actor at time (id12)``: how a lost or removed event is named to a person."""
    return (f"{event.get('op', '?')} by {event.get('actor', '?')} at {event.get('at', '?')} "
            f"({str(event.get('id', ''))[:12]})")
