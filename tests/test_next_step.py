"""Every outcome says the next step (issue 18): an empty ``ready`` says why, ``list`` shows
the work in play first. Real Git repositories, ledgit in-process (``lg``)."""

from __future__ import annotations

import json

from gitutil import CliRun


def make(lg: CliRun, title: str, *args: str) -> str:
    code, out, err = lg("create", title, "--by", "me", *args)
    assert code == 0, err
    return out.strip()


def ok(lg: CliRun, *args: str) -> tuple[str, str]:
    code, out, err = lg(*args)
    assert code == 0, err
    return out, err


def test_an_empty_ready_says_why_and_what_next(lg: CliRun) -> None:
    assert ok(lg, "ready") == ("", "ledgit ready: nothing is ready: no tasks yet "
                                   "(make one: ledgit create TITLE)\n")
    a = make(lg, "A")
    b = make(lg, "B", "--depends", a)
    c = make(lg, "C", "--depends", f"{a},{b}")
    ok(lg, "claim", a, "--by", "me")
    out, err = ok(lg, "ready")
    assert out == ""
    assert err == (f"ledgit ready: nothing is ready: 2 open, 2 blocked by a dependency not "
                   f"done: {b} waits for {a} [in_progress]; {c} waits for {a} [in_progress], "
                   f"{b} [open]\n")
    assert ok(lg, "ready", "--label", "nope") == (
        "", "ledgit ready: nothing is ready: no tasks with these filters\n")
    out, err = ok(lg, "ready", "--json")  # a script reads the JSON; no line on stderr
    assert json.loads(out)["tasks"] == [] and err == ""
    ok(lg, "complete", a, "--response", "done", "--by", "me")
    out, err = ok(lg, "ready")
    assert out.startswith(b) and err == ""  # something is ready: nothing to explain
    ok(lg, "claim", b, "--by", "me")
    ok(lg, "drop", c, "--reason", "not needed", "--by", "me")
    assert ok(lg, "ready") == ("", "ledgit ready: nothing is ready: no open task "
                                   "(1 in_progress, 1 done, 1 dropped; ledgit list shows "
                                   "them; make one: ledgit create TITLE)\n")
    for tid in (b,):
        ok(lg, "complete", tid, "--response", "done", "--by", "me")
    for tid in (a, b, c):
        ok(lg, "archive", tid, "--by", "me")
    assert ok(lg, "ready")[1] == "ledgit ready: nothing is ready: every task is archived\n"


def test_list_shows_the_work_in_play_first(lg: CliRun) -> None:
    done = make(lg, "finished first")
    ok(lg, "claim", done, "--by", "me")
    ok(lg, "complete", done, "--response", "shipped", "--by", "me")
    dropped = make(lg, "dropped")
    ok(lg, "drop", dropped, "--reason", "no longer needed", "--by", "me")
    opened = make(lg, "open one")
    waiting = make(lg, "waits")
    ok(lg, "wait", waiting, "--on", "review", "--by", "me")
    archived = make(lg, "old")
    ok(lg, "archive", archived, "--by", "me")
    finished_late = make(lg, "finished last")
    ok(lg, "drop", finished_late, "--reason", "duplicate", "--by", "me")

    def ids(*args: str) -> list[str]:
        return [t["id"] for t in json.loads(ok(lg, "list", "--json", *args)[0])["tasks"]]

    # in play (newest change first), then done and dropped (newest first); archived: --all
    assert ids() == [waiting, opened, finished_late, dropped, done]
    assert ids("--all") == [waiting, opened, finished_late, archived, dropped, done]
    assert ids("--sort", "asc") == [opened, waiting, done, dropped, finished_late]
    assert ids("--limit", "3") == [waiting, opened, finished_late]
    assert ids("--limit", "1") == [waiting]
    assert ids("--status", "done", "--status", "open") == [opened, done]
    assert ids("--status", "archived") == [archived]
    text = ok(lg, "list")[0].splitlines()
    assert [line.split()[0] for line in text] == [waiting, opened, finished_late, dropped, done]


def test_a_write_that_keeps_the_status_does_not_read_as_setting_it(lg: CliRun) -> None:
    tid = make(lg, "A")
    out, _ = ok(lg, "update", tid, "--priority", "1", "--by", "me")
    assert out.startswith(f"{tid}: updated (status open, rev ") and "->" not in out
    ok(lg, "claim", tid, "--by", "me")
    out, _ = ok(lg, "heartbeat", tid, "--by", "me")
    assert out.startswith(f"{tid}: claim renewed (status in_progress, rev ")
    out, _ = ok(lg, "complete", tid, "--response", "did it", "--by", "me")
    assert out.startswith(f"{tid}: complete -> done (rev ")
    readout = ok(lg, "get", tid)[0]
    assert "gate:" not in readout.split("UNKNOWN:")[-1]  # done: the gate is not asked for
    tid = make(lg, "B")
    assert "gate:          UNKNOWN (not set: no decision is recorded as blocking the next " \
           "step (ledgit update ID --gate TEXT))" in ok(lg, "get", tid)[0]
