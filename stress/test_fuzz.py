"""Deliverable 3a: fuzz the record parser, the history verifier and the merge driver.

Hypothesis drives each target with arbitrary bytes and with valid seeds damaged the way a
hostile or broken tool would (tags, anchors, controls, BOM/CRLF, duplicated or swapped lines,
JSON values of the wrong type, patches that are not RFC 6902, deep nesting). Small run (``-m
reliability``): a few hundred cases each; full run (``-m stress``): at least 10,000 each.

The laws: no exception other than LedgitError (one line) from ``parse_record``; ``verify``
returns problems and never raises; the driver exits 0 or 1, never prints a traceback, leaves
%O and %B untouched, writes a result to %A, gives byte-identical output whichever side is
"ours", and for valid inputs writes a valid record (task files) or a history that passes
``verify`` up to the task-file check (histories). Whatever parses round-trips.
"""

from __future__ import annotations

import io
import json
import sys
import time
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzkit import (
    T0,
    damaged_history,
    damaged_text,
    encode,
    json_values,
    seed_branches,
    seed_history,
    seed_records,
    seed_texts,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from stresskit import Figures, Scale, isolated_env, ledgit, run

from ledgit.core.change import Change
from ledgit.core.errors import LedgitError
from ledgit.core.history import Problem, parse_events
from ledgit.core.historycheck import verify
from ledgit.core.historymerge import merge_histories
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.record import Record, make_record, parse_record
from ledgit.core.render import render_record
from ledgit.hooks.mergedriver import main as merge_driver
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import mutate_task

SLOW = 2.0  # CPU seconds: no single case may take longer (a refusal must be fast too)


def _settings(scale: Scale, small: int, full: int) -> Any:
    return settings(max_examples=scale.pick(small, full), deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.outcomes: dict[str, int] = {}
        self.slowest = 0.0

    def count(self, outcome: str, seconds: float) -> None:
        self.cases += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.slowest = max(self.slowest, seconds)
        assert seconds < SLOW, f"one case took {seconds:.2f}s"


# --------------------------------------------------------------------------- parse_record


def _yaml_of(value: Any) -> str:
    try:
        return "---\n" + yaml.safe_dump(value, allow_unicode=True) + "---\nbody\n"
    except yaml.YAMLError:
        return "---\n---\n"


def test_fuzz_parse_record(scale: Scale, figures: Figures) -> None:
    seeds = seed_texts()
    tally = Tally()
    inputs = st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.tuples(damaged_text(seeds), st.integers(0, 3)).map(lambda p: encode(*p)),
        st.tuples(damaged_text(seeds), st.integers(0, 3)).map(lambda p: encode(*p)),
        st.tuples(st.sampled_from(seed_records()).flatmap(edited), st.integers(0, 3)).map(
            lambda p: encode(render_record(p[0]), p[1])),
        st.dictionaries(st.sampled_from(["id", "title", "status", "created", "last_modified",
                                         "claim", "items", "x", "labels", "priority"]),
                        json_values, max_size=6).map(lambda d: _yaml_of(d).encode()),
    )

    @hypothesis_seed(scale.seed)
    @_settings(scale, 300, 10_000)
    @given(inputs)
    def check(data: bytes) -> None:
        started = time.process_time()
        try:
            record = parse_record(data, "fuzz.md")
        except LedgitError as exc:
            message = str(exc)
            assert message and "\n" not in message, f"not one line: {message!r}"
            assert message.startswith("fuzz.md"), f"does not name the file: {message!r}"
            tally.count("refused", time.process_time() - started)
            return
        text = render_record(record)
        again = parse_record(text.encode(), "fuzz.md")
        assert again == record, "parse(render(r)) != r"
        assert render_record(again) == text, "render is not stable"
        tally.count("accepted", time.process_time() - started)

    check()
    assert tally.outcomes.get("accepted", 0) > 0 and tally.outcomes.get("refused", 0) > 0
    figures.update({"cases": tally.cases, **tally.outcomes,
                    "slowest_ms": round(tally.slowest * 1000, 1)})


# ---------------------------------------------------------------------- historycheck.verify


def test_fuzz_history_verify(scale: Scale, figures: Figures, tmp_path: Path) -> None:
    text, lines, head = seed_history()
    assert verify("T-bbbbbbbbbb", text, head) == []
    _, ours, theirs, _, _, _ = seed_branches(2, 2)
    merged = merge_histories("", ours, theirs, "T-bbbbbbbbbb")
    assert not merged.conflict and merged.event is not None
    merged_head = make_record(merged.record.record.fields, merged.record.record.body) \
        if merged.record else head
    seeds = [(lines, head), (merged.text.splitlines(), merged_head)]
    board = init_board(tmp_path / "board")
    tally = Tally()
    writes = {"n": 0}

    @hypothesis_seed(scale.seed)
    @_settings(scale, 300, 10_000)
    @given(st.integers(0, len(seeds) - 1).flatmap(
        lambda i: st.tuples(st.just(i), damaged_history(seeds[i][0]), st.integers(0, 9))))
    def check(case: tuple[int, str, int]) -> None:
        which, history, mode = case
        record: Record | None = seeds[which][1] if mode else None
        started = time.process_time()
        problems = verify("T-bbbbbbbbbb", history, record)
        assert isinstance(problems, list)
        for p in problems:
            assert isinstance(p, Problem) and "\n" not in str(p), str(p)
        seconds = time.process_time() - started  # the pure check; the board path writes
        if mode == 9:  # the same history on disk, through the board's read and write paths
            _board_paths(board, history, seeds[which][1])
            writes["n"] += 1
        tally.count("problems" if problems else "clean", seconds)

    check()
    figures.update({"cases": tally.cases, **tally.outcomes, "board_cases": writes["n"],
                    "slowest_ms": round(tally.slowest * 1000, 1)})


def _board_paths(board: Any, history: str, record: Record) -> None:
    """Board.verify reports (never an 'internal' problem) and Board.mutate refuses with a
    LedgitError or writes: nothing else."""
    tid = record.id
    board.task_path(tid).write_text(render_record(record), encoding="utf-8")
    board.history_path(tid).write_bytes(history.encode("utf-8", "surrogatepass"))
    problems = verify_board(board, [tid])
    internal = [str(p) for p in problems if p.rule == "internal"]
    assert not internal, f"verify raised inside: {internal}"
    try:
        mutate_task(board, tid, lambda r: Change(make_record(
            {**r.fields, "response": "fuzz"}, r.body), "update"), "fuzzer",
            lock_timeout=5)
    except LedgitError as exc:
        assert "\n" not in str(exc)


# --------------------------------------------------------------------------- merge driver


@st.composite
def edited(draw: st.DrawFn, base: Record) -> Record:
    """A valid edit of ``base``: a few field and body changes, a last_modified from a small
    set (so ties happen)."""
    fields = dict(base.fields)
    body = base.body
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.integers(0, 9))
        if what == 0:
            fields["title"] = draw(st.sampled_from(["A", "B", "NO", "t: x", "über"]))
        elif what == 1:
            fields["response"] = draw(st.sampled_from(["r1", "r2", "r3\nmore"]))
        elif what == 2:
            fields["labels"] = sorted(set(fields.get("labels", [])) ^ {
                draw(st.sampled_from(["l1", "l2", "yes"]))})
        elif what == 3:
            fields["priority"] = draw(st.integers(0, 4))
        elif what == 4:
            fields["claim"] = {"by": draw(st.sampled_from(["a1", "a2"])),
                               "at": draw(st.sampled_from([T0, "2026-01-05T00:00:00.000000Z"]))}
            fields["status"] = "in_progress"
        elif what == 5:
            fields["status"] = draw(st.sampled_from(["open", "done", "archived", "dropped"]))
            fields.setdefault("response", "done it")
            fields["outcome"] = {"kind": "drop", "reason": "no longer needed"}
            if fields["status"] == "done":  # a drop outcome contradicts done (lifecycle)
                fields.pop("outcome")
            # An open task holds no claim (lifecycle, issue 12): a claim goes with the status.
            if fields["status"] in ("open", "done", "archived", "dropped"):
                fields.pop("claim", None)
            if fields["status"] == "archived":
                fields.pop("waiting_on", None)
                fields.pop("next_action", None)
        elif what == 6:
            items = list(fields.get("items", []))
            items.append({"id": f"i-{draw(st.integers(0, 5))}", "kind": "fact",
                          "text": draw(st.sampled_from(["f1", "f2"])),
                          "trust": draw(st.sampled_from(["candidate", "locked"])),
                          "by": "a", "at": T0})
            seen: dict[str, Any] = {}
            for it in items:
                seen[it["id"]] = it
            fields["items"] = list(seen.values())
        elif what == 7:
            lines = body.split("\n")
            i = draw(st.integers(0, len(lines)))
            lines.insert(i, draw(st.sampled_from(["added", "<<<<<<< x", "---", "same"])))
            body = "\n".join(lines)
        elif what == 8:
            fields["x"] = {"k": draw(st.sampled_from(["v1", "v2"])),
                           draw(st.sampled_from(["p", "q"])): "w"}
        else:
            fields["depends_on"] = sorted({draw(st.sampled_from(["T-a1", "T-b2", "T-c3"]))})
    fields["last_modified"] = draw(st.sampled_from([
        "2026-02-01T00:00:00.000000Z", "2026-02-02T00:00:00.000000Z",
        "2026-02-02T00:00:00.000001Z"]))
    try:
        return make_record(fields, body)
    except LedgitError:
        return base


@st.composite
def task_triple(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, bool]:
    base = draw(st.sampled_from(seed_records()))
    ours, theirs = draw(edited(base)), draw(edited(base))
    sides = [render_record(r).encode() for r in (base, ours, theirs)]
    valid = True
    if draw(st.integers(0, 3)) == 0:  # damage one side
        i = draw(st.integers(0, 2))
        sides[i] = encode(draw(damaged_text([sides[i].decode()])), draw(st.integers(0, 3)))
        valid = False
    if draw(st.integers(0, 9)) == 0:  # add/add
        sides[0] = b""
    return sides[0], sides[1], sides[2], valid


@st.composite
def history_triple(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, bool]:
    base, ours, theirs, *_ = seed_branches(draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    sides = [base, ours, theirs]
    valid = True
    if draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, 2))
        sides[i] = draw(damaged_history(sides[i].splitlines()))
        valid = False
    return (*(s.encode("utf-8", "surrogatepass") for s in sides), valid)  # type: ignore


PATHS = {
    "task": [".ledgit/tasks/T-bbbbbbbbbb.md", "sub dir/ü 'q'/.ledgit/tasks/T-bbbbbbbbbb.md",
             "../.ledgit/tasks/T-bbbbbbbbbb.md"],
    "history": [".ledgit/history/T-bbbbbbbbbb.jsonl",
                "a b/.ledgit/history/T-bbbbbbbbbb.jsonl"],
    "other": ["README.md", ".ledgit/config.yaml", ".ledgit/tasks/../x.md"],
}


def _drive(tmp: Path, o: bytes, a: bytes, b: bytes, marker: str, path: str
           ) -> tuple[int, bytes, str]:
    files = [tmp / ".merge_file_O", tmp / ".merge_file_A", tmp / ".merge_file_B"]
    for f, data in zip(files, (o, a, b), strict=False):
        f.write_bytes(data)
    err = io.StringIO()
    with redirect_stderr(err):
        code = merge_driver([str(files[0]), str(files[1]), str(files[2]), marker, path])
    assert files[0].read_bytes() == o, "%O was rewritten"
    assert files[2].read_bytes() == b, "%B was rewritten"
    return code, files[1].read_bytes(), err.getvalue()


def test_fuzz_merge_driver(scale: Scale, figures: Figures, tmp_path: Path) -> None:
    tally = Tally()

    @hypothesis_seed(scale.seed)
    @_settings(scale, 300, 10_000)
    @given(st.sampled_from(["task", "task", "history", "history", "other"]).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            task_triple() if kind == "task" else history_triple() if kind == "history"
            else st.tuples(st.binary(max_size=200), st.binary(max_size=200),
                           st.binary(max_size=200), st.just(False)),
            st.sampled_from(PATHS[kind]),
            st.sampled_from(["7", "7", "", "10", "x", "-3", "0"]))))
    def check(case: tuple[str, tuple[bytes, bytes, bytes, bool], str, str]) -> None:
        kind, (o, a, b, valid), path, marker = case
        started = time.process_time()
        code, out, err = _drive(tmp_path, o, a, b, marker, path)
        assert code in (0, 1), f"exit {code}"
        assert "Traceback" not in err, err
        if kind != "other":
            code2, out2, _ = _drive(tmp_path, o, b, a, marker, path)
            assert (code2, out2) == (code, out), "output depends on which side is ours"
            if not valid and kind == "history" and _same_id_different_content(a, b):
                assert code == 1, "a tampered copy of an event was merged silently"
        if valid and kind == "task":
            if code == 0:
                rec = parse_record(out, path)
                assert not lifecycle_problems(rec.fields), lifecycle_problems(rec.fields)
            else:
                assert b"<<<<<<<" in out or marker != "7"
        if valid and kind == "history":
            assert code == 0, err
            events = parse_events(out.decode(), "T-bbbbbbbbbb")
            ids = [e["id"] for e in events]
            assert len(ids) == len(set(ids)), "an event appears twice"
            for side in (a, b):
                assert {e["id"] for e in parse_events(side.decode(), "T")} <= set(ids), \
                    "a side's event was dropped"
            problems = [p for p in verify("T-bbbbbbbbbb", out.decode(), None)
                        if p.rule != "record-head"]
            assert not problems, [str(p) for p in problems]
        tally.count(f"{kind}:{code}", time.process_time() - started)

    check()
    figures.update({"cases": tally.cases, **tally.outcomes,
                    "slowest_ms": round(tally.slowest * 1000, 1)})


def _same_id_different_content(a: bytes, b: bytes) -> bool:
    """Some event id comes with two different contents (in one side or across both): one
    copy was tampered with."""
    copies: dict[str, set[str]] = {}
    for data in (a, b):
        for line in data.decode("utf-8", "replace").split("\n"):
            try:
                e = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(e, dict) and isinstance(e.get("id"), str):
                copies.setdefault(e["id"], set()).add(json.dumps(e, sort_keys=True))
    return any(len(v) > 1 for v in copies.values())


def test_merge_driver_console_script(scale: Scale, tmp_path: Path, figures: Figures) -> None:
    """The real ``ledgit merge-driver`` and ``python -m ledgit merge-driver`` agree with the
    in-process driver on a sample: same exit code, same bytes, %O and %B untouched."""
    env = isolated_env(tmp_path / "home")
    rng = scale.rng("driver-cli")
    base, ours, theirs, *_ = seed_branches(2, 1)
    recs = seed_records()
    cases: list[tuple[str, bytes, bytes, bytes]] = [
        (PATHS["history"][1], base.encode(), ours.encode(), theirs.encode()),
        (PATHS["task"][1], render_record(recs[0]).encode(),
         render_record(make_record({**recs[0].fields, "title": "ours",
                                    "last_modified": "2026-02-01T00:00:00.000000Z"})).encode(),
         render_record(make_record({**recs[0].fields, "priority": 2}, "theirs\n")).encode()),
        (PATHS["task"][0], b"\xff\xfe garbage", b"---\n!!python/object:x\n---\n", b""),
        (PATHS["other"][0], b"a\nb\n", b"a\nB\n", b"A\nb\n"),
    ]
    n = scale.pick(4, 60)
    work = tmp_path / "w"
    work.mkdir()
    runs = 0
    for i in range(n):
        path, o, a, b = cases[i % len(cases)] if i < len(cases) else rng.choice(cases)
        expected_code, expected, _ = _drive(work, o, a, b, "7", path)
        launcher = (["merge-driver"], [sys.executable, "-m", "ledgit", "merge-driver"])[i % 2]
        fo, fa, fb = work / "O", work / "A", work / "B"
        fo.write_bytes(o)
        fa.write_bytes(a)
        fb.write_bytes(b)
        args = [str(fo), str(fa), str(fb), "7", path]
        res = (ledgit([*launcher, *args], work, env, ok=(0, 1)) if len(launcher) == 1
               else run([*launcher, *args], work, env))
        runs += 1
        assert "Traceback" not in res.err
        assert res.code == expected_code, res.describe()
        assert fa.read_bytes() == expected
        assert fo.read_bytes() == o and fb.read_bytes() == b
    figures.update({"runs": runs})


@pytest.mark.parametrize("argv", [[], ["only-one"], ["a", "b"]])
def test_merge_driver_usage(tmp_path: Path, argv: list[str]) -> None:
    env = isolated_env(tmp_path / "home")
    res = ledgit(["merge-driver", *argv], tmp_path, env, ok=(2,))
    assert "usage" in res.err.lower()
