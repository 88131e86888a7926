"""The record's schema (DESIGN §3, docs/format.md): its fields, their kinds and order, and
the coercion of front-matter strings (or JSON values) into typed, validated fields. Pure.

Front matter is read without implicit typing, every scalar a string (ledgit.core.frontmatter), so
the types come from here: ``priority: "2"`` becomes ``2``, ``title: NO`` stays ``"NO"``.
Empty values mean "not set" and are dropped. Errors are LedgitError ``path:line: field:
message``; :class:`FieldContext` says where they point.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from ledgit.core.errors import LedgitError, located
from ledgit.core.timestamps import normalize_timestamp

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, NoReturn

STATUSES = ("open", "in_progress", "waiting", "monitoring", "parked", "done", "dropped",
            "archived")
TERMINAL_RANK = {"archived": 3, "done": 2, "dropped": 1}
OUTCOME_KINDS = ("drop", "watch", "park", "no_publish", "no_change", "blocked", "done")
ITEM_KINDS = ("fact", "decision", "question", "blocker", "rejected", "artifact", "next_step")
TRUST_LEVELS = ("candidate", "locked", "deprecated")
TRUST_RANK = {"candidate": 0, "locked": 1, "deprecated": 2}

# Front-matter keys in the order the writer emits them.
FIELD_ORDER = (
    "id", "title", "status", "priority", "owner", "worker", "claim", "contested",
    "depends_on", "labels", "commits", "response", "next_action", "gate", "waiting_on",
    "signal", "outcome", "items", "notes", "created", "last_modified", "x",
)
REQUIRED = ("id", "title", "status", "created", "last_modified")
STRING_FIELDS = ("title", "owner", "worker", "response", "next_action", "gate", "waiting_on",
                 "signal")
SET_FIELDS = ("depends_on", "labels", "commits")
CLAIM_KEYS = ("by", "at", "heartbeat", "note")
OUTCOME_KEYS = ("kind", "reason", "reuse")
NOTE_KEYS = ("at", "by", "text")
ITEM_KEYS = ("id", "kind", "text", "why", "evidence", "trust", "by", "at", "supersedes",
             "superseded_by", "confidence", "x")

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
ITEM_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
COMMIT_RE = re.compile(r"[0-9a-fA-F]{4,64}")


def is_valid_id(text: str) -> bool:
    """True when ``text`` may name a task: no path separators, no ``..``, no NUL."""
    return bool(ID_RE.fullmatch(text)) and ".." not in text


ID_CASE_RULE = "id-case"  # two task ids equal under case folding (issue 36)


def case_twins(ids: Iterable[str], new: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Pairs ``(id, other)`` of distinct task ids equal under case folding (``T-abc`` and
    ``T-ABC``: one file on macOS and Windows, whose file systems ignore case), sorted: for
    each id of ``new`` (default: every id) each other id of ``ids`` (``new`` included) with
    the same ``casefold()``. O(len(ids))."""
    everyone = set(ids)
    wanted = everyone if new is None else set(new)
    everyone |= wanted
    by_key: dict[str, list[str]] = {}
    for tid in everyone:
        by_key.setdefault(tid.casefold(), []).append(tid)
    pairs = []
    for tid in wanted:
        pairs += [(tid, other) for other in by_key[tid.casefold()] if other != tid]
    return sorted(pairs)


def case_twin_message(task_path: str, other_path: str) -> str:
    """What is said of a task whose id equals another's under case folding, naming both
    files (repository- or board-relative paths)."""
    return (f"its id equals another task's under case folding ({task_path} and {other_path}):"
            f" on a case-insensitive file system (macOS, Windows) the two are one file; give"
            f" one of them another id")


_MAX_KEY = 256  # YAML readers refuse implicit keys longer than 1024 characters


class FieldContext:
    """Where field errors point: the file's ``path`` and, for a parsed file, ``line_of``:
    the line of a field name (``claim.at``, ``items[1].kind``) in it, or None."""

    __slots__ = ("path", "line_of")

    def __init__(self, path: str, line_of: Callable[[str], int | None] | None = None) -> None:
        self.path = path
        self.line_of = line_of

    def fail(self, message: str, fieldname: str | None = None, line: int | None = None
             ) -> NoReturn:
        """Raise LedgitError ``path:line: field: message`` (line looked up from the field)."""
        if line is None and fieldname is not None and self.line_of is not None:
            line = self.line_of(fieldname)
        raise LedgitError(located(message, self.path, line, fieldname))


def coerce_fields(raw: Mapping[str, Any], ctx: FieldContext | None = None,
                  path: str = "<record>") -> dict[str, Any]:
    """Coerce string-typed front matter (or JSON values) into typed, validated fields.

    Empty values (``""``, ``[]``, ``{}``) mean "not set" and are dropped. Raises LedgitError
    naming the field. Rules: DESIGN §3 and docs/format.md.
    """
    ctx = ctx or FieldContext(path)
    for key in raw:
        if key not in _FIELD_SET:
            ctx.fail("unknown field (extensions go under 'x:')", key)
    out: dict[str, Any] = {}
    for key in FIELD_ORDER:
        if key not in raw:
            continue
        coerced = _coerce_field(key, raw[key], ctx)
        if coerced is None or coerced == "" or coerced == [] or coerced == {}:
            continue
        out[key] = coerced
    for key in REQUIRED:
        if key not in out:
            ctx.fail("required field is missing" if key not in raw else "must not be empty",
                     key)
    return out


_FIELD_SET = frozenset(FIELD_ORDER)
_STRING_SET = frozenset(STRING_FIELDS)
_ONE_LINE_STRINGS = frozenset(("title", "owner", "worker"))
_LINE_BREAKS = "[\n\r\u2028\u2029\x85]"  # compiled (cached by re) on first non-ASCII use
_SURROGATE = "[\ud800-\udfff]"
# The control characters YAML 1.2 does not count as printable (its c-printable: C0 but tab,
# line feed and carriage return; DEL; C1 but NEL): refused in a title and a label (issue 36),
# which terminals, the board page and other tools show as one line of text (an escape
# sequence there is a command to the terminal). Line breaks are refused before, by name.
_CONTROL = "[\x00-\x08\x0a-\x1f\x7f-\x9f]"


def control_problem(text: str) -> str | None:
    """Why ``text`` (a title, a label) may not be kept: the first control character in it
    (``control character U+0007``; a tab is text, as YAML has it), else None.
    ``str.isprintable`` answers for almost every text at C speed; only a text it refuses (a
    control, or a tab, space or format character that is welcome: U+00A0, U+200D) is
    searched."""
    if text.isprintable():
        return None
    found = re.search(_CONTROL, text)
    return None if found is None else f"control character U+{ord(found.group()):04X}"


def _text(value: Any, name: str, ctx: FieldContext, *, one_line: bool = False) -> str:
    if value.__class__ is str:
        text: str = value
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        ctx.fail(f"expected a string, got {_kind(value)}", name)
    ascii = text.isascii()
    if not ascii:
        if re.search(_SURROGATE, text):
            ctx.fail("lone surrogate in text", name)
        text = unicodedata.normalize("NFC", text)
    if "\x00" in text:
        ctx.fail("NUL character in text", name)
    if one_line and (("\n" in text or "\r" in text) if ascii else re.search(_LINE_BREAKS, text)):
        ctx.fail("must be one line (no line breaks, U+2028 or U+2029)", name)
    return text


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__


def _timestamp(value: Any, name: str, ctx: FieldContext) -> str:
    text = _text(value, name, ctx, one_line=True)
    try:
        return normalize_timestamp(text)
    except ValueError as exc:
        ctx.fail(str(exc), name)


def _str_list(value: Any, name: str, ctx: FieldContext,
              check: Callable[[str], str | None] | None = None) -> list[str]:
    """A set-like list of one-line strings: stripped, empties and repeats dropped."""
    if value == "":
        return []
    if not isinstance(value, list):
        ctx.fail(f"expected a list, got {_kind(value)}", name)
    out: list[str] = []
    for i, v in enumerate(value):
        text = _text(v, f"{name}[{i}]", ctx, one_line=True).strip()
        if not text or text in out:
            continue
        if check is not None:
            problem = check(text)
            if problem:
                ctx.fail(problem, f"{name}[{i}]")
        out.append(text)
    return out


def _commit_problem(text: str) -> str | None:
    if COMMIT_RE.fullmatch(text):
        return None
    return f"not a commit hash (4 to 64 hex digits): {text!r}"


def _task_id_problem(text: str) -> str | None:
    # ALIAS:ID names a task of another registered board (ledgit.operations.projects, issue 17)
    alias, colon, task = text.rpartition(":")
    if colon and not ITEM_ID_RE.fullmatch(alias):
        return f"not a task id or PROJECT:ID: {text!r}"
    return None if is_valid_id(task) else f"not a task id: {text!r}"


def _mapping(value: Any, name: str, ctx: FieldContext, keys: tuple[str, ...]) -> dict[str, Any]:
    if value == "":
        return {}
    if not isinstance(value, dict):
        ctx.fail(f"expected a mapping, got {_kind(value)}", name)
    for k in value:
        if k not in keys:
            ctx.fail(f"unknown key (allowed: {', '.join(keys)})", f"{name}.{k}")
    return value


def _claim(value: Any, name: str, ctx: FieldContext) -> dict[str, Any]:
    m = _mapping(value, name, ctx, CLAIM_KEYS)
    if not m:
        return {}
    out: dict[str, Any] = {}
    for k in CLAIM_KEYS:
        if k not in m:
            continue
        if k in ("at", "heartbeat"):
            t = _text(m[k], f"{name}.{k}", ctx, one_line=True)
            if t:
                out[k] = _timestamp(t, f"{name}.{k}", ctx)
        else:
            t = _text(m[k], f"{name}.{k}", ctx, one_line=(k == "by"))
            if t:
                out[k] = t
    for k in ("by", "at"):
        if k not in out:
            ctx.fail("required in a claim", f"{name}.{k}")
    return out


def _x(value: Any, name: str, ctx: FieldContext) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = _text(k, f"{name}.{k}", ctx, one_line=True)
            if len(key) > _MAX_KEY:
                ctx.fail(f"extension key longer than {_MAX_KEY} characters: {key[:24]!r}...",
                         name)
            out[key] = _x(v, f"{name}.{key}", ctx)
        return out
    if isinstance(value, list):
        return [_x(v, f"{name}[{i}]", ctx) for i, v in enumerate(value)]
    if isinstance(value, (bool, float)) or value is None:
        ctx.fail("extension values must be strings, lists or mappings", name)
    return _text(value, name, ctx)


def _item(value: Any, name: str, ctx: FieldContext) -> dict[str, Any]:
    m = _mapping(value, name, ctx, ITEM_KEYS)
    out: dict[str, Any] = {}
    for k in ITEM_KEYS:
        if k not in m:
            continue
        v = m[k]
        if k == "at":
            t = _text(v, f"{name}.{k}", ctx, one_line=True)
            if t:
                out[k] = _timestamp(t, f"{name}.{k}", ctx)
        elif k in ("supersedes", "superseded_by"):
            ids = _str_list(v, f"{name}.{k}", ctx)
            if ids:
                out[k] = ids
        elif k == "x":
            if not isinstance(v, (dict, str)) or (isinstance(v, str) and v):
                ctx.fail(f"expected a mapping, got {_kind(v)}", f"{name}.x")
            xv = _x(v, f"{name}.x", ctx) if v else {}
            if xv:
                out[k] = xv
        else:
            t = _text(v, f"{name}.{k}", ctx, one_line=k in ("id", "kind", "trust", "by"))
            if t:
                out[k] = t
    for k in ("id", "kind", "text", "trust", "by", "at"):
        if k not in out:
            ctx.fail("required in an item", f"{name}.{k}")
    if not ITEM_ID_RE.fullmatch(out["id"]):
        ctx.fail(f"invalid item id {out['id']!r} (letters, digits, '-', '_', '.')",
                 f"{name}.id")
    if out["kind"] not in ITEM_KINDS:
        ctx.fail(f"unknown kind {out['kind']!r} (one of {', '.join(ITEM_KINDS)})",
                 f"{name}.kind")
    if out["trust"] not in TRUST_LEVELS:
        ctx.fail(f"unknown trust {out['trust']!r} (one of {', '.join(TRUST_LEVELS)})",
                 f"{name}.trust")
    return out


def _notes(value: Any, key: str, ctx: FieldContext) -> list[dict[str, Any]]:
    """Notes: append-only lines ``{at, by, text}``, each key required, ``by`` and ``text``
    one line (DESIGN §4); the same note twice is refused (a merge keeps each once)."""
    if value == "":
        return []
    if not isinstance(value, list):
        ctx.fail(f"expected a list of notes, got {_kind(value)}", key)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for i, v in enumerate(value):
        name = f"{key}[{i}]"
        m = _mapping(v, name, ctx, NOTE_KEYS)
        note: dict[str, Any] = {}
        for k in NOTE_KEYS:
            if k not in m:
                ctx.fail("required in a note", f"{name}.{k}")
            if k == "at":
                note[k] = _timestamp(m[k], f"{name}.{k}", ctx)
            else:
                note[k] = _text(m[k], f"{name}.{k}", ctx, one_line=True).strip()
                if not note[k]:
                    ctx.fail("must not be empty", f"{name}.{k}")
        ident = (note["at"], note["by"], note["text"])
        if ident in seen:
            ctx.fail("the same note twice (at, by and text)", name)
        seen.add(ident)
        out.append(note)
    return out


def _claim_list(value: Any, key: str, ctx: FieldContext) -> list[dict[str, Any]]:
    if value == "":
        return []
    if not isinstance(value, list):
        ctx.fail(f"expected a list of claims, got {_kind(value)}", key)
    out = []
    for i, v in enumerate(value):
        claim = _claim(v, f"{key}[{i}]", ctx)
        if not claim:
            ctx.fail("expected a claim {by, at, heartbeat, note}", f"{key}[{i}]")
        out.append(claim)
    return out


def _coerce_field(key: str, value: Any, ctx: FieldContext) -> Any:
    if key == "title":
        text = _text(value, key, ctx, one_line=True)
        problem = control_problem(text)
        if problem:
            ctx.fail(problem, key)
        return text
    if key in _STRING_SET:
        return _text(value, key, ctx, one_line=key in _ONE_LINE_STRINGS)
    if key == "id":
        text = _text(value, key, ctx, one_line=True)
        if not is_valid_id(text):
            ctx.fail(f"invalid id {text!r} (letters, digits, '-', '_', '.'; at most 128; "
                     f"no path separators or '..')", key)
        return text
    if key == "status":
        text = _text(value, key, ctx, one_line=True)
        if text not in STATUSES:
            ctx.fail(f"unknown status {text!r} (one of {', '.join(STATUSES)})", key)
        return text
    if key == "priority":
        if value.__class__ is int and 0 <= value <= 4:
            return value
        digit = value.strip() if isinstance(value, str) else None
        if digit == "":
            return None
        if digit is None or digit not in ("0", "1", "2", "3", "4"):
            shown = repr(digit) if digit is not None else repr(value)
            ctx.fail(f"must be an integer 0-4 (0 most urgent), got {shown}", key)
        return int(digit)
    if key in ("created", "last_modified"):
        return _timestamp(value, key, ctx)
    if key == "claim":
        return _claim(value, key, ctx)
    if key == "contested":
        return _claim_list(value, key, ctx)
    if key == "commits":
        return _str_list(value, key, ctx, _commit_problem)
    if key == "depends_on":
        return _str_list(value, key, ctx, _task_id_problem)
    if key == "labels":
        return _str_list(value, key, ctx, control_problem)
    if key == "outcome":
        m = _mapping(value, key, ctx, OUTCOME_KEYS)
        if not m:
            return {}
        out = {k: _text(m[k], f"{key}.{k}", ctx, one_line=(k == "kind"))
               for k in OUTCOME_KEYS if k in m}
        out = {k: v for k, v in out.items() if v}
        if out.get("kind") not in OUTCOME_KINDS:
            got = f"got {out['kind']!r}" if "kind" in out else "it is missing"
            ctx.fail(f"must be one of {', '.join(OUTCOME_KINDS)}; {got}", "outcome.kind")
        return out
    if key == "items":
        if value == "":
            return []
        if not isinstance(value, list):
            ctx.fail(f"expected a list of items, got {_kind(value)}", key)
        parsed = [_item(v, f"{key}[{i}]", ctx) for i, v in enumerate(value)]
        seen: set[str] = set()
        for i, item in enumerate(parsed):
            if item["id"] in seen:
                ctx.fail(f"duplicate item id {item['id']!r}", f"{key}[{i}].id")
            seen.add(item["id"])
        return parsed
    if key == "notes":
        return _notes(value, key, ctx)
    if key == "x":
        if value == "":
            return {}
        if not isinstance(value, dict):
            ctx.fail(f"expected a mapping, got {_kind(value)}", key)
        return _x(value, key, ctx)
    raise AssertionError(key)  # pragma: no cover


def validate_fields(fields: Mapping[str, Any], path: str = "<record>") -> dict[str, Any]:
    """Validate typed fields (as built in code or read from JSON); returns them normalised.

    Raises LedgitError naming the field. The same rules as parsing.
    """
    return coerce_fields(fields, FieldContext(path))
