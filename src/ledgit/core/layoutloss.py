"""What a hand-edited task file would lose if ledgit rewrote it in the canonical form
(docs/format.md, "Hand edits"): YAML comments, custom quoting, custom layout. Pure.

``ledgit record`` refuses a file with a comment rather than drop what was written by hand
(:meth:`ledgit.board.Board.record_edit`), and rewrites harmless layout in the canonical form,
saying so (:func:`loses_information` tells the two apart, issue 26).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from ledgit.core.record import split_front_matter
from ledgit.core.render import render_record

if TYPE_CHECKING:
    from ledgit.core.record import Record


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
            return n + 2, f"{COMMENT} ({comment!r})"

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


COMMENT = "a YAML comment"  # the start of a loss that drops what a person wrote


def loses_information(loss: tuple[int, str] | None) -> bool:
    """True when ``loss`` (a :func:`layout_loss` answer) drops text no field holds -- a
    YAML comment -- rather than harmless layout (key order, quoting, flow or block style,
    empty fields, spacing), which the canonical form may rewrite without asking (issue 26)."""
    return loss is not None and loss[1].startswith(COMMENT)


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
