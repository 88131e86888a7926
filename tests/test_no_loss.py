"""Issue 12 (items 3, 5, 7, 11): no write on a damaged history, undo as a new event
(``ledgit revert``), import as a merge, hand edits never lost silently. Real Git, real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from gitutil import CliRun, git

from ledgit.errors import CHECK_FAILED

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
    assert ": parse: " in err and f"repair: ledgit resolve .ledgit/history/{tid}.jsonl" in err
    assert path.read_bytes() == before


def test_the_write_check_refuses_every_single_byte_change_verify_refuses(
        lg: CliRun) -> None:
    from ledgit.history import HistoryError, parse_checked, verify

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
