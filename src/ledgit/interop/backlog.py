"""Backlog.md folders (npm ``backlog.md``) → ledgit tasks (docs/interop.md, "Backlog.md").

A Backlog.md project keeps one Markdown file per task: ``backlog/tasks/`` (active),
``backlog/completed/`` (cleaned-up done tasks), ``backlog/drafts/`` and
``backlog/archive/{tasks,drafts}/``; YAML front matter (written by gray-matter/js-yaml) and a
body of marked sections (Description, Acceptance Criteria, Definition of Done, Implementation
Plan/Notes, Comments, Final Summary). Backlog.md keeps no history, so each task gets one
genesis event.

Mapping: ``id``, ``title``; ``status`` "To Do" → open, "In Progress" → in_progress, "Done" →
done, "Draft" → parked (reason "draft in Backlog.md"), a custom status → open (the name kept in
``x.backlog.status``); a file under ``archive/`` → archived; ``assignee`` → ``worker`` (the
first; the whole list under x when there are several); ``labels``; ``dependencies`` →
``depends_on``; ``priority`` high/medium/low → 1/2/3; ``created_date`` / ``updated_date``
(``YYYY-MM-DD HH:MM`` UTC, minutes) → ``created`` / ``last_modified``; the body verbatim
(sections and their markers kept, so Backlog.md could read it back), its Final Summary also
as ``response``; everything else (``parent_task_id``, ``milestone``, ``references``,
``documentation``, ``modified_files``, ``due_date``, ``type``, ``ordinal``, ...) under
``x.backlog`` as written (YAML read without implicit typing), plus ``folder`` (which
directory the file was in). An archived task whose id was reused by a later task (Backlog.md
does that) gets ``<ID>-archived``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.merge import NO_ACCOUNT
from ledgit.core.record import Record, make_record
from ledgit.core.schema import is_valid_id
from ledgit.core.timestamps import normalize_timestamp
from ledgit.interop.beads import pack
from ledgit.interop.incoming import Incoming
from ledgit.interop.sources import file_skip, read_front_matter

if TYPE_CHECKING:
    from ledgit.interop.incoming import Skip

SOURCE = "backlog"
STATUS_MAP = {"To Do": "open", "In Progress": "in_progress", "Done": "done", "Draft": "parked"}
DRAFT_REASON = "draft in Backlog.md"
PRIORITY_MAP = {"high": 1, "medium": 2, "low": 3}
#: Folders under ``backlog/``, in the order their tasks claim ids (active ones first).
FOLDERS = ("tasks", "completed", "drafts", "archive/tasks", "archive/drafts")
_SUMMARY = re.compile(r"<!-- SECTION:FINAL_SUMMARY:BEGIN -->\n(.*?)\n?"
                      r"<!-- SECTION:FINAL_SUMMARY:END -->", re.S)
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2}))?")
_MAPPED = ("id", "title", "status", "assignee", "labels", "dependencies", "priority",
           "created_date", "updated_date")


def find_root(path: str) -> Path:
    """The ``backlog`` directory named by ``path`` (itself, or ``PATH/backlog``, or
    ``PATH/.backlog``). Raises LedgitError exit 2 when there is none."""
    p = Path(path)
    for candidate in (p, p / "backlog", p / ".backlog"):
        if any((candidate / folder).is_dir() for folder in FOLDERS):
            return candidate
    raise LedgitError(f"{path}: not a Backlog.md folder (no tasks/ in it or in "
                      f"{p / 'backlog'})", USAGE)


def backlog_date(text: str) -> str:
    """``YYYY-MM-DD HH:MM`` (UTC, what Backlog.md writes) or ``YYYY-MM-DD`` → canonical
    RFC 3339 UTC µs. Raises ValueError."""
    m = _DATE.fullmatch(text.strip())
    if not m:
        return normalize_timestamp(text)  # a full RFC 3339 timestamp is accepted too
    hh, mm = m.group(2) or "00", m.group(3) or "00"
    return normalize_timestamp(f"{m.group(1)}T{hh}:{mm}:00Z")


def read_task_file(path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, every scalar a string, body) of a Backlog.md task file."""
    return read_front_matter(path, closing_at_end=True)


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def task_to_record(front: Mapping[str, Any], body: str, folder: str,
                   where: str = "<backlog>", task_id: str | None = None) -> Record:
    """Map one Backlog.md task (front matter + body + the folder it was in) onto a Record."""
    sid = front.get("id")
    if not isinstance(sid, str) or not sid.strip():
        raise LedgitError(located("missing id", where, None, "id"), USAGE)
    tid = task_id or sid
    if not is_valid_id(tid):
        raise LedgitError(located(f"invalid task id {tid!r}", where, None, "id"), USAGE)
    fields: dict[str, Any] = {"id": tid}
    rest: dict[str, Any] = {k: v for k, v in front.items()
                            if k not in _MAPPED and v not in (None, "", [], {})}
    x: dict[str, Any] = {"folder": folder}
    if tid != sid:
        x["id"] = sid
    title = front.get("title")
    if not isinstance(title, str) or not title.strip():
        raise LedgitError(located("missing title", where, None, "title"), USAGE)
    if "\n" in title:
        fields["title"] = " ".join(title.split())
        x["title"] = title
    else:
        fields["title"] = title
    status = front.get("status") if isinstance(front.get("status"), str) else "To Do"
    mapped = "archived" if folder.startswith("archive/") else STATUS_MAP.get(str(status), "open")
    fields["status"] = mapped
    if STATUS_MAP.get(str(status)) != mapped:
        x["status"] = status
    if mapped == "parked":
        fields["outcome"] = {"kind": "park", "reason": DRAFT_REASON}

    assignees = _strings(front.get("assignee"))
    if assignees and all(a.strip() and "\n" not in a for a in assignees):
        fields["worker"] = assignees[0]
        if len(assignees) > 1:
            rest["assignee"] = assignees
    elif front.get("assignee") not in (None, "", []):
        rest["assignee"] = front["assignee"]
    for key, target in (("labels", "labels"), ("dependencies", "depends_on")):
        values = _strings(front.get(key))
        if values is not None and all(v.strip() == v and v and "\n" not in v for v in values) \
                and (target != "depends_on" or all(is_valid_id(v) for v in values)):
            if values:
                fields[target] = list(dict.fromkeys(values))
        elif front.get(key) not in (None, "", []):
            rest[key] = front[key]
    priority = front.get("priority")
    if isinstance(priority, str) and priority.lower() in PRIORITY_MAP:
        fields["priority"] = PRIORITY_MAP[priority.lower()]
        if priority != priority.lower():
            x["priority"] = priority
    elif priority not in (None, ""):
        rest["priority"] = priority

    for key, field in (("created_date", "created"), ("updated_date", "last_modified")):
        value = front.get(key)
        if value in (None, ""):
            continue
        if not isinstance(value, str):
            raise LedgitError(located("not a date", where, None, key), USAGE)
        try:
            fields[field] = backlog_date(value)
        except ValueError as exc:
            raise LedgitError(located(str(exc), where, None, key), USAGE) from None
        x[key] = value
    if "created" not in fields:
        raise LedgitError(located("missing created_date", where, None, "created_date"), USAGE)
    fields.setdefault("last_modified", fields["created"])

    text = body.replace("\r\n", "\n")
    if text.startswith("\n"):
        text = text[1:]  # the blank line Backlog.md writes after the front matter
    if not text.strip():
        text = ""
    summary = _SUMMARY.search(text)
    if summary and summary.group(1).strip():
        fields["response"] = summary.group(1)
    elif mapped == "done":
        fields["response"] = NO_ACCOUNT
    x.update(pack(rest))
    fields["x"] = {SOURCE: x}
    return make_record(fields, text, where)


def load_backlog(path: str) -> tuple[list[Incoming], list[Skip]]:
    """Read every task file of a Backlog.md folder (see :func:`find_root`)."""
    root = find_root(os.fspath(path))
    incoming: list[Incoming] = []
    skips: list[Skip] = []
    taken: set[str] = set()
    for folder in FOLDERS:
        for file in sorted((root / folder).glob("*.md")):
            rel = file.relative_to(root.parent).as_posix()
            try:
                front, body = read_task_file(file)
                sid = str(front.get("id") or "")
                tid = sid
                if folder.startswith("archive/") and tid in taken:
                    tid, n = f"{sid}-archived", 1
                    while tid in taken:
                        n += 1
                        tid = f"{sid}-archived-{n}"
                record = task_to_record(front, body, folder, rel, tid)
            except (LedgitError, OSError, UnicodeDecodeError) as exc:
                skips.append(file_skip(rel, file, exc))
                continue
            taken.add(record.id)
            incoming.append(Incoming(record, rel, sid))
    return incoming, skips
