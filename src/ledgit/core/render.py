"""The record's writer (DESIGN §3, docs/format.md): a Record as task-file text,
deterministic (equal records render to equal text) and quoted wherever a YAML 1.1 or 1.2
reader could misread a string. Pure.

:func:`ledgit.core.record.parse_record` reads this exact form without PyYAML
(:mod:`ledgit.core.canonread`) and trusts that reading only when rendering it gives back the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from ledgit.core.schema import CLAIM_KEYS, FIELD_ORDER, ITEM_KEYS, NOTE_KEYS, OUTCOME_KEYS


class Renderable(Protocol):
    """What the writer reads of a record: its front matter and its body
    (:class:`ledgit.core.record.Record` is one; the writer needs nothing else of it)."""

    @property
    def fields(self) -> Mapping[str, Any]: ...

    @property
    def body(self) -> str: ...

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


def render_record(record: Renderable) -> str:
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
        elif key == "notes":
            value = [_ordered(n, NOTE_KEYS) for n in value]
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
