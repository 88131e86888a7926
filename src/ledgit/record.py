"""The task record: schema, parse, validate, render, revision (DESIGN §3). Pure.

A task file is ``---\\n`` + YAML front matter + ``---\\n`` + Markdown body. The YAML is loaded
without implicit typing (every scalar is a string) and coerced by the schema below, so
``title: NO`` stays ``"NO"`` and ``commits: [0123456]`` stays ``"0123456"``. The writer is
deterministic and quotes every string a YAML 1.1 or 1.2 reader could misread.

In memory a record is ``Record(fields, body)``: ``fields`` is a plain JSON-compatible dict
(str, int, list, dict; never float or None) holding only the keys that are set, ``body`` is
the Markdown text (LF line ends; empty or ending with ``\\n``). Format: docs/format.md.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from ledgit.errors import LedgitError, located
from ledgit.lifecycle import lifecycle_problems as lifecycle_problems

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime
    from typing import Any, NoReturn

    import yaml

# Import cost is a budget: the merge driver parses and renders records in a fresh process per
# file (DESIGN §7). PyYAML, hashlib, datetime and dataclasses are therefore not imported here
# at the top: files written by render_record are read by _read_canonical (proved exact by
# rendering the result back), PyYAML only composes anything else.

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


def is_valid_id(text: str) -> bool:
    """True when ``text`` may name a task: no path separators, no ``..``, no NUL."""
    return bool(ID_RE.fullmatch(text)) and ".." not in text


class Record:
    """One task. ``fields``: front matter (only set keys); ``body``: Markdown after it.

    Immutable; equal when fields and body are equal; unhashable (fields is a dict).
    """

    __slots__ = ("fields", "body")
    fields: dict[str, Any]
    body: str

    def __init__(self, fields: dict[str, Any], body: str = "") -> None:
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "body", body)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Record is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Record is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Record:
            return NotImplemented
        assert isinstance(other, Record)
        return self.fields == other.fields and self.body == other.body

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Record(fields={self.fields!r}, body={self.body!r})"

    def __reduce__(self) -> tuple[type[Record], tuple[dict[str, Any], str]]:
        return (Record, (self.fields, self.body))

    @property
    def id(self) -> str:
        return str(self.fields["id"])

    def state(self) -> dict[str, Any]:
        """The JSON state hashed into revisions and patched by history events."""
        return {"fields": self.fields, "body": self.body}

    @property
    def revision(self) -> str:
        return revision_of(self.state())


# --------------------------------------------------------------------------- canonical JSON


def canonical_json(value: Any) -> bytes:
    """Canonical JSON (DESIGN §3): sorted keys, no whitespace, UTF-8, no floats.

    Raises ValueError on a float (hashed content holds none).
    """
    _reject_floats(value)
    global _encode
    if _encode is None:
        from ledgit.canonjson import plain_encoder

        _encode = plain_encoder()
    return _encode(value).encode("utf-8")


_encode: Callable[[Any], str] | None = None  # canonjson.plain_encoder(), made on first use


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
    return sha256_hex(canonical_json(state))


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data`` as 64 lower-case hex digits (FIPS 180-4)."""
    digest: str = sha256_function()(data).hexdigest()
    return digest


def sha256_function() -> Callable[[bytes], Any]:
    """``hashlib.sha256`` (``f(data).hexdigest()``), for a caller hashing many values."""
    # lazy: hashlib loads OpenSSL (~2 ms of a ~20 ms `ledgit get`, bench get), needed by writes only
    import hashlib

    return hashlib.sha256



# --------------------------------------------------------------------------- timestamps

_CANONICAL_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds: ``2026-08-29T10:00:00.000000Z``."""
    from datetime import timezone

    m = moment.astimezone(timezone.utc)
    # Not strftime: its %Y does not zero-pad years before 1000 on every platform.
    return (f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:"
            f"{m.second:02d}.{m.microsecond:06d}Z")


def now_timestamp() -> str:
    """The current time as :func:`format_timestamp` text (:func:`ledgit.readout.now_timestamp`)."""
    from ledgit.readout import now_timestamp as now

    return now()


def parse_timestamp(text: str) -> datetime:
    """Parse RFC 3339 date-time text (any offset) into an aware UTC datetime.

    Digits beyond microseconds are dropped. Raises ValueError for anything else (a bare date
    included) or a date-time that does not exist or is out of range once in UTC.
    """
    from datetime import datetime, timezone

    m = TIMESTAMP_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"expected an RFC 3339 UTC timestamp like "
                         f"2026-01-01T00:00:00.000000Z, got {text!r}")
    frac = (m.group(7) or ".0")[1:7].ljust(6, "0")
    tz = m.group(8)
    base = f"{m.group(1)}-{m.group(2)}-{m.group(3)}T{m.group(4)}:{m.group(5)}:{m.group(6)}"
    offset = "+00:00" if tz in ("Z", "z") else tz
    try:
        return datetime.fromisoformat(f"{base}.{frac}{offset}").astimezone(timezone.utc)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"invalid timestamp {text!r}: {exc}") from None


def normalize_timestamp(text: str) -> str:
    """Any RFC 3339 date-time → the canonical UTC µs form. Raises ValueError."""
    if _CANONICAL_TIMESTAMP.fullmatch(text) and _exists(text):
        return text  # already canonical and a real date and time
    return format_timestamp(parse_timestamp(text))


_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _exists(canonical: str) -> bool:
    """Whether a canonical timestamp names a real UTC date and time (what
    ``datetime.fromisoformat`` accepts), without importing datetime."""
    year, month, day = int(canonical[0:4]), int(canonical[5:7]), int(canonical[8:10])
    if not (year >= 1 and 1 <= month <= 12 and day >= 1):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day > _DAYS[month - 1] + (1 if month == 2 and leap else 0):
        return False
    return (int(canonical[11:13]) <= 23 and int(canonical[14:16]) <= 59
            and int(canonical[17:19]) <= 59)


# --------------------------------------------------------------------------- parsing


class _FieldError(Exception):
    """Internal: a refused value, located later by field name or node."""


class _Ctx:
    """Where errors point: the file path and, for parsed files, the front matter's node tree."""

    __slots__ = ("path", "root")

    def __init__(self, path: str, root: yaml.MappingNode | None = None) -> None:
        self.path = path
        self.root = root

    def fail(self, message: str, fieldname: str | None = None, line: int | None = None
             ) -> NoReturn:
        """Raise LedgitError ``path:line: field: message`` (line looked up from the field)."""
        if line is None and fieldname is not None and self.root is not None:
            line = _line_of_field(self.root, fieldname)
        raise LedgitError(located(message, self.path, line, fieldname))


def _build_loaders() -> None:
    """Define ``_Loader`` (pure Python) and ``_LOADER`` (libyaml's when PyYAML has it): YAML
    composers with no implicit typing (DESIGN §3), every untagged scalar a string."""
    import yaml

    class _StringsOnly:
        yaml_implicit_resolvers: dict[Any, Any] = {}

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            # Called by the composer for nodes without an explicit tag (or with "!").
            if kind is yaml.ScalarNode:
                return _STR_TAG
            return _SEQ_TAG if kind is yaml.SequenceNode else _MAP_TAG

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

    class _Loader(_StringsOnly, yaml.SafeLoader):
        """Composer only: we walk the node graph ourselves."""

    loader: Any = _Loader
    try:  # the C parser when PyYAML was built with libyaml
        from yaml import CSafeLoader

        class _FastLoader(_StringsOnly, CSafeLoader):
            pass

        loader = _FastLoader
    except ImportError:  # pragma: no cover - depends on the PyYAML build
        pass
    found = globals()
    found["_Loader"] = _Loader
    found.setdefault("_LOADER", loader)


def _loader() -> Any:
    """The YAML loader class in use (``_LOADER``; tests may swap it)."""
    found = globals()
    if "_LOADER" not in found:
        _build_loaders()
    return found["_LOADER"]


def __getattr__(name: str) -> Any:
    """``_LOADER`` and ``_Loader`` exist once asked for (PEP 562): PyYAML loads then."""
    if name in ("_LOADER", "_Loader"):
        _build_loaders()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_MAX_DEPTH = 32  # nesting levels below the front matter's top mapping
_MAX_KEY = 256  # YAML readers refuse implicit keys longer than 1024 characters
#: The largest task file (and body) ledgit reads or writes, in bytes (issue 7; docs/format.md
#: "Size limits"). A task file is a record, not an archive: logs, transcripts and dumps are
#: linked, not stored. Checked before anything is parsed, so a bigger file is refused fast.
MAX_RECORD_BYTES = 10 * 1024 * 1024


def size_problem(size: int, what: str = "the task file") -> str | None:
    """The message for a ``size`` in bytes above MAX_RECORD_BYTES, else None."""
    if size <= MAX_RECORD_BYTES:
        return None
    return (f"{what} is {size / 1048576:.1f} MiB; the limit is "
            f"{MAX_RECORD_BYTES // 1048576} MiB (keep large content outside the board and "
            f"link to it)")


def _utf8_size(text: str) -> int:
    """The UTF-8 size of ``text``, computed only when it could exceed the limit."""
    if len(text) * 4 <= MAX_RECORD_BYTES or len(text) > MAX_RECORD_BYTES:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _refuse_size(data: str | bytes, path: str) -> None:
    size = len(data) if isinstance(data, bytes) else _utf8_size(data)
    message = size_problem(size)
    if message is None:
        return
    # Name the body when the front matter closes early (the common case), else line 1.
    line, field = 1, None
    sep = b"\n---\n" if isinstance(data, bytes) else "\n---\n"
    end = data.find(sep, 3, 1 << 20)  # type: ignore[arg-type]
    if end != -1:
        line, field = data.count(sep[:1], 0, end) + 3, "body"  # type: ignore[arg-type]
    raise LedgitError(located(message, path, line, field))

# Patterns the canonical path never needs are strings, compiled (and cached by re) on first
# use: a character class reaching into the astral planes costs ~0.25 ms to compile.
#
# Refused raw in front matter (the writer always escapes them): C0/C1 controls other than TAB
# and LF, DEL, U+2028/U+2029 (line breaks to a YAML 1.1 reader, not to a 1.2 one), BOM,
# U+FFFE/U+FFFF and lone surrogates (not printable in YAML).
_RAW_REFUSED = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff"
                "\ufffe\uffff]")
_TAB_INDENT = r"(?m)^ *\t"
_CHAR_NAMES = {"\u2028": "line separator", "\u2029": "paragraph separator",
               "\x85": "next line", "\ufeff": "byte order mark", "\ufffe": "non-character",
               "\uffff": "non-character"}


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
            raise LedgitError(located("unclosed front matter: no line '---' closes it",
                                      path, 1))
    yaml_text = text[4:end + 1]
    body = text[end + 5:]
    nlines = yaml_text.count("\n")
    return yaml_text, body, nlines


def parse_record(data: str | bytes, path: str = "<record>") -> Record:
    """Parse and validate a task file. ``data``: the file's bytes or text.

    Handled exactly: a UTF-8 BOM (ignored), CRLF/CR line ends (read as LF), ``---`` inside the
    body, a missing final newline (added). Text is NFC-normalised. Refused with
    ``path:line: field: message`` (LedgitError, exit 2): invalid UTF-8, missing/unclosed/empty
    front matter, tabs in indentation, duplicate keys, YAML tags, anchors/aliases, raw control
    characters or U+2028/U+2029/U+0085 in the front matter, unknown keys (outside ``x:``), and
    every schema violation; a file larger than MAX_RECORD_BYTES (before any parsing). Rules:
    docs/format.md.
    """
    _refuse_size(data, path)
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise LedgitError(located(f"not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                                      path, line)) from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    yaml_text, body, _ = split_front_matter(text, path)
    if body:
        if not body.endswith("\n"):
            body += "\n"
        if not body.isascii():
            body = unicodedata.normalize("NFC", body)
    raw = _read_canonical(yaml_text)
    if raw is not None:
        try:
            fast = Record(coerce_fields(raw, _Ctx(path)), body)
        except LedgitError:
            fast = None  # the YAML path words the error with its line
        # parse(render(r)) == r (property-tested): a record that renders back to this very
        # text is exactly what the YAML path would return.
        if fast is not None and render_record(fast) == text:
            return fast
    root = _load_front_matter(yaml_text, path)
    ctx = _Ctx(path, root)
    raw = _walk_root(root, ctx)
    return Record(coerce_fields(raw, ctx), body)


def layout_loss(data: str | bytes, record: Record) -> tuple[int, str] | None:
    """What rewriting the task file ``data`` -- which parses to ``record`` -- in the
    canonical form (:func:`render_record`) would not keep, as ``(line, what)``: the first
    YAML comment of the front matter (``a YAML comment ('# why')``), else the first line of
    custom quoting (``custom quoting ('title: "X"', written: 'title: X')``) or custom layout
    (key order, indentation, flow or block style, spacing). None when the front matter is
    already canonical. The body is not compared: it is kept as written (line ends, NFC and a
    final newline aside, docs/format.md). ``line`` is 1-based in the file."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    mine = split_front_matter(text)[0]
    canon = split_front_matter(render_record(record))[0]
    if mine == canon:
        return None
    lines = mine.split("\n")
    for n, line in enumerate(lines):
        comment = _comment_in(line)
        if comment is not None:
            return n + 2, f"a YAML comment ({comment!r})"
    import difflib

    written = canon.split("\n")
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=lines, b=written,
                                                       autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        have = lines[i1] if i1 < i2 else ""
        want = written[j1] if j1 < j2 else ""
        if have and want and _unquoted(have) == _unquoted(want):
            return i1 + 2, f"custom quoting ({have!r}, written: {want!r})"
        if not have:
            here = f" before {lines[i1]!r}" if i1 < len(lines) and lines[i1] else ""
            return i1 + 2, f"custom layout (the canonical form writes {want!r}{here})"
        return i1 + 2, (f"custom layout ({have!r}, written: {want!r})" if want
                        else f"custom layout ({have!r})")
    return None  # pragma: no cover - the texts differ, so some opcode is not equal


def _comment_in(line: str) -> str | None:
    """The YAML comment on a front-matter line (``#`` at the start or after a blank, outside
    quotes), or None."""
    quote, i = "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1  # an escaped character
            elif ch == quote and quote == "'" and line[i + 1:i + 2] == "'":
                i += 1  # '' in a single-quoted scalar
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and (i == 0 or line[i - 1] in " :[{,-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[i:].strip()
        i += 1
    return None


def _unquoted(line: str) -> str:
    return line.replace('"', "").replace("'", "")


# --------------------------------------------------------------------------- canonical reader


class _NotCanonical(Exception):
    """Internal: the text is not in render_record's exact form."""


_UNESCAPE = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_FLOW_START = frozenset("[{&*!|>'%@`#\"?-,]:")


def _read_canonical(yaml_text: str) -> dict[str, Any] | None:
    """The front matter as strings, lists and mappings when it has exactly the shape
    :func:`render_record` writes (block mappings indented by 2, ``- `` sequences, flow lists
    of scalars, plain or double-quoted scalars); None for anything else.

    Cheap and import-free; parse_record trusts it only when rendering the coerced result
    gives back the very same text, so it can never read a value differently than YAML does.
    """
    lines = yaml_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        out, end = _canonical_top(lines)
    except (_NotCanonical, ValueError, IndexError):
        return None
    return out if end == len(lines) else None


def _canonical_top(lines: list[str]) -> tuple[dict[str, Any], int]:
    """``_canonical_map(lines, 0, 0, None)`` with its most common lines inlined: a schema
    key (plain by construction) followed by a plain one-line scalar or a double-quoted one
    without escapes -- what :func:`_canonical_key` and :func:`_canonical_scalar` accept for
    such a line, without the calls (a cold index build reads ~8 such lines per task)."""
    out: dict[str, Any] = {}
    k, n = 0, len(lines)
    while k < n:
        line = lines[k]
        j = line.find(": ")
        key = line[:j]
        if j > 0 and key in _FIELD_SET and key not in out:  # (a schema key holds no ":")
            value = line[j + 2:]
            first = value[:1]
            if first and first not in _FLOW_START and value[-1] != " " \
                    and ": " not in value and " #" not in value:
                out[key] = value
                k += 1
                continue
            if first == '"' and value.find('"', 1) == len(value) - 1 and "\\" not in value:
                out[key] = value[1:-1]  # a double-quoted scalar without escapes
                k += 1
                continue
        if line[:1] in (" ", "-", ""):
            break
        key, rest = _canonical_key(line, 0)
        if key in out:
            raise _NotCanonical
        out[key], k = _canonical_value(rest, lines, k + 1, 0)
    return out, k


def _canonical_quoted(text: str, start: int) -> tuple[str, int]:
    """The double-quoted scalar at ``text[start]`` and the offset after its closing quote."""
    i = start + 1
    q = text.find('"', i)
    if q < 0:
        raise _NotCanonical
    b = text.find("\\", i, q)
    if b < 0:  # no escape: one slice
        return text[i:q], q + 1
    out: list[str] = []
    while True:  # from one escape to the next (a quote after a backslash may be escaped)
        out.append(text[i:b])
        e = text[b + 1:b + 2]
        if e == "u":
            out.append(chr(int(text[b + 2:b + 6], 16)))
            i = b + 6
        elif e in _UNESCAPE:
            out.append(_UNESCAPE[e])
            i = b + 2
        else:
            raise _NotCanonical
        q = text.find('"', i)
        if q < 0:
            raise _NotCanonical
        b = text.find("\\", i, q)
        if b < 0:
            out.append(text[i:q])
            return "".join(out), q + 1


def _canonical_scalar(text: str) -> str:
    if text.startswith('"'):
        value, end = _canonical_quoted(text, 0)
        if end != len(text):
            raise _NotCanonical
        return value
    if not text or text[0] in _FLOW_START or text[-1] == " " or ": " in text or " #" in text:
        raise _NotCanonical
    return text


def _canonical_flow(text: str) -> list[str]:
    inner = text[1:-1]
    out: list[str] = []
    i, n = 0, len(inner)
    while i < n:
        if inner[i] == '"':
            value, i = _canonical_quoted(inner, i)
        else:
            j = inner.find(", ", i)
            j = n if j == -1 else j
            value = _canonical_scalar(inner[i:j])
            if "]" in value or "," in value:
                raise _NotCanonical
            i = j
        out.append(value)
        if i < n:
            if inner[i:i + 2] != ", ":
                raise _NotCanonical
            i += 2
    return out


def _canonical_value(rest: str, lines: list[str], k: int, col: int) -> tuple[Any, int]:
    """The value after ``key:`` (``rest``) of a key at column ``col``; line ``k`` is next."""
    if rest == "":
        if k < len(lines) and lines[k].startswith(" " * (col + 2) + "-"):
            return _canonical_seq(lines, k, col + 2)
        value, k2 = _canonical_map(lines, k, col + 2, None)
        if not value:
            raise _NotCanonical
        return value, k2
    if rest[0] != " ":
        raise _NotCanonical
    rest = rest[1:]
    if rest == "{}":
        return {}, k
    if rest == "[]":
        return [], k
    if rest.startswith("[") and rest.endswith("]"):
        return _canonical_flow(rest), k
    return _canonical_scalar(rest), k


def _canonical_key(line: str, col: int) -> tuple[str, str]:
    body = line[col:]
    if body.startswith('"'):
        key, end = _canonical_quoted(body, 0)
        if body[end:end + 1] != ":":
            raise _NotCanonical
        return key, body[end + 1:]
    j = body.find(":")
    if j <= 0:
        raise _NotCanonical
    return _canonical_scalar(body[:j]), body[j + 1:]


def _canonical_map(lines: list[str], k: int, col: int,
                   first: tuple[str, str] | None) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    pad = " " * col
    if first is not None:
        key, rest = first
        out[key], k = _canonical_value(rest, lines, k, col)
    while k < len(lines):
        line = lines[k]
        if not line.startswith(pad) or line[col:col + 1] in (" ", "-", ""):
            break
        key, rest = _canonical_key(line, col)
        if key in out:
            raise _NotCanonical
        out[key], k = _canonical_value(rest, lines, k + 1, col)
    return out, k


def _canonical_seq(lines: list[str], k: int, col: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    dash = " " * col + "-"
    while k < len(lines) and lines[k].startswith(dash):
        after = lines[k][col + 1:]
        if after == "":
            value, k = _canonical_value("", lines, k + 1, col)  # a nested block list
            out.append(value)
        elif after == " {}":
            out.append({})
            k += 1
        elif after.startswith(" ") and (after[1:2] == '"' or ":" not in after):
            out.append(_canonical_scalar(after[1:]))
            k += 1
        elif after.startswith(" "):
            key, rest = _canonical_key(" " * (col + 2) + after[1:], col + 2)
            value, k = _canonical_map(lines, k + 1, col + 2, (key, rest))
            out.append(value)
        else:
            raise _NotCanonical
    return out, k


def _line_at(yaml_text: str, pos: int) -> int:
    """The file line of offset ``pos`` in the front matter (which starts on line 2)."""
    return yaml_text.count("\n", 0, pos) + 2


def _field_at(yaml_text: str, pos: int) -> str | None:
    """The top-level field whose value holds offset ``pos`` (best effort, for messages)."""
    start = yaml_text.rfind("\n", 0, pos) + 1
    while True:
        line = yaml_text[start:yaml_text.find("\n", start)]
        if line[:1] not in ("", " ", "\t", "-", "#") and ":" in line:
            return line.split(":", 1)[0].strip().strip("\"'") or None
        if start == 0:
            return None
        start = yaml_text.rfind("\n", 0, start - 1) + 1


def _load_front_matter(yaml_text: str, path: str) -> yaml.MappingNode:
    """Compose the front matter into a node tree, refusing what YAML would misread."""
    import yaml

    def fail(message: str, pos: int) -> None:
        raise LedgitError(located(message, path, _line_at(yaml_text, pos),
                                  _field_at(yaml_text, pos)))

    if not yaml_text.strip():
        raise LedgitError(located("empty front matter: no fields between the '---' lines",
                                  path, 2))
    bad = re.search(_RAW_REFUSED, yaml_text)
    if bad:
        ch = bad.group()
        name = _CHAR_NAMES.get(ch, "lone surrogate" if "\ud800" <= ch <= "\udfff"
                               else "control character")
        fail(f"raw U+{ord(ch):04X} ({name}) in front matter; write it as \\u{ord(ch):04x} "
             f"inside double quotes", bad.start())
    if "\t" in yaml_text:
        tab = re.search(_TAB_INDENT, yaml_text)
        if tab:
            fail("tab in indentation (YAML allows spaces only)", tab.end() - 1)
    if "&" in yaml_text or "*" in yaml_text:
        _refuse_anchors(yaml_text, path)
    loader = _loader()(yaml_text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise LedgitError(_yaml_error_message(exc, yaml_text, path)) from None
    except yaml.YAMLError as exc:  # pragma: no cover - reader errors are pre-checked above
        raise LedgitError(located(f"invalid YAML: {str(exc).splitlines()[0]}", path)) from None
    except RecursionError:
        raise LedgitError(located("invalid YAML: nested too deeply", path)) from None
    finally:
        loader.dispose()
    if node is None:
        raise LedgitError(located("empty front matter: no fields between the '---' lines",
                                  path, 2))
    if not isinstance(node, yaml.MappingNode):
        raise LedgitError(located("front matter must be a mapping of field: value", path,
                                  node.start_mark.line + 2))
    return node


def _yaml_error_message(exc: yaml.MarkedYAMLError, yaml_text: str, path: str) -> str:
    """One line: where the parser stopped, and the field of the construct it was reading."""
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "unreadable"
    where = mark.line + 2 if mark is not None else None
    field = _field_at(yaml_text, mark.index) if mark is not None else None
    if exc.context and exc.problem:
        context = exc.context
        if exc.context_mark is not None and exc.problem_mark is not None:
            field = _field_at(yaml_text, exc.context_mark.index)
            if exc.context_mark.line != exc.problem_mark.line:
                context += f" that starts on line {exc.context_mark.line + 2}"
        problem += f" ({context})"
    return located(f"invalid YAML: {problem}", path, where, field)


def _refuse_anchors(yaml_text: str, path: str) -> None:
    """Refuse YAML anchors and aliases (an alias bomb stops at its first anchor)."""
    import yaml

    loader = _loader()(yaml_text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                pos = event.start_mark.index
                raise LedgitError(located("YAML anchors and aliases are not allowed", path,
                                          _line_at(yaml_text, pos), _field_at(yaml_text, pos)))
    except yaml.YAMLError:
        pass  # composing reports it with its line
    finally:
        loader.dispose()


def _walk_root(root: yaml.MappingNode, ctx: _Ctx) -> dict[str, Any]:
    try:
        value = _walk(root, 0)
    except _FieldError as exc:
        message, node = exc.args
        ctx.fail(message, _field_of_node(root, node), node.start_mark.line + 2)
        raise  # unreachable
    assert isinstance(value, dict)
    return value


def _walk(node: yaml.Node, depth: int) -> Any:
    """Node tree → str / list / dict. Raises _FieldError(message, node)."""
    import yaml

    if node.__class__ is yaml.ScalarNode:
        if node.tag != _STR_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        return node.value
    if depth > _MAX_DEPTH:
        raise _FieldError(f"nested more than {_MAX_DEPTH} levels deep", node)
    if node.__class__ is yaml.MappingNode:
        if node.tag != _MAP_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            if knode.__class__ is not yaml.ScalarNode or knode.tag != _STR_TAG:
                raise _FieldError("keys must be plain strings", knode)
            key = knode.value
            if key in out:
                first = next(k for k, _ in node.value if k.value == key)
                raise _FieldError(f"duplicate key (first on line {first.start_mark.line + 2})",
                                  knode)
            out[key] = _walk(vnode, depth + 1)
        return out
    if node.__class__ is yaml.SequenceNode:
        if node.tag != _SEQ_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        return [_walk(child, depth + 1) for child in node.value]
    raise _FieldError("unsupported YAML node", node)  # pragma: no cover


def _tag_message(tag: str) -> str:
    shown = "!!" + tag[18:] if tag.startswith("tag:yaml.org,2002:") else tag
    return f"YAML tag {shown} is not allowed (values are plain strings, lists and mappings)"


def _field_of_node(root: yaml.Node, target: yaml.Node) -> str | None:
    """The field name (``items[0].kind``) of ``target`` in the tree, or None for the root."""
    import yaml

    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, name = stack.pop()
        if node is target:
            return name or None
        if isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                child = f"{name}.{knode.value}" if name else str(knode.value)
                if knode is target:
                    return child
                stack.append((vnode, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((c, f"{name}[{i}]") for i, c in enumerate(node.value))
    return None


_FIELD_STEP = r"\[(\d+)\]|\.?([^.\[]+)"


def _line_of_field(root: yaml.Node, fieldname: str) -> int | None:
    """The file line of ``fieldname`` (``claim.at``, ``items[1].kind``): the deepest node of
    the path that exists; None when not even its first step is in the file."""
    import yaml

    node: yaml.Node = root
    line: int | None = None
    for m in re.finditer(_FIELD_STEP, fieldname):
        index, key = m.groups()
        nxt: yaml.Node | None = None
        if key is not None and isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                if knode.value == key:
                    line, nxt = knode.start_mark.line + 2, vnode
        elif (index is not None and isinstance(node, yaml.SequenceNode)
              and int(index) < len(node.value)):
            nxt = node.value[int(index)]
            line = nxt.start_mark.line + 2
        if nxt is None:
            break
        node = nxt
    return line


# --------------------------------------------------------------------------- schema


def coerce_fields(raw: Mapping[str, Any], ctx: _Ctx | None = None,
                  path: str = "<record>") -> dict[str, Any]:
    """Coerce string-typed front matter (or JSON values) into typed, validated fields.

    Empty values (``""``, ``[]``, ``{}``) mean "not set" and are dropped. Raises LedgitError
    naming the field. Rules: DESIGN §3 and docs/format.md.
    """
    ctx = ctx or _Ctx(path)
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
_LINE_BREAKS = "[\n\r\u2028\u2029\x85]"  # compiled on first non-ASCII use (see _RAW_REFUSED)
_SURROGATE = "[\ud800-\udfff]"


def _text(value: Any, name: str, ctx: _Ctx, *, one_line: bool = False) -> str:
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


def _timestamp(value: Any, name: str, ctx: _Ctx) -> str:
    text = _text(value, name, ctx, one_line=True)
    try:
        return normalize_timestamp(text)
    except ValueError as exc:
        ctx.fail(str(exc), name)


def _str_list(value: Any, name: str, ctx: _Ctx, check: Callable[[str], str | None] | None = None
              ) -> list[str]:
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
    # ALIAS:ID names a task of another registered board (ledgit.projects, issue 17)
    alias, colon, task = text.rpartition(":")
    if colon and not ITEM_ID_RE.fullmatch(alias):
        return f"not a task id or PROJECT:ID: {text!r}"
    return None if is_valid_id(task) else f"not a task id: {text!r}"


def _mapping(value: Any, name: str, ctx: _Ctx, keys: tuple[str, ...]) -> dict[str, Any]:
    if value == "":
        return {}
    if not isinstance(value, dict):
        ctx.fail(f"expected a mapping, got {_kind(value)}", name)
    for k in value:
        if k not in keys:
            ctx.fail(f"unknown key (allowed: {', '.join(keys)})", f"{name}.{k}")
    return value


def _claim(value: Any, name: str, ctx: _Ctx) -> dict[str, Any]:
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


def _x(value: Any, name: str, ctx: _Ctx) -> Any:
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


def _item(value: Any, name: str, ctx: _Ctx) -> dict[str, Any]:
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


def _claim_list(value: Any, key: str, ctx: _Ctx) -> list[dict[str, Any]]:
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


def _coerce_field(key: str, value: Any, ctx: _Ctx) -> Any:
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
        return _str_list(value, key, ctx)
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
    return coerce_fields(fields, _Ctx(path))


def make_record(fields: Mapping[str, Any], body: str = "", path: str = "<record>") -> Record:
    """Build a validated Record from typed fields and a body (LF-normalised, NFC). Raises
    LedgitError for a body larger than MAX_RECORD_BYTES."""
    message = size_problem(_utf8_size(body), "the body")
    if message is not None:
        raise LedgitError(located(message, path, None, "body"))
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    body = unicodedata.normalize("NFC", body)
    return Record(validate_fields(fields, path), body)


# --------------------------------------------------------------------------- rendering

# Plain (unquoted) scalars the writer emits: start with a letter (any script) or '_', then
# letters, digits and ``_ . / ( ) + @ -``, words separated by single spaces (a later word may
# also start with '-' or hold an apostrophe). No plain scalar of this shape is a number, date,
# null or timestamp to a YAML 1.1 or 1.2 reader (those start with an ASCII digit, a sign, '.',
# '~', '<' or '='); the words below are the booleans and nulls that remain.
_PLAIN_OK = re.compile(r"(?![0-9])\w[\w./()+@-]*(?: [\w./()+@'-]+)*")
_YAML_WORDS = frozenset(("y", "n", "yes", "no", "on", "off", "true", "false", "null"))
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
_NEEDS_ESCAPE = '["\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]'
_NEEDS_ESCAPE_ASCII = re.compile('["\\\\\x00-\x1f\x7f]')  # the same, for ASCII text


def _needs_quotes(text: str) -> bool:
    return not _PLAIN_OK.fullmatch(text) or text.lower() in _YAML_WORDS


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _quote(text: str) -> str:
    """A YAML double-quoted scalar on one line: ``"``, ``\\``, line breaks, controls, DEL,
    C1, U+2028/U+2029, BOM and non-characters escaped; every other character as is."""
    if text.isascii():
        return '"' + _NEEDS_ESCAPE_ASCII.sub(_escape, text) + '"'
    return '"' + re.sub(_NEEDS_ESCAPE, _escape, text) + '"'


def _scalar(value: Any) -> str:
    if value.__class__ is str:
        text: str = value
    elif isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    else:
        text = str(value)
    if _PLAIN_OK.fullmatch(text) and text.lower() not in _YAML_WORDS:  # = not _needs_quotes
        return text
    return _quote(text)


def _emit(value: Any, indent: int, out: list[str]) -> None:
    """Emit ``value`` as the value part of a mapping entry whose key is already written."""
    if value.__class__ is str:  # the common case, first
        out.append(" " + _scalar(value) + "\n")
        return
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

    Key order is FIELD_ORDER, nested keys in schema order, ``x`` keys sorted (so equal
    records render to equal text). Laws (property-tested): ``parse_record(render_record(r))
    == r`` and a plain YAML 1.1 or 1.2 reader reads the same strings.
    """
    out: list[str] = ["---\n"]
    fields = record.fields
    for key in FIELD_ORDER:
        if key not in fields:
            continue
        value = fields[key]
        if value.__class__ is str:  # the common case: what _emit writes for it, inlined
            out.append(key + ": " + _scalar(value) + "\n")
            continue
        out.append(f"{key}:")
        if key == "claim":
            value = _ordered(value, CLAIM_KEYS)
        elif key == "contested":
            value = [_ordered(c, CLAIM_KEYS) for c in value]
        elif key == "outcome":
            value = _ordered(value, OUTCOME_KEYS)
        elif key == "items":
            value = [_ordered(i, ITEM_KEYS) for i in value]
        elif key == "x":
            value = _sorted_keys(value)
        _emit(value, 2, out)
    out.append("---\n")
    out.append(record.body)
    return "".join(out)


def _ordered(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {k: mapping[k] for k in keys if k in mapping}
    if "x" in out:
        out["x"] = _sorted_keys(out["x"])
    return out


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def record_from_state(state: Mapping[str, Any], path: str = "<record>") -> Record:
    """A Record from a history state ``{"fields": ..., "body": ...}`` (validated)."""
    return Record(validate_fields(state.get("fields", {}), path), str(state.get("body", "")))
