"""The per-task write lock (DESIGN §2, §6): an advisory flock on ``<private dir>/locks/<ID>.lock``
that also remembers the temp file its holder is writing, so that the next holder removes
what a killed writer left (issue 13). Imported by writes only."""

from __future__ import annotations

import os
import sys

from ledgit.storage.locks import FileLock

# temp files: .<id>.md.tmp-<pid>-<random>, in the tasks dir (ledgit.storage.taskfiles)
TMP_MARK = ".md.tmp-"


class TaskLock(FileLock):
    """A task's :class:`FileLock` that also remembers the temp file its holder is writing
    (its name, one line in the lock file while the file exists): a writer killed between
    creating and renaming it leaves the name behind, and the next holder of the lock, whose
    writer is then gone for sure, removes that file (issue 13; O(1) per write, no listing of
    the tasks dir)."""

    def __init__(self, path: str, timeout: float, busy: str, tasks_dir: str) -> None:
        super().__init__(path, timeout, busy)
        self.tasks_dir = tasks_dir

    def __enter__(self) -> None:
        super().__enter__()
        fd = self._fd
        if fd is None:
            return
        try:
            noted = os.pread(fd, 512, 0)
        except OSError:
            return
        if not noted:
            return
        name = os.fsdecode(noted.split(b"\n", 1)[0])
        if name.startswith(".") and TMP_MARK in name and os.sep not in name:
            try:
                os.unlink(os.path.join(self.tasks_dir, name))
                sys.stderr.write(f"ledgit: note: removed {name}, the temp file of a write "
                                 f"that was killed\n")
            except OSError:
                pass
        self.forget()

    @property
    def held(self) -> bool:
        """This process holds the lock through its own flock (not the Windows fallback)."""
        return self._fd is not None

    def note(self, name: str) -> None:
        """Remember ``name`` (a temp file in the tasks dir) until :meth:`forget`."""
        if self._fd is not None:
            try:
                os.pwrite(self._fd, os.fsencode(name) + b"\n", 0)
            except OSError:
                return  # a lock file of another user (read-only): doctor --repair removes it

    def forget(self) -> None:
        """The noted temp file is gone (renamed or removed)."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                return
