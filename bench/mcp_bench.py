"""``ledgit mcp`` against the round trip of a no-op tool, and against Backlog.md's MCP server.

Usage::

    python bench/mcp_bench.py                    # sizes 100 and 10,000; Backlog.md at 1,000
    python bench/mcp_bench.py --sizes 100 1000 --calls 50 --no-backlog

For each board size it builds a ledgit board in a throwaway Git repository (bench/run.py's
builder: the real Beads task shapes of ../shared/data), waits until its newest task file is
older than the index's racy window (``ledgit.storage.indexrefresh.RACY_WINDOW_NS``, 2 s:
until then every refresh re-reads each file written within it, by Git's racy-clean rule -- a
board in use, not one written a moment ago, is what the budgets are about), and times tool
calls through the official SDK's client (``mcp.Client``), one call at a time, p50 over
``--calls`` calls after a warm-up, on two transports:

* **in-process**: ``Client(server)``, the SDK's memory transport, against ``build_server``;
* **stdio**: ``ledgit mcp`` as a subprocess (what an MCP client launches).

``update`` and ``claim`` (claim, then an untimed release) go round :data:`WRITE_TASKS`
ready tasks, the same number at every size, so that a task's history grows by a few events
per figure, not by hundreds (the write path parses the task's whole history).

The floor on each transport is a no-op tool of a server on the same SDK
(bench/mcp_noop_server.py), of the same kind as the tools it is compared with: ledgit's
reads are async tools (answered on the event loop), its writes sync tools (a worker thread,
as the SDK runs them), so reads are compared with ``noop_async`` and writes with ``noop``.
Each op's floor is timed call by call in turn with it (op, no-op, op, ...), so that a ratio
is taken under one load; flatness from the smallest to the largest size is judged on these
ratios too (the raw p50s are shown beside them).

Beside list and search, and not a floor: the same no-op server's ``replay`` returns a
stored copy of ledgit's own result of that call (taken before the timing; same advertised
output schema, same text block), timed in turn too. It is what the SDK and the transport
alone cost to carry that result (~10 KB for 20 full rows): the report gives it as "same
result, no work", and ledgit's own work as the op minus it (lines marked "not a budget").
``--report`` rewrites the report from results/mcp_latest.json without measuring.

What an answer costs an agent (issue 33, DESIGN §14), measured with every run and alone with
``--costs`` (default sizes 200, 2,000 and 10,000; results/mcp_costs.{md,json}): the tool
listing's size, the first page of ``list`` and ``search`` (bytes of the JSON-RPC message,
rows, tokens), and how many answers it takes to page to the end, with the default page (20
rows) and with ``limit`` past the budget (each page as full as the 64 KB budget allows).
Tokens are bytes / 4 (no tokenizer package is installed here; a real tokenizer counts JSON's
punctuation and ids differently).
Backlog.md's server (npm ``backlog.md``, ``backlog mcp start``)
is installed with ``npm install --prefix`` into the bench's temp dir and timed through the
same client over stdio on a 1,000-task board of the same shapes (skipped, with the reason,
when npm or the install fails). Writes bench/results/mcp_latest.md and mcp_latest.json.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from ledgit.mcp.server import build_server
from ledgit.storage.board import Board
from ledgit.storage.index import Index
from ledgit.storage.indexrefresh import RACY_WINDOW_NS

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import mcp_noop_server  # noqa: E402
import run as runbench  # noqa: E402

RESULTS = BENCH / "results"
OPS = ("get", "list", "search", "update", "claim")
READS = ("get", "list", "search")
WRITE_TASKS = 20  # ready tasks that update and claim go round, at every size
REPLAYED: dict[str, dict[str, Any]] = {"list": {"limit": 20},
                                      "search": {"text": runbench.SEARCH_TERM, "limit": 20}}
COST_SIZES = [200, 2_000, 10_000]
COSTED: dict[str, dict[str, Any]] = {"list": {}, "search": {"text": runbench.SEARCH_TERM}}
BYTES_PER_TOKEN = 4
FLOOR = {"get": "noop_async", "list": "noop_async", "search": "noop_async",
         "update": "noop", "claim": "noop"}  # the no-op tool of the same kind (module doc)


async def p50(call: Callable[[int], Awaitable[Any]], calls: int, warmup: int = 5
              ) -> dict[str, Any]:
    """Median (and p90) wall time in ms of ``call(i)`` over ``calls`` calls."""
    for i in range(warmup):
        await call(-1 - i)
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        await call(i)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[int(len(times) * 0.9) - 1], 3), "calls": calls}


def checked(result: Any, what: str) -> Any:
    if result.is_error:
        raise RuntimeError(f"{what}: {result.content[0].text[:300] if result.content else ''}")
    return result


def _stats(times: list[float]) -> dict[str, Any]:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[int(len(times) * 0.9) - 1], 3), "calls": len(times)}


async def _timed(call: Awaitable[Any], what: str) -> float:
    t0 = time.perf_counter()
    checked(await call, what)
    return (time.perf_counter() - t0) * 1000


async def ledgit_ops(client: Client, floor: Client, picks: dict[str, Any], calls: int
                     ) -> dict[str, Any]:
    """p50 of each op and of its floor (the no-op tool of :data:`FLOOR`, on ``floor``: a
    server on the same transport), call by call in turn: each op/floor ratio is taken under
    the same load (a shared machine's load moves within seconds)."""
    ids = picks["ids"]
    updates, claims = picks["update_ring"], picks["claim_ring"]

    async def get(i: int) -> float:
        return await _timed(client.call_tool("get", {"task": ids[(i * 7919) % len(ids)]}),
                            "get")

    async def listing(i: int) -> float:
        return await _timed(client.call_tool("list", {"limit": 20}), "list")

    async def search(i: int) -> float:
        return await _timed(client.call_tool("search", {"text": runbench.SEARCH_TERM,
                                                        "limit": 20}), "search")

    async def update(i: int) -> float:
        return await _timed(client.call_tool("update", {"task": updates[i % len(updates)],
                                                        "response": f"bench call {i}"}),
                            "update")

    async def claim(i: int) -> float:  # claim, then an untimed release (open again)
        task = claims[i % len(claims)]
        took = await _timed(client.call_tool("claim", {"task": task}), "claim")
        checked(await client.call_tool("claim", {"task": task, "action": "release"}),
                "release")
        return took

    out: dict[str, Any] = {}
    floors: dict[str, list[float]] = {"noop": [], "noop_async": []}
    for name, fn in (("get", get), ("list", listing), ("search", search), ("update", update),
                     ("claim", claim)):
        noop = FLOOR[name]
        replay = name in REPLAYED
        for i in range(5):
            await fn(-1 - i)
            await _timed(floor.call_tool(noop, {}), noop)
        mine, theirs, carried = [], [], []
        for i in range(calls):
            mine.append(await fn(i))
            theirs.append(await _timed(floor.call_tool(noop, {}), noop))
            if replay:
                carried.append(await _timed(floor.call_tool("replay", {"name": name}),
                                            "replay"))
        out[name] = {**_stats(mine), "floor": noop,
                     "floor_p50_ms": _stats(theirs)["p50_ms"]}
        if replay:
            out[name]["same_result_p50_ms"] = _stats(carried)["p50_ms"]
        if name == "claim":
            out[name]["note"] = "claim only; an untimed release follows each"
        floors[noop] += theirs
    out.update({noop: _stats(times) for noop, times in floors.items()})
    return out


def message_bytes(result: Any) -> int:
    """The bytes of the JSON-RPC message that carries ``result`` (as the SDK sends it)."""
    message = {"jsonrpc": "2.0", "id": 1,
               "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())


async def pages_to_the_end(client: Client, name: str, args: dict[str, Any]
                           ) -> dict[str, Any]:
    """Answers (pages) it takes to read every match of ``name(args)`` by its cursors, the
    largest answer's bytes, and whether every task came exactly once."""
    cursor, pages, largest, ids = None, 0, 0, []
    while True:
        result = checked(await client.call_tool(name, {**args, **(
            {"cursor": cursor} if cursor else {})}), name)
        value = result.structured_content
        pages += 1
        largest = max(largest, message_bytes(result))
        ids += [t["id"] for t in value["tasks"]]
        cursor = value["next_cursor"]
        if cursor is None:
            return {"pages": pages, "largest_bytes": largest, "total": value["total"],
                    "each_once": len(ids) == len(set(ids)) == value["total"]}


async def answer_costs(client: Client) -> dict[str, Any]:
    """What answers cost an agent on this board (module doc): the listing, the first
    pages of :data:`COSTED`, pages to the end."""
    tools = (await client.list_tools()).tools
    listing = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True)
                          for t in tools], separators=(",", ":"))
    out: dict[str, Any] = {"listing_bytes": len(listing.encode())}
    for name, args in COSTED.items():
        result = checked(await client.call_tool(name, args), name)
        value = result.structured_content
        rows = json.dumps(value["tasks"], ensure_ascii=False, separators=(",", ":"))
        out[name] = {"first_page_bytes": message_bytes(result), "rows": value["count"],
                     "total": value["total"],
                     "row_bytes": round(len(rows.encode()) / max(value["count"], 1), 1),
                     "default_pages": await pages_to_the_end(client, name, args),
                     "budget_pages": await pages_to_the_end(client, name,
                                                            {**args, "limit": 100_000})}
    return out


def write_rings(repo: Path, picks: dict[str, Any]) -> dict[str, Any]:
    """``picks`` plus ``update_ring`` and ``claim_ring``: two disjoint sets of up to
    :data:`WRITE_TASKS` ready tasks (open, unclaimed, dependencies done) of the board."""
    with Index.open(Board(repo)) as index:
        ready = [row["id"] for row in index.rows(ready=True, sort="created")]
    if len(ready) < 2:
        raise runbench.SetupError("the board has fewer than 2 ready tasks")
    half = min(WRITE_TASKS, len(ready) // 2)
    return {**picks, "update_ring": ready[:half], "claim_ring": ready[half:2 * half]}


def settle(repo: Path) -> float:
    """Sleep until the newest task file is older than the index's racy window (module
    doc); returns the seconds slept."""
    tasks = repo / ".ledgit" / "tasks"
    newest = max((p.stat().st_mtime_ns for p in tasks.iterdir()), default=0)
    wait = (newest + RACY_WINDOW_NS - time.time_ns()) / 1e9 + 0.2
    if wait > 0:
        time.sleep(wait)
    return max(wait, 0.0)


def ledgit_stdio(repo: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=runbench.ledgit_argv()[0],
                                 args=[*runbench.ledgit_argv()[1:], "mcp"], cwd=str(repo),
                                 env=env)


def noop_stdio(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=[str(BENCH / "mcp_noop_server.py")], env=env)


async def results_to_replay(client: Client) -> dict[str, Any]:
    """ledgit's results of the :data:`REPLAYED` calls and their advertised output schema,
    for the no-op server's ``replay`` (bench/mcp_noop_server.py)."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    schemas = {json.dumps(tools[name].output_schema, sort_keys=True) for name in REPLAYED}
    if len(schemas) != 1:
        raise RuntimeError("list and search advertise different output schemas")
    results = {name: checked(await client.call_tool(name, args), name)
               for name, args in REPLAYED.items()}
    return {"schema": json.loads(schemas.pop()),
            "payloads": {name: r.structured_content for name, r in results.items()},
            "texts": {name: r.content[0].text for name, r in results.items()}}


async def bench_size(repo: Path, picks: dict[str, Any], env: dict[str, str], calls: int
                     ) -> dict[str, Any]:
    result: dict[str, Any] = {}
    replay_file = repo.parent / f"{repo.name}-replay.json"
    old = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)  # the in-process server acts as the subprocess would
    try:
        server, boards = build_server(repo)
        try:
            async with Client(server) as client:
                replayed = await results_to_replay(client)
                result["costs"] = await answer_costs(client)
            replay_file.write_text(json.dumps(replayed), encoding="utf-8")
            async with Client(server) as client, \
                    Client(mcp_noop_server.build(replayed)) as floor:  # type: ignore[arg-type]
                result["in-process"] = {"protocol": client.protocol_version,
                                        **await ledgit_ops(client, floor, picks, calls)}
        finally:
            boards.close()
    finally:
        os.environ.clear()
        os.environ.update(old)
    floor_env = {**env, mcp_noop_server.REPLAY_ENV: str(replay_file)}
    async with Client(ledgit_stdio(repo, env)) as client, \
            Client(noop_stdio(floor_env)) as floor:  # type: ignore[arg-type]
        result["stdio"] = {"protocol": client.protocol_version,
                           **await ledgit_ops(client, floor, picks, calls)}
    return result


# --------------------------------------------------------------------------- Backlog.md


def install_backlog(tmp: Path) -> tuple[list[str] | None, str]:
    """(argv of ``backlog``, version): ``$BACKLOG_BIN`` (as bench/run.py), else from ``npm
    install --prefix TMP/npm backlog.md``; or (None, why not)."""
    given = os.environ.get("BACKLOG_BIN")
    if given:
        exe = Path(given)
    else:
        npm = shutil.which("npm")
        if npm is None:
            return None, "npm not found"
        prefix = tmp / "npm"
        try:
            runbench.sh([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                         "backlog.md"], tmp, dict(os.environ), timeout=900)
        except runbench.SetupError as exc:
            return None, f"npm install backlog.md failed: {exc}"
        exe = prefix / "node_modules" / ".bin" / "backlog"
    if not exe.exists():
        return None, f"{exe} missing after npm install"
    try:
        version = runbench.sh([str(exe), "--version"], tmp, dict(os.environ)).stdout.strip()
    except runbench.SetupError as exc:
        return None, str(exc)
    return [str(exe)], version


def _arg(schema: dict[str, Any], *names: str) -> str | None:
    props = schema.get("properties", {})
    return next((n for n in names if n in props), None)


async def backlog_ops(argv: list[str], repo: Path, env: dict[str, str],
                      picks: dict[str, Any], calls: int) -> dict[str, Any]:
    """get/list/search/edit through Backlog.md's own MCP tools (chosen by name from its
    listing; the arguments used are reported)."""
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "mcp", "start"],
                                   cwd=str(repo), env=env)
    out: dict[str, Any] = {}
    async with Client(params) as client:  # type: ignore[arg-type]
        out["protocol"] = client.protocol_version
        tools = {t.name: t for t in (await client.list_tools()).tools}
        out["tools"] = sorted(tools)

        def pick(*names: str) -> Any:
            return next((tools[n] for n in names if n in tools), None)

        plan: dict[str, tuple[str, Callable[[int], dict[str, Any]]]] = {}
        view = pick("task_view", "task_get", "get_task")
        if view is not None:
            key = _arg(view.input_schema, "id", "taskId", "task_id") or "id"
            plan["get"] = (view.name, lambda i: {key: picks["get"]})
        lst = pick("task_list", "list_tasks")
        if lst is not None:
            lim = _arg(lst.input_schema, "limit")
            plan["list"] = (lst.name, lambda i: {lim: 20} if lim else {})
        srch = pick("task_search", "search", "search_tasks")
        if srch is not None:
            q = _arg(srch.input_schema, "query", "q", "text", "search") or "query"
            lim = _arg(srch.input_schema, "limit")
            plan["search"] = (srch.name, lambda i: {q: runbench.SEARCH_TERM,
                                                    **({lim: 20} if lim else {})})
        edit = pick("task_edit", "task_update", "edit_task", "update_task")
        if edit is not None:
            key = _arg(edit.input_schema, "id", "taskId", "task_id") or "id"
            field = _arg(edit.input_schema, "notesAppend", "notes", "implementationNotes",
                         "description", "title")
            prop = edit.input_schema.get("properties", {}).get(field or "title", {})
            as_list = prop.get("type") == "array"
            plan["update"] = (edit.name, lambda i: {
                key: picks["update"],
                field or "title": [f"bench call {i}"] if as_list else f"bench call {i}"})
        out["calls_used"] = {op: {"tool": name, "args": make(0)}
                             for op, (name, make) in plan.items()}
        for op, (name, make) in plan.items():
            async def call(i: int, name: str = name,
                           make: Callable[[int], dict[str, Any]] = make) -> None:
                checked(await client.call_tool(name, make(i)), f"backlog {name}")

            try:
                out[op] = await p50(call, calls, warmup=3)
            except RuntimeError as exc:
                out[op] = {"error": str(exc)}
    return out


# --------------------------------------------------------------------------- report


def budget_lines(data: dict[str, Any]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    sizes = sorted(int(s) for s in data["ledgit"])
    big, small = max(sizes), min(sizes)
    for transport in ("in-process", "stdio"):
        at = data["ledgit"][str(big)][transport]
        for op in OPS:
            limit = 2.0 if op in READS else 6.0
            floor = at[op]["floor_p50_ms"]  # measured in turn with this op (ledgit_ops)
            r = at[op]["p50_ms"] / floor
            lines.append({"budget": f"MCP {transport} {op} p50 <= {limit:g}x no-op "
                                    f"({FLOOR[op]}, {big:,} tasks)",
                          "figure": f"{at[op]['p50_ms']:.2f} / {floor:.2f} ms = {r:.2f}x",
                          "status": "PASS" if r <= limit else "MISS"})
        for op in REPLAYED:
            same = at[op].get("same_result_p50_ms")
            if same is None:
                continue
            floor = at[op]["floor_p50_ms"]
            lines.append({"budget": f"(not a budget) MCP {transport} {op}: the SDK carrying "
                                    f"ledgit's same result, no work ({big:,} tasks)",
                          "figure": f"{same:.2f} / {floor:.2f} ms = {same / floor:.2f}x the "
                                    f"no-op; ledgit's own work {at[op]['p50_ms'] - same:.2f} "
                                    f"ms = {(at[op]['p50_ms'] - same) / floor:.2f}x",
                          "status": "info"})
        if big != small:
            low = data["ledgit"][str(small)][transport]
            for op in OPS:
                # Judged on op/floor (each timed in turn with its floor): the two sizes run
                # minutes apart, and a shared machine's load moves more than 20% in that time.
                raw = at[op]["p50_ms"] / low[op]["p50_ms"]
                r = (at[op]["p50_ms"] / at[op]["floor_p50_ms"]) / (
                    low[op]["p50_ms"] / low[op]["floor_p50_ms"])
                lines.append({"budget": f"MCP {transport} {op} flat {small:,} -> {big:,} "
                                        f"(within 20%, x floor)",
                              "figure": f"{at[op]['p50_ms'] / at[op]['floor_p50_ms']:.2f}x / "
                                        f"{low[op]['p50_ms'] / low[op]['floor_p50_ms']:.2f}x"
                                        f" = {r:.2f} (raw {at[op]['p50_ms']:.2f} / "
                                        f"{low[op]['p50_ms']:.2f} ms = {raw:.2f})",
                              "status": "PASS" if r <= 1.2 else "MISS"})
    peer = data.get("backlog", {})
    if peer.get("skipped"):
        lines.append({"budget": "vs Backlog.md MCP >= 10x per call", "figure":
                      f"skipped: {peer['skipped']}", "status": "n/a"})
    elif peer:
        mine = data["ledgit_backlog_board"]["stdio"]
        for op in ("get", "list", "search", "update"):
            theirs = peer.get(op, {}).get("p50_ms")
            label = "edit" if op == "update" else op
            if theirs is None:
                lines.append({"budget": f"vs Backlog.md MCP {label} >= 10x", "figure":
                              f"no Backlog.md figure: {peer.get(op, {}).get('error', 'no tool')}",
                              "status": "n/a"})
                continue
            r = theirs / mine[op]["p50_ms"]
            lines.append({"budget": f"vs Backlog.md MCP {label} >= 10x (stdio, "
                                    f"{data['backlog_size']:,} tasks)",
                          "figure": f"{theirs:.2f} / {mine[op]['p50_ms']:.2f} ms = {r:.1f}x",
                          "status": "PASS" if r >= 10 else "MISS"})
    return lines


def cost_lines(costs: dict[str, Any]) -> list[str]:
    """The table of what answers cost an agent, by board size (Markdown lines)."""
    out = ["| tasks | tool listing | first page of `list` | of `search` | bytes (tokens) a "
           "row, list / search | answers to the end: list, 20 a page / full pages | search, "
           "the same |", "|---:|---|---|---|---|---|---|"]
    for size, c in sorted(costs.items(), key=lambda kv: int(kv[0])):
        rows = " / ".join(f"{c[n]['row_bytes']:.0f} ({c[n]['row_bytes'] / BYTES_PER_TOKEN:.0f})"
                          for n in COSTED)
        out.append(f"| {int(size):,} | {c['listing_bytes']:,} B = "
                   f"{c['listing_bytes'] // BYTES_PER_TOKEN:,} tokens | {_first(c['list'])} | "
                   f"{_first(c['search'])} | {rows} | {_ends(c['list'])} | "
                   f"{_ends(c['search'])} |")
    return out + ["", f"Tokens: bytes / {BYTES_PER_TOKEN} (no tokenizer package); search "
                      f"{runbench.SEARCH_TERM!r}; list and search without filters (archived "
                      f"tasks hidden)."]


def _first(p: dict[str, Any]) -> str:
    return (f"{p['first_page_bytes']:,} B = {p['first_page_bytes'] // BYTES_PER_TOKEN:,} "
            f"tokens, {p['rows']} of {p['total']:,}")


def _ends(c: dict[str, Any]) -> str:
    d, b = c["default_pages"], c["budget_pages"]
    ok = "" if d["each_once"] and b["each_once"] else " (NOT each task once)"
    return f"{d['pages']:,} / {b['pages']:,} (largest {b['largest_bytes']:,} B){ok}"


def write_costs(costs: dict[str, Any], when: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mcp_costs.json").write_text(json.dumps(costs, indent=2) + "\n",
                                            encoding="utf-8")
    (RESULTS / "mcp_costs.md").write_text(
        "\n".join(["# What ledgit mcp's answers cost an agent", "", when, "",
                   *cost_lines(costs)]) + "\n", encoding="utf-8")


async def costs_of(repo: Path, env: dict[str, str]) -> dict[str, Any]:
    old = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        server, boards = build_server(repo)
        try:
            async with Client(server) as client:
                return await answer_costs(client)
        finally:
            boards.close()
    finally:
        os.environ.clear()
        os.environ.update(old)


def write_report(data: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mcp_latest.json").write_text(json.dumps(data, indent=2) + "\n",
                                             encoding="utf-8")
    out = ["# ledgit mcp bench", "", f"{data['when']} · {data['machine']} · "
           f"{data['calls']} calls per figure (p50) · SDK mcp {data['sdk']}", ""]
    for size, per in sorted(data["ledgit"].items(), key=lambda kv: int(kv[0])):
        out += [f"## {int(size):,} tasks", "", "| op | in-process p50 ms (floor) [same "
                "result, no work] | stdio p50 ms (floor) [same result, no work] | floor tool "
                "|", "|---|---|---|---|"]
        for op in OPS:
            cells = [f"{per[t][op]['p50_ms']:.2f} ({per[t][op]['floor_p50_ms']:.2f})"
                     + (f" [{per[t][op]['same_result_p50_ms']:.2f}]"
                        if "same_result_p50_ms" in per[t][op] else "")
                     for t in ("in-process", "stdio")]
            out.append(f"| {op} | {cells[0]} | {cells[1]} | {FLOOR[op]} |")
        for op in ("noop", "noop_async"):
            out.append(f"| {op} (all floor calls) | {per['in-process'][op]['p50_ms']:.2f} | "
                       f"{per['stdio'][op]['p50_ms']:.2f} | |")
        out.append(f"\nprotocol: in-process {per['in-process']['protocol']}, stdio "
                   f"{per['stdio']['protocol']}\n")
    if data.get("backlog"):
        out += ["## vs Backlog.md's MCP server", "", json.dumps(data["backlog"], indent=1)[:4000],
                ""]
    costs = {size: per["costs"] for size, per in data["ledgit"].items() if "costs" in per}
    if costs:
        out += ["## What answers cost an agent", "", *cost_lines(costs), ""]
    out += ["## Budgets", "", "| budget | figure | status |", "|---|---|---|"]
    out += [f"| {b['budget']} | {b['figure']} | {b['status']} |" for b in data["budgets"]]
    (RESULTS / "mcp_latest.md").write_text("\n".join(out) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--backlog-size", type=int, default=1_000)
    parser.add_argument("--no-backlog", action="store_true")
    parser.add_argument("--data", type=Path, default=runbench.DEFAULT_DATA)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--report", action="store_true",
                        help="rewrite the report from results/mcp_latest.json")
    parser.add_argument("--costs", action="store_true",
                        help="only what answers cost an agent (default sizes 200 2000 10000)")
    args = parser.parse_args(argv)
    if args.costs:
        return costs_main(args.sizes if "--sizes" in (argv or sys.argv) else COST_SIZES,
                          args.data)
    if args.report:
        data = json.loads((RESULTS / "mcp_latest.json").read_text(encoding="utf-8"))
        data["budgets"] = budget_lines(data)
        write_report(data)
        for line in data["budgets"]:
            print(f"{line['status']:5} {line['budget']}: {line['figure']}")
        return 0
    if not args.data.exists():
        print(f"mcp_bench: {args.data} not found (the real task shapes)", file=sys.stderr)
        return 2
    shapes = runbench.load_shapes(args.data)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-mcp-bench-"))
    data: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                                       f"Python {platform.python_version()}",
                            "sdk": importlib.metadata.version("mcp"), "calls": args.calls,
                            "ledgit": {}}
    try:
        env = runbench.git_env(tmp / "home")
        (tmp / "home").mkdir()
        (tmp / "home" / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        for size in args.sizes:
            repo = tmp / f"ledgit-{size}"
            print(f"building a {size:,}-task board ...", file=sys.stderr)
            picks = write_rings(repo, runbench.build_ledgit(
                repo, runbench.board_shapes(shapes, size), env))
            settle(repo)
            data["ledgit"][str(size)] = anyio.run(bench_size, repo, picks, env, args.calls)
            print(json.dumps(data["ledgit"][str(size)]), file=sys.stderr)
        if not args.no_backlog:
            size = args.backlog_size
            data["backlog_size"] = size
            exe, version = install_backlog(tmp)
            if exe is None:
                data["backlog"] = {"skipped": version}
            else:
                board_shapes = runbench.board_shapes(shapes, size)
                peer = runbench.Peer("backlog", exe, version=version)
                brepo = tmp / f"backlog-{size}"
                bpicks = runbench.build_backlog(peer, brepo, board_shapes, env)
                lrepo = tmp / f"ledgit-backlog-{size}"
                lpicks = write_rings(lrepo, runbench.build_ledgit(lrepo, board_shapes, env))
                settle(lrepo)
                data["ledgit_backlog_board"] = anyio.run(bench_size, lrepo, lpicks, env,
                                                         args.calls)
                try:
                    data["backlog"] = {"version": version, **anyio.run(
                        backlog_ops, exe, brepo, env, bpicks, max(args.calls // 4, 20))}
                except Exception as exc:  # noqa: BLE001 - a peer failing is a figure
                    data["backlog"] = {"skipped": f"backlog mcp start failed: "
                                                  f"{type(exc).__name__}: {exc}"}
        data["budgets"] = budget_lines(data)
        write_report(data)
        for line in data["budgets"]:
            print(f"{line['status']:5} {line['budget']}: {line['figure']}")
        return 0
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def costs_main(sizes: list[int], data_file: Path) -> int:
    """``--costs``: build each board, measure :func:`answer_costs`, write the table."""
    if not data_file.exists():
        print(f"mcp_bench: {data_file} not found (the real task shapes)", file=sys.stderr)
        return 2
    shapes = runbench.load_shapes(data_file)
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-mcp-costs-"))
    try:
        env = runbench.git_env(tmp / "home")
        (tmp / "home").mkdir()
        (tmp / "home" / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        costs: dict[str, Any] = {}
        for size in sizes:
            repo = tmp / f"ledgit-{size}"
            print(f"building a {size:,}-task board ...", file=sys.stderr)
            runbench.build_ledgit(repo, runbench.board_shapes(shapes, size), env)
            costs[str(size)] = anyio.run(costs_of, repo, env)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        write_costs(costs, f"{when} · ledgit {importlib.metadata.version('ledgit')}")
        print("\n".join(cost_lines(costs)))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
