"""The canonical fast reader of a record's front matter (DESIGN §11: a fast path kept for a
measured cost, tested equal to the library it shortcuts). Pure, import-free.

:func:`read_canonical` reads exactly the shape :func:`ledgit.core.render.render_record` writes
(block mappings indented by 2, ``- `` sequences, flow lists of scalars, plain or
double-quoted scalars) and gives up (None) on anything else, which PyYAML then composes
(:mod:`ledgit.core.frontmatter`). Task files written by ledgit never need PyYAML. Property test:
tests/test_record.py holds it equal to the YAML path.
"""

from __future__ import annotations

from typing import Any

from ledgit.core.schema import FIELD_ORDER

_FIELDS = frozenset(FIELD_ORDER)


class _NotCanonical(Exception):
    """Internal: the text is not in render_record's exact form."""


_UNESCAPE = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_FLOW_START = frozenset("[{&*!|>'%@`#\"?-,]:")


def read_canonical(yaml_text: str) -> dict[str, Any] | None:
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
        if j > 0 and key in _FIELDS and key not in out:  # (a schema key holds no ":")
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
