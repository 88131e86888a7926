"""The merge driver under real Git: merge, rebase and cherry-pick between real worktrees."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_record
from examples import examples
from gitflow import (
    BODY,
    commit_all,
    create,
    edit_body,
    event_ids,
    fields,
    git_rc,
    has_markers,
    history_file,
    ledgit,
    new_repo,
    task_file,
)
from gitutil import git
from hypothesis import HealthCheck, given, settings

from ledgit.core import canonread, record, render, schema
from ledgit.core.record import make_record
from ledgit.core.render import render_record

pytest_plugins = ["gitutil"]


def _two_worktrees(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """main (worktree ``a``) and branch ``feature`` (worktree ``b``) sharing five tasks."""
    a = new_repo(tmp_path / "a")
    tasks = [create(a, f"Shared task {i}", "--body", BODY, "--by", "lead") for i in range(5)]
    commit_all(a, "five shared tasks")
    git("worktree", "add", "-q", "-b", "feature", str(tmp_path / "b"), cwd=a)
    return a, tmp_path / "b", tasks


def _diverge(a: Path, b: Path, tasks: list[str]) -> None:
    """Each worktree changes different fields of the same tasks (DESIGN §7: one side each)."""
    t_status, t_prio, t_body, t_items, t_labels = tasks
    ledgit(a, "claim", t_status, "--by", "agent-a")                       # status + claim
    ledgit(a, "update", t_prio, "--priority", "0", "--by", "agent-a")     # priority
    edit_body(a, t_body, "First paragraph, kept by upstream.", "First paragraph: upstream.",
              by="agent-a")                                               # body, paragraph 1
    ledgit(a, "item", "add", t_items, "--kind", "fact", "--text", "seen by a", "--by", "agent-a")
    ledgit(a, "update", t_labels, "--owner", "olga", "--by", "agent-a")   # owner
    commit_all(a, "agent-a: upstream work")
    ledgit(b, "update", t_status, "--label", "from-b", "--by", "agent-b")  # labels
    ledgit(b, "update", t_prio, "--response", "b did it", "--by", "agent-b")  # response
    edit_body(b, t_body, "Last paragraph, kept by the feature.", "Last paragraph: feature.",
              by="agent-b")                                               # body, last paragraph
    ledgit(b, "item", "add", t_items, "--kind", "decision", "--text", "b decided",
           "--by", "agent-b")
    ledgit(b, "update", t_labels, "--label", "ops", "--next-action", "ship", "--by", "agent-b")
    commit_all(b, "agent-b: feature work")


def _histories(cwd: Path, tasks: list[str]) -> dict[str, list[str]]:
    return {t: event_ids(history_file(cwd, t).read_text()) for t in tasks}


def _check_merged(b: Path, tasks: list[str], before_a: dict[str, list[str]],
                  before_b: dict[str, list[str]]) -> None:
    t_status, t_prio, t_body, t_items, t_labels = tasks
    f = fields(b, t_status)
    assert f["status"] == "in_progress" and f["claim"]["by"] == "agent-a"
    assert "from-b" in f["labels"]
    f = fields(b, t_prio)
    assert f["priority"] == 0 and f["response"] == "b did it"
    body = task_file(b, t_body).read_text()
    assert "First paragraph: upstream." in body and "Last paragraph: feature." in body
    assert not has_markers(body)
    texts = {i["text"] for i in fields(b, t_items)["items"]}
    assert texts == {"seen by a", "b decided"}
    f = fields(b, t_labels)
    assert f["owner"] == "olga" and "ops" in f["labels"] and f["next_action"] == "ship"
    for t in tasks:
        ids = event_ids(history_file(b, t).read_text())
        assert len(ids) == len(set(ids)), f"{t}: an event appears twice"
        assert set(before_a[t]) | set(before_b[t]) <= set(ids), f"{t}: an event was lost"


@pytest.mark.parametrize("operation", ["merge", "rebase", "cherry-pick"])
def test_different_fields_merge_without_conflict(tmp_path: Path, git_env: Path,
                                                 operation: str) -> None:
    a, b, tasks = _two_worktrees(tmp_path)
    base = git("rev-parse", "HEAD", cwd=a)
    _diverge(a, b, tasks)
    before_a, before_b = _histories(a, tasks), _histories(b, tasks)
    if operation == "merge":
        proc = git_rc(b, "merge", "--no-edit", "main")
    elif operation == "rebase":
        proc = git_rc(b, "rebase", "main")
    else:
        proc = git_rc(b, "cherry-pick", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CONFLICT" not in proc.stdout
    _check_merged(b, tasks, before_a, before_b)
    # the CI gate at every resulting commit
    ledgit(b, "verify", "--range", f"{base}..HEAD")
    ledgit(b, "verify")


def test_merging_either_way_gives_identical_bytes(tmp_path: Path, git_env: Path) -> None:
    a, b, tasks = _two_worktrees(tmp_path)
    _diverge(a, b, tasks)
    # both sides also change the same scalar and the same set differently
    ledgit(a, "update", tasks[3], "--priority", "1", "--label", "a-only", "--by", "agent-a")
    commit_all(a, "a: more")
    ledgit(b, "update", tasks[3], "--priority", "3", "--no-label", "a-only", "--label", "b-only",
           "--by", "agent-b")
    commit_all(b, "b: more")
    git("worktree", "add", "-q", "--detach", str(tmp_path / "c"), "main", cwd=a)
    c = tmp_path / "c"
    assert git_rc(b, "merge", "--no-edit", "main").returncode == 0        # A into B
    assert git_rc(c, "merge", "--no-edit", "feature~0").returncode == 0   # B into A
    for t in tasks:
        assert task_file(b, t).read_bytes() == task_file(c, t).read_bytes(), t
        assert history_file(b, t).read_bytes() == history_file(c, t).read_bytes(), t
    ledgit(b, "verify")
    ledgit(c, "verify")


def test_concurrent_claims_earlier_wins_loser_gets_exit_6(tmp_path: Path, git_env: Path) -> None:
    a, b, tasks = _two_worktrees(tmp_path)
    tid = tasks[0]
    ledgit(a, "claim", tid, "--by", "agent-a")
    time.sleep(0.01)  # agent-b claims strictly later
    ledgit(b, "claim", tid, "--by", "agent-b")
    commit_all(a, "a claims")
    commit_all(b, "b claims")
    proc = git_rc(b, "merge", "--no-edit", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    f = fields(b, tid)
    assert f["claim"]["by"] == "agent-a"
    assert [c["by"] for c in f["contested"]] == ["agent-b"]
    for verb in (["heartbeat", tid], ["complete", tid, "--response", "done by b"]):
        r = ledgit(b, *verb, "--by", "agent-b", code=6)
        assert "agent-a" in r.err
    ledgit(b, "heartbeat", tid, "--by", "agent-a")

    ops = [(json.loads(line)["op"], json.loads(line)["actor"])
           for line in history_file(b, tid).read_text().splitlines()]
    assert ("claim", "agent-a") in ops and ("claim", "agent-b") in ops
    ledgit(b, "verify")


def test_overlapping_body_edits_conflict_then_record(tmp_path: Path, git_env: Path) -> None:
    a, b, tasks = _two_worktrees(tmp_path)
    tid = tasks[2]
    edit_body(a, tid, "Middle paragraph that separates the two.", "Middle: upstream's words.")
    commit_all(a, "a edits the middle")
    edit_body(b, tid, "Middle paragraph that separates the two.", "Middle: feature's words.")
    commit_all(b, "b edits the middle")
    proc = git_rc(b, "merge", "--no-edit", "main")
    assert proc.returncode == 1
    text = task_file(b, tid).read_text()
    assert has_markers(text)
    assert "Middle: upstream's words." in text and "Middle: feature's words." in text
    conflicted = git("diff", "--name-only", "--diff-filter=U", cwd=b).split()
    assert conflicted == [f".ledgit/tasks/{tid}.md"]  # the history merged cleanly
    # the user settles the paragraph by hand and records the edit
    lines = [ln for ln in text.splitlines(keepends=True)
             if not ln.startswith(("<<<<<<<", "=======", ">>>>>>>"))
             and "Middle: upstream's words." not in ln]
    task_file(b, tid).write_text("".join(lines))
    ledgit(b, "record", tid, "--by", "agent-b")
    git("add", "-A", cwd=b)
    git("commit", "-q", "--no-edit", cwd=b)
    assert "Middle: feature's words." in task_file(b, tid).read_text()
    ledgit(b, "verify")
    ledgit(b, "verify", "--rev", "HEAD")


def test_rebase_of_many_commits_touching_shared_tasks(tmp_path: Path, git_env: Path) -> None:
    a, b, tasks = _two_worktrees(tmp_path)
    base = git("rev-parse", "HEAD", cwd=a)
    for i in range(6):
        ledgit(a, "update", tasks[i % 2], "--priority", str(i % 5), "--by", "agent-a")
        commit_all(a, f"a {i}")
        ledgit(b, "update", tasks[i % 2], "--label", f"b{i}", "--by", "agent-b")
        commit_all(b, f"b {i}")
    proc = git_rc(b, "rebase", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git("rev-list", "--count", "main..HEAD", cwd=b) == "6"
    assert {f"b{i}" for i in range(0, 6, 2)} <= set(fields(b, tasks[0])["labels"])
    ledgit(b, "verify", "--range", f"{base}..HEAD")


# --------------------------------------------------------------------------- the driver's cost


def test_the_driver_path_is_import_light(tmp_path: Path) -> None:
    """One driver run imports no click, pygit2, PyYAML, jsonpatch, hashlib or dataclasses
    (DESIGN §7: Git runs it once per file, in a fresh process)."""
    def rec(lm: str, **extra: object) -> str:
        fields = {"id": "T-light", "title": "Light", "status": "open",
                  "created": "2026-01-01T00:00:00Z",
                  "last_modified": lm, **extra}
        return render_record(make_record(fields, BODY))

    base, ours, theirs = (rec("2026-01-01T00:00:00Z"), rec("2026-01-02T00:00:00Z", priority=1),
                          rec("2026-01-03T00:00:00Z", labels=["x"]))
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        (tmp_path / name).write_text(text)
    code = ("import sys\nfrom ledgit.__main__ import main\n"
            "try:\n    main(['merge-driver', *sys.argv[1:]])\nexcept SystemExit as e:\n"
            "    print(e.code, file=sys.stderr)\n"
            "import json\nprint(json.dumps(sorted(sys.modules)))\n")
    args = [str(tmp_path / n) for n in ("O", "A", "B")] + ["7", ".ledgit/tasks/T-light.md"]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True)
    assert proc.stderr.strip() == "0"
    modules = set(json.loads(proc.stdout))
    heavy = {"click", "pygit2", "yaml", "jsonpatch", "hashlib", "dataclasses", "sqlite3",
             "ledgit.core.history", "ledgit.cli.main", "pathlib"}
    assert not modules & heavy, modules & heavy
    merged = (tmp_path / "A").read_text()
    assert "priority: 1" in merged and "labels: [x]" in merged


def test_the_canonical_reader_agrees_with_yaml() -> None:
    """parse_record reads files render_record wrote without PyYAML; what it returns is what
    the YAML path returns, for every record the golden and property tests know."""

    seen = {"fast": 0}
    drawn = examples(300)

    @settings(max_examples=drawn, suppress_health_check=list(HealthCheck), deadline=None)
    @given(test_record._valid_records())
    def check(r: record.Record) -> None:
        text = render.render_record(r)
        yaml_text, body, _ = record.split_front_matter(text)
        raw = canonread.read_canonical(yaml_text)
        if raw is None:
            return
        fast = record.Record(schema.coerce_fields(raw), body)
        if render.render_record(fast) == text:
            seen["fast"] += 1
            assert fast == r
        assert record.parse_record(text) == r

    check()
    assert seen["fast"] > drawn // 3  # the fast path is the common one


@pytest.mark.parametrize("operation", ["cherry-pick", "revert"])
def test_a_partial_pick_or_a_revert_leaves_record_and_history_head_in_agreement(
        tmp_path: Path, operation: str) -> None:
    """Found by a new-user trial. Cherry-picking only the second of two commits that change
    a task (or reverting a commit) merges the task file against Git's base -- the parent of
    the picked (or reverted) commit -- while the histories unite by event id. The history
    driver now merges the states against the same base, so the result passes verify."""
    a = new_repo(tmp_path / "a")
    tid = create(a, "Shared", "--body", BODY, "--by", "lead")
    commit_all(a, "task")
    git("checkout", "-q", "-b", "side", cwd=a)
    ledgit(a, "update", tid, "--label", "b2", "--by", "bee")
    commit_all(a, "b2: a label")
    ledgit(a, "update", tid, "--priority", "1", "--by", "bee")
    b3 = commit_all(a, "b3: a priority")
    git("checkout", "-q", "main", cwd=a)
    ledgit(a, "update", tid, "--response", "main's account", "--by", "main")
    commit_all(a, "main: an account")
    if operation == "revert":
        git("merge", "-q", "--no-edit", "side", cwd=a)
        proc = git_rc(a, "revert", "--no-edit", b3)
    else:
        proc = git_rc(a, "cherry-pick", b3)
    assert proc.returncode == 0, proc.stderr
    f = fields(a, tid)
    assert f["response"] == "main's account"
    if operation == "revert":
        assert f.get("priority") is None and f["labels"] == ["b2"]
    else:
        assert f["priority"] == 1 and "b2" not in f.get("labels", [])
    ledgit(a, "verify", tid)  # exit 0, or the helper fails with verify's output
