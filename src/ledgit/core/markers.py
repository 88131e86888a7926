"""Conflict markers left by a line merge: the one detector the validator (``Board.verify``),
the CI gate and the pre-commit hook (``ledgit.integration.gate``) and the readout warnings share.
Pure,
standard library only (the hook's import budget, DESIGN §10).

A conflict marker line (git-merge(1) "HOW CONFLICTS ARE PRESENTED") is 7 or more of ``<``,
``|`` or ``>`` (conflict-marker-size, gitattributes(5)), then a space and a label, or the end of
the line. ``=======`` alone is left out: Markdown uses it to underline headings.
"""

from __future__ import annotations

import re

RULE = "conflict-markers"
_PATTERN = r"^(?:<{7,}|>{7,}|\|{7,})(?: |$)"
_MARKER = re.compile(_PATTERN.encode(), re.MULTILINE)
_MARKER_TEXT = re.compile(_PATTERN, re.MULTILINE)


def marker_lines(data: bytes) -> list[int]:
    """1-based numbers of the lines of ``data`` that are conflict markers (``<<<<<<<``,
    ``|||||||``, ``>>>>>>>``)."""
    return [data.count(b"\n", 0, m.start()) + 1 for m in _MARKER.finditer(data)]


def has_markers(text: str) -> bool:
    """Whether ``text`` holds a conflict marker line (the same rule as :func:`marker_lines`)."""
    return _MARKER_TEXT.search(text) is not None


def marker_problem(path: str, data: bytes | None) -> tuple[int, str] | None:
    """``(line of the first marker, message)`` when the file at ``path`` (repository- or
    board-relative) holds conflict markers, else None. The message names the fix."""
    lines = marker_lines(data) if data else []
    if not lines:
        return None
    return lines[0], (f"{len(lines)} conflict marker line(s): a line merge was left in "
                      f"{path} (run: ledgit resolve {path})")


def line_merge_refusal(path: str, text: str) -> str | None:
    """The one line a read or a write prints for a file that Git line-merged (conflict
    markers where ledgit's merge driver would have merged field by field or event by event:
    a clone without ``ledgit install``, issue 28): ``PATH:LINE: N conflict marker line(s):
    ...(run: ledgit resolve PATH)``; None when ``text`` holds no marker. Callers exit 1
    (DESIGN §9: a merge conflict)."""
    if not has_markers(text):
        return None
    lines = marker_lines(text.encode("utf-8", "surrogatepass"))
    return (f"{path}:{lines[0]}: {len(lines)} conflict marker line(s): Git merged this file "
            f"line by line, without ledgit's merge driver (run: ledgit resolve {path})")
