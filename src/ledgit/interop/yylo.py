"""YYLO Ledger boards (``.juno_task``, PyPI ``yylo-ledger``) → ledgit tasks (docs/interop.md).

A YYLO board keeps each task twice: the current state in ``tasks/<shard>/<id>.md`` (YAML front
matter + marked body and response blocks) and every change in a hash-chained NDJSON ledger,
``ledger/<shard>/<id>/NNNNNN.ndjson`` (a ``create`` event with a full snapshot, then JSON-Patch
style ``changes`` on top-level keys). The importer replays the ledger (checking its hash
chain: ``event_sha256`` = sha256 of the canonical JSON of the event without it, each
``previous_event_sha256`` the line before), so every YYLO event becomes one event of the ledgit
history under the task's import root (op ``import`` with ``meta.source_op`` = the YYLO
operation, at the YYLO timestamp, actor ``yylo:<source>``). The ``.md`` file is the
current state: an edit YYLO never recorded (no ``reconcile``) becomes one more ``import``
event. Values in the ``.md`` are read without implicit typing and take their JSON type from
the ledger where the two agree.

Mapping: ``id``; title = the body's ``title:`` line (what ``create --title`` writes; else its
first line); body = the rest; ``status`` (:data:`STATUS_MAP`); ``agent_response`` →
``response``; ``commit_hash`` → ``commits``; ``feature_tags`` → ``labels``; ``blocked_by`` →
``depends_on``; custom ``fields.priority`` (int 0-4) → ``priority``; ``created_date`` /
``last_modified`` → ``created`` / ``last_modified``; everything else (``related_tasks``,
other custom fields, ``schema_version``, ``system_metadata``, a status with no twin) under
``x.yylo``, as text or canonical JSON text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.merge import NO_ACCOUNT
from ledgit.core.record import Record, make_record
from ledgit.core.schema import COMMIT_RE, is_valid_id
from ledgit.core.timestamps import normalize_timestamp
from ledgit.interop.beads import pack
from ledgit.interop.incoming import Incoming, Step
from ledgit.interop.sources import file_skip, read_front_matter
from ledgit.storage.safefiles import read_source

if TYPE_CHECKING:
    from ledgit.interop.incoming import Skip

SOURCE = "yylo"
STATUS_MAP = {"backlog": "open", "todo": "open", "in_progress": "in_progress", "done": "done",
              "archive": "archived"}
STATUS_BACK = {"open": "backlog", "in_progress": "in_progress", "done": "done",
               "archived": "archive"}
_BLOCK = re.compile(r"<!-- juno:(body|response):start -->\n(.*?)\n?<!-- juno:\1:end -->", re.S)
_TITLE = re.compile(r"\Atitle:([^\n]*)(?:\n\n|\n?\Z)")
_MAPPED = ("id", "status", "body", "agent_response", "commit_hash", "feature_tags",
           "blocked_by", "created_date", "last_modified")


def find_root(path: str) -> Path:
    """The ``.juno_task`` directory named by ``path`` (itself or its parent). Raises
    LedgitError exit 2 when there is none."""
    p = Path(path)
    for candidate in (p, p / ".juno_task"):
        if (candidate / "tasks").is_dir():
            return candidate
    raise LedgitError(f"{path}: not a YYLO Ledger board (no tasks/ in it or in "
                      f"{p / '.juno_task'})", USAGE)


def split_title(body: str) -> tuple[str, str]:
    """(title, remaining body) from a YYLO body (``title:T`` + blank line, as ``create
    --title`` writes; else the first non-empty line, up to 100 characters, and the whole
    body)."""
    m = _TITLE.match(body)
    if m and m.group(1).strip():
        return m.group(1).strip(), body[m.end():]
    for line in body.split("\n"):
        if line.strip():
            text = line.strip()
            return (text if len(text) <= 100 else text[:99] + "…"), body
    return "(untitled)", body


def task_to_record(task: Mapping[str, Any], where: str = "<yylo>") -> Record:
    """Map one YYLO task dict (as ``yylo-ledger get`` prints it) onto a validated Record."""
    tid = task.get("id")
    if not isinstance(tid, str) or not is_valid_id(tid):
        raise LedgitError(located(f"invalid task id {tid!r}", where, None, "id"), USAGE)
    fields: dict[str, Any] = {"id": tid}
    rest = {k: v for k, v in task.items() if k not in _MAPPED and v not in (None, "", [], {})}
    body = task.get("body") or ""
    if not isinstance(body, str):
        raise LedgitError(located("body is not text", where, None, "body"), USAGE)
    fields["title"], text = split_title(body.replace("\r\n", "\n"))
    status = str(task.get("status") or "backlog")
    mapped = STATUS_MAP.get(status, "open")
    fields["status"] = mapped
    if STATUS_BACK[mapped] != status:
        rest["status"] = status
    response = task.get("agent_response")
    if isinstance(response, str) and response:
        fields["response"] = response
    elif mapped == "done":
        fields["response"] = NO_ACCOUNT
    commit = task.get("commit_hash")
    if isinstance(commit, str) and COMMIT_RE.fullmatch(commit):
        fields["commits"] = [commit]
    elif commit not in (None, ""):
        rest["commit_hash"] = commit
    for key, target in (("feature_tags", "labels"), ("blocked_by", "depends_on")):
        value = task.get(key)
        if isinstance(value, list) and all(isinstance(v, str) and v.strip() == v and v
                                           and "\n" not in v for v in value):
            if target == "depends_on" and not all(is_valid_id(v) for v in value):
                rest[key] = value
            elif value:
                fields[target] = list(dict.fromkeys(value))
        elif value not in (None, "", []):
            rest[key] = value
    custom = rest.get("fields")
    if isinstance(custom, Mapping):
        prio = custom.get("priority")
        if isinstance(prio, int) and not isinstance(prio, bool) and 0 <= prio <= 4:
            fields["priority"] = prio
            custom = {k: v for k, v in custom.items() if k != "priority"}
            if custom:
                rest["fields"] = custom
            else:
                del rest["fields"]
    x: dict[str, Any] = {}
    for key, field in (("created_date", "created"), ("last_modified", "last_modified")):
        value = task.get(key)
        if not isinstance(value, str):
            raise LedgitError(located("missing or not a timestamp", where, None, key), USAGE)
        try:
            fields[field] = normalize_timestamp(value)
        except ValueError as exc:
            raise LedgitError(located(str(exc), where, None, key), USAGE) from None
        if fields[field] != value:
            x[key] = value
    x.update(pack(rest))
    if "fields" in x.get("json", {}) and isinstance(rest.get("fields"), Mapping):
        # custom fields: one key each, so two branches that set different ones both count
        x["json"].pop("fields")
        x["fields"] = pack(rest["fields"])
        if not x["json"]:
            del x["json"]
    if x:
        fields["x"] = {SOURCE: x}
    return make_record(fields, text + "\n" if text else "", where)


# --------------------------------------------------------------------------- reading a board


def _canonical(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True,
                      separators=(",", ":")).encode("utf-8")


def read_ledger(root: Path, tid: str) -> list[dict[str, Any]]:
    """The task's ledger events, oldest first (every segment). Raises LedgitError naming
    the file and line when a line is not JSON or the hash chain is broken."""
    events: list[dict[str, Any]] = []
    previous: str | None = None
    for seg in sorted(root.glob(f"ledger/*/{tid}/*.ndjson")):
        rel = seg.relative_to(root.parent).as_posix()
        text = read_source(str(seg), found=True).decode("utf-8")
        for n, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
                raise LedgitError(located(f"not JSON: {exc}", rel, n), USAGE) from None
            if not isinstance(event, dict):
                raise LedgitError(located("not a ledger event", rel, n), USAGE)
            body = {k: v for k, v in event.items() if k != "event_sha256"}
            if hashlib.sha256(_canonical(body)).hexdigest() != event.get("event_sha256"):
                raise LedgitError(located("event_sha256 does not match the event (edited?)",
                                          rel, n), USAGE)
            if event.get("previous_event_sha256") != previous:
                raise LedgitError(located("previous_event_sha256 breaks the chain", rel, n),
                                  USAGE)
            previous = event["event_sha256"]
            event["_where"] = f"{rel}:{n}"
            events.append(event)
    return events


def replay(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The task dict after each event (``create`` takes its snapshot; the others apply their
    ``changes``: add/replace set a top-level key, remove deletes it)."""
    states: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    for event in events:
        if event.get("operation") == "create" and isinstance(event.get("snapshot"), dict):
            state = json.loads(json.dumps(event["snapshot"]))
        else:
            state = dict(state)
            for change in event.get("changes") or []:
                key = str(change.get("path", "")).lstrip("/").split("/")[0]
                if not key:
                    continue
                if change.get("op") == "remove":
                    state.pop(key, None)
                elif "value" in change:
                    state[key] = change["value"]
        states.append(state)
    return states


def read_task_file(path: Path) -> dict[str, Any]:
    """A task ``.md`` as a dict: front matter without implicit typing (every scalar a
    string; empty → None), ``body`` and ``agent_response`` from their marked blocks."""
    front, rest = read_front_matter(path)
    task = {k: (None if v == "" else v) for k, v in front.items()}
    for m in _BLOCK.finditer(rest):
        task["body" if m.group(1) == "body" else "agent_response"] = m.group(2)
    return task


def _agree(typed: Any, text: Any) -> bool:
    """Does a JSON value from the ledger say the same as a string-typed value from YAML?"""
    if typed in (None, "", []) and text in (None, "", []):
        return True
    if isinstance(typed, bool):
        return text in ("true", "false") and (text == "true") == typed
    if isinstance(typed, (int, float, str)):
        return isinstance(text, str) and str(typed) == text
    if isinstance(typed, list) and isinstance(text, list):
        return len(typed) == len(text) and all(
            _agree(a, b) for a, b in zip(typed, text, strict=True))
    if isinstance(typed, dict) and isinstance(text, dict):
        return set(typed) == set(text) and all(_agree(typed[k], text[k]) for k in typed)
    return False


def retype(text: dict[str, Any], typed: Mapping[str, Any]) -> dict[str, Any]:
    """The ``.md`` state, each key taking the ledger's JSON value where the two agree."""
    out = {}
    for key, value in text.items():
        if key in typed and _agree(typed[key], value):
            out[key] = typed[key]
        elif isinstance(value, dict) and isinstance(typed.get(key), Mapping):
            out[key] = retype(value, typed[key])
        else:
            out[key] = value
    return out


def _note(event: Mapping[str, Any]) -> str:
    """``yylo <operation>: <changed keys>`` (the keys only for an edit of a few)."""
    op = f"yylo {event.get('operation')}"
    paths = [str(p).lstrip("/") for p in event.get("changed_paths") or []]
    if event.get("operation") == "create" or not paths or len(paths) > 6:
        return op
    return f"{op}: {', '.join(paths)}"


def board_tasks(root: Path) -> tuple[list[Incoming], list[Skip]]:
    """Every task of a YYLO board: (incoming records with their ledger as steps, skips)."""
    incoming: list[Incoming] = []
    skips: list[Skip] = []
    for path in sorted(root.glob("tasks/*/*.md")):
        rel = path.relative_to(root.parent).as_posix()
        try:
            current = read_task_file(path)
            tid = str(current.get("id") or path.stem)
            events = read_ledger(root, tid)
            states = replay(events)
            final = retype(current, states[-1] if states else {})
            record = task_to_record(final, rel)
            steps: list[Step] = []
            for event, state in zip(events, states, strict=True):
                steps.append(Step(
                    task_to_record(state, event["_where"]),
                    normalize_timestamp(str(event.get("timestamp"))),
                    f"yylo:{event.get('source') or 'cli'}", str(event.get("operation")),
                    _note(event),
                    {"yylo_event_id": str(event.get("event_id")),
                     "yylo_event_sha256": str(event.get("event_sha256"))}))
        except (LedgitError, OSError, UnicodeDecodeError, ValueError) as exc:
            skips.append(file_skip(rel, path, exc))
            continue
        incoming.append(Incoming(record, rel, tid, tuple(steps)))
    return incoming, skips


def load_yylo(path: str) -> tuple[list[Incoming], list[Skip]]:
    """Read a YYLO Ledger board: ``PATH/.juno_task`` or the directory that holds it."""
    return board_tasks(find_root(os.fspath(path)))
