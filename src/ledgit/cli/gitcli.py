"""The Git-layer commands: install, uninstall, doctor, resolve, hook, merge-driver, and the
CI gate options of ``verify`` (DESIGN §8). Thin: parse, call, print, return the exit code.

``verify`` is the CLI's command (:func:`ledgit.cli.main.verify_cmd`) with ``--rev``, ``--range``
and ``--format`` added: without them it runs the working-tree check unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ledgit.cli.commands.running import checked_board
from ledgit.cli.main import verify_cmd as worktree_verify
from ledgit.core.errors import NOT_FOUND, OK, USAGE, LedgitError
from ledgit.git.objects import resolve_commit
from ledgit.git.repository import discover
from ledgit.hooks.dispatch import run_hook
from ledgit.hooks.mergedriver import main as merge_driver_main
from ledgit.integration.doctor import doctor
from ledgit.integration.gate import GateReport, github_line, render_report, run_gate
from ledgit.integration.install import install, uninstall
from ledgit.integration.refguard import ALLOW_ENV, allowed, check_ref_update
from ledgit.integration.resolve import resolve
from ledgit.integration.restore import restore_events
from ledgit.integration.taskcheck import Finding
from ledgit.storage.boardcheck import verify_board


def _cwd() -> Path:
    return Path(os.getcwd())


def _print(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)


@click.command("install")
@click.option("--no-hooks", is_flag=True, help="Only the merge driver and the attributes.")
@click.option("--command", "command", metavar="CMD",
              help="How hooks and the driver run ledgit (default: this Python, -m ledgit).")
def install_cmd(no_hooks: bool, command: str | None) -> int:
    """Configure the merge driver, the attributes and the hooks (idempotent)."""
    _print(install(_cwd(), hooks=not no_hooks, command=command))
    return OK


@click.command("uninstall")
def uninstall_cmd() -> int:
    """Remove exactly what `ledgit install` added."""
    _print(uninstall(_cwd()))
    return OK


@click.command("doctor")
@click.option("--fix", is_flag=True, help="Apply the safe fixes (install, index refresh).")
@click.option("--repair", is_flag=True, help="Roll interrupted writes forward from the history.")
def doctor_cmd(fix: bool, repair: bool) -> int:
    """Check every worktree: driver, attributes, hooks, index, interrupted writes."""
    code, lines = doctor(_cwd(), fix=fix, repair=repair)
    _print(lines)
    return code


@click.command("resolve")
@click.argument("paths", nargs=-1)
def resolve_cmd(paths: tuple[str, ...]) -> int:
    """Re-merge conflicted task files and histories (index stages or conflict markers)."""
    code, lines = resolve(_cwd(), list(paths))
    _print(lines)
    return code


@click.command("restore-events")
@click.argument("rev")
@click.argument("tasks", nargs=-1)
def restore_events_cmd(rev: str, tasks: tuple[str, ...]) -> int:
    """Bring back the events commit REV held that the work tree's histories lack.

    The way back after a rebase, amend, reset or squash lost events: REV is the commit that
    had them (the reflog keeps it: ORIG_HEAD, BRANCH@{1}, the old tip a refusal names).
    Each history becomes the union of both with a merge event; stage the files it names.
    """
    code, lines = restore_events(_cwd(), rev, list(tasks))
    _print(lines)
    return code


@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(name: str, args: tuple[str, ...]) -> int:
    """Run a Git hook: pre-commit, post-checkout, post-merge, post-rewrite (or index)."""
    return run_hook(name, list(args))


@click.command("merge-driver", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def merge_driver_cmd(args: tuple[str, ...]) -> int:
    """Git's merge driver: %O %A %B %L %P (see docs/merge.md)."""
    return merge_driver_main(list(args))


@click.command("verify")
@click.argument("tasks", nargs=-1)
@click.option("--all", "check_all", is_flag=True, help="Every task (the default without IDs).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (same as --format json).")
@click.option("--rev", metavar="REV", help="Check every task at commit REV (from Git objects).")
@click.option("--range", "spec", metavar="A..B", help="Check every commit of A..B (CI gate).")
@click.option("--ref-update", "ref_update", nargs=2, metavar="OLD NEW",
              help="Check a ref moved from OLD to NEW keeps every event of OLD (forced push).")
@click.option("--allow-rewrite", is_flag=True,
              help="With --ref-update: report lost events as notes, exit 0 (on purpose).")
@click.option("--allow-shallow", is_flag=True,
              help="With --rev/--range: a commit whose parents were not fetched is a note.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default=None,
              help="Output: text, json, or GitHub annotations (::error file=...).")
@click.pass_context
def verify_cmd(ctx: click.Context, tasks: tuple[str, ...], check_all: bool, as_json: bool,
               rev: str | None, spec: str | None, ref_update: tuple[str, str] | None,
               allow_rewrite: bool, allow_shallow: bool, fmt: str | None) -> int:
    """Check records and history continuity; exit 1 with one line per problem.

    With --rev or --range the tasks are read from Git objects (the CI gate), and the check
    also fails when .gitattributes names the ledgit driver but this clone lacks its config.
    """
    fmt = "json" if as_json and fmt is None else (fmt or "text")
    if ref_update:
        if rev is not None or spec is not None or tasks or check_all:
            raise LedgitError("--ref-update OLD NEW takes no --rev, --range or task ids", USAGE)
        return _verify_ref_update(ref_update, allow_rewrite or allowed(), fmt)
    if rev is None and spec is None:
        if fmt == "github":
            return _verify_worktree_github(tasks)
        result = ctx.invoke(worktree_verify, tasks=tasks, check_all=check_all,
                            as_json=fmt == "json")
        return int(result or 0)
    if tasks or check_all:
        raise LedgitError("--rev/--range check every task; give no task ids or --all", USAGE)
    report = run_gate(_cwd(), rev=rev, spec=spec, allow_shallow=allow_shallow)
    text = render_report(report, fmt)
    if text:
        click.echo(text)
    if fmt == "text":
        for note in report.notes:
            click.echo(f"ledgit verify: note: {note}", err=True)
        what = (f"{len(report.commits)} commit(s), {report.checked} task check(s)")
        verdict = "ok" if report.ok else f"{len(report.findings)} problem(s)"
        click.echo(f"ledgit verify: {what}: {verdict}", err=True)
    return 0 if report.ok else 1


def _verify_ref_update(ends: tuple[str, str], allow: bool, fmt: str) -> int:
    """``verify --ref-update OLD NEW``: the events of OLD's tip that NEW lacks (an archived
    task's files may go). ``allow``: a deliberate rewrite, reported as notes."""
    cwd = _cwd()
    old, new = (e if set(e) == {"0"} else _commit(cwd, e) for e in ends)
    found, notes = check_ref_update(str(git_top(cwd)), old, new, "OLD")
    if allow:
        notes += [f"allowed by --allow-rewrite/{ALLOW_ENV}: {f}" for f in found]
        found = []
    report = GateReport([new], 0, found, notes)
    text = render_report(report, fmt)
    if text:
        click.echo(text)
    if fmt == "text":
        for note in notes:
            click.echo(f"ledgit verify: note: {note}", err=True)
        verdict = "ok" if not found else f"{len(found)} event(s) lost"
        click.echo(f"ledgit verify: ref update {old[:12]}..{new[:12]}: {verdict}", err=True)
    return 0 if not found else 1


def _commit(cwd: Path, rev: str) -> str:
    try:
        return resolve_commit(cwd, rev)
    except LedgitError as exc:
        raise LedgitError(f"--ref-update: {rev}: not a commit", NOT_FOUND) from exc


def git_top(cwd: Path) -> Path:
    """Where the ref guard asks Git: the work tree top, or the git directory when bare."""
    found = discover(cwd)
    if found is None:
        raise LedgitError(f"{cwd}: not a Git repository", USAGE)
    return found.toplevel or found.git_dir


def _verify_worktree_github(tasks: tuple[str, ...]) -> int:
    """The working-tree check printed as GitHub annotations."""

    board = checked_board()
    ids = [board.resolve_id(t) for t in tasks] if tasks else None
    problems = verify_board(board, ids)
    for p in problems:
        path = board.history_path(p.task) if p.line else board.task_path(p.task)
        rel = os.path.relpath(path, os.getcwd()).replace(os.sep, "/")
        click.echo(github_line(Finding(rel, p.line, p.rule, p.message)))
    return 1 if problems else 0
