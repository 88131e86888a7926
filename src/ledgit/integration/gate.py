"""The CI gate: verify tasks and histories read from Git objects (DESIGN §8).

``ledgit verify --rev REV`` checks every task at one commit; ``--range A..B`` checks every
commit of the range (git-rev-list(1) semantics): tasks a commit changes get the full checks,
and at the start of the range every history is checked for what must never land anywhere --
more than one head, or conflict markers. The board's ``config.yaml`` is checked where the
range starts and in every commit that changes it, by the rules every command reads it with
(issue 36: the gate refuses what the commands refuse). Files are read from the object database
(:func:`ledgit.git.repository.tree_files`, pygit2), never from the working tree, so the gate sees
exactly
what was committed.

The checks on one task (:func:`check_task`) are the validator's (:meth:`Board.verify`) applied
to bytes: conflict markers, the record's schema and id, the lifecycle invariants (DESIGN §4)
and history continuity (DESIGN §6, :func:`ledgit.core.historycheck.verify`). The pre-commit
hook runs the same function on staged blobs.

The gate also fails when ``.gitattributes`` names the ``ledgit`` merge driver but this clone
has no ``merge.ledgit.driver``: Git then silently falls back to a line merge
(gitattributes(5), "Defining a custom merge driver"), which a CI merge must not do.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import objects, repository
from ledgit.git.refs import shallow_commits
from ledgit.integration.configcheck import check_config, config_path
from ledgit.integration.links import LINK_RULE, link_message, links_at, links_in_range
from ledgit.integration.taskcheck import (
    HISTORY,
    HISTORY_SUFFIX,
    LEDGIT_DIR,
    TASK_SUFFIX,
    TASKS,
    Finding,
    check_case,
    check_files,
    check_growth,
    check_task,
    prefix_of,
    task_of,
    task_paths,
)
from ledgit.storage.board import find_board

if TYPE_CHECKING:
    from pathlib import Path

    from ledgit.git.objects import TreeReader

FORMATS = ("text", "json", "github")


class GateReport(NamedTuple):
    """What the gate checked: the ``commits`` (oldest first), how many task checks ran
    (``checked``), every finding (``findings``; empty = pass) and what passed but is worth
    saying (``notes``: an archived task's files removed)."""

    commits: list[str]
    checked: int
    findings: list[Finding]
    notes: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.findings


# --------------------------------------------------------------------------- paths


def board_prefix(cwd: Path) -> str:
    """The board's directory relative to the work tree top, ``""`` or ``"sub/dir/"``.

    Uses the board found from ``cwd`` (``LEDGIT_ROOT`` aware); a repository without a board
    checked out is taken to keep it at the top.
    """
    found = _found_prefix(cwd)
    return "" if found is None else found


def _found_prefix(cwd: Path) -> str | None:
    """:func:`board_prefix` of the board found from ``cwd``; None when no board is found
    there inside the work tree. Raises LedgitError (2) outside a work tree."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree", USAGE)
    try:

        root = find_board(cwd).root
    except LedgitError:
        return None
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
    if rel.startswith(".."):
        return None
    return "" if rel == "." else rel.replace(os.sep, "/") + "/"


def board_prefixes(cwd: Path, revs: Iterable[str] = (), *, configs_only: bool = False
                   ) -> list[str]:
    """Every board to check (docs/git.md, "Every board is guarded"), sorted: the board found
    from ``cwd`` (walking up, :func:`ledgit.storage.board.find_board`), every board Git tracks in
    the
    index (what a commit would hold) and, for each of ``revs``, in that commit's tree -- the
    directories holding a ``.ledgit/`` with a ``config.yaml``, a task file or a history. In a
    bare repository only the ``revs`` are looked at. ``[""]`` when there is none.
    ``configs_only``: boards in the index are those with a tracked ``config.yaml`` (what
    ``ledgit init`` commits): one path a board, not one per task, for the post-* hooks that
    only warm indexes (at 10,000 tasks the full listing is 20,000 paths).
    """
    prefixes: set[str] = set()
    top = repository.toplevel(cwd)
    listed: list[bytes] = []
    if top is not None:
        found = _found_prefix(cwd)
        if found is not None:
            prefixes.add(found)
        globs = [f":(glob)**/{LEDGIT_DIR}/config.yaml"]
        if not configs_only:
            globs += [f":(glob)**/{LEDGIT_DIR}/{TASKS}/*{TASK_SUFFIX}",
                      f":(glob)**/{LEDGIT_DIR}/{HISTORY}/*{HISTORY_SUFFIX}"]
        listed.append(repository.run_git(["ls-files", "-z", "--full-name", "--", *globs], top,
                                  check=False).stdout)
    elif repository.discover(cwd) is None:
        raise LedgitError(f"{cwd}: not a Git repository", USAGE)
    for rev in revs:
        prefixes.update(p for p in map(prefix_of, objects.board_paths_at(cwd, rev))
                        if p is not None)
    for out in listed:
        for path in os.fsdecode(out).split("\0"):
            prefix = prefix_of(path)
            if prefix is not None:
                prefixes.add(prefix)
    return sorted(prefixes) or [""]


def growth_between(reader: TreeReader, parent: str, commit: str, prefix: str,
                   paths: Iterable[str] | None = None, *, label: str | None = None,
                   ) -> tuple[int, list[Finding], list[str]]:
    """:func:`check_growth` for every task of board ``prefix`` whose files differ between
    commits ``parent`` and ``commit`` (``paths``: that difference when already known), read
    through a :class:`ledgit.git.repository.TreeReader`. Returns (tasks checked, findings,
    notes)."""
    changed = reader.diff_paths(parent, commit) if paths is None else paths
    tasks = sorted({t for t in (task_of(p, prefix) for p in changed) if t is not None})
    found: list[Finding] = []
    notes: list[str] = []
    for tid in tasks:
        md, hist = task_paths(prefix, tid)
        after = (reader.blob(commit, md), reader.blob(commit, hist))
        # the parent's task file matters only for a removal (was it archived?)
        before = (reader.blob(parent, md) if after == (None, None) else None,
                  reader.blob(parent, hist))
        more, said = check_growth(tid, md, hist, before, after,
                                  against=label or f"parent {parent[:12]}", rev=parent[:12],
                                  commit=commit)
        found += more
        notes += said
    return len(tasks), found, notes


# --------------------------------------------------------------------------- Git objects


def verify_rev(cwd: Path, rev: str, prefix: str | None = None) -> GateReport:
    """Every task and history at commit ``rev``, fully checked, and the commit against each
    of its parents for growth (:func:`check_growth`)."""
    prefix = board_prefix(cwd) if prefix is None else prefix
    commit = objects.rev_list(cwd, rev)[0]
    files = objects.tree_files(cwd, commit, f"{prefix}{LEDGIT_DIR}/")
    checked, found = check_files(files, prefix, commit=commit)
    found += check_config(config_path(prefix), files.get(config_path(prefix)), commit)
    reader = objects.TreeReader(cwd)
    notes: list[str] = []
    for parent in objects.commit_parents(cwd, [commit]).get(commit, []):
        _, more, said = growth_between(reader, parent, commit, prefix)
        found += more
        notes += said
    return GateReport([commit], checked, found, notes)


def verify_range(cwd: Path, spec: str, prefix: str | None = None) -> GateReport:
    """Every commit of ``A..B``, oldest first.

    A commit whose first parent is outside the range (the start) gets the heads-and-markers
    check on every task; each commit then gets the full checks on the tasks it changes
    against its first parent (so a merge commit is checked for everything it brought in),
    and the growth check (:func:`check_growth`) against every one of its parents.
    """
    if ".." not in spec:
        raise LedgitError(f"--range {spec}: give a range A..B (a single commit: --rev)", USAGE)
    prefix = board_prefix(cwd) if prefix is None else prefix
    commits = objects.rev_list(cwd, spec)
    parents = objects.commit_parents(cwd, commits)
    reader = objects.TreeReader(cwd)
    seen: set[str] = set()
    checked = 0
    found: list[Finding] = []
    notes: list[str] = []
    board_dir = f"{prefix}{LEDGIT_DIR}/"
    tasks_dir = f"{board_dir}{TASKS}/"
    config = config_path(prefix)
    for commit in commits:
        mine = parents.get(commit, [])
        first = objects.changed_paths(cwd, commit, board_dir)
        if (mine[0] if mine else None) not in seen:
            files = objects.tree_files(cwd, commit, board_dir)
            n, more = check_files(files, prefix, commit=commit, full=False)
            checked += n
            found += more
            found += check_config(config, files.get(config), commit)
        elif config in first:  # a commit that changes the config: as every command reads it
            found += check_config(config, reader.blob(commit, config), commit)
        changed = {t for t in (task_of(p, prefix) for p in first) if t is not None}
        added = [p for p in first if p.startswith(tasks_dir) and p.endswith(TASK_SUFFIX)
                 and reader.blob(commit, p) is not None
                 and (not mine or reader.blob(mine[0], p) is None)]
        if added:  # no two ids equal under case folding (issue 36)
            found += [f for f in check_case(prefix, reader.names(commit, tasks_dir), added,
                                            commit) if f not in found]
        for tid in sorted(changed):
            md, hist = task_paths(prefix, tid)
            found += [f for f in check_task(tid, md, reader.blob(commit, md), hist,
                                            reader.blob(commit, hist), commit)
                      if f not in found]
        checked += len(changed)
        for n, parent in enumerate(mine):
            _, more, said = growth_between(reader, parent, commit, prefix,
                                           first if n == 0 else None)
            found += [f for f in more if f not in found]
            notes += said
        seen.add(commit)
    return GateReport(commits, checked, found, notes)


def committed_links(cwd: Path, commits: list[str], *, whole: bool) -> list[Finding]:
    """One finding per symbolic link under a board (issue 26, :mod:`ledgit.integration.links`): in
    the tree of the last of ``commits``, and (``whole`` False: a range) every link any of
    them adds or changes; each path once, at the first commit it is seen."""
    if not commits:
        return []
    seen: dict[str, str] = {}
    if not whole:
        for commit, paths in links_in_range(cwd, commits).items():
            for path in paths:
                seen.setdefault(path, commit)
    for path in links_at(cwd, commits[-1]):
        seen.setdefault(path, commits[-1])
    return [Finding(path, 0, LINK_RULE, link_message(path), commit)
            for path, commit in sorted(seen.items())]


def driver_gap(cwd: Path, rev: str | None = None, prefix: str = "") -> Finding | None:
    """A finding when ``.gitattributes`` routes task files to the ``ledgit`` merge driver
    but this clone does not define ``merge.ledgit.driver`` (Git would line-merge them).

    The attributes are read from the work tree (git-check-attr(1)) and, with ``rev``, from
    the ``.gitattributes`` files committed there (top and board directory).
    """
    if repository.config_get(cwd, "merge.ledgit.driver"):
        return None
    named = attributes_name_driver(cwd, prefix)
    where = ".gitattributes"
    if not named and rev is not None:
        for path in dict.fromkeys((".gitattributes", f"{prefix}.gitattributes")):
            data = objects.blob_at(cwd, rev, path)
            if data and re.search(rb"(?m)^[^#\n]*\smerge=ledgit\b", data):
                named, where = True, path
                break
    if not named:
        return None
    return Finding(where, 0, "merge-driver",
                   "names the ledgit merge driver but this clone has no merge.ledgit.driver: "
                   "Git would line-merge task files (run: ledgit install)")


def attributes_name_driver(cwd: Path, prefix: str = "") -> bool:
    """True when the work tree's attributes give task files ``merge=ledgit``
    (``git check-attr merge``, which follows every .gitattributes and info/attributes)."""
    probe = f"{prefix}{LEDGIT_DIR}/{TASKS}/T-probe{TASK_SUFFIX}"
    top = repository.toplevel(cwd)
    if top is None:
        return False
    out = repository.run_git(["check-attr", "-z", "merge", "--", probe], top, check=False).stdout
    fields = out.split(b"\0")
    return len(fields) >= 3 and fields[2] == b"ledgit"


# --------------------------------------------------------------------------- output


def _escape_data(text: str) -> str:
    # GitHub workflow commands: %, CR and LF are escaped in the message...
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # ...and also ':' and ',' in the properties (file=..., title=...).
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(f: Finding) -> str:
    """``::error file=PATH,line=N,title=ledgit RULE::MESSAGE`` (GitHub Actions workflow
    command; ``line`` left out for a whole-file problem)."""
    props = [f"file={_escape_property(f.path)}"]
    if f.line:
        props.append(f"line={f.line}")
    props.append(f"title={_escape_property('ledgit ' + f.rule)}")
    commit = f"{f.commit[:12]}: " if f.commit else ""
    return f"::error {','.join(props)}::{_escape_data(commit + f.message)}"


def render_report(report: GateReport, fmt: str) -> str:
    """The report as ``text`` (one line per finding), ``json`` or ``github`` annotations."""
    if fmt == "json":
        return json.dumps({
            "ok": report.ok, "commits": report.commits, "checked": report.checked,
            "problems": [f._asdict() for f in report.findings],
            "notes": list(report.notes),
        }, ensure_ascii=False, indent=2)
    if fmt == "github":
        return "\n".join([*(github_line(f) for f in report.findings),
                          *(f"::notice title=ledgit::{_escape_data(n)}" for n in report.notes)])
    if fmt == "text":
        return "\n".join(str(f) for f in report.findings)
    raise LedgitError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})", USAGE)


def run_gate(cwd: Path, *, rev: str | None = None, spec: str | None = None,
             allow_shallow: bool = False) -> GateReport:
    """``ledgit verify --rev REV`` or ``--range A..B``: the report, with the driver check.

    A checked commit whose parents this clone has not fetched (a shallow clone's boundary)
    is one ``shallow`` finding naming it: its growth could not be checked (issue 25); with
    ``allow_shallow`` a note instead.

    Checks every board of :func:`board_prefixes` (the one found from ``cwd``, every board
    tracked in the index, and every board at ``REV`` / at either end of the range). Works in
    a bare repository (server-side hooks, merge queues): there the boards come from the
    commits alone."""
    if (rev is None) == (spec is None):
        raise LedgitError("give one of --rev REV or --range A..B", USAGE)
    if repository.discover(cwd) is None:  # before any revision is read: the problem is the place
        raise LedgitError(f"{cwd}: not a Git repository: --rev and --range read commits "
                          f"(run it inside a clone)", USAGE)
    if rev is not None:
        objects.rev_list(cwd, rev)  # a bad (or option-like) revision is named before any listing
        ends = [rev]
    else:
        ends = [e for e in (spec or "").replace("...", "..").split("..") if e] or ["HEAD"]
        if spec and "..." not in spec:
            for end in ends:
                objects.rev_list(cwd, end)  # a bad end is named as such, before any listing
    # No work tree (a server's bare repository): nothing is merged here by Git's hand, and
    # what a forge's line merge breaks, the growth and continuity checks catch.
    bare = repository.toplevel(cwd) is None
    reports = []
    gaps: list[Finding] = []
    for prefix in board_prefixes(cwd, ends):
        report = verify_rev(cwd, rev, prefix) if rev is not None else \
            verify_range(cwd, spec or "", prefix)
        reports.append(report)
        if bare:
            continue
        gap = driver_gap(cwd, report.commits[-1] if report.commits else None, prefix)
        if gap is not None and gap not in gaps:
            gaps.append(gap)
    first = reports[0]
    unseen, said = shallow_findings(cwd, first.commits, allow=allow_shallow)
    gaps += committed_links(cwd, first.commits, whole=rev is not None)
    return GateReport(first.commits, sum(r.checked for r in reports),
                      [*gaps, *unseen, *(f for r in reports for f in r.findings)],
                      [*said, *(n for r in reports for n in r.notes)])


SHALLOW_RULE = "shallow"  # a commit's parents were not fetched: growth not checked


def shallow_findings(cwd: Path, commits: Iterable[str], *,
                     allow: bool = False) -> tuple[list[Finding], list[str]]:
    """(findings, notes) for the ``commits`` this clone has without their parents (the
    ``shallow`` file, gitrepository-layout(5)): the gate cannot say what they dropped."""
    boundary = shallow_commits(repository.common_dir(cwd))
    found: list[Finding] = []
    notes: list[str] = []
    for commit in (c for c in commits if c in boundary):
        message = ("its parents were not fetched (a shallow clone): growth against them is "
                   "not checked; fetch them (git fetch --deepen=1, or --unshallow; CI: "
                   "actions/checkout with fetch-depth: 0), or accept it: --allow-shallow")
        if allow:
            notes.append(f"{commit[:12]}: {message.split(';')[0]} (--allow-shallow)")
        else:
            found.append(Finding("(shallow clone)", 0, SHALLOW_RULE, message, commit))
    return found, notes
