"""Readers of foreign files for the importers: Markdown with YAML front matter, JSON lines; and
the :class:`~ledgit.interop.incoming.Skip` of a file that cannot be read, at its line."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import yaml

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.interop.incoming import Incoming, Skip
from ledgit.storage.safefiles import read_source

if TYPE_CHECKING:
    from pathlib import Path

    from ledgit.core.record import Record


def read_front_matter(path: Path, *, closing_at_end: bool = False
                      ) -> tuple[dict[str, Any], str]:
    """(YAML front matter without implicit typing, every scalar a string; the text after it)
    of a Markdown file that opens with ``---``. ``closing_at_end``: the closing ``---`` may
    also be the file's last line without a newline. Raises LedgitError (USAGE) otherwise."""

    text = read_source(str(path), found=True).decode("utf-8").replace("\r\n", "\n")
    search = text[3:] + "\n" if closing_at_end else text[3:]
    if not text.startswith("---\n") or "\n---\n" not in search:
        raise LedgitError(located("no YAML front matter", str(path), 1), USAGE)
    end = search.index("\n---\n") + 3
    try:
        front = yaml.load(text[4:end + 1], Loader=yaml.BaseLoader)  # noqa: S506 - strings only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None  # the front matter opens line 2
        raise LedgitError(located(f"invalid YAML: {str(exc).splitlines()[0]}", str(path),
                                  line), USAGE) from None
    if not isinstance(front, dict):
        raise LedgitError(located("front matter is not a mapping", str(path), 2), USAGE)
    return front, text[end + 5:]


def file_skip(rel: str, path: Path, exc: Exception) -> Skip:
    """The Skip of a source file an importer refused, at ``rel:LINE`` when the line is known
    (issue 13): the line the error names, else the line of the front-matter field it names
    (``field: message``), else the line of an undecodable byte."""
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[:exc.start].count(b"\n") + 1 if isinstance(exc.object, bytes) else 1
        return Skip(f"{rel}:{line}", f"not valid UTF-8 (byte {exc.start + 1})")
    if not isinstance(exc, LedgitError):
        return Skip(rel, f"unreadable: {exc}")
    message = exc.message.removeprefix(f"{rel}: ").removeprefix(f"{path}: ")
    for head in (f"{rel}:", f"{path}:"):
        if exc.message.startswith(head):
            number, _, rest = exc.message[len(head):].partition(": ")
            if number.isdigit():
                return Skip(f"{rel}:{number}", rest)
    field = message.partition(": ")[0]
    if field and field != message and " " not in field:
        try:
            data = read_source(str(path), found=True)
        except LedgitError:
            data = b""
        key = field.encode("utf-8", errors="replace") + b":"
        lines = data.replace(b"\r\n", b"\n").split(b"\n")
        for n, raw in enumerate(lines, start=1):
            if n > 1 and raw == b"---":
                break  # the end of the front matter: the field is missing
            if raw.startswith(key):
                return Skip(f"{rel}:{n}", message)
        if lines and lines[0] == b"---":
            return Skip(f"{rel}:1", message)  # a missing field: the front matter's start
    return Skip(rel, message)


def read_jsonl(path: str, parse: Callable[[Any, str], Record],
               source_id: Callable[[Any], str]) -> tuple[list[Incoming], list[Skip]]:
    """Read a JSON-lines file: one Incoming per good line, one Skip (with its line number)
    per blank-free line that is not JSON or that ``parse`` refuses."""
    incoming: list[Incoming] = []
    skips: list[Skip] = []
    name = os.path.basename(path)
    data = read_source(path)  # bounded: /dev/zero is refused, not read forever (issue 26)
    with io.BytesIO(data) as fh:
        for n, raw in enumerate(fh, start=1):
            where = f"{name}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                skips.append(Skip(where, f"not valid UTF-8 (byte {exc.start + 1})"))
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:  # RecursionError: too deep
                skips.append(Skip(where, f"not JSON: {exc}"))
                continue
            try:
                record = parse(obj, where)
            except LedgitError as exc:
                skips.append(Skip(where, _strip_where(exc.message, where)))
                continue
            incoming.append(Incoming(record, where, source_id(obj)))
    return incoming, skips


def _strip_where(message: str, where: str) -> str:
    return message[len(where) + 2:] if message.startswith(where + ": ") else message
