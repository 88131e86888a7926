"""A helper process that creates the histories of a large bulk import while the importing
process creates the task files (:class:`HistoryWriter`; Linux, forked before the source is
loaded). Measured: docs/interop.md, "Speed"."""

from __future__ import annotations

import fcntl
import marshal
import os
import signal
import sys
from collections.abc import Sequence
from contextlib import suppress
from itertools import accumulate
from typing import Any

from ledgit.core.errors import LedgitError
from ledgit.interop.staging import create_all
from ledgit.storage.taskfiles import write_all

#: Imports of at least this many new tasks write the histories in a HistoryWriter, which
#: is spawned for a source file of at least HELPER_MIN_BYTES (before it is loaded).
FORK_MIN, HELPER_MIN_BYTES = 1000, 512 * 1024


def _can_fork() -> bool:
    """True where :class:`HistoryWriter` may fork: Linux (where it was measured; macOS
    advises against fork without exec), and no other thread running (a fork copies only
    the calling thread; locks another one holds would stay held)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class HistoryWriter:
    """A helper process that creates the histories of a bulk import (:func:`create_all`)
    while this one creates the task files: file creation is mostly kernel time, which two
    processes spend on two CPUs (a thread would be serialised by the GIL for its share).

    It is forked by :meth:`spawn` before the source is loaded, while the process is small:
    a fork write-protects every page of the parent, and each page the parent writes after
    it costs a fault (~10,000 of them, ~20 ms, when forked with the records loaded). It
    waits on a pipe for one request (:meth:`send`: the directories, the names, the bytes
    as one buffer), creates the files, and answers through another pipe (marshal) with the
    directory that holds them or the error (:meth:`join`). It never returns into the
    caller's code (``os._exit``); it exits when the request pipe closes (:meth:`close`).
    Whatever it leaves is in the staging directory, removed by the caller."""

    def __init__(self, pid: int, request: int, reply: int) -> None:
        self.pid, self.request, self.reply = pid, request, reply
        self.busy = False  # a request was sent and its answer not read
        self.closed = False

    @classmethod
    def spawn(cls) -> HistoryWriter | None:
        """Fork a writer; None where :func:`_can_fork` says no."""
        if not _can_fork():
            return None
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        _grow_pipe(req_w)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            code = 1
            try:
                os.close(req_w)
                os.close(rep_r)
                code = _serve(req_r, rep_w)
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        return cls(pid, req_w, rep_r)

    def send(self, staging: str, directory: str,
             files: Sequence[tuple[str, bytes]]) -> None:
        """Ask the writer to create ``files`` ((name, bytes) pairs) in ``directory``."""
        ends = list(accumulate(len(data) for _, data in files))
        header = marshal.dumps((staging, directory, [name for name, _ in files], ends))
        self.busy = True
        try:
            write_all(self.request, len(header).to_bytes(8, "little") + header)
            for n in range(0, len(files), 512):  # gathered writes: no copy into one buffer
                chunk = [data for _, data in files[n:n + 512]]
                done = os.writev(self.request, chunk)
                if done != sum(len(data) for data in chunk):
                    write_all(self.request, b"".join(chunk)[done:])
        except BrokenPipeError:  # it stopped reading: its answer says why
            self.join()
            raise LedgitError("import: the history writer stopped", 1) from None

    def join(self) -> str:
        """Wait for the answer: the directory that holds the files. Raises the writer's
        OSError again, or LedgitError (exit 1) for anything else."""
        chunks = []
        while chunk := os.read(self.reply, 1 << 16):
            chunks.append(chunk)
        self.busy = False
        try:
            kind, what = marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            raise LedgitError("import: the history writer failed", 1) from None
        if kind == 1:
            raise OSError(*what)
        if kind != 0:
            raise LedgitError(f"import: writing the histories failed: {what}", 1)
        return str(what)

    def close(self) -> None:
        """End the writer: it exits when its request pipe closes (killed when it is still
        working on a request: the caller is failing). Reaps it."""
        if self.closed:
            return
        self.closed = True
        os.close(self.request)
        if self.busy:
            with suppress(OSError):  # gone already
                os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.reply)


def _serve(request: int, reply: int) -> int:  # pragma: no cover - runs in the child
    """The writer's side of :class:`HistoryWriter`: one request, one answer. Returns the
    exit code."""
    head = _read_exact(request, 8)
    if head is None:
        return 0  # closed without a request
    try:
        body = _read_exact(request, int.from_bytes(head, "little"))
        staging, directory, names, ends = marshal.loads(body or b"")
        view = memoryview(bytearray(ends[-1] if ends else 0))
        done = 0
        while done < len(view):  # straight into one buffer
            got = os.readv(request, [view[done:]])
            if not got:
                raise EOFError("the request was cut short")
            done += got
        starts = [0, *ends[:-1]]
        files = [(name, view[a:b]) for name, a, b in zip(names, starts, ends, strict=True)]
        answer: tuple[int, Any] = (0, create_all(staging, directory, files, None, None))
    except OSError as exc:
        answer = (1, [exc.errno, exc.strerror, exc.filename])
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        answer = (2, f"{type(exc).__name__}: {exc}")
    write_all(reply, marshal.dumps(answer))
    return 0 if answer[0] == 0 else 1


def _read_exact(fd: int, n: int) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file before the first byte. Raises EOFError
    when the file ends in the middle."""
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            if left == n:
                return None
            raise EOFError("the request was cut short")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _grow_pipe(fd: int) -> None:
    """Make a pipe's buffer 1 MiB where Linux allows (fewer round trips; best effort)."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with suppress(OSError):
            fcntl.fcntl(fd, setpipe, 1 << 20)
