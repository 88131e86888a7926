"""Answers an agent can afford (issue 33, DESIGN §14): every list-shaped answer says how many
matched and continues by an opaque cursor, every MCP answer fits its byte budget, a big body
is read in pieces, and every MCP answer names its board -- on a board of 5,722 tasks made
from the real Beads snapshot in tests/data (its issues repeated, each copy with its own id, as
many as the full snapshot held), imported once per module, through the SDK's own client and
the CLI."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from shareddata import BEADS_ISSUES

pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")

from mcp import Client  # noqa: E402
from test_mcp import in_process  # noqa: E402

from ledgit.cli.main import run  # noqa: E402
from ledgit.git import remotenames as remotes  # noqa: E402
from ledgit.mcp.pages import body_piece, errors_within  # noqa: E402
from ledgit.mcp.results import TEXT_BYTES  # noqa: E402
from ledgit.operations import projects  # noqa: E402
from ledgit.operations.rows import brief_view  # noqa: E402
from ledgit.storage.board import Board  # noqa: E402
from ledgit.storage.boardinit import init_board  # noqa: E402
from ledgit.storage.writepath import create_task  # noqa: E402

BUDGET = 65_536
TASKS = 5_722  # the full Beads snapshot's size (tests/data/beads/README.md)


def expanded(path: Path, n: int = TASKS) -> tuple[list[str], int]:
    """``n`` Beads issues from the lines of ``path``, repeated, each copy past the first
    with its own id; and how many of them are not tombstones (the tasks ``list`` shows
    without archived ones)."""
    issues = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines, live = [], 0
    for i in range(n):
        issue = dict(issues[i % len(issues)])
        if i >= len(issues):
            issue["id"] = f"{issue['id']}-c{i // len(issues)}"
        live += issue.get("status") != "tombstone"
        lines.append(json.dumps(issue, ensure_ascii=False))
    return lines, live


SHOWN = expanded(BEADS_ISSUES)[1] + 1  # the tasks not archived, with the big one
needs_data = pytest.mark.skipif(not BEADS_ISSUES.exists(), reason=f"{BEADS_ISSUES} not present")
# A line of every UTF-8 length (1 to 4 bytes), so a piece could be cut inside a sequence.
LINE = "Zeile {n:05d}: ünïcödé, 漢字 and 🙂 -- one line of a big body\n"


def big_body() -> str:
    """~350 KB: short lines, then one line of 70,000 characters (a piece must cut it)."""
    lines = "".join(LINE.format(n=n) for n in range(4_500))
    return lines + "a line with no break " + "x" * 70_000 + "\nthe end\n"


def ledgit_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGIT_")}
    return subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture(scope="module")
def beads(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """5,722 Beads issues (:func:`expanded`) imported into a fresh repository (the
    tombstones archived: list them with include_archived) and the id of one more task whose
    body is ~350 KB."""
    if not BEADS_ISSUES.exists():
        pytest.skip(f"{BEADS_ISSUES} not present")
    base = tmp_path_factory.mktemp("beads")
    source = base / "issues.jsonl"
    source.write_text("\n".join(expanded(BEADS_ISSUES)[0]) + "\n", encoding="utf-8")
    root = base / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for args in (("init",), ("import", "beads", str(source), "--by", "importer")):
        done = ledgit_cli(root, *args)
        assert done.returncode == 0, done.stderr
    tid = create_task(Board(root), {"title": "a big body"}, big_body(), "ann").id
    return root, tid


def size_of(result: Any) -> int:
    """The bytes of the JSON-RPC message that carries ``result`` (as the SDK sends it)."""
    message = {"jsonrpc": "2.0", "id": 1,
               "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())


async def answer(client: Client, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """(structured content, message bytes) of a successful call."""
    result = await client.call_tool(name, args)
    assert not result.is_error, result
    assert result.structured_content is not None
    assert len(result.content[0].text) <= TEXT_BYTES  # type: ignore[union-attr]
    return result.structured_content, size_of(result)


async def page_to_the_end(client: Client, name: str, args: dict[str, Any]
                          ) -> tuple[list[str], list[int], int]:
    """Every page of a list-shaped call: (the ids, each answer's bytes, the total)."""
    ids: list[str] = []
    sizes: list[int] = []
    totals: set[int] = set()
    cursor = None
    while True:
        value, size = await answer(client, name, {**args, **({"cursor": cursor} if cursor
                                                              else {})})
        ids += [t["id"] for t in value["tasks"]]
        sizes.append(size)
        totals.add(value["total"])
        assert value["count"] == len(value["tasks"])
        cursor = value["next_cursor"]
        if cursor is None:
            assert len(totals) == 1
            return ids, sizes, totals.pop()
        assert value["tasks"], "a page with a cursor always advances"


def mcp(root: Path, body: Callable[[Client], Awaitable[None]], **server: Any) -> None:
    async def go() -> None:
        async with in_process(root, "legacy", **server) as client:
            await body(client)
    anyio.run(go)


# --------------------------------------------------------------------------- 5,722 tasks


@needs_data
def test_a_first_look_is_brief_and_says_how_many(beads: tuple[Path, str],
                                                 clean_env: None) -> None:
    root, _ = beads

    async def body(client: Client) -> None:
        first, size = await answer(client, "list", {})
        assert size <= 8_192 and first["count"] == 20 and first["total"] == SHOWN
        assert first["next_cursor"] and first["root"] == str(root)
        assert first["root_source"] == "start_directory"
        for row in first["tasks"]:
            assert set(row) <= {"id", "title", "status", "priority", "holder", "until"}
        # ~25 tokens a row (bytes / 4) for the titles of this board
        rows = len(json.dumps(first["tasks"], ensure_ascii=False, separators=(",", ":")))
        assert rows / 20 / 4 <= 25, rows
        found, size = await answer(client, "search", {"text": "daemon"})
        assert size <= 8_192 and found["count"] == 20 and found["total"] > 20
        assert found["next_cursor"] and all("matches" in t for t in found["tasks"])

    mcp(root, body)


@needs_data
def test_paging_list_and_search_to_the_end_yields_each_task_once(
        beads: tuple[Path, str], clean_env: None) -> None:
    root, _ = beads

    async def body(client: Client) -> None:
        ids, sizes, total = await page_to_the_end(client, "list", {
            "limit": 5_000, "include_archived": True})
        assert total == 5_723 and len(ids) == len(set(ids)) == total
        assert len(sizes) > 1 and max(sizes) <= BUDGET  # the budget cut each page
        ids, sizes, total = await page_to_the_end(client, "search", {
            "text": "the", "limit": 5_000, "include_archived": True})
        assert len(ids) == len(set(ids)) == total > 1_000 and max(sizes) <= BUDGET
        # full rows: the page holds fewer of them, still within the budget
        ids, sizes, total = await page_to_the_end(client, "search", {
            "text": "daemon", "limit": 5_000, "include_archived": True,
            "fields": ["title", "claim", "labels", "freshness", "revision", "path"]})
        assert len(ids) == len(set(ids)) == total and len(sizes) > 1
        assert max(sizes) <= BUDGET

    mcp(root, body)


@needs_data
def test_a_limit_beyond_the_budget_says_more_remain(beads: tuple[Path, str],
                                                    clean_env: None) -> None:
    root, _ = beads

    async def body(client: Client) -> None:
        value, size = await answer(client, "list", {"limit": 5_000,
                                                    "include_archived": True})
        assert size <= BUDGET and 100 < value["count"] < 5_000
        assert value["total"] == 5_723 and value["next_cursor"]

    mcp(root, body)


@needs_data
def test_a_big_body_is_read_in_pieces_within_the_budget(beads: tuple[Path, str],
                                                        clean_env: None) -> None:
    root, tid = beads
    whole = Board(root).read(tid).body
    assert len(whole.encode()) > 350_000

    async def body(client: Client) -> None:
        pieces: list[str] = []
        offset: int | None = 0
        while offset is not None:
            value, size = await answer(client, "get", {"task": tid, "body_offset": offset})
            assert size <= BUDGET and value["body_length"] == len(whole)
            assert value["id"] == tid and value["root"] == str(root)
            piece, offset = value["body"], value["body_next_offset"]
            if offset is not None:  # cut at a line break when one is in the second half
                half = piece[len(piece) // 2:]
                assert piece.endswith("\n") or "\n" not in half
            pieces.append(piece)
        assert "".join(pieces) == whole and len(pieces) > 5
        no_body, _ = await answer(client, "get", {"task": tid, "body": False})
        assert "body" not in no_body and no_body["body_length"] == len(whole)
        past = await client.call_tool("get", {"task": tid, "body_offset": len(whole) + 1})
        error = past.structured_content["error"]  # type: ignore[index]
        assert past.is_error and error["argument"] == "body_offset" and error["code"] == 2

    mcp(root, body)


@needs_data
def test_the_cli_pages_to_the_end_with_a_cursor(beads: tuple[Path, str], clean_env: None,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = beads
    monkeypatch.chdir(root)

    def pages(*args: str) -> tuple[list[str], int]:
        ids: list[str] = []
        cursor: list[str] = []
        while True:
            capsys.readouterr()
            assert run([*args, "--json", *cursor]) == 0
            value = json.loads(capsys.readouterr().out)
            ids += [t["id"] for t in value["tasks"]]
            if value["next_cursor"] is None:
                return ids, value["total"]
            cursor = ["--cursor", value["next_cursor"]]

    ids, total = pages("list", "--limit", "100", "--all")
    assert len(ids) == len(set(ids)) == total == 5_723
    ids, total = pages("search", "daemon", "--limit", "100")
    assert len(ids) == len(set(ids)) == total > 100
    # in text, the page says on stderr where the next one starts
    capsys.readouterr()
    assert run(["list", "--limit", "3"]) == 0
    shown = capsys.readouterr()
    assert len(shown.out.splitlines()) == 3
    assert shown.err.startswith(f"ledgit: 3 of {SHOWN:,} shown; the next page: --cursor ")


# --------------------------------------------------------------------------- while others write


def test_a_task_created_between_pages_repeats_and_skips_nothing(
        tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    board = init_board(tmp_path / "board")
    stamps = [f"2026-01-{d:02d}T00:00:00.000000Z" for d in range(1, 8)]
    made = {create_task(board, {"title": f"task {i}", "priority": i % 5}, "",
                        "ann", at=stamps[i % 7]).id for i in range(40)}
    monkeypatch.chdir(board.root)

    extra: set[str] = set()  # what this test creates between pages

    async def body(client: Client) -> None:
        for sort in ("desc", "asc", "priority", "created"):
            seen: list[str] = []
            cursor = None
            while True:
                args = {"sort": sort, "limit": 6, **({"cursor": cursor} if cursor else {})}
                value, _ = await answer(client, "list", args)
                seen += [t["id"] for t in value["tasks"]]
                cursor = value["next_cursor"]
                if cursor is None:
                    break
                extra.add(create_task(board, {"title": "new", "priority": 2}, "", "bob").id)
            assert sorted(i for i in seen if i in made) == sorted(made), sort
            assert len(seen) == len(set(seen)) and set(seen) - made <= extra, sort
        # a search too (a held index keeps its matches only while nothing was written)
        seen, cursor = [], None
        while True:
            value, _ = await answer(client, "search", {"text": "task", "limit": 6, **(
                {"cursor": cursor} if cursor else {})})
            seen += [t["id"] for t in value["tasks"]]
            cursor = value["next_cursor"]
            if cursor is None:
                break
            extra.add(create_task(board, {"title": "task, newer"}, "", "bob").id)
        assert made <= set(seen) and len(seen) == len(set(seen)), seen

    mcp(board.root, body)
    # the CLI's list, its two groups, the same
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        capsys.readouterr()
        assert run(["list", "--limit", "7", "--json", *cursor]) == 0
        value = json.loads(capsys.readouterr().out)
        seen += [t["id"] for t in value["tasks"]]
        if value["next_cursor"] is None:
            break
        cursor = ["--cursor", value["next_cursor"]]
        create_task(board, {"title": "newer"}, "", "bob")
    assert len(seen) == len(set(seen)) and made <= set(seen)


# --------------------------------------------------------------------------- cursors, roots


def test_a_cursor_of_another_query_or_damaged_is_an_argument_error(
        tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    board = init_board(tmp_path / "board")
    for i in range(5):
        create_task(board, {"title": f"task {i}"}, "", "ann")
    monkeypatch.chdir(board.root)

    value: dict[str, Any] = {}
    cursor = ""

    async def body(client: Client) -> None:
        nonlocal value, cursor
        value, _ = await answer(client, "list", {"limit": 2})
        cursor = value["next_cursor"]
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        assert set(raw) == {"q", "k"}
        forged = base64.urlsafe_b64encode(json.dumps({**raw, "k": [1, 2]}).encode()).decode()
        for args in ({"limit": 2, "cursor": cursor, "status": ["open"]},
                     {"cursor": cursor, "sort": "asc"}, {"cursor": cursor[:-4]},
                     {"cursor": "not a cursor"}, {"cursor": forged}):
            result = await client.call_tool("list", args)
            error = result.structured_content["error"]  # type: ignore[index]
            assert result.is_error and error["code"] == 2 and error["kind"] == "invalid_input"
            assert error["argument"] == "cursor" and error["message"].startswith("cursor: ")
            assert "next_cursor" in error["expected"]
        result = await client.call_tool("search", {"text": "task", "cursor": cursor})
        assert result.is_error  # a list's cursor does not continue a search

    mcp(board.root, body)
    tid = value["tasks"][0]["id"]
    for args in (["list", "--cursor", "zz"], ["search", "task", "--cursor", "zz"],
                 ["ready", "--cursor", "zz"], ["history", tid, "--cursor", "zz"],
                 ["history", tid, "--cursor", cursor]):
        capsys.readouterr()
        code = run(args)
        assert code == 2 and capsys.readouterr().err.startswith("ledgit: --cursor: "), args


def test_history_pages_by_event(tmp_path: Path, clean_env: None,
                                monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    board = init_board(tmp_path / "board")
    tid = create_task(board, {"title": "busy"}, "", "ann").id
    monkeypatch.chdir(board.root)
    for n in range(6):
        assert run(["note", tid, f"note {n}", "--by", "ann"]) == 0
    capsys.readouterr()
    assert run(["history", tid, "--json"]) == 0
    first = [e["id"] for e in json.loads(capsys.readouterr().out)["events"]]
    events: list[str] = []
    cursor: list[str] = []
    while True:
        assert run(["history", tid, "--limit", "3", "--json", *cursor]) == 0
        value = json.loads(capsys.readouterr().out)
        events += [e["id"] for e in value["events"]]
        assert value["total"] >= len(events)
        if value["next_cursor"] is None:
            break
        cursor = ["--cursor", value["next_cursor"]]
        assert run(["note", tid, "one more", "--by", "ann"]) == 0  # a history only grows
        capsys.readouterr()
    assert len(first) == 7 and events[:7] == first and len(events) == len(set(events))


def test_every_answer_names_its_board_and_how_it_was_found(
        tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    home = init_board(tmp_path / "home")
    other = init_board(tmp_path / "home" / "sub")
    create_task(home, {"title": "at home"}, "", "ann")
    projects.add(home, "away", str(other.root), None, user=False)

    async def body(client: Client) -> None:
        for args, root, source in (({}, home.root, "start_directory"),
                                   ({"root": "sub"}, other.root, "argument"),
                                   ({"root": "away"}, other.root, "project_alias")):
            value, _ = await answer(client, "list", args)
            assert (value["root"], value["root_source"]) == (str(root), source), args
        made, _ = await answer(client, "create", {"title": "new"})
        assert made["root"] == str(home.root) and made["root_source"] == "start_directory"
        missing = await client.call_tool("get", {"task": "T-nothing"})
        value = missing.structured_content
        assert missing.is_error and value["root"] == str(home.root)  # type: ignore[index]

    mcp(home.root, body)
    monkeypatch.setenv("LEDGIT_ROOT", str(other.root))

    async def pinned(client: Client) -> None:
        value, _ = await answer(client, "list", {})
        assert (value["root"], value["root_source"]) == (str(other.root), "environment")

    mcp(tmp_path, pinned)


def test_a_server_with_no_board_says_how_to_name_one(tmp_path: Path,
                                                     clean_env: None) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()

    async def body(client: Client) -> None:
        result = await client.call_tool("list", {})
        error = result.structured_content["error"]  # type: ignore[index]
        assert result.is_error and error["code"] == 4
        for way in ("root argument", "LEDGIT_ROOT", "ledgit mcp --root DIR", str(nowhere)):
            assert way in error["message"], way

    mcp(nowhere, body)


def test_a_smaller_budget_pages_sooner_and_refuses_what_cannot_fit(
        tmp_path: Path, clean_env: None) -> None:
    board = init_board(tmp_path / "board")
    for i in range(120):
        create_task(board, {"title": f"task number {i} " + "w" * 50}, "", "ann")
    tid = create_task(board, {"title": "long", "next_action": "n" * 2_000}, "", "ann").id

    async def body(client: Client) -> None:
        ids, sizes, total = await page_to_the_end(client, "list", {"limit": 1_000})
        assert len(ids) == len(set(ids)) == total == 121 and len(sizes) >= 3
        assert max(sizes) <= 8_192
        got = await client.call_tool("get", {"task": tid})
        assert not got.is_error and size_of(got) <= 8_192
        assert got.structured_content["body_next_offset"] is None  # type: ignore[index]
        ids, sizes, total = await page_to_the_end(client, "list", {
            "fields": ["next_action"], "limit": 1_000})
        assert len(ids) == len(set(ids)) == total == 121 and max(sizes) <= 8_192
        huge = create_task(board, {"title": "huge", "next_action": "n" * 9_000}, "", "ann").id
        refused = await client.call_tool("get", {"task": huge})
        error = refused.structured_content["error"]  # type: ignore[index]
        assert refused.is_error and error["kind"] == "too_large" and error["code"] == 2
        assert error["size"] > error["budget"] == 8_192 and size_of(refused) < 8_192

    mcp(board.root, body, max_answer_bytes=8_192)


def test_the_max_answer_bytes_option_is_checked(tmp_path: Path, clean_env: None) -> None:
    done = ledgit_cli(tmp_path, "mcp", "--max-answer-bytes", "100")
    assert done.returncode == 2 and "--max-answer-bytes" in done.stderr


# --------------------------------------------------------------------------- pieces


def test_a_body_piece_fits_its_room_and_cuts_at_a_line() -> None:
    text = "".join(LINE.format(n=n) for n in range(300)) + "🙂" * 5_000
    for room in (64, 100, 1_000, 7_777, 40_000):
        pieces, offset = [], 0
        while True:
            piece, after = body_piece(text, offset, room)
            assert len(json.dumps(piece, ensure_ascii=False)) - 2 <= room
            pieces.append(piece)
            if after is None:
                break
            assert after > offset and (piece.endswith("\n") or "\n" not in
                                        piece[len(piece) // 2:])
            offset = after
        assert "".join(pieces) == text
    assert body_piece("", 0, 100) == ("", None)
    with pytest.raises(Exception, match="body_offset"):
        body_piece("abc", 4, 100)


def test_a_long_list_of_malformed_files_ends_with_a_count() -> None:
    errors = [(f".ledgit/tasks/T-{n}.md", "broken: " + "x" * 50) for n in range(100)]
    shown = errors_within(errors, 1_000)
    assert 1 < len(shown) < 100 and shown[-1]["path"] == ""
    assert f"and {100 - len(shown) + 1} more" in shown[-1]["message"]
    assert errors_within(errors[:3], 1_000) == [{"path": p, "message": m}
                                                for p, m in errors[:3]]


def test_a_brief_row_names_the_holder_until_its_claim_or_lease_runs_out() -> None:
    row = {"id": "T-1", "title": "t", "status": "in_progress", "priority": 1,
           "claim": {"by": "ann", "at": "2026-01-01T00:00:00.000000Z",
                     "heartbeat": "2026-01-01T00:10:00.000000Z"}}
    assert brief_view(row, 1_800) == {"id": "T-1", "title": "t", "status": "in_progress",
                                      "priority": 1, "holder": "ann",
                                      "until": "2026-01-01T00:40:00Z"}
    free = {**row, "claim": None, "status": "open"}
    assert brief_view(free, 1_800) == {"id": "T-1", "title": "t", "status": "open",
                                       "priority": 1}
    live = {"state": "held", "by": "bob", "expires": "2026-01-01T01:00:00.000000Z",
            "live": True}
    assert brief_view(free, 1_800, live)["holder"] == "bob"
    assert "holder" not in brief_view(free, 1_800, {**live, "live": False})
    assert "holder" not in brief_view(free, 1_800, {**live, "state": "ended"})


def test_git_remote_is_asked_again_only_when_a_config_file_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The remotes a read asks for (where leases live) come from Git once per change of its
    config files, in this process and the next (the private dir's copy)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git_dir, cache = str(repo / ".git"), str(repo / ".git" / "remotes.json")
    asked: list[str] = []
    real = remotes.remote_names
    monkeypatch.setattr(remotes, "remote_names", lambda cwd: asked.append(cwd) or real(cwd))
    assert remotes.known_remotes(str(repo), git_dir, cache) == []
    assert remotes.known_remotes(str(repo), git_dir, cache) == [] and len(asked) == 1
    monkeypatch.setattr(remotes, "_KNOWN", {})  # the next process: the file answers
    assert remotes.known_remotes(str(repo), git_dir, cache) == [] and len(asked) == 1
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", str(tmp_path)],
                   check=True)
    assert remotes.known_remotes(str(repo), git_dir, cache) == ["origin"] and len(asked) == 2
    monkeypatch.setenv("GIT_CONFIG_COUNT", "0")  # a config from the environment: never kept
    remotes.known_remotes(str(repo), git_dir, cache)
    assert len(asked) == 3
