"""``ledgit sync`` (DESIGN §13): thin over :mod:`ledgit.integration.sync` -- parse, call, print
one line per step that did something (or JSON), return the exit code."""

from __future__ import annotations

from pathlib import Path

from ledgit.cli.commands.output import err, out, out_json
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.git.branches import MERGE, REBASE
from ledgit.integration.sync import SyncOptions, SyncReport, sync
from ledgit.storage.board import find_board


def sync_cmd(remote: str | None, branch: str | None, rebase: bool, merge: bool,
             message: str | None, no_push: bool, tries: int, as_json: bool) -> int:
    """``ledgit sync``: 0 when the board's changes are committed, the upstream integrated
    and (unless ``--no-push``) pushed; the LedgitError of :func:`ledgit.integration.sync.sync`
    otherwise (1, 2, 5, 69). JSON: :meth:`ledgit.integration.sync.SyncReport.as_json`."""
    if rebase and merge:
        raise LedgitError("sync: --rebase and --merge exclude each other", USAGE)
    options = SyncOptions(remote=remote, branch=branch,
                          how=REBASE if rebase else MERGE if merge else None,
                          message=message, push=not no_push, tries=tries)
    report = sync(find_board(Path.cwd()), options)
    if as_json:
        out_json(report.as_json())
    else:
        for line in lines(report):
            out(line)
    for note in report.notes:
        err(f"ledgit sync: note: {note}")
    return OK


def lines(report: SyncReport) -> list[str]:
    """What a sync did, one line per step that did something (docs/cli.md, "sync")."""
    found = []
    if report.committed:
        c = report.committed
        tasks = c["tasks"]
        named = ", ".join(tasks[:5]) + (f" (+{len(tasks) - 5})" if len(tasks) > 5 else "")
        found.append(f"committed {len(tasks)} task(s) as {c['commit'][:12]}"
                     + (f": {named}" if tasks else f" ({c['paths']} board file(s))"))
    for done in report.integrations:
        merged = done["merged"]
        what = f"{done['how']} {done['from']}"
        if done.get("picked"):
            what += f" ({done['picked']} commit(s) replayed)"
        if merged:
            what += f"; ledgit merged {len(merged)} board file(s) both sides changed"
        found.append(what)
    if report.pushed:
        p = report.pushed
        old = (p["old"] or "(new branch)")[:12]
        found.append(f"pushed {p['new'][:12]} to {report.remote}/{p['branch']} (was {old})"
                     + (f" after {report.push_races} lost race(s)" if report.push_races else ""))
    if not report.remote:
        found.append("nothing fetched or pushed: this repository has no remote (git remote "
                     "add origin URL)")
    elif report.ahead is None:
        found.append(f"nothing pushed: {report.upstream} does not exist")
    elif report.ahead:
        found.append(f"nothing pushed: {report.branch} is {report.ahead} commit(s) ahead of "
                     f"{report.upstream}")
    if not found:
        found.append(f"{report.branch} is in sync with {report.remote}: nothing to commit, "
                     f"fetch in or push")
    return found
