"""One task added twice merges (issue 36 item 3, docs/merge.md "One task added twice"): two
histories of one task created separately -- one source imported on two branches at different
moments, two agents importing the same backlog in two clones of one remote -- share their
import root, so Git's merge (with ledgit's driver) merges them as any two sides: fields by the
rule, the histories as a union under one genesis, no markers, the later ``last_modified``;
the same bytes whichever side is ours. Real Git, a real bare remote."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow import LEDGIT, commit_all, fields, git_rc, has_markers, ledgit, new_repo
from gitutil import git

from ledgit.core.filemerge import merge_history_bytes, merge_task_bytes
from ledgit.core.history import parse_events
from ledgit.core.historycheck import verify
from ledgit.core.record import Record, make_record, parse_record
from ledgit.core.render import render_record
from ledgit.interop.genesis import history_bytes
from ledgit.interop.incoming import Incoming, Step

pytest_plugins = ["gitutil"]

ISSUE = {"id": "bd-twice", "title": "Import me", "status": "open", "priority": 2,
         "labels": ["from-v1"], "description": "The same text on both sides.\n",
         "created_at": "2026-01-05T10:00:00Z", "updated_at": "2026-01-06T10:00:00Z"}
LATER = dict(ISSUE, title="Import me, renamed at the source", labels=["from-v2"],
             status="in_progress", updated_at="2026-01-09T10:00:00Z")


def _import(root: Path, issue: dict[str, object], by: str) -> None:
    source = root.parent / f"issues-{by}.jsonl"
    source.write_text(json.dumps(issue) + "\n")
    ledgit(root, "import", "beads", str(source), "--by", by)


def _clean_merge(root: Path, *args: str) -> None:
    proc = git_rc(root, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in (root / ".ledgit").rglob("*.*"):
        assert not has_markers(path.read_text()), path
    ledgit(root, "verify", "--all")


def test_one_source_imported_on_two_branches_at_different_moments(tmp_path: Path,
                                                                   git_env: Path) -> None:
    root = new_repo(tmp_path / "repo")
    git("branch", "early", cwd=root)
    _import(root, LATER, "amy")  # main imports the source as it is now ...
    commit_all(root, "import, later")
    git("checkout", "-q", "early", cwd=root)
    _import(root, ISSUE, "bob")  # ... a branch imported it days before
    commit_all(root, "import, earlier")
    git("checkout", "-q", "-b", "merged", "main", cwd=root)
    _clean_merge(root, "merge", "-q", "--no-edit", "early")
    f = fields(root, "bd-twice")
    assert f["title"] == LATER["title"] and f["status"] == "in_progress"  # the later side
    assert f["last_modified"] == "2026-01-09T10:00:00.000000Z"
    assert set(f["labels"]) == {"from-v1", "from-v2"}  # sets: both sides' additions
    body = (root / ".ledgit" / "tasks" / "bd-twice.md").read_text()
    assert body.count("The same text on both sides.") == 1
    history = (root / ".ledgit" / "history" / "bd-twice.jsonl").read_text()
    events = parse_events(history, "bd-twice")
    assert [e["op"] for e in events].count("create") == 1  # one genesis: the import root
    assert sorted(e["actor"] for e in events if e["op"] == "import") == ["amy", "bob"]
    assert events[-1]["op"] == "merge"
    # the other way round gives the same tree (a rebase swaps the sides)
    merged = git("rev-parse", "HEAD^{tree}", cwd=root)
    git("checkout", "-q", "-b", "merged-other-way", "early", cwd=root)
    _clean_merge(root, "merge", "-q", "--no-edit", "main")
    assert git("rev-parse", "HEAD^{tree}", cwd=root) == merged


def test_two_agents_import_one_backlog_in_two_clones_of_a_remote(tmp_path: Path,
                                                                 git_env: Path) -> None:
    seed = new_repo(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(seed), str(remote), cwd=tmp_path)
    clones = []
    for name in ("a", "b"):
        clone = tmp_path / name
        git("clone", "-q", str(remote), str(clone), cwd=tmp_path)
        ledgit(clone, "install", "--command", LEDGIT)
        clones.append(clone)
    a, b = clones
    _import(a, ISSUE, "alice")
    _import(b, ISSUE, "bob")  # the same backlog, another agent: the same task file
    assert (a / ".ledgit/tasks/bd-twice.md").read_bytes() == \
        (b / ".ledgit/tasks/bd-twice.md").read_bytes()
    commit_all(a, "alice imports the backlog")
    git("push", "-q", "origin", "HEAD", cwd=a)
    commit_all(b, "bob imports the backlog")
    _clean_merge(b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    git("push", "-q", "origin", "HEAD", cwd=b)
    _clean_merge(a, "pull", "-q", "--ff-only", "origin", "main")
    history = (a / ".ledgit/history/bd-twice.jsonl").read_text()
    events = parse_events(history, "bd-twice")
    assert [e["op"] for e in events] == ["create", "import", "import", "merge"]
    assert fields(a, "bd-twice")["title"] == ISSUE["title"]
    # and a later import of a changed source on either clone is an ordinary re-import
    _import(a, LATER, "alice")
    assert fields(a, "bd-twice")["title"] == LATER["title"]
    ledgit(a, "verify", "--all")


def test_imports_with_their_source_history_added_twice_agree_with_the_task_file() -> None:
    """Two imports of a source that keeps its own history (YYLO, Stateframe: steps), the
    second after one more step: the add/add of the task file and of the history, merged as
    the driver merges them, give a history whose head is the merged task file, the same
    bytes whichever side is ours."""
    tid, created = "Y-steps", "2026-01-01T00:00:00.000000Z"

    def rec(title: str, labels: list[str], at: str, **more: str) -> Record:
        return make_record({"id": tid, "title": title, "status": "open", "labels": labels,
                            "created": created, "last_modified": at, **more}, "## Goal\n")

    r1 = rec("first", ["a"], "2026-01-02T00:00:00.000000Z")
    r2 = rec("second", ["a", "b"], "2026-01-03T00:00:00.000000Z")
    r3 = rec("third", ["b"], "2026-01-04T00:00:00.000000Z", status="done",
             response="finished at the source")
    steps = [Step(r1, r1.fields["last_modified"], "carol", "create"),
             Step(r2, r2.fields["last_modified"], "carol", "update"),
             Step(r3, r3.fields["last_modified"], "carol", "complete")]
    early = Incoming(r2, "x", "src-1", tuple(steps[:2]))
    late = Incoming(r3, "x", "src-1", tuple(steps))
    sides = [(render_record(r).encode(), history_bytes(i, who, "yylo"))
             for r, i, who in ((r2, early, "alice"), (r3, late, "bob"))]
    results = []
    for (o_task, o_hist), (t_task, t_hist) in (sides, sides[::-1]):
        task, conflicted, _ = merge_task_bytes(b"", o_task, t_task, 7,
                                               f".ledgit/tasks/{tid}.md")
        hist, hist_conflicted, _ = merge_history_bytes(b"", o_hist, t_hist, 7,
                                                       f".ledgit/history/{tid}.jsonl")
        assert not conflicted and not hist_conflicted
        assert verify(tid, hist, parse_record(task)) == []
        results.append((task, hist))
    assert results[0] == results[1]
    merged = parse_record(results[0][0]).fields
    assert (merged["status"], merged["title"]) == ("done", "third")
