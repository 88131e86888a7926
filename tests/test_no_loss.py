"""Issue 12 (items 3, 5, 7, 11): no write on a damaged history, undo as a new event
(``ledgit revert``), import as a merge, hand edits never lost silently. Real Git, real CLI."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from gitutil import CliRun, git
from shareddata import BEADS_ISSUE_LINES, BEADS_ISSUES

from ledgit.core.errors import CHECK_FAILED
from ledgit.core.history import HistoryError, event_line, new_event, parse_events
from ledgit.core.historycheck import parse_checked, verify
from ledgit.core.layoutloss import layout_loss
from ledgit.core.record import parse_record
from ledgit.operations import transitions
from ledgit.storage.writepath import mutate_task

pytest_plugins = ["gitutil"]


def _create(lg: CliRun, title: str = "A task") -> str:
    code, out, err = lg("create", title, "--json")
    assert code == 0, err
    return str(json.loads(out)["id"])


def _history(lg: CliRun, tid: str) -> Path:
    return lg.root / ".ledgit" / "history" / f"{tid}.jsonl"


def _commit_all(root: Path, message: str = "tasks") -> None:
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", message, cwd=root)


# --------------------------------------------------------------------------- item 7


def test_a_history_line_that_is_not_utf8_is_rule_parse_and_no_write_lands_on_it(
        lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("update", tid, "--title", "B task")[0] == 0
    _commit_all(lg.root)
    path = _history(lg, tid)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"B task", b"B \xff task")
    path.write_bytes(b"\n".join(lines))
    damaged = path.read_bytes()

    code, out, _ = lg("verify", tid)
    assert code == CHECK_FAILED
    assert f"{tid}: line 2: parse: not valid UTF-8" in out  # docs/history.md's rule name
    assert "hash" not in out

    code, out, err = lg("update", tid, "--priority", "1")
    assert code == CHECK_FAILED and out == ""
    assert err.count("\n") == 1
    assert f"{tid}.jsonl: line 2: parse: not valid UTF-8" in err
    assert f"git restore --source=HEAD -- .ledgit/history/{tid}.jsonl" in err
    assert path.read_bytes() == damaged  # nothing appended
    assert lg("claim", tid, "--by", "ada")[0] == CHECK_FAILED
    assert path.read_bytes() == damaged

    # The repair the message names works, and writes go on from there.
    git("restore", "--source=HEAD", "--", f".ledgit/history/{tid}.jsonl", cwd=lg.root)
    assert lg("verify", tid)[0] == 0
    assert lg("update", tid, "--priority", "1")[0] == 0
    assert lg("verify", tid)[0] == 0


def test_an_edited_event_is_rule_hash_and_refuses_the_write(lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("update", tid, "--title", "Second")[0] == 0
    path = _history(lg, tid)
    text = path.read_text()
    path.write_text(text.replace('"Second"', '"Sekond"'))
    before = path.read_bytes()
    code, _, err = lg("update", tid, "--priority", "2")
    assert code == CHECK_FAILED
    assert ": line 2: hash: " in err and "nothing written" in err
    assert path.read_bytes() == before


def test_a_removed_middle_event_is_rule_parent_order_and_refuses_the_write(
        lg: CliRun) -> None:
    tid = _create(lg)
    for n in range(3):
        assert lg("update", tid, "--priority", str(n))[0] == 0
    path = _history(lg, tid)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2] + lines[3:]))
    before = path.read_bytes()
    assert lg("heartbeat", tid, "--by", "ada")[0] == CHECK_FAILED  # before any claim check
    code, _, err = lg("update", tid, "--title", "x")
    assert code == CHECK_FAILED
    assert ": line 3: parent-order: " in err
    assert path.read_bytes() == before


def test_a_line_merge_left_in_a_history_names_resolve(lg: CliRun) -> None:
    tid = _create(lg)
    path = _history(lg, tid)
    path.write_text(path.read_text() + "<<<<<<< ours\n=======\n>>>>>>> theirs\n")
    before = path.read_bytes()
    code, _, err = lg("update", tid, "--priority", "2")
    assert code == CHECK_FAILED
    # (issue 28: the markers are named, not the JSON parser's complaint about them)
    assert "conflict marker line(s)" in err and "JSON" not in err
    assert f"(run: ledgit resolve .ledgit/history/{tid}.jsonl); nothing written" in err
    assert path.read_bytes() == before


def test_the_write_check_refuses_every_single_byte_change_verify_refuses(
        lg: CliRun) -> None:
    tid = _create(lg)
    for n in range(3):
        assert lg("update", tid, "--priority", str(n), "--label", f"l{n}")[0] == 0
    data = _history(lg, tid).read_bytes()
    parse_checked(data, tid)  # intact: accepted
    line_rules = {"parse", "hash", "duplicate", "parent-order", "genesis"}
    checked = 0
    for at in range(0, len(data), 5):
        if data[at:at + 1] == b"\n":
            continue
        flipped = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]
        found = {p.rule for p in verify(tid, flipped, None)} & line_rules
        try:
            parse_checked(flipped, tid)
            refused = False
        except HistoryError as exc:
            refused = True
            assert exc.problem.rule in found
        assert refused == bool(found), at
        checked += 1
    assert checked > 100


# --------------------------------------------------------------------------- item 3


def _events(lg: CliRun, tid: str) -> list[dict[str, object]]:
    code, out, err = lg("history", tid, "--json")
    assert code == 0, err
    return list(json.loads(out)["events"])


def _get(lg: CliRun, tid: str) -> dict[str, object]:
    code, out, err = lg("get", tid, "--json")
    assert code == 0, err
    return dict(json.loads(out)["fields"])


def test_revert_undoes_one_event_with_a_new_one_and_keeps_later_changes(lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("update", tid, "--title", "Renamed", "--priority", "1", "--label", "b")[0] == 0
    assert lg("update", tid, "--label", "c", "--owner", "eve")[0] == 0
    target = str(_events(lg, tid)[1]["id"])
    before = _history(lg, tid).read_bytes()

    code, out, err = lg("revert", tid, target[:8], "--by", "bob", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["op"] == "revert" and doc["written"] is True
    assert doc["meta"] == {"reverts": target, "fields": ["labels", "priority", "title"]}
    fields = _get(lg, tid)
    assert fields["title"] == "A task" and "priority" not in fields
    assert fields["labels"] == ["c"] and fields["owner"] == "eve"  # later changes stay
    # Append-only: the old lines are untouched, one event was added.
    after = _history(lg, tid).read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    last = _events(lg, tid)[-1]
    assert last["op"] == "revert" and last["actor"] == "bob"
    assert str(last["note"]).startswith(f"revert {target[:12]} (update by ")
    assert lg("verify", tid)[0] == 0

    # Reverting the revert brings the change back (like git revert of a revert).
    assert lg("revert", tid, str(last["id"])[:6])[0] == 0
    fields = _get(lg, tid)
    assert fields["title"] == "Renamed" and fields["priority"] == 1
    assert fields["labels"] == ["b", "c"]


def test_revert_refuses_a_field_changed_again_since_naming_it(lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("update", tid, "--title", "Second", "--priority", "2")[0] == 0
    target = str(_events(lg, tid)[1]["id"])
    assert lg("update", tid, "--title", "Third", "--by", "carol")[0] == 0
    before = _history(lg, tid).read_bytes()
    code, out, err = lg("revert", tid, target[:10])
    assert code == CHECK_FAILED and out == ""
    assert "changed again since: title (update by carol at " in err
    assert "priority" not in err and "nothing written" in err
    assert _history(lg, tid).read_bytes() == before


def test_revert_names_what_it_cannot_find_or_undo(lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("claim", tid, "--by", "ada")[0] == 0
    events = _events(lg, tid)
    assert lg("revert", tid, "abc")[0] == 2  # too short
    assert lg("revert", tid, "xyz1")[0] == 2  # not hex
    code, _, err = lg("revert", tid, "0000")
    assert code == 4 and "no event '0000'" in err
    code, _, err = lg("revert", tid, str(events[0]["id"])[:12])
    assert code == 2 and "cannot revert the create event" in err
    # Reverting the claim puts the task back to open without a claim.
    assert lg("revert", tid, str(events[1]["id"])[:12])[0] == 0
    fields = _get(lg, tid)
    assert fields["status"] == "open" and "claim" not in fields
    assert lg("verify", tid)[0] == 0


def test_the_way_back_from_a_git_revert_that_drops_an_event_is_ledgit_revert(
        lg: CliRun) -> None:
    """A clone without ``ledgit install`` (no merge driver): ``git revert`` of an update
    line-merges the history and removes the event line. The way back keeps every event."""
    tid = _create(lg)
    _commit_all(lg.root, "create")
    assert lg("update", tid, "--title", "Wrong title", "--priority", "3")[0] == 0
    _commit_all(lg.root, "update")
    events = _events(lg, tid)
    lines = _history(lg, tid).read_bytes().count(b"\n")

    git("revert", "--no-commit", "HEAD", cwd=lg.root)  # what Git alone does
    assert _history(lg, tid).read_bytes().count(b"\n") == lines - 1  # the event is gone
    git("revert", "--abort", cwd=lg.root)
    assert lg("update", tid, "--label", "keep")[0] == 0
    _commit_all(lg.root, "label")
    events = _events(lg, tid)

    code, _, err = lg("revert", tid, str(events[1]["id"])[:7])
    assert code == 0, err
    _commit_all(lg.root, "revert the update, as a new event")
    fields = _get(lg, tid)
    assert fields["title"] == "A task" and "priority" not in fields
    assert fields["labels"] == ["keep"]
    kept = [e["id"] for e in _events(lg, tid)]
    assert kept[:len(events)] == [e["id"] for e in events] and len(kept) == len(events) + 1
    code, out, err = lg("verify", "--range", "HEAD~3..HEAD")  # every commit after create
    assert code == 0, out + err


def test_revert_removes_the_item_an_event_added_and_keeps_later_items(lg: CliRun) -> None:
    tid = _create(lg)
    assert lg("item", "add", tid, "--kind", "fact", "--text", "wrong fact")[0] == 0
    assert lg("item", "add", tid, "--kind", "fact", "--text", "right fact")[0] == 0
    added = _events(lg, tid)[1]
    assert lg("revert", tid, str(added["id"])[:12])[0] == 0
    texts = [i["text"] for i in _get(lg, tid)["items"]]
    assert texts == ["right fact"]
    assert lg("verify", tid)[0] == 0


# --------------------------------------------------------------------------- item 5

DATA = BEADS_ISSUES


def _issue(n: int, **extra: object) -> dict[str, object]:
    issue: dict[str, object] = {
        "id": f"bd-t{n:03d}", "title": f"Issue {n}", "description": f"What {n} is about.",
        "status": "open", "priority": 2, "issue_type": "task",
        "created_at": "2026-01-01T10:00:00Z", "updated_at": "2026-01-02T10:00:00Z"}
    issue.update(extra)
    return issue


def _write_issues(path: Path, issues: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in issues), encoding="utf-8")
    return path


def _import(lg: CliRun, src: Path) -> tuple[int, dict[str, object], str]:
    code, out, err = lg("import", "beads", str(src), "--by", "importer", "--json")
    return code, dict(json.loads(out)), err


def _snapshot(root: Path) -> dict[str, bytes]:
    board = root / ".ledgit"
    return {str(p.relative_to(board)): p.read_bytes()
            for d in ("tasks", "history") for p in sorted((board / d).iterdir())}


def test_reimporting_an_unchanged_source_keeps_the_local_edits(lg: CliRun,
                                                               tmp_path: Path) -> None:
    src = _write_issues(tmp_path / "issues.jsonl", [_issue(n) for n in range(3)])
    assert _import(lg, src)[0] == 0
    _commit_all(lg.root, "import")
    assert lg("update", "bd-t001", "--title", "Fixed locally", "--label", "triaged")[0] == 0
    _commit_all(lg.root, "local edit")
    before = _snapshot(lg.root)

    code, summary, err = _import(lg, src)
    assert code == 0, err
    assert (summary["imported"], summary["updated"], summary["merged"], summary["unchanged"],
            summary["conflicts"]) == (0, 0, 0, 3, [])
    assert _snapshot(lg.root) == before  # no event, no byte changed
    fields = _get(lg, "bd-t001")
    assert fields["title"] == "Fixed locally" and fields["labels"] == ["triaged"]
    assert git("status", "--porcelain", cwd=lg.root) == ""


def test_a_change_at_the_source_only_is_one_import_event(lg: CliRun, tmp_path: Path) -> None:
    issues = [_issue(n) for n in range(3)]
    src = _write_issues(tmp_path / "issues.jsonl", issues)
    assert _import(lg, src)[0] == 0
    issues[2] = _issue(2, title="Retitled upstream", updated_at="2026-02-01T00:00:00Z")
    _write_issues(src, issues)
    code, summary, err = _import(lg, src)
    assert code == 0, err
    assert (summary["updated"], summary["merged"], summary["unchanged"]) == (1, 0, 2)
    assert [e["op"] for e in _events(lg, "bd-t002")] == ["create", "import", "import"]
    assert _get(lg, "bd-t002")["title"] == "Retitled upstream"


def test_changes_on_both_sides_merge_and_the_next_import_is_unchanged(
        lg: CliRun, tmp_path: Path) -> None:
    issues = [_issue(n) for n in range(2)]
    src = _write_issues(tmp_path / "issues.jsonl", issues)
    assert _import(lg, src)[0] == 0
    _commit_all(lg.root, "import")
    assert lg("update", "bd-t000", "--title", "Local title", "--label", "mine")[0] == 0
    issues[0] = _issue(0, priority=0, labels=["upstream"],
                       description="What 0 is about.\n\nMore upstream.",
                       updated_at="2030-01-01T00:00:00Z")
    _write_issues(src, issues)
    code, summary, err = _import(lg, src)
    assert code == 0, err
    assert (summary["updated"], summary["merged"], summary["conflicts"]) == (0, 1, [])
    fields = _get(lg, "bd-t000")
    assert fields["title"] == "Local title"  # ours, though the source is later
    assert fields["priority"] == 0  # theirs
    assert sorted(fields["labels"]) == ["mine", "upstream"]  # both
    code, out, _ = lg("get", "bd-t000", "--json")
    assert "More upstream." in json.loads(out)["body"]
    events = _events(lg, "bd-t000")
    assert [e["op"] for e in events] == ["create", "import", "update", "import", "merge"]
    # The import event branches from the last import: its state is the source's record,
    # so the history alone gives the next re-import its base.
    assert events[3]["parents"] == [events[1]["id"]]
    assert sorted(events[4]["parents"]) == sorted([events[2]["id"], events[3]["id"]])
    assert lg("verify", "--all")[0] == 0
    _commit_all(lg.root, "re-import")
    code, out, err = lg("verify", "--range", "HEAD~1..HEAD")
    assert code == 0, out + err

    before = _snapshot(lg.root)
    code, summary, _ = _import(lg, src)
    assert code == 0 and summary["unchanged"] == 2 and summary["merged"] == 0
    assert _snapshot(lg.root) == before


def test_the_same_field_changed_on_both_sides_is_a_conflict_and_the_board_keeps_its_value(
        lg: CliRun, tmp_path: Path) -> None:
    issues = [_issue(n) for n in range(2)]
    src = _write_issues(tmp_path / "issues.jsonl", issues)
    assert _import(lg, src)[0] == 0
    assert lg("update", "bd-t001", "--title", "Ours", "--priority", "4")[0] == 0
    issues[1] = _issue(1, title="Theirs", issue_type="bug", updated_at="2030-01-01T00:00:00Z")
    _write_issues(src, issues)

    code, out, err = lg("import", "beads", str(src), "--by", "importer")
    assert code == CHECK_FAILED
    assert out.strip() == ("import beads: imported 0, updated 0, merged 0, conflicts 1, "
                           "unchanged 1, skipped 0")
    assert ("ledgit: conflict: issues.jsonl:2: bd-t001: changed on the board and at the "
            "source: title (kept the board's)") in err
    fields = _get(lg, "bd-t001")
    assert fields["title"] == "Ours" and fields["priority"] == 4  # nothing local overwritten
    assert fields["x"]["beads"]["issue_type"] == "bug"  # theirs
    merge = _events(lg, "bd-t001")[-1]
    assert merge["op"] == "merge" and merge["meta"]["conflicts"] == ["title"]
    assert lg("verify", "--all")[0] == 0
    # Reported once: the source's title is now the base, the board's stays.
    code, summary, _ = _import(lg, src)
    assert code == 0 and summary["conflicts"] == [] and summary["unchanged"] == 2
    assert _get(lg, "bd-t001")["title"] == "Ours"


def test_a_second_import_of_the_real_snapshot_keeps_101_local_edits(lg: CliRun) -> None:
    assert lg("import", "beads", str(DATA), "--by", "importer")[0] == 0
    board = lg.board()
    ids = sorted(board.list_ids())[::4][:101]
    assert len(ids) == 101
    for n, tid in enumerate(ids):  # the board's own write path, as `ledgit update` does
        mutate_task(board, tid, lambda r, n=n: transitions.update(r, title=f"local {n}",
                                                    labels_add=["local"]), "ada")
    before = _snapshot(lg.root)
    code, out, err = lg("import", "beads", str(DATA), "--by", "importer")
    assert code == 0, err
    assert out.strip().endswith(f"updated 0, merged 0, conflicts 0, unchanged {BEADS_ISSUE_LINES}, "
                                f"skipped 0")
    assert _snapshot(lg.root) == before
    for n, tid in enumerate(ids):
        fields = board.read(tid).fields
        assert fields["title"] == f"local {n}" and "local" in fields["labels"]


# --------------------------------------------------------------------------- item 11


def _task_file(lg: CliRun, tid: str) -> Path:
    return lg.root / ".ledgit" / "tasks" / f"{tid}.md"


def test_a_yaml_comment_in_a_hand_edit_is_refused_at_record_time_never_dropped_later(
        lg: CliRun) -> None:
    tid = _create(lg, "Ship it")
    _commit_all(lg.root, "create")
    path = _task_file(lg, tid)
    text = path.read_text()
    edited = text.replace("title: Ship it\n",
                          "title: Ship it now  # wording agreed with the customer\n")
    path.write_text(edited)
    history = _history(lg, tid).read_bytes()

    code, out, err = lg("record", tid)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert (f".ledgit/tasks/{tid}.md:3: a YAML comment ('# wording agreed with the "
            f"customer') would not be kept") in err
    assert f"ledgit record {tid} --normalize" in err
    assert _history(lg, tid).read_bytes() == history

    # What was seen: the next write used to drop the comment. Now it refuses.
    code, out, err = lg("update", tid, "--priority", "1")
    assert code == 2 and "would be dropped by this update" in err and "nothing written" in err
    assert path.read_text() == edited and _history(lg, tid).read_bytes() == history

    code, out, err = lg("record", tid, "--normalize")
    assert code == 0, err
    assert f"{tid}: recorded edit event " in out
    assert "rewrote" in out and "a YAML comment" in out
    assert "# wording" not in path.read_text() and _get(lg, tid)["title"] == "Ship it now"
    assert lg("verify", tid)[0] == 0
    assert lg("update", tid, "--priority", "1")[0] == 0
    diff = git("diff", "--", f".ledgit/tasks/{tid}.md", cwd=lg.root)
    assert "-title: Ship it\n" in diff + "\n" and "+title: Ship it now\n" in diff + "\n"


def test_a_comment_only_edit_changes_no_revision_and_is_still_never_lost_silently(
        lg: CliRun) -> None:
    tid = _create(lg, "Ship it")
    path = _task_file(lg, tid)
    path.write_text(path.read_text().replace("status: open\n",
                                             "# ask Eve before closing\nstatus: open\n"))
    assert lg("verify", tid)[0] == 0  # a comment is not content: the revision is the same
    code, _, err = lg("record", tid)
    assert code == 2 and ":4: a YAML comment ('# ask Eve before closing')" in err
    code, _, err = lg("claim", tid, "--by", "ada")
    assert code == 2 and "# ask Eve" in path.read_text()

    code, out, err = lg("check", "--fix")
    assert code == CHECK_FAILED
    assert f"not kept: {tid}: .ledgit/tasks/{tid}.md:4: a YAML comment" in out
    code, out, err = lg("check", "--fix", "--normalize")
    assert code == 0, out + err
    assert f"normalized: {tid}: rewrote .ledgit/tasks/{tid}.md in the canonical form" in out
    assert "#" not in path.read_text()
    assert lg("claim", tid, "--by", "ada")[0] == 0


def test_custom_quoting_is_named_at_record_time_and_said_when_a_write_rewrites_it(
        lg: CliRun) -> None:
    tid = _create(lg, "Ship it")
    path = _task_file(lg, tid)
    path.write_text(path.read_text().replace("title: Ship it\n", "title: 'Ship it today'\n"))
    # Harmless layout is rewritten, saying so (issue 26: it used to be refused).
    code, out, _ = lg("record", tid)
    assert code == 0
    assert (f"rewrote .ledgit/tasks/{tid}.md in the canonical form (line 3: custom quoting "
            f"(\"title: 'Ship it today'\", written: 'title: Ship it today'))") in out
    path.write_text(path.read_text().replace("title: Ship it today\n",
                                             "title: 'Ship it today'\n"))
    # A write keeps the values (quoting is layout, not content) and says what it rewrote.
    code, _, err = lg("update", tid, "--priority", "3")
    assert code == 0
    assert f"ledgit: note: {tid}: rewrote .ledgit/tasks/{tid}.md in the canonical form" in err
    assert "custom quoting" in err
    assert _get(lg, tid)["title"] == "Ship it today" and lg("verify", tid)[0] == 0


CANONICAL = ('---\nid: T-1\ntitle: Hello\nstatus: open\ncreated: "2026-01-01T00:00:00.000000Z"\n'
             'last_modified: "2026-01-01T00:00:00.000000Z"\n---\nbody\n')


@pytest.mark.parametrize(("old", "new", "found"), [
    ("", "", None),
    ("title: Hello", "title: Hello  # why", (3, "a YAML comment ('# why')")),
    ("status: open\n", "# a note\nstatus: open\n", (4, "a YAML comment ('# a note')")),
    ("title: Hello", 'title: "Hello"',
     (3, "custom quoting ('title: \"Hello\"', written: 'title: Hello')")),
    ("title: Hello", "title:   Hello",
     (3, "custom layout ('title:   Hello', written: 'title: Hello')")),
    ("title: Hello\nstatus: open", "status: open\ntitle: Hello",
     (3, "custom layout (the canonical form writes 'title: Hello' before 'status: open')")),
    ("title: Hello", "title: 'It''s # no comment'",
     (3, "custom quoting (\"title: 'It''s # no comment'\", written: "
         "'title: \"It\\'s # no comment\"')")),
    ("title: Hello", "title: C# rocks",
     (3, "custom quoting ('title: C# rocks', written: 'title: \"C# rocks\"')")),
    ("body\n", "body with a # hash\n", None),  # the body is kept as written
    ("\n", "\r\n", None),  # line ends are normalised, not lost
])
def test_layout_loss_names_the_first_thing_the_canonical_writer_drops(
        old: str, new: str, found: tuple[int, str] | None) -> None:
    text = CANONICAL.replace(old, new) if old else CANONICAL
    assert layout_loss(text.encode(), parse_record(text)) == found


def test_two_heads_without_markers_refuse_the_write_naming_rule_heads_and_resolve(
        lg: CliRun) -> None:
    """What a web editor's "keep both" leaves: both sides' lines, no markers, two heads."""
    tid = _create(lg)
    assert lg("update", tid, "--priority", "1")[0] == 0
    path = _history(lg, tid)
    genesis = parse_events(path.read_text(), tid)[0]
    state = {"fields": dict(_get(lg, tid)), "body": ""}
    sibling = new_event(parents=[genesis["id"]], at="2030-01-01T00:00:00.000000Z",
                        actor="web", op="update", before_state=state,
                        after_state={**state, "body": "other side\n"})
    path.write_text(path.read_text() + event_line(sibling))
    before = path.read_bytes()
    code, _, err = lg("update", tid, "--priority", "2")
    assert code == CHECK_FAILED
    assert ": history: heads: the history has 2 heads" in err
    assert f"repair: ledgit resolve .ledgit/history/{tid}.jsonl" in err
    assert path.read_bytes() == before


def test_a_write_refuses_to_restart_a_history_git_still_has(lg: CliRun) -> None:
    """Found by a fresh-user trial: a write on a task whose committed history file was
    deleted from the work tree started a new genesis, and the hook then refused the commit,
    naming every lost event. The write refuses up front (exit 1, one line naming the file and
    the ``git checkout`` that brings it back, nothing written); the command named works; a
    task file Git has no history of is still adopted (``ledgit record``, or any write)."""
    assert lg("install", "--command", f"{shlex.quote(sys.executable)} -m ledgit")[0] == 0
    tid = _create(lg)
    assert lg("update", tid, "--priority", "1")[0] == 0
    _commit_all(lg.root)
    path, task = _history(lg, tid), lg.root / ".ledgit" / "tasks" / f"{tid}.md"
    rel = f".ledgit/history/{tid}.jsonl"
    before = task.read_bytes()
    for how, source, fix in (("rm", "the index", f"git checkout -- {rel}"),
                             ("git rm", "HEAD", f"git checkout HEAD -- {rel}"),
                             ("empty", "the index", f"git checkout -- {rel}")):
        if how == "git rm":
            git("rm", "-q", rel, cwd=lg.root)
        elif how == "rm":
            path.unlink()
        else:
            path.write_bytes(b"")
        what = "empty" if how == "empty" else "missing"
        for args in (("update", tid, "--priority", "2"), ("record", tid),
                     ("claim", tid, "--by", "ada")):
            code, out, err = lg(*args)
            assert (code, out) == (CHECK_FAILED, ""), (how, args, err)
            assert err == (f"ledgit: {rel}: {what} in the work tree, but {source} has it: a "
                           f"write would start a new history and lose its events; nothing "
                           f"written (restore it: {fix}; then retry)\n"), (how, args)
            assert task.read_bytes() == before
            assert path.read_bytes() == b"" if how == "empty" else not path.exists()
        git(*fix.split()[1:], cwd=lg.root)
        assert lg("verify", tid)[0] == 0
    assert lg("update", tid, "--priority", "2")[0] == 0
    _commit_all(lg.root, "the write goes on from the restored history")
    # Adoption still works: a task file made by hand, and one whose history Git never had.
    hand = lg.root / ".ledgit" / "tasks" / "T-handmade01.md"
    hand.write_text("---\nid: T-handmade01\ntitle: Hand\nstatus: open\n"
                    'created: "2026-01-01T00:00:00.000000Z"\n'
                    'last_modified: "2026-01-01T00:00:00.000000Z"\n---\n')
    code, out, err = lg("record", "T-handmade01")
    assert code == 0 and "recorded create event" in out, err
    other = _create(lg, "Never committed")
    _history(lg, other).unlink()
    code, _, err = lg("update", other, "--priority", "3")
    assert code == 0 and "history-less" in err
    _commit_all(lg.root, "adopted")  # the hook agrees: nothing of Git's history was lost
