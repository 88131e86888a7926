"""The import root (docs/merge.md, "One task added twice"): the one state every import of a
task starts from, so that two histories of one task created separately -- one source imported
on two branches at different moments, two agents importing the same backlog -- share one
genesis event and merge as any two histories do. Pure; no hashing here (the task file's
merge, on the driver's path, needs only the state).

The root of task ``ID`` created at ``C`` (the record's ``created``, which a source keeps) is
the record ``{id: ID, title: ID, status: open, created: C, last_modified: C}`` with an empty
body; its genesis event (:mod:`ledgit.interop.genesis` writes it) is ``op: create``, ``actor:
ledgit``, ``at: C``, ``note:`` :data:`ROOT_NOTE`, no ``meta``, patch ``[add /fields, add
/body]``: it depends on ``ID`` and ``C`` alone, never on the source, the importer or the
moment. The record the import brings is the root's child: one ``import`` event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.record import Record, make_record

if TYPE_CHECKING:
    from collections.abc import Mapping

ROOT_ACTOR = "ledgit"
ROOT_NOTE = "the import root: every import of this task starts here"


def root_fields(task_id: str, created: str) -> dict[str, Any]:
    """The front matter of the import root of ``task_id`` created at ``created``."""
    return {"id": task_id, "title": task_id, "status": "open", "created": created,
            "last_modified": created}


def root_record(task_id: str, created: str) -> Record:
    """The import root of ``task_id`` created at ``created`` (RFC 3339 UTC, µs), as a
    record. Raises LedgitError for an invalid id or time."""
    return make_record(root_fields(task_id, created), "", path=task_id)


def add_add_base(ours: Record, theirs: Record) -> Record | None:
    """The base of an add/add of one task (Git's base has no such file): the import root of
    its id when both sides have that id and the same ``created`` (two imports of one source
    record), else None (two tasks under one id: not fused)."""
    if ours.id != theirs.id or ours.fields["created"] != theirs.fields["created"]:
        return None
    return root_record(ours.id, ours.fields["created"])


def is_root(event: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    """Whether the genesis ``event``, whose state is ``state``, is an import root."""
    fields = state.get("fields")
    if event.get("parents") or event.get("op") != "create" or "meta" in event \
            or event.get("actor") != ROOT_ACTOR or event.get("note") != ROOT_NOTE \
            or not isinstance(fields, dict) or state.get("body") != "":
        return False
    created = fields.get("created")
    return isinstance(created, str) and isinstance(fields.get("id"), str) \
        and fields == root_fields(fields["id"], created) and event.get("at") == created
