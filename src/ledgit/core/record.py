"""The task record (DESIGN §3): the Record type and its entry points -- parse a task file,
make a record from typed fields, take one from a history state. Pure.

A task file is ``---\\n`` + YAML front matter + ``---\\n`` + Markdown body. In memory a record is
``Record(fields, body)``: ``fields`` is a plain JSON-compatible dict (str, int, list, dict;
never float or None) holding only the keys that are set, ``body`` is the Markdown text (LF
line ends; empty or ending with ``\\n``). Format: docs/format.md.

The pieces: :mod:`ledgit.core.schema` (fields, coercion, validation), :mod:`ledgit.core.canonread`
(the fast reader of ledgit's own files), :mod:`ledgit.core.frontmatter` (PyYAML, for any other
file), :mod:`ledgit.core.render` (the writer), :mod:`ledgit.core.timestamps`,
:mod:`ledgit.core.revision`
(canonical JSON and hashing) and :mod:`ledgit.core.layoutloss` (hand edits).

Import cost is a budget: the merge driver parses and renders records in a fresh process per
file (DESIGN §7). PyYAML, hashlib and datetime are therefore not imported on that path: files
written by render_record are read by read_canonical (proved exact by rendering the result
back), PyYAML only composes anything else.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from ledgit.core.canonread import read_canonical
from ledgit.core.errors import CHECK_FAILED, LedgitError, located
from ledgit.core.markers import has_markers, line_merge_refusal
from ledgit.core.render import render_record
from ledgit.core.revision import revision_of
from ledgit.core.schema import FieldContext, coerce_fields, validate_fields

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


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


#: The refusal of a NUL in a body (docs/format.md "Types"): a task file is text, and Git, diff
#: and the merge driver take a NUL for a binary file.
BODY_NUL = "NUL character (U+0000) in the body; a task file is text"


def body_nul_line(body: str) -> int | None:
    """The 1-based line of ``body`` holding its first NUL character, None when it has none."""
    at = body.find("\x00")
    return None if at == -1 else body.count("\n", 0, at) + 1


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


def _refuse_line_merge(text: str, path: str, part: str | None = None) -> None:
    """Raise LedgitError (exit 1, a merge conflict) naming ``ledgit resolve`` when ``part``
    of the file ``text`` (its front matter; the whole file when that cannot be found) holds
    conflict markers: Git line-merged the file without ledgit's driver, and the YAML parser's
    own complaint would not say so (issue 28). Markers in the body alone are read and warned
    about by the readers."""
    if part is not None and not has_markers(part):
        return
    message = line_merge_refusal(path, text)
    if message is not None:
        raise LedgitError(message, CHECK_FAILED)


def parse_record(data: str | bytes, path: str = "<record>") -> Record:
    """Parse and validate a task file. ``data``: the file's bytes or text.

    Handled exactly: a UTF-8 BOM (ignored), CRLF/CR line ends (read as LF), ``---`` inside the
    body, a missing final newline (added). Text is NFC-normalised. Refused with
    ``path:line: field: message`` (LedgitError, exit 2; exit 1 for conflict markers in the
    front matter, naming ``ledgit resolve``): invalid UTF-8, missing/unclosed/empty
    front matter, tabs in indentation, duplicate keys, YAML tags, anchors/aliases, raw control
    characters or U+2028/U+2029/U+0085 in the front matter, unknown keys (outside ``x:``), and
    every schema violation; a NUL in the body; a file larger than MAX_RECORD_BYTES (before
    any parsing). Rules: docs/format.md.
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
    try:
        yaml_text, body, nlines = split_front_matter(text, path)
    except LedgitError:
        _refuse_line_merge(text, path)
        raise
    nul = body_nul_line(body)
    if nul is not None:  # the file's line: ---, the front matter, ---, then the body
        raise LedgitError(located(BODY_NUL, path, nlines + 2 + nul, "body"))
    if body:
        if not body.endswith("\n"):
            body += "\n"
        if not body.isascii():
            body = unicodedata.normalize("NFC", body)
    raw = read_canonical(yaml_text)
    if raw is not None:
        try:
            fast = Record(coerce_fields(raw, FieldContext(path)), body)
        except LedgitError:
            fast = None  # the YAML path words the error with its line
        # parse(render(r)) == r (property-tested): a record that renders back to this very
        # text is exactly what the YAML path would return.
        if fast is not None and render_record(fast) == text:
            return fast

    _refuse_line_merge(text, path, yaml_text)
    from ledgit.core import frontmatter  # lazy: PyYAML, 11 ms (-X importtime); not for our files

    root = frontmatter.load_front_matter(yaml_text, path)
    raw = frontmatter.front_matter_values(root, path)
    ctx = FieldContext(path, lambda fieldname: frontmatter.line_of_field(root, fieldname))
    return Record(coerce_fields(raw, ctx), body)


def make_record(fields: Mapping[str, Any], body: str = "", path: str = "<record>") -> Record:
    """Build a validated Record from typed fields and a body (LF-normalised, NFC). Raises
    LedgitError for a body larger than MAX_RECORD_BYTES or holding a NUL character."""
    message = size_problem(_utf8_size(body), "the body")
    if message is not None:
        raise LedgitError(located(message, path, None, "body"))
    nul = body_nul_line(body)
    if nul is not None:
        raise LedgitError(located(f"{BODY_NUL} (its line {nul})", path, None, "body"))
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    body = unicodedata.normalize("NFC", body)
    return Record(validate_fields(fields, path), body)


def record_from_state(state: Mapping[str, Any], path: str = "<record>") -> Record:
    """A Record from a history state ``{"fields": ..., "body": ...}`` (validated)."""
    return Record(validate_fields(state.get("fields", {}), path), str(state.get("body", "")))
