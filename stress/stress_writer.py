"""A ledgit writer that can be killed at a chosen point of the write path (issue 7, crashes).

Usage: ``python stress_writer.py PLAN.json``. The plan::

    {"root": "<board root>", "ops": [["update", "T-x", "--response", "r"], ...],
     "kill": {"point": "<point>", "at": <k>, "fraction": <0..1>} | null}

Runs each op through ``ledgit.cli.main.run`` (the CLI's own entry point, in this one process, so a
kill lands inside a real write) with ``--json``, and after each exit-0 op writes one
acknowledgement line ``{"i", "op", "code", "out"}`` to stdout (unbuffered) -- what a caller
would have been told. With ``kill``, the process SIGKILLs itself at the ``at``-th (1-based)
arrival at ``point``:

* ``history-append``: part-way through appending events (``fraction`` of the bytes written);
* ``tmp-write``: part-way through writing the task file's temp copy;
* ``before-rename``: the temp file complete and fsynced, not yet renamed over the task file;
* ``after-rename``: renamed, the directory not yet fsynced (the write is whole);
* ``index-txn``: inside an index write transaction, at an INSERT (old rows deleted, new
  ones not all inserted); this also hits a read's refresh (``list``) and ``cache rebuild``.

Not a test module: the stress suite runs it as a subprocess.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def install_kill(point: str, at: int, fraction: float) -> None:
    """Patch the process so that the ``at``-th arrival at ``point`` kills it.

    The hooks sit at the operating-system and SQLite level (``os.write``, ``os.replace``,
    ``os.fsync``, ``sqlite3.connect``'s trace callback), not on ledgit's private functions,
    so a refactoring of the write path cannot silently disarm them.
    """
    import sqlite3

    count = {"n": 0}

    def arrive() -> bool:
        count["n"] += 1
        return count["n"] == at

    if point in ("history-append", "tmp-write"):
        real_write = os.write

        def is_target(fd: int) -> bool:
            path = _fd_path(fd)
            if point == "history-append":
                return "/.ledgit/history/" in path and path.endswith(".jsonl")
            return "/.ledgit/tasks/" in path and ".md.tmp" in path

        def write(fd: int, data: Any) -> int:
            if is_target(fd) and arrive():
                cut = int(len(data) * fraction)
                done = 0
                while done < cut:
                    done += real_write(fd, bytes(data[done:cut]))
                _die()
            return real_write(fd, data)

        os.write = write
    elif point == "before-rename":
        real_replace = os.replace

        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if ".md.tmp" in os.fspath(src) and arrive():
                _die()
            real_replace(src, dst, *args, **kwargs)

        os.replace = replace
    elif point == "after-rename":
        real_fsync = os.fsync

        def fsync(fd: Any) -> None:
            if isinstance(fd, int) and _fd_path(fd).endswith("/.ledgit/tasks") and arrive():
                _die()
            real_fsync(fd)

        os.fsync = fsync
    elif point == "index-txn":
        real_connect = sqlite3.connect
        state = {"in_txn": False}

        def trace(statement: str) -> None:
            head = statement.lstrip()[:16].upper()
            if head.startswith("BEGIN"):
                state["in_txn"] = True
            elif head.startswith(("COMMIT", "ROLLBACK")):
                state["in_txn"] = False
            elif state["in_txn"] and head.startswith("INSERT") and arrive():
                _die()

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            db = real_connect(*args, **kwargs)
            db.set_trace_callback(trace)
            return db

        sqlite3.connect = connect  # type: ignore[assignment]
        # ledgit.storage.indexfiles uses the C module directly (no datetime import): patch it
        # there too
        import _sqlite3

        _sqlite3.connect = connect
    else:
        raise SystemExit(f"unknown kill point {point!r}")


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    os.chdir(plan["root"])
    kill = plan.get("kill")
    if kill:
        install_kill(kill["point"], int(kill["at"]), float(kill.get("fraction", 0.5)))
    from ledgit.cli.main import run

    for i, args in enumerate(plan["ops"]):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = run([*args, "--json"])
        line = json.dumps({"i": i, "op": args, "code": code, "out": out.getvalue(),
                           "err": err.getvalue()})
        os.write(1, (line + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
