"""``ledgit project add|list|remove``: the other boards this board may reach
(:mod:`ledgit.operations.projects`; docs/projects.md): registrations by alias, in the board's
versioned
``.ledgit/projects.yaml`` or the user's config.
"""

from __future__ import annotations

from typing import Any

from ledgit.cli.commands.output import err, out, out_json
from ledgit.core.errors import OK, LedgitError
from ledgit.operations import projects
from ledgit.storage.board import find_board


def project_add_cmd(alias: str, path: str, ref: str | None, user: bool,
                    as_json: bool) -> int:
    """``ledgit project add``: register the board at ``path`` as ``alias`` (read at Git
    ``ref`` when given; ``user``: in the user's config, else the team's); prints the
    registration. Returns 0; LedgitError exit 2 for a bad alias or path."""
    reg = projects.add(find_board(), alias, path, ref, user=user)
    if as_json:
        out_json(_registration_json(reg))
    else:
        pinned = f" at {reg.ref}" if reg.ref else ""
        out(f"project {alias}: {reg.location}{pinned} ({reg.source})")
    return OK


def project_list_cmd(as_json: bool) -> int:
    """``ledgit project list``: the registrations by alias, each with whether it can be read
    now (and why not). Returns 0."""
    board = find_board()
    rows = []
    for _alias, reg in sorted(projects.registrations(board).items()):
        row = _registration_json(reg)
        try:
            projects.open_registration(board, reg)
            row["readable"], row["reason"] = True, None
        except LedgitError as exc:
            row["readable"], row["reason"] = False, exc.message
        rows.append(row)
    if as_json:
        out_json({"board": projects.board_name(board), "projects": rows})
        return OK
    if not rows:
        err("ledgit: no projects registered (ledgit project add ALIAS PATH)")
    for r in rows:
        pinned = f" at {r['ref']}" if r["ref"] else ""
        state = "ok" if r["readable"] else f"UNREADABLE: {r['reason']}"
        out(f"{r['alias']}  {r['path']}{pinned}  ({r['source']})  {state}")
    return OK


def project_remove_cmd(alias: str, user: bool, as_json: bool) -> int:
    """``ledgit project remove``: drop the registration ``alias`` (the team's, or with
    ``user`` the user's); prints what was removed. Returns 0; exit 4 when there is none."""
    reg = projects.remove(find_board(), alias, user=user)
    if as_json:
        out_json(_registration_json(reg))
    else:
        out(f"project {alias}: removed ({reg.source})")
    return OK


def _registration_json(reg: projects.Registration) -> dict[str, Any]:
    return {"alias": reg.alias, "path": reg.path, "location": str(reg.location),
            "ref": reg.ref, "source": reg.source}
