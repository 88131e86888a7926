"""Ordered work over slices of a list in forked worker processes (DESIGN §10). Pure
standard library, import-light (no threading, pickle or multiprocessing at run time).

:func:`map_slices` cuts a list into contiguous slices, runs ``work(slice)`` for every slice
but the first in a child made by :func:`os.fork` and the first in the calling process, and
returns the results concatenated in list order: exactly ``work(items)``, given that ``work``
treats every item on its own. A child sends its result back through a pipe as
:mod:`marshal` data (so results must be marshal-able: tuples, lists, str, int, ...), and
ends with :func:`os._exit` (no atexit handlers, no flushing of inherited buffers). A child
that fails in any way (an exception, a signal, a short or unreadable result) has its slice
done again in the calling process, so a failure costs time, never a result.

The work runs serially when fork is unavailable (Windows), when the process runs threads
(forking them is unsafe: a lock another thread holds stays held in the child), when there is
one CPU, or when the list is too short to repay a fork (~1-3 ms each). The caller must not
hold anything the children would use and must not share, e.g. an open SQLite connection:
compute what it provides before calling.
"""

from __future__ import annotations

import marshal
import os
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: The most worker processes :func:`workers_for` picks (the calling process included).
MAX_WORKERS = 8


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """True when :func:`os.fork` exists and the process runs no other thread (forking a
    threaded process can deadlock the child; ``threading`` is not imported to ask)."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() <= 1


def workers_for(count: int, min_slice: int) -> int:
    """How many processes (the caller included) should share ``count`` items so that each
    gets at least ``min_slice`` of them: at most :func:`cpu_count` and :data:`MAX_WORKERS`,
    1 (serial) when forking is not possible (:func:`can_fork`)."""
    if min_slice < 1:
        raise ValueError("min_slice must be at least 1")
    n = min(cpu_count(), MAX_WORKERS, count // min_slice)
    return n if n > 1 and can_fork() else 1


def slices(items: Sequence[Any], parts: int) -> list[Sequence[Any]]:
    """``items`` cut into ``parts`` contiguous slices of nearly equal length (the first ones
    one longer), in order; fewer when there are fewer items. ``parts`` >= 1."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out: list[Sequence[Any]] = []
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def map_slices(items: Sequence[Any], work: Callable[[Sequence[Any]], list[Any]],
               workers: int) -> list[Any]:
    """``work(items)`` computed as ``work(s1) + work(s2) + ...`` over :func:`slices` of
    ``items``, the first slice in this process and each other one in a forked child, at once.

    ``work`` must give each item's results independently of the other items (so that the
    concatenation equals one call), return a list of marshal-able values, and not depend on
    state another process changes. ``workers`` <= 1, or no :func:`can_fork`, runs
    ``work(items)`` here. A child that fails has its slice done here again (see the module
    docstring). Exceptions of ``work`` in this process propagate; the children are then
    ended (SIGTERM, by pid) and reaped.
    """
    if workers <= 1 or len(items) < 2 or not can_fork():
        return work(items)
    parts = slices(items, workers)
    children: list[tuple[int, int, Sequence[Any]]] = []  # (pid, read end, slice)
    try:
        for part in parts[1:]:
            read_end, write_end = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no process to spare: this slice is done here, below
                os.close(read_end)
                os.close(write_end)
                children.append((-1, -1, part))
                continue
            if pid == 0:  # the child: never returns
                _child(read_end, write_end, work, part, marshal.dumps)
            os.close(write_end)  # before the next fork: a later child must not hold it
            children.append((pid, read_end, part))
        results = work(parts[0])
        for i, (pid, read_end, part) in enumerate(children):
            got = _collect(pid, read_end, marshal.loads) if pid > 0 else None
            children[i] = (-1, -1, part)  # reaped
            results.extend(work(part) if got is None else got)
        return results
    finally:
        for pid, read_end, _ in children:  # only after an exception here: end them
            if pid > 0:
                _end(pid, read_end)


def _child(read_end: int, write_end: int, work: Callable[[Sequence[Any]], list[Any]],
           part: Sequence[Any], dumps: Callable[[Any], bytes]) -> None:
    """Run in the forked child: ``work(part)`` marshalled to ``write_end``; exit 0 only when
    all of it was written."""
    code = 1
    try:
        os.close(read_end)
        data = memoryview(dumps(work(part)))
        while data:
            data = data[os.write(write_end, data):]
        code = 0
    except BaseException:  # noqa: BLE001, S110 - the parent does the slice again
        pass
    finally:
        os._exit(code)


def _collect(pid: int, read_end: int, loads: Callable[[bytes], Any]) -> list[Any] | None:
    """The child's result (read to end of file, then the child reaped), or None when it did
    not exit 0 or its data is not a marshalled list."""
    try:
        with open(read_end, "rb", buffering=0) as pipe:  # FileIO.readall: to EOF
            data = pipe.readall()
    except OSError:
        data = b""
        os.kill(pid, 15)
    status = _reap(pid)
    if status != 0 or not data:
        return None
    try:
        value = loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    return value if isinstance(value, list) else None


def _reap(pid: int) -> int | None:
    """The exit code of child ``pid`` once it has ended (None after a signal)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:  # pragma: no cover - retried by Python itself (PEP 475)
            continue
        except ChildProcessError:
            return None
        return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None


def _end(pid: int, read_end: int) -> None:
    """End child ``pid`` (SIGTERM) and reap it, closing its pipe (after an exception)."""
    with suppress(OSError):
        os.close(read_end)
    with suppress(OSError):
        os.kill(pid, 15)
    _reap(pid)
