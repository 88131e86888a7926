"""The task record: schema, parse, validate, render, revision (DESIGN §3). Pure.

A task file is ``---\\n`` + YAML front matter + ``---\\n`` + Markdown body. The YAML is loaded
without implicit typing (every scalar is a string) and coerced by the schema below, so
``title: NO`` stays ``"NO"`` and ``commits: [0123456]`` stays ``"0123456"``. The writer is
deterministic and quotes every string a YAML 1.1 or 1.2 reader could misread.

In memory a record is ``Record(fields, body)``: ``fields`` is a plain JSON-compatible dict
(str, int, list, dict; never float or None) holding only the keys that are set, ``body`` is
the Markdown text (LF line ends; empty or ending with one ``\\n``).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import yaml

from ledgit.errors import LedgitError, located

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
    "signal", "outcome", "items", "created", "last_modified", "x",
)
REQUIRED = ("id", "title", "status", "created", "last_modified")
STRING_FIELDS = ("title", "owner", "worker", "response", "next_action", "gate", "waiting_on",
                 "signal")
SET_FIELDS = ("depends_on", "labels", "commits")
CLAIM_KEYS = ("by", "at", "heartbeat", "note")
OUTCOME_KEYS = ("kind", "reason", "reuse")
ITEM_KEYS = ("id", "kind", "text", "why", "evidence", "trust", "by", "at", "supersedes",
             "superseded_by", "confidence", "x")

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
ITEM_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
COMMIT_RE = re.compile(r"[0-9a-fA-F]{4,64}")
TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
# Characters that YAML readers treat as line breaks or refuse outright.
_BREAKS = ("\u2028", "\u2029", "\x85")


def is_valid_id(text: str) -> bool:
    """True when ``text`` may name a task: no path separators, no ``..``, no NUL."""
    return bool(ID_RE.fullmatch(text)) and ".." not in text


@dataclass(frozen=True)
class Record:
    """One task. ``fields``: front matter (only set keys); ``body``: Markdown after it."""

    fields: dict[str, Any]
    body: str = ""

    @property
    def id(self) -> str:
        return str(self.fields["id"])

    def state(self) -> dict[str, Any]:
        """The JSON state hashed into revisions and patched by history events."""
        return {"fields": self.fields, "body": self.body}

    @property
    def revision(self) -> str:
        return revision_of(self.state())


@dataclass
class _Ctx:
    path: str
    lines: dict[str, int] = field(default_factory=dict)
    offset: int = 1  # file line of the front matter's first line, minus one

    def fail(self, message: str, fieldname: str | None = None, line: int | None = None) -> None:
        if line is None and fieldname is not None:
            line = self.lines.get(fieldname.split(".")[0].split("[")[0])
        raise LedgitError(located(message, self.path, line, fieldname))


# --------------------------------------------------------------------------- canonical JSON


def canonical_json(value: Any) -> bytes:
    """Canonical JSON (DESIGN §3): sorted keys, no whitespace, UTF-8, no floats.

    Raises ValueError on a float (hashed content holds none).
    """
    _reject_floats(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _reject_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ValueError("floats are not allowed in hashed content")
    if isinstance(value, dict):
        for v in value.values():
            _reject_floats(v)
    elif isinstance(value, list):
        for v in value:
            _reject_floats(v)


def revision_of(state: Mapping[str, Any]) -> str:
    """sha256 hex of ``canonical_json({"fields": ..., "body": ...})`` (DESIGN §3)."""
    return hashlib.sha256(canonical_json(state)).hexdigest()


# --------------------------------------------------------------------------- timestamps


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds: ``2026-08-29T10:00:00.000000Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_timestamp() -> str:
    """The current time as :func:`format_timestamp` text."""
    return format_timestamp(datetime.now(timezone.utc))


def parse_timestamp(text: str) -> datetime:
    """Parse RFC 3339 date-time text (any offset) into an aware UTC datetime.

    Raises ValueError for anything else (a bare date included).
    """
    m = TIMESTAMP_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"expected an RFC 3339 timestamp like 2026-01-01T00:00:00.000000Z, "
                         f"got {text!r}")
    frac = (m.group(7) or ".0")[1:7].ljust(6, "0")
    tz = m.group(8)
    base = f"{m.group(1)}-{m.group(2)}-{m.group(3)}T{m.group(4)}:{m.group(5)}:{m.group(6)}"
    offset = "+00:00" if tz in ("Z", "z") else tz
    return datetime.fromisoformat(f"{base}.{frac}{offset}").astimezone(timezone.utc)


def normalize_timestamp(text: str) -> str:
    """Any RFC 3339 date-time → the canonical UTC µs form. Raises ValueError."""
    return format_timestamp(parse_timestamp(text))


# --------------------------------------------------------------------------- parsing


class _Loader(yaml.SafeLoader):
    """Composer only: we walk the node graph ourselves (no implicit typing, no tags)."""


_Loader.yaml_implicit_resolvers = {}

try:  # the C parser when PyYAML was built with libyaml
    from yaml import CSafeLoader as _FastBase

    class _FastLoader(_FastBase):
        pass

    _FastLoader.yaml_implicit_resolvers = {}
    _LOADER: type = _FastLoader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    _LOADER = _Loader

_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


def split_front_matter(text: str, path: str = "<record>") -> tuple[str, str, int]:
    """Split a task file into (front matter YAML, body, number of front-matter lines).

    The file must start with a line ``---`` and the front matter ends at the next line that
    is exactly ``---``; everything after it is the body, verbatim. Raises LedgitError.
    """
    if not text.startswith("---\n"):
        raise LedgitError(located("missing front matter: the file must start with a line '---'",
                                  path, 1))
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise LedgitError(located("unclosed front matter: no closing line '---'", path, 1))
    yaml_text = text[4:end + 1]
    body = text[end + 5:]
    nlines = yaml_text.count("\n")
    return yaml_text, body, nlines


def parse_record(data: str | bytes, path: str = "<record>") -> Record:
    """Parse and validate a task file. ``data``: the file's bytes or text.

    Handled exactly: a UTF-8 BOM (ignored), CRLF/CR line ends (read as LF), ``---`` inside the
    body. Refused with ``path:line: field: message`` (LedgitError, exit 2): invalid UTF-8,
    missing/unclosed/empty front matter, tabs in indentation, duplicate keys, YAML tags,
    anchors/aliases, raw U+2028/U+2029/U+0085 in the front matter, unknown keys (outside
    ``x:``), and every schema violation.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise LedgitError(located("not valid UTF-8", path, line)) from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    yaml_text, body, _ = split_front_matter(text, path)
    if not yaml_text.strip():
        raise LedgitError(located("empty front matter", path, 2))
    ctx = _Ctx(path)
    raw = _load_mapping(yaml_text, ctx)
    if body and not body.endswith("\n"):
        body += "\n"
    fields = coerce_fields(raw, ctx)
    body = unicodedata.normalize("NFC", body) if not body.isascii() else body
    return Record(fields, body)


def _load_mapping(yaml_text: str, ctx: _Ctx) -> dict[str, Any]:
    for i, line in enumerate(yaml_text.split("\n"), start=2):
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            ctx.fail("tab in indentation (YAML allows spaces only)", line=i)
        for ch in _BREAKS:
            if ch in line:
                ctx.fail(f"raw U+{ord(ch):04X} in front matter; write it as an escape "
                         f"inside double quotes", line=i)
    loader = _LOADER(yaml_text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = mark.line + 2 if mark is not None else None
        ctx.fail(f"invalid YAML: {exc.problem or exc.context}", line=where)
        raise  # unreachable
    except yaml.YAMLError as exc:
        ctx.fail(f"invalid YAML: {exc}")
        raise  # unreachable
    finally:
        loader.dispose()
    if node is None:
        ctx.fail("empty front matter", line=2)
    if not isinstance(node, yaml.MappingNode):
        ctx.fail("front matter must be a mapping of field: value", line=2)
    value = _walk(node, ctx, "", set())
    assert isinstance(value, dict)
    return value


def _walk(node: yaml.Node, ctx: _Ctx, where: str, seen: set[int]) -> Any:
    line = node.start_mark.line + 2
    if id(node) in seen:
        ctx.fail("YAML anchors and aliases are not allowed", where or None, line)
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if node.tag != _STR_TAG:
            ctx.fail(f"YAML tag {node.tag!r} is not allowed", where or None, line)
        return node.value
    if node.tag not in (_SEQ_TAG, _MAP_TAG):
        ctx.fail(f"YAML tag {node.tag!r} is not allowed", where or None, line)
    if isinstance(node, yaml.SequenceNode):
        return [_walk(child, ctx, f"{where}[{i}]", seen) for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            kline = knode.start_mark.line + 2
            if not isinstance(knode, yaml.ScalarNode) or knode.tag != _STR_TAG:
                ctx.fail("keys must be plain strings", where or None, kline)
            key = knode.value
            name = f"{where}.{key}" if where else key
            if key in out:
                ctx.fail("duplicate key", name, kline)
            if not where:
                ctx.lines[key] = kline
            out[key] = _walk(vnode, ctx, name, seen)
        return out
    ctx.fail("unsupported YAML node", where or None, line)  # pragma: no cover
    return None


# --------------------------------------------------------------------------- schema


def coerce_fields(raw: Mapping[str, Any], ctx: _Ctx | None = None,
                  path: str = "<record>") -> dict[str, Any]:
    """Coerce string-typed front matter (or JSON values) into typed, validated fields.

    Empty values (``""``, ``[]``, ``{}``) mean "not set" and are dropped. Raises LedgitError
    naming the field. Rules: DESIGN §3 and docs/format.md.
    """
    ctx = ctx or _Ctx(path)
    out: dict[str, Any] = {}
    for key in raw:
        if key not in FIELD_ORDER:
            ctx.fail("unknown field (put extensions under 'x:')", key)
    for key in FIELD_ORDER:
        if key not in raw:
            continue
        value = raw[key]
        coerced = _coerce_field(key, value, ctx)
        if coerced in ("", [], {}, None):
            continue
        out[key] = coerced
    for key in REQUIRED:
        if key not in out:
            ctx.fail("required field is missing", key, ctx.lines.get(key, 2))
    return out


def _text(value: Any, name: str, ctx: _Ctx, *, one_line: bool = False) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        ctx.fail("expected a string", name)
    text = str(value)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
        for ch in text:
            if "\ud800" <= ch <= "\udfff":
                ctx.fail("lone surrogate in text", name)
    if "\x00" in text:
        ctx.fail("NUL character in text", name)
    if one_line and ("\n" in text or "\r" in text or any(c in text for c in _BREAKS)):
        ctx.fail("must be one line", name)
    return text


def _timestamp(value: Any, name: str, ctx: _Ctx) -> str:
    text = _text(value, name, ctx, one_line=True)
    try:
        return normalize_timestamp(text)
    except ValueError as exc:
        ctx.fail(str(exc), name)
        raise  # unreachable


def _str_list(value: Any, name: str, ctx: _Ctx) -> list[str]:
    if isinstance(value, str) and value == "":
        return []
    if not isinstance(value, list):
        ctx.fail("expected a list", name)
    out: list[str] = []
    for i, v in enumerate(value):
        text = _text(v, f"{name}[{i}]", ctx, one_line=True).strip()
        if text and text not in out:
            out.append(text)
    return out


def _mapping(value: Any, name: str, ctx: _Ctx, keys: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(value, str) and value == "":
        return {}
    if not isinstance(value, dict):
        ctx.fail("expected a mapping", name)
    for k in value:
        if k not in keys:
            ctx.fail(f"unknown key (allowed: {', '.join(keys)})", f"{name}.{k}")
    return dict(value)


def _claim(value: Any, name: str, ctx: _Ctx) -> dict[str, Any]:
    m = _mapping(value, name, ctx, CLAIM_KEYS)
    if not m:
        return {}
    out: dict[str, Any] = {}
    for k in CLAIM_KEYS:
        if k not in m:
            continue
        if k in ("at", "heartbeat"):
            out[k] = _timestamp(m[k], f"{name}.{k}", ctx)
        else:
            t = _text(m[k], f"{name}.{k}", ctx, one_line=(k == "by"))
            if t:
                out[k] = t
    for k in ("by", "at"):
        if k not in out:
            ctx.fail("required in a claim", f"{name}.{k}")
    return out


def _x(value: Any, name: str, ctx: _Ctx) -> Any:
    if isinstance(value, dict):
        return {str(k): _x(v, f"{name}.{k}", ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_x(v, f"{name}[{i}]", ctx) for i, v in enumerate(value)]
    if isinstance(value, bool) or isinstance(value, float) or value is None:
        ctx.fail("extension values must be strings, lists or mappings", name)
    return _text(value, name, ctx)


def _item(value: Any, name: str, ctx: _Ctx) -> dict[str, Any]:
    m = _mapping(value, name, ctx, ITEM_KEYS)
    out: dict[str, Any] = {}
    for k in ITEM_KEYS:
        if k not in m:
            continue
        v = m[k]
        if k == "at":
            out[k] = _timestamp(v, f"{name}.{k}", ctx)
        elif k in ("supersedes", "superseded_by"):
            ids = _str_list(v, f"{name}.{k}", ctx)
            if ids:
                out[k] = ids
        elif k == "x":
            xv = _x(v, f"{name}.x", ctx)
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
        ctx.fail("invalid item id", f"{name}.id")
    if out["kind"] not in ITEM_KINDS:
        ctx.fail(f"unknown kind (one of {', '.join(ITEM_KINDS)})", f"{name}.kind")
    if out["trust"] not in TRUST_LEVELS:
        ctx.fail(f"unknown trust (one of {', '.join(TRUST_LEVELS)})", f"{name}.trust")
    return out


def _coerce_field(key: str, value: Any, ctx: _Ctx) -> Any:
    if key == "id":
        text = _text(value, key, ctx, one_line=True)
        if not is_valid_id(text):
            ctx.fail("invalid id (letters, digits, '-', '_', '.'; no path separators or '..')",
                     key)
        return text
    if key in STRING_FIELDS:
        return _text(value, key, ctx, one_line=(key in ("title", "owner", "worker")))
    if key == "status":
        text = _text(value, key, ctx, one_line=True)
        if text not in STATUSES:
            ctx.fail(f"unknown status {text!r} (one of {', '.join(STATUSES)})", key)
        return text
    if key == "priority":
        text = _text(value, key, ctx, one_line=True).strip()
        if text == "":
            return None
        if text not in ("0", "1", "2", "3", "4"):
            ctx.fail(f"priority must be an integer 0-4, got {text!r}", key)
        return int(text)
    if key in ("created", "last_modified"):
        return _timestamp(value, key, ctx)
    if key == "claim":
        return _claim(value, key, ctx)
    if key == "contested":
        if not isinstance(value, list):
            ctx.fail("expected a list of claims", key)
        return [_claim(v, f"{key}[{i}]", ctx) for i, v in enumerate(value)]
    if key in SET_FIELDS:
        items = _str_list(value, key, ctx)
        for i, item in enumerate(items):
            if key == "commits" and not COMMIT_RE.fullmatch(item):
                ctx.fail(f"not a commit hash: {item!r}", f"{key}[{i}]")
            if key == "depends_on" and not is_valid_id(item):
                ctx.fail(f"not a task id: {item!r}", f"{key}[{i}]")
        return items
    if key == "outcome":
        m = _mapping(value, key, ctx, OUTCOME_KEYS)
        if not m:
            return {}
        out = {k: _text(m[k], f"{key}.{k}", ctx) for k in OUTCOME_KEYS if k in m}
        out = {k: v for k, v in out.items() if v}
        if out.get("kind") not in OUTCOME_KINDS:
            ctx.fail(f"outcome.kind must be one of {', '.join(OUTCOME_KINDS)}", "outcome.kind")
        return out
    if key == "items":
        if not isinstance(value, list):
            ctx.fail("expected a list of items", key)
        parsed = [_item(v, f"{key}[{i}]", ctx) for i, v in enumerate(value)]
        ids = [i["id"] for i in parsed]
        if len(set(ids)) != len(ids):
            ctx.fail("duplicate item id", key)
        return parsed
    if key == "x":
        if not isinstance(value, dict):
            ctx.fail("x must be a mapping", key)
        return _x(value, key, ctx)
    raise AssertionError(key)  # pragma: no cover


def validate_fields(fields: Mapping[str, Any], path: str = "<record>") -> dict[str, Any]:
    """Validate typed fields (as built in code or read from JSON); returns them normalised.

    Raises LedgitError naming the field. The same rules as parsing.
    """
    raw: dict[str, Any] = {}
    for k, v in fields.items():
        if k == "priority" and isinstance(v, int) and not isinstance(v, bool):
            raw[k] = str(v)
        else:
            raw[k] = v
    return coerce_fields(raw, _Ctx(path))


def make_record(fields: Mapping[str, Any], body: str = "", path: str = "<record>") -> Record:
    """Build a validated Record from typed fields and a body (LF-normalised, NFC)."""
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    body = unicodedata.normalize("NFC", body)
    return Record(validate_fields(fields, path), body)


# --------------------------------------------------------------------------- invariants


def lifecycle_problems(fields: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Lifecycle invariants of DESIGN §4 as (field, message) pairs; empty when all hold."""
    status = fields.get("status")
    problems: list[tuple[str, str]] = []
    if status == "waiting" and not fields.get("waiting_on"):
        problems.append(("waiting_on", "status waiting needs waiting_on"))
    if status in ("parked", "dropped") and not fields.get("outcome", {}).get("reason"):
        problems.append(("outcome", f"status {status} needs an outcome with a reason"))
    if status == "done" and not fields.get("response"):
        problems.append(("response", "status done needs an account (response)"))
    if status == "archived":
        for k in ("claim", "waiting_on", "next_action"):
            if fields.get(k):
                problems.append((k, f"an archived task holds no {k}"))
    if fields.get("claim") and status in ("done", "dropped", "archived", "parked"):
        problems.append(("claim", f"a {status} task holds no claim"))
    return problems


# --------------------------------------------------------------------------- rendering

_YAML_SPECIAL = frozenset(("y", "n", "yes", "no", "on", "off", "true", "false", "null", "~",
                           "nan", "inf", ".nan", ".inf", "-.inf", "+.inf", "=", "<<"))
_PLAIN_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_./()+@-]*(?: [A-Za-z0-9_./()+@'-]+)*")


def _needs_quotes(text: str) -> bool:
    if not _PLAIN_OK.fullmatch(text):
        return True
    if text.lower() in _YAML_SPECIAL:
        return True
    # YAML 1.1 sexagesimal / booleans / hex-ish words that look like numbers
    return bool(re.fullmatch(r"[0-9a-fA-F_:.+-]+", text) and re.search(r"\d", text))


def _quote(text: str) -> str:
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F or 0x80 <= o <= 0x9F or ch in _BREAKS or o == 0xFEFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalar(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    return _quote(text) if _needs_quotes(text) else text


def _emit(value: Any, indent: int, out: list[str]) -> None:
    """Emit ``value`` as the value part of a mapping entry whose key is already written."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        out.append("\n")
        for k, v in value.items():
            out.append(f"{pad}{_scalar(k)}:")
            _emit(v, indent + 2, out)
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        if all(not isinstance(v, (dict, list)) for v in value):
            out.append(" [" + ", ".join(_scalar(v) for v in value) + "]\n")
            return
        out.append("\n")
        for v in value:
            if isinstance(v, dict) and v:
                first = True
                for k, vv in v.items():
                    out.append(f"{pad}- " if first else f"{pad}  ")
                    first = False
                    out.append(f"{_scalar(k)}:")
                    _emit(vv, indent + 4, out)
            elif isinstance(v, dict):
                out.append(f"{pad}- {{}}\n")
            elif isinstance(v, list):
                out.append(f"{pad}-")
                _emit(v, indent + 2, out)
            else:
                out.append(f"{pad}- {_scalar(v)}\n")
    else:
        out.append(f" {_scalar(value)}\n")


def render_record(record: Record) -> str:
    """Render a record as task-file text: deterministic, LF, one trailing newline.

    Key order is FIELD_ORDER; nested keys in schema order (``x`` keeps its own order).
    Law (property-tested): ``parse_record(render_record(r)) == r`` for every valid record.
    """
    out: list[str] = ["---\n"]
    fields = record.fields
    for key in FIELD_ORDER:
        if key not in fields:
            continue
        value = fields[key]
        out.append(f"{key}:")
        if key == "claim":
            value = _ordered(value, CLAIM_KEYS)
        elif key == "contested":
            value = [_ordered(c, CLAIM_KEYS) for c in value]
        elif key == "outcome":
            value = _ordered(value, OUTCOME_KEYS)
        elif key == "items":
            value = [_ordered(i, ITEM_KEYS) for i in value]
        _emit(value, 2, out)
    out.append("---\n")
    out.append(record.body)
    return "".join(out)


def _ordered(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: mapping[k] for k in keys if k in mapping}


def record_from_state(state: Mapping[str, Any], path: str = "<record>") -> Record:
    """A Record from a history state ``{"fields": ..., "body": ...}`` (validated)."""
    return Record(validate_fields(state.get("fields", {}), path), str(state.get("body", "")))
