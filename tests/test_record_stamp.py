"""``ledgit record`` of a hand edit stamps ``last_modified`` like every other write
(docs/format.md: "rewritten by every mutation"; issue 24 item 4)."""

from __future__ import annotations

import json
import os

from gitutil import CliRun

from ledgit.core.history import parse_events


def test_record_of_a_hand_edit_stamps_last_modified(lg: CliRun) -> None:
    code, out, _ = lg("create", "Stamp me", "--body", "first line\n", "--by", "ada")
    assert code == 0
    tid = out.split()[0]
    board = lg.board()
    before = board.read(tid).fields["last_modified"]
    path = board.task_file(tid)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text + "a line added by hand\n")
    code, out, err = lg("record", tid, "--by", "bob", "--json")
    assert code == 0, err
    event = json.loads(out)["event"]
    after = lg.board().read(tid)
    assert after.fields["last_modified"] > before
    assert after.body.endswith("a line added by hand\n")
    # The event that recorded the edit carries the stamp, and its state is the file's.
    assert event["op"] == "edit" and event["at"] == after.fields["last_modified"]
    events = parse_events(board.read_history_text(tid) or "", tid)
    assert events[-1]["after"] == after.revision
    code, out, _ = lg("verify", tid)
    assert code == 0, out
    # Nothing left to record: a second run writes nothing and leaves the stamp.
    code, out, _ = lg("record", tid)
    assert code == 0 and "nothing to record" in out
    assert lg.board().read(tid).fields["last_modified"] == after.fields["last_modified"]


def test_record_of_a_file_without_history_keeps_its_stamp(lg: CliRun) -> None:
    """The genesis of an existing file records it as it is: not an edit, no new stamp."""
    code, out, _ = lg("create", "No history", "--by", "ada")
    tid = out.split()[0]
    board = lg.board()
    before = board.read(tid).fields["last_modified"]
    os.unlink(board.history_file(tid))
    code, out, err = lg("record", tid, "--json")
    assert code == 0, err
    assert json.loads(out)["event"]["op"] == "create"
    assert lg.board().read(tid).fields["last_modified"] == before
