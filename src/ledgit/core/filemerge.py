"""One board file's three versions merged as bytes (DESIGN §7): a task file field by field
(:func:`ledgit.core.merge.merge_records`), a history as a DAG union
(:func:`ledgit.core.historymerge.merge_histories`), and Git's 3-way line merge with conflict
markers where neither applies or a side cannot be parsed. What the merge driver runs for one
file Git names, and what ``ledgit sync`` runs for every board file both sides changed, in one
process: both give the same bytes for the same three inputs, whichever side is ours.

On the merge driver's path (Git runs it once per file): the history merge's modules are
imported by the first history merged (:func:`merge_history_bytes`).
"""

from __future__ import annotations

import json
import os
import re

from ledgit.core.importroot import add_add_base
from ledgit.core.merge import describe_provenance, line_merge3, merge_records
from ledgit.core.record import parse_record
from ledgit.core.render import render_record
from ledgit.core.schema import REQUIRED, is_valid_id

TASKS_PREFIX = ".ledgit/tasks/"
HISTORY_PREFIX = ".ledgit/history/"


# The keys every history event has (docs/history.md, rule "parse"): named here, since the
# history module is loaded only for a history's merge.
_EVENT_KEYS = frozenset(("id", "parents", "at", "actor", "op", "patch", "after"))
_TASK_KEYS = frozenset(REQUIRED)
_FRONT_KEY = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*):(?:[ \t]|\r?$)")


def board_file_kind(path: str, sample: bytes | None = None) -> str | None:
    """``"task"`` for a task file (``.ledgit/tasks/*.md`` at any depth), ``"history"`` for a
    history (``.ledgit/history/*.jsonl``), None for any other path (repository-relative,
    ``/`` or the OS separator). A path that names neither is judged by ``sample`` (one
    version's bytes) when given -- for a driver Git gave only its temporary names
    (``.merge_file_XXXXXX``, no ``%P``): a task file is front matter whose top-level keys
    include every required field (``id``, ``title``, ``status``, ``created``,
    ``last_modified``), a history is JSON lines whose first line is an event object
    (:func:`content_kind`)."""
    posix = path.replace(os.sep, "/")
    if f"/{TASKS_PREFIX}" in f"/{posix}" and posix.endswith(".md"):
        return "task"
    if f"/{HISTORY_PREFIX}" in f"/{posix}" and posix.endswith(".jsonl"):
        return "history"
    return None if sample is None else content_kind(sample)


def content_kind(data: bytes) -> str | None:
    """``"task"``, ``"history"`` or None for a board file's bytes, by content alone (see
    :func:`board_file_kind`). Reads the front matter, or the first line, only."""
    if data.startswith((b"---\n", b"---\r\n")):
        keys: set[str] = set()
        for line in data.split(b"\n", 400)[1:400]:
            if line.rstrip(b"\r") == b"---":
                return "task" if keys >= _TASK_KEYS else None
            found = _FRONT_KEY.match(line)
            if found:
                keys.add(found.group(1).decode("ascii"))
        return None
    first = _first_event(data)
    return "history" if first is not None else None


def _first_event(data: bytes) -> dict[str, object] | None:
    """The first line of ``data`` as a history event (a JSON object with every required
    key, ``parents`` a list), or None."""
    if not data.startswith(b"{"):
        return None
    try:
        event = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None
    if isinstance(event, dict) and event.keys() >= _EVENT_KEYS \
            and isinstance(event["parents"], list):
        return event
    return None


def content_path(kind: str, data: bytes) -> str | None:
    """The repository path a ``kind`` file's bytes name (``.ledgit/tasks/<id>.md``,
    ``.ledgit/history/<id>.jsonl``): the task file's ``id``, or the id in the state of a
    history's first (genesis) event; None when it cannot be told. Only for messages and
    names when Git gave a driver no ``%P``."""
    task: object = None
    if kind == "task":
        for line in data.split(b"\n", 400)[1:400]:
            if line.startswith(b"id:"):
                task = line[3:].strip().strip(b"'\"").decode("utf-8", "replace")
                break
    else:
        event = _first_event(data)
        patch = event.get("patch") if event is not None else None
        for op in patch if isinstance(patch, list) else []:
            if isinstance(op, dict) and op.get("path") == "/fields" \
                    and isinstance(op.get("value"), dict):
                task = op["value"].get("id")
    if not isinstance(task, str) or not is_valid_id(task):
        return None
    return f"{TASKS_PREFIX}{task}.md" if kind == "task" else f"{HISTORY_PREFIX}{task}.jsonl"


def merge_board_file(kind: str, base: bytes, ours: bytes, theirs: bytes, marker_size: int,
                     path: str, names: tuple[str, str] | None = None
                     ) -> tuple[bytes, bool, list[str]]:
    """Merge a ``kind`` (:func:`board_file_kind`) file's three versions: (output bytes,
    conflicted, notes). Raises LedgitError/ValueError when a side cannot be parsed."""
    merge = merge_task_bytes if kind == "task" else merge_history_bytes
    return merge(base, ours, theirs, marker_size, path, names)


def _lines(data: bytes) -> list[bytes]:
    if not data:
        return []
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def line_merge(base: bytes, ours: bytes, theirs: bytes, marker_size: int = 7,
               symmetric: bool = True) -> tuple[bytes, bool]:
    """Plain 3-way line merge (merge3) with conflict markers: (bytes, conflicted).

    With ``symmetric`` the two sides are ordered by content so the bytes do not depend on
    which side is ours. CRLF is normalised to LF first.
    """

    base, ours, theirs = (x.replace(b"\r\n", b"\n") for x in (base, ours, theirs))
    if not (base or ours or theirs):
        return b"", False  # merge3 cannot tell bytes from str without a single line
    a, b = (ours, theirs)
    if symmetric and theirs < ours:
        a, b = theirs, ours
    m = line_merge3(_lines(base), _lines(a), _lines(b))
    conflict = any(r[0] == "conflict" for r in m.merge_regions())
    out = b"".join(m.merge_lines(name_a=b"ledgit: side 1", name_b=b"ledgit: side 2",
                                 start_marker=b"<" * marker_size,
                                 mid_marker=b"=" * marker_size,
                                 end_marker=b">" * marker_size))
    return out, conflict


def merge_task_bytes(base: bytes, ours: bytes, theirs: bytes, marker_size: int,
                     path: str, names: tuple[str, str] | None = None
                     ) -> tuple[bytes, bool, list[str]]:
    """Merge three task-file versions: (output bytes, conflicted, human notes). ``names``:
    (ours, theirs) as Git names them (:func:`ledgit.git.mergenames.side_names`) for a body's
    conflict markers; None: each side's last actor and time.

    Raises LedgitError/ValueError when a side cannot be parsed (the caller falls back).
    """
    added: list[str] = []
    if not base.strip():
        rec_o = parse_record(ours, f"{path} (ours)")
        rec_t = parse_record(theirs, f"{path} (theirs)")
        if rec_o == rec_t:
            return render_record(rec_o).encode(), False, []
        root = add_add_base(rec_o, rec_t)
        if root is None:
            out, _ = line_merge(b"", render_record(rec_o).encode(),
                                render_record(rec_t).encode(), marker_size)
            return out, True, [f"{path}: added on both sides with different content (other "
                               f"created times: two tasks under one id), not fused"]
        # One task added twice (two imports): merged against the state both start from.
        rec_b = root
        added.append(f"{path}: added on both sides: merged against its import root")
    else:
        rec_b = parse_record(base, f"{path} (base)")
        rec_o = parse_record(ours, f"{path} (ours)")
        rec_t = parse_record(theirs, f"{path} (theirs)")
    result = merge_records(rec_b, rec_o, rec_t, marker_size, names)
    notes = added + [f"{path}: {describe_provenance(k, v, result.rules.get(k))}"
                     for k, v in sorted(result.provenance.items())]
    notes += [f"{path}: {n}" for n in result.notes]
    return render_record(result.record).encode(), bool(result.conflicts), notes


def merge_history_bytes(base: bytes, ours: bytes, theirs: bytes, marker_size: int,
                        path: str, names: tuple[str, str] | None = None
                        ) -> tuple[bytes, bool, list[str]]:
    """Merge three history versions: (output bytes, conflicted, notes). Raises on bad input."""
    # lazy: history, patch and hashing, 6.5 ms (-X importtime) that a task file's merge skips
    from ledgit.core.historymerge import merge_histories

    task = os.path.splitext(os.path.basename(path))[0]
    res = merge_histories(base.decode(), ours.decode(), theirs.decode(), task, marker_size,
                          names, added=not base.strip())
    if res.conflict:
        out, _ = line_merge(base, ours, theirs, marker_size)
        return out, True, [f"{path}: {res.problem}"]
    notes = []
    if res.event is not None:
        notes.append(f"{path}: merge event {res.event['id'][:12]} joins "
                     f"{len(res.event['parents'])} heads")
    return res.text.encode(), False, notes


def is_binary(data: bytes) -> bool:
    """Git's rule for binary content (xdiff ``buffer_is_binary``): a NUL byte in the first
    8,000 bytes."""
    return b"\0" in data[:8000]
