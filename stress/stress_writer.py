"""A ledgit writer that can be killed at a chosen point of the write path (issue 7, crashes).

Usage: ``python stress_writer.py PLAN.json``. The plan::

    {"root": "<board root>", "ops": [["update", "T-x", "--response", "r"], ...],
     "kill": {"point": "<point>", "at": <k>, "fraction": <0..1>} | null}

Runs each op through ``ledgit.cli.run`` (the CLI's own entry point, in this one process, so a
kill lands inside a real write) with ``--json``, and after each exit-0 op writes one
acknowledgement line ``{"i", "op", "code", "out"}`` to stdout (unbuffered) -- what a caller
would have been told. With ``kill``, the process SIGKILLs itself at the ``at``-th (1-based)
arrival at ``point``:

* ``history-append``: part-way through appending events (``fraction`` of the bytes written);
* ``tmp-write``: part-way through writing the task file's temp copy;
* ``before-rename``: the temp file complete and fsynced, not yet renamed over the task file;
* ``after-rename``: renamed, the directory not yet fsynced (the write is whole);
* ``index-txn``: inside the index's write transaction (rows deleted, new ones not inserted);
  this also hits a read's refresh (``list``/``get``) and ``cache rebuild``.

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
    """Patch the write path so that the ``at``-th arrival at ``point`` kills this process."""
    import ledgit.board as board
    import ledgit.index as index

    count = {"n": 0}

    def arrive() -> bool:
        count["n"] += 1
        return count["n"] == at

    if point in ("history-append", "tmp-write"):
        real_write_all = board._write_all
        want = ".jsonl" if point == "history-append" else board.TMP_MARK

        def write_all(fd: int, data: bytes) -> None:
            if want in _fd_path(fd) and arrive():
                cut = int(len(data) * fraction)
                if cut:
                    real_write_all(fd, data[:cut])
                _die()
            real_write_all(fd, data)

        board._write_all = write_all  # type: ignore[assignment]
    elif point == "before-rename":
        real_replace = os.replace

        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if board.TMP_MARK in os.fspath(src) and arrive():
                _die()
            real_replace(src, dst, *args, **kwargs)

        board.os.replace = replace  # type: ignore[assignment]
    elif point == "after-rename":
        real_fsync_dir = board._fsync_dir

        def fsync_dir(path: Path) -> None:
            if Path(path).name == board.TASKS_DIR and arrive():
                _die()
            real_fsync_dir(path)

        board._fsync_dir = fsync_dir
    elif point == "index-txn":
        real_insert = index.Index._insert

        def insert(self: Any, rows: Any) -> Any:
            if arrive():
                _die()
            return real_insert(self, rows)

        index.Index._insert = insert  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown kill point {point!r}")


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    os.chdir(plan["root"])
    kill = plan.get("kill")
    if kill:
        install_kill(kill["point"], int(kill["at"]), float(kill.get("fraction", 0.5)))
    from ledgit.cli import run

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
