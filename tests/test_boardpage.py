"""``ledgit board`` (issue 16) without a browser: the page model from real boards (a real Git
merge for the merge provenance), the self-contained file, escaping, and the live server
(a real ``ledgit board --serve`` process answering HTTP and server-sent events)."""

from __future__ import annotations

import ast
import base64
import hashlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gitflow import commit_all, create, git_rc, ledgit, new_repo
from gitutil import CliRun, git

import ledgit as ledgit_package
from ledgit.__main__ import run
from ledgit.storage.index import Index

pytest_plugins = ["gitutil"]
pytest.importorskip("jinja2", reason="the board page needs the 'board' extra (jinja2)")
pytest.importorskip("cmarkgfm", reason="the board page needs the 'board' extra (cmarkgfm)")

from ledgit.boardpage.source import PageSource  # noqa: E402 - needs the extra

HOSTILE = "<img src=x onerror=alert(1)>"


def page_model(page: str) -> dict[str, Any]:
    """The model a page embeds (its ``board-data`` JSON, plus ``board-details``)."""
    found = re.search(r'<script id="board-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found, "no board-data in the page"
    model: dict[str, Any] = json.loads(found.group(1))
    details = re.search(r'<script id="board-details" type="application/json">(.*?)</script>',
                        page, re.S)
    if details:  # a file page's task details, in their own script element
        model["details"] = json.loads(details.group(1))
    return model


def test_board_needs_html_or_serve(lg: CliRun) -> None:
    code, _, err = lg("board")
    assert code == 2
    assert "--html FILE or --serve" in err
    code, _, err = lg("board", "--html", "x.html", "--host", "0.0.0.0")
    assert code == 2 and "--host needs --serve" in err


def test_board_outside_a_board_is_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEDGIT_ROOT", raising=False)
    assert run(["board", "--html", "x.html"]) == 4
    assert not (tmp_path / "x.html").exists()
    assert "no ledgit board" in capsys.readouterr().err


def test_html_into_a_missing_directory_is_exit_2(lg: CliRun) -> None:
    code, _, err = lg("board", "--html", "no/such/dir/board.html")
    assert code == 2
    assert "no such directory" in err and "Traceback" not in err


def test_html_page_is_self_contained_and_escapes_task_text(lg: CliRun, tmp_path: Path) -> None:
    hostile = lg("create", HOSTILE, "--label", "x</script><b>", "--by", "mallory",
                 "--body", "## Goal\n\n<script>alert(2)</script> and [link](javascript:alert(3))"
                           "\n\n**bold**\n")[1].strip()
    dep = lg("create", "A dependency", "--by", "lead")[1].strip()
    blocked = lg("create", "Blocked on it", "--depends", dep, "--by", "lead")[1].strip()
    claimed = lg("create", "Being done", "--by", "lead")[1].strip()
    assert lg("claim", claimed, "--by", "agent-a")[0] == 0
    dropped = lg("create", "Gave up", "--by", "lead")[1].strip()
    assert lg("drop", dropped, "--reason", "disproved: the cache is not the cause",
              "--by", "lead")[0] == 0
    out = tmp_path / "board.html"
    code, _, err = lg("board", "--html", str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    # self-contained: no external resource at all (the SVG namespace is a name, not a fetch)
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page)
    assert "<link" not in page and "@import" not in page
    # task text never appears as markup: not in the HTML, not in the JSON
    assert HOSTILE not in page and "x</script>" not in page and "<script>alert(2)" not in page
    assert "javascript:alert(3)" not in page.split('id="board-data"')[0]
    model = page_model(page)
    cards = {c["id"]: c for c in model["cards"]}
    assert cards[hostile]["title"] == HOSTILE  # the text itself survives, as text
    assert model["meta"]["total"] == 5
    assert cards[dep]["column"] == "ready"
    assert cards[blocked]["column"] == "blocked"
    assert cards[blocked]["deps"] == [{"id": dep, "status": "open", "blocking": True}]
    assert cards[claimed]["column"] == "in_progress"
    assert cards[claimed]["claim"]["holder"] == "agent-a"
    assert cards[claimed]["claim"]["state"] == "fresh"
    assert cards[dropped]["column"] == "dropped"
    assert cards[dropped]["outcome"]["reason"] == "disproved: the cache is not the cause"
    body = model["details"][hostile]["body_html"]
    assert "<script" not in body and "raw HTML omitted" in body  # raw HTML dropped
    assert "<strong>bold</strong>" in body  # Markdown rendered
    assert 'href="javascript' not in body
    lanes = {lane["agent"]: lane for lane in model["lanes"]}
    assert [t["id"] for t in lanes["agent-a"]["tasks"]] == [claimed]
    assert model["plots"]["opened_done"].startswith("<svg")
    assert "opened (5)" in model["plots"]["opened_done"]
    assert "agent-a (1)" in model["plots"]["claims"]


def test_archived_hidden_but_counted_unless_asked(lg: CliRun, tmp_path: Path) -> None:
    tid = lg("create", "Old work", "--by", "lead")[1].strip()
    lg("create", "Current work", "--by", "lead")
    assert lg("archive", tid, "--by", "lead")[0] == 0
    out = tmp_path / "b.html"
    assert lg("board", "--html", str(out))[0] == 0
    model = page_model(out.read_text(encoding="utf-8"))
    assert model["meta"]["total"] == 2 and model["meta"]["archived"] == 1
    assert model["meta"]["shown"] == 1
    assert "archived" not in [c["key"] for c in model["columns"]]
    assert "1 of them archived and hidden" in out.read_text(encoding="utf-8")
    assert lg("board", "--html", str(out), "--archived")[0] == 0
    model = page_model(out.read_text(encoding="utf-8"))
    assert model["meta"]["shown"] == 2
    assert {c["key"]: c["count"] for c in model["columns"]}["archived"] == 1


def test_items_grouped_by_trust_with_supersessions(lg: CliRun, tmp_path: Path) -> None:
    tid = lg("create", "Decide", "--owner", "olga", "--by", "olga")[1].strip()
    first = lg("item", "add", tid, "--kind", "decision", "--text", "use SQLite",
               "--lock", "--by", "olga")[1].strip()
    lg("item", "add", tid, "--kind", "fact", "--text", "a worker's guess", "--by", "w")
    code, out, err = lg("revise", tid, "--supersedes", first, "--text", "use SQLite, WAL mode",
                        "--by", "olga")
    assert code == 0, err
    page = tmp_path / "p.html"
    assert lg("board", "--html", str(page))[0] == 0
    items = page_model(page.read_text(encoding="utf-8"))["details"][tid]["items"]
    assert [i["text"] for i in items["deprecated"]] == ["use SQLite"]
    assert [i["text"] for i in items["candidate"]] == ["a worker's guess"]
    new = [i for i in items["locked"] + items["candidate"] if i["supersedes"]]
    assert len(new) == 1 and new[0]["supersedes"] == [first]
    assert items["deprecated"][0]["superseded_by"] == [new[0]["id"]]


def test_merge_event_shows_sides_fields_and_winning_claim(tmp_path: Path,
                                                          git_env: Path) -> None:
    a = new_repo(tmp_path / "a")
    tid = create(a, "Shared task", "--by", "lead")
    commit_all(a, "a task")
    b = tmp_path / "b"
    git("worktree", "add", "-q", "-b", "feature", str(b), cwd=a)
    ledgit(a, "claim", tid, "--by", "agent-a")
    ledgit(a, "update", tid, "--priority", "0", "--by", "agent-a")
    commit_all(a, "a claims")
    time.sleep(0.01)
    ledgit(b, "claim", tid, "--by", "agent-b")
    ledgit(b, "update", tid, "--label", "from-b", "--by", "agent-b")
    commit_all(b, "b claims")
    proc = git_rc(b, "merge", "--no-edit", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "page.html"
    ledgit(b, "board", "--html", str(out))
    model = page_model(out.read_text(encoding="utf-8"))
    card = next(c for c in model["cards"] if c["id"] == tid)
    assert card["claim"]["holder"] == "agent-a" and card["claim"]["state"] == "contested"
    merges = [e for e in model["details"][tid]["timeline"] if e["op"] == "merge"]
    assert len(merges) == 1
    merge = merges[0]["merge"]
    assert sorted(s["actor"] for s in merge["sides"]) == ["agent-a", "agent-b"]
    source = {f["field"]: f["from"] for f in merge["fields"]}
    assert source["priority"] == "agent-a"
    assert source["labels"] == "agent-b"
    assert source["claim"] == "agent-a"
    assert merge["claim"]["winner"] == "agent-a" and merge["claim"]["lost"] == ["agent-b"]
    lanes = {lane["agent"]: lane for lane in model["lanes"]}
    assert [t["state"] for t in lanes["agent-b"]["tasks"]] == ["lost"]


def test_a_stale_claim_is_stale_with_its_unknown_on_card_and_lane(lg: CliRun,
                                                                     tmp_path: Path) -> None:
    config = lg.root / ".ledgit" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("claim_ttl: 30m",
                                                                 "claim_ttl: 1s"),
                      encoding="utf-8")
    assert "claim_ttl: 1s" in config.read_text(encoding="utf-8")
    tid = lg("create", "Left behind", "--by", "lead")[1].strip()
    assert lg("claim", tid, "--by", "agent-z")[0] == 0
    time.sleep(2.1)  # past the 1 s TTL
    page = tmp_path / "p.html"
    assert lg("board", "--html", str(page))[0] == 0
    model = page_model(page.read_text(encoding="utf-8"))
    card = next(c for c in model["cards"] if c["id"] == tid)
    assert card["claim"]["state"] == "stale" and card["claim"]["holder"] == "agent-z"
    assert card["claim"]["age"] >= 2
    assert card["claim_unknown"] == [card["claim"]["reason"]]
    assert "TTL 1s" in card["claim"]["reason"]
    lane = next(lane for lane in model["lanes"] if lane["agent"] == "agent-z")
    assert [t["state"] for t in lane["tasks"]] == ["stale"]


def test_a_page_served_in_a_worktree_shows_that_worktrees_board(tmp_path: Path,
                                                                git_env: Path) -> None:
    a = new_repo(tmp_path / "a")
    shared = create(a, "On both", "--by", "lead")
    commit_all(a, "a task")
    b = tmp_path / "b"
    git("worktree", "add", "-q", "-b", "feature", str(b), cwd=a)
    only_a = create(a, "Only in main", "--by", "lead")
    only_b = create(b, "Only in the feature worktree", "--by", "lead")
    for root, present, absent in ((b, only_b, only_a), (a, only_a, only_b)):
        server = serve(root)
        try:
            ids = {c["id"] for c in json.loads(server.request("GET", "/data.json")[2])["cards"]}
        finally:
            stop(server)
        assert {shared, present} <= ids and absent not in ids


def test_malformed_task_file_is_named_not_hidden(lg: CliRun, tmp_path: Path) -> None:
    lg("create", "Fine", "--by", "lead")
    (lg.root / ".ledgit" / "tasks" / "T-broken.md").write_text("---\ntitle: [\n---\n")
    out = tmp_path / "p.html"
    code, _, err = lg("board", "--html", str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    model = page_model(page)
    assert [e["path"] for e in model["meta"]["errors"]] == [".ledgit/tasks/T-broken.md"]
    assert "1 malformed task file(s) skipped" in page


def test_html_to_stdout(lg: CliRun) -> None:
    lg("create", "One", "--by", "lead")
    code, out, _ = lg("board", "--html", "-")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>") and page_model(out)["meta"]["total"] == 1


# --------------------------------------------------------------------------- the server


class Served:
    """A running ``ledgit board --serve`` process and its address."""

    def __init__(self, proc: subprocess.Popen[str], host: str, port: int) -> None:
        self.proc, self.host, self.port = proc, host, port

    def request(self, method: str, path: str, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request(method, path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()


def serve(cwd: Path, *args: str, watch: str | None = None) -> Served:
    """Start ``ledgit board --serve ARGS`` in ``cwd`` and wait for its URL line; ``watch``:
    LEDGIT_WATCH for it ("0": no inotify, the directories' stat is looked at instead)."""
    env = dict(os.environ)
    if watch is not None:
        env["LEDGIT_WATCH"] = watch
    proc = subprocess.Popen([sys.executable, "-m", "ledgit", "board", "--serve", *args],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"http://([\d.]+):(\d+)/", line)
    if not found:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"no URL from board --serve: {line!r} {err}")
    return Served(proc, found.group(1), int(found.group(2)))


def stop(served: Served) -> str:
    """SIGTERM the server; assert it exits 0; its stderr."""
    served.proc.send_signal(signal.SIGTERM)
    _, err = served.proc.communicate(timeout=20)
    assert served.proc.returncode == 0, err
    return err


@pytest.fixture(params=["watched", "unwatched"])
def served(request: pytest.FixtureRequest, lg: CliRun) -> Iterator[tuple[CliRun, Served]]:
    """A served board, watched by inotify or (LEDGIT_WATCH=0) not."""
    lg("create", "First", "--by", "lead")
    server = serve(lg.root, watch="1" if request.param == "watched" else "0")
    try:
        yield lg, server
    finally:
        if server.proc.poll() is None:
            stop(server)


def test_serve_answers_get_only_read_only(served: tuple[CliRun, Served]) -> None:
    lg, server = served
    status, headers, body = server.request("GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert page_model(body.decode())["meta"]["total"] == 1
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = server.request(method, "/")
        assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, _, body = server.request("GET", "/data.json")
    data = json.loads(body)
    tid = data["cards"][0]["id"]
    status, _, body = server.request("GET", f"/task/{tid}.json")
    assert status == 200 and json.loads(body)["id"] == tid
    assert server.request("GET", "/task/T-nope.json")[0] == 404
    assert server.request("GET", "/etc/passwd")[0] == 404
    # a page for loopback names only (DNS rebinding)
    assert server.request("GET", "/", {"Host": "evil.example:80"})[0] == 403
    assert server.request("HEAD", "/")[0] == 200
    assert lg("list", "--json")[0] == 0  # the board is untouched by serving


def test_serve_pushes_an_event_on_a_cli_write(served: tuple[CliRun, Served]) -> None:
    lg, server = served
    serial = json.loads(server.request("GET", "/data.json")[2])["meta"]["serial"]
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.request("GET", f"/events?since={serial}")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    assert resp.readline() == b"retry: 1000\n"
    started = time.monotonic()
    tid = lg("create", "Written while served", "--by", "writer")[1].strip()
    data: dict[str, Any] = {"cards": []}
    # A write touches the history, then the task file: the page may hear of both.
    while tid not in [c["id"] for c in data["cards"]]:
        line = resp.readline()
        assert time.monotonic() - started < 2.0, "no event with the write within 2 s"
        if line.startswith(b"event: changed"):
            data = json.loads(server.request("GET", "/data.json")[2])
    assert data["meta"]["serial"] > serial
    # A hand edit in place keeps the directories' stat: unwatched, it shows with the next
    # write (docs/watch.md); watched, at once. Either way the page is never left behind.
    path = lg.root / data["cards"][[c["id"] for c in data["cards"]].index(tid)]["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("Written while served",
                                                             "Edited by hand"),
                    encoding="utf-8")
    started = time.monotonic()
    other = lg("create", "Another write", "--by", "writer")[1].strip()
    while {"Edited by hand", "Another write"} - {c["title"] for c in data["cards"]}:
        line = resp.readline()
        assert time.monotonic() - started < 2.0, "the hand edit did not show with a write"
        if line.startswith(b"event: changed"):
            data = json.loads(server.request("GET", "/data.json")[2])
    assert other in [c["id"] for c in data["cards"]]
    conn.close()


def test_serve_on_a_busy_port_is_exit_2(served: tuple[CliRun, Served]) -> None:
    lg, server = served
    proc = subprocess.run([sys.executable, "-m", "ledgit", "board", "--serve", "--port",
                           str(server.port)], cwd=lg.root, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2
    assert "cannot listen" in proc.stderr and "Traceback" not in proc.stderr


def _next_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The next line ``proc`` prints on stdout; "" (``proc`` killed) when none comes
    within ``timeout`` s."""
    assert proc.stdout is not None
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        return proc.stdout.readline()
    finally:
        timer.cancel()


def _csp(headers: dict[str, str]) -> dict[str, list[str]]:
    """The Content-Security-Policy header as {directive: [sources]}."""
    policy: dict[str, list[str]] = {}
    for part in headers["Content-Security-Policy"].split(";"):
        words = part.split()
        if words:
            policy[words[0]] = words[1:]
    return policy


def _assert_safe_headers(headers: dict[str, str]) -> None:
    """Issue 36: what every answer of the server says, whatever its status."""
    assert headers.get("X-Content-Type-Options") == "nosniff", headers
    assert not any(k.lower().startswith("access-control-") for k in headers), headers
    policy = _csp(headers)
    assert policy["default-src"] == ["'none'"]
    for directive in ("script-src", "style-src"):  # no inline handler, no foreign script
        assert "'unsafe-inline'" not in policy[directive], policy
        assert all(s.startswith("'sha256-") for s in policy[directive]), policy
    assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]


def test_serve_beyond_loopback_needs_a_token_printed_once(lg: CliRun) -> None:
    """Issue 36: ``--host 0.0.0.0`` makes a token, says it once (not in the URL line), and
    every request without it -- from 127.0.0.1 too, every route and method -- is 401."""
    tid = lg("create", "First", "--by", "lead")[1].strip()
    server = serve(lg.root, "--host", "0.0.0.0")
    try:
        said = _next_line(server.proc)
        found = re.search(r"token: (\S+)", said)
        assert found, said
        token = found.group(1)
        assert len(token) >= 32
        server.host = "127.0.0.1"  # a loopback client of a board served beyond loopback
        for method, path in (("GET", "/"), ("GET", "/data.json"), ("HEAD", "/"),
                             ("GET", f"/task/{tid}.json"), ("GET", "/events"),
                             ("GET", "/nope"), ("POST", "/")):
            status, headers, body = server.request(method, path, {"Origin": "http://evil"})
            assert status == 401, (method, path, status)
            assert headers["WWW-Authenticate"].startswith("Basic realm="), headers
            _assert_safe_headers(headers)
            assert b"First" not in body and tid.encode() not in body
        wrong = base64.b64encode(b"anyone:" + token[:-1].encode() + b"x").decode()
        assert server.request("GET", "/", {"Authorization": f"Basic {wrong}"})[0] == 401
        assert server.request("GET", "/", {"Authorization": "Bearer nope"})[0] == 401
        basic = base64.b64encode(f"anyone:{token}".encode()).decode()
        for auth in (f"Bearer {token}", f"Basic {basic}"):
            status, headers, body = server.request("GET", "/data.json",
                                                   {"Authorization": auth, "Origin": "http://x"})
            assert status == 200 and headers["Content-Type"] == "application/json"
            assert json.loads(body)["cards"][0]["id"] == tid
            _assert_safe_headers(headers)
        status, headers, _ = server.request("GET", f"/task/{tid}.json",
                                            {"Authorization": f"Bearer {token}"})
        assert status == 200 and headers["Content-Type"] == "application/json"
        status, headers, _ = server.request("GET", "/", {"Authorization": f"Bearer {token}"})
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        _assert_safe_headers(headers)
    finally:
        err = stop(server)
    assert token not in err and "warning: serving on 0.0.0.0" in err
    assert token not in said.partition("token:")[0]


def test_serve_with_a_given_token_does_not_print_it(lg: CliRun) -> None:
    lg("create", "First", "--by", "lead")
    secret = "s3cret-given-by-the-user-0123456789"
    env = {**os.environ, "LEDGIT_BOARD_TOKEN": secret}
    proc = subprocess.Popen([sys.executable, "-m", "ledgit", "board", "--serve", "--host",
                             "0.0.0.0"], cwd=lg.root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = _next_line(proc)
        found = re.search(r"http://[\d.]+:(\d+)/", line)
        assert found, line
        server = Served(proc, "127.0.0.1", int(found.group(1)))
        assert server.request("GET", "/")[0] == 401
        assert server.request("GET", "/", {"Authorization": f"Bearer {secret}"})[0] == 200
    finally:  # no server left running, whatever failed
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert secret not in line + out + err
    # an empty or multi-word token is refused before anything listens
    for bad in ("", "two words"):
        done = subprocess.run([sys.executable, "-m", "ledgit", "board", "--serve", "--host",
                               "0.0.0.0", "--token", bad], cwd=lg.root, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 2 and "--token" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_page_script_and_style_are_allowed_by_hash_not_inline(lg: CliRun) -> None:
    """The page's own script and style run under a policy without 'unsafe-inline' (their
    sha256 in the policy, the page's meta and the served header alike), and the page holds
    no inline event handler (which no hash allows)."""
    lg("create", "First", "--by", "lead")
    code, page, _ = lg("board", "--html", "-")
    assert code == 0
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta, "no policy in the page"
    policy = _csp({"Content-Security-Policy": meta.group(1)})
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(scripts) == 1 and len(styles) == 1

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["script-src"] == [digest(scripts[0])]
    assert policy["style-src"] == [digest(styles[0])]
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", page.split('id="board-data"')[0]), \
        "an inline event handler in the page"
    server = serve(lg.root)
    try:
        status, headers, body = server.request("GET", "/")
        assert status == 200
        _assert_safe_headers(headers)
        served = _csp(headers)
        assert served["script-src"] == policy["script-src"]
        assert served["style-src"] == policy["style-src"]
        assert re.findall(r"<script>(.*?)</script>", body.decode(), re.S) == scripts
    finally:
        stop(server)


def test_live_model_after_writes_equals_a_fresh_build(lg: CliRun) -> None:
    """The server's incremental path (rows re-read by revision, extras kept per revision and
    history stat) gives the model a fresh build gives."""
    ids = [lg("create", f"Task {i}", "--priority", str(i % 3), "--by", "lead")[1].strip()
           for i in range(4)]
    board = lg.board()
    live = PageSource(board)

    def strip(model: dict[str, Any]) -> dict[str, Any]:
        model["meta"].pop("generated")
        model["meta"].pop("now_epoch")
        for card in model["cards"]:
            if card["claim"]:
                card["claim"].pop("age")
                card["claim"].pop("reason")
            card["unknown"] = [u for u in card["unknown"] if u["field"] != "claim"]
        return model

    with Index.open(board) as index:
        live.model(index, details=False, fork=False)
        assert lg("claim", ids[1], "--by", "agent-a")[0] == 0
        assert lg("update", ids[2], "--priority", "0", "--title", "Renamed", "--by", "b")[0] == 0
        assert lg("archive", ids[3], "--by", "lead")[0] == 0
        new = lg("create", "Late", "--by", "lead")[1].strip()
        index.refresh()
        got = strip(live.model(index, details=False, fork=False))
        assert live.detail(ids[1]) is not None and live.detail("T-none") is None
    with Index.open(board) as index:
        want = strip(PageSource(board).model(index, details=False, fork=False))
    assert got == want
    assert [c["id"] for c in got["cards"]][:2] == [ids[0], ids[2]]  # P0, oldest first
    assert new in [c["id"] for c in got["cards"]]
    assert "Renamed" in [c["title"] for c in got["cards"]]


def test_the_page_is_a_face_nothing_imports() -> None:
    """DESIGN §11: boardpage calls down (board, index, readout, history, merge, parallel);
    no other ledgit module imports it, and it imports no other face."""
    src = Path(ledgit_package.__file__).parent
    faces = {"ledgit.cli.main", "ledgit.cli.gitcli", "ledgit.mcp", "ledgit.hooks.dispatch",
             "ledgit.hooks.mergedriver", "ledgit.cli.demo", "ledgit.interop"}
    for path in src.rglob("*.py"):
        inside = "boardpage" in path.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                if inside:
                    assert not any(name == f or name.startswith(f + ".") for f in faces), \
                        (path, name)
                else:
                    assert not name.startswith("ledgit.boardpage"), (path, name)
    assert "ledgit.boardpage.cli:board_cmd" in Path(src / "cli" / "main.py").read_text()


def test_other_commands_do_not_import_the_page_libraries(lg: CliRun) -> None:
    lg("create", "One", "--by", "lead")
    code = ("import sys; from ledgit.__main__ import run; run(['list']); "
            "print(sorted(m for m in ('jinja2', 'cmarkgfm', 'orjson', 'ledgit.boardpage') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=lg.root)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_page_json_reads_back_as_jinja2s_tojson_and_stays_in_its_script() -> None:
    """page_json (orjson) reads back as Jinja2's tojson does, and holds no ``<`` (the only
    character that can end a script element's data, or open a comment or tag in it)."""
    from jinja2.utils import htmlsafe_json_dumps

    from ledgit.boardpage.render import page_json

    value = {"title": HOSTILE, "x": "</script><!-- & 'q' \"d\" \u2028 é 🎉", "n": [1, None,
                                                                                  True]}
    text = page_json(value).decode("utf-8")
    assert json.loads(text) == json.loads(str(htmlsafe_json_dumps(value))) == value
    assert "<" not in text and "\\u003c/script>\\u003c!--" in text
    lone = {"note": "bytes that were not UTF-8: \udcff"}  # orjson refuses: json encodes it
    assert json.loads(page_json(lone)) == lone


def test_a_long_agent_name_fits_the_plot_legend_and_is_named_in_full() -> None:
    from ledgit.boardpage.plots import LEGEND_CHARS, claims_plot

    name = "beads/polecats/obsidian-with-a-long-name"
    svg = claims_plot([(name, "2026-01-01T00:00:00Z"), ("ann", "2026-01-02T00:00:00Z")])
    legends = dict(re.findall(r'class="legend"><title>(.*?)</title>(.*?)</text>', svg))
    assert legends["ann (1)"] == "ann (1)"
    shown = legends[f"{name} (1)"]
    assert len(shown) == LEGEND_CHARS and shown.startswith("…") and shown.endswith("name (1)")
