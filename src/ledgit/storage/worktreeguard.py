"""A write never interleaves with Git updating the work tree (issue 25; DESIGN §6).

``git checkout``, ``switch``, ``reset``, ``merge``, ``rebase`` and ``am`` rewrite the work
tree while they hold the worktree's ``index.lock`` (Git's lockfile protocol: created with
``O_EXCL``, renamed over ``index`` when done, api-lockfile). A ledgit write that read a task
file of one branch and appended to a history of another would acknowledge an event that no
branch holds as written. So every write (:mod:`ledgit.storage.writepath`) holds that same lock for
the few milliseconds from its read to its rename:

* while Git holds it, the write waits (up to its lock timeout), then refuses with exit 5
  naming the file -- it never writes into a half-switched work tree; after a wait the lock
  must stay free for :data:`SETTLE` seconds, so that a write does not take it in the gap
  between two takes of one Git command;
* while the write holds it, Git refuses to start (``index.lock: File exists``) and changes
  nothing: run the Git command again.

The lock file says ``ledgit <pid>``; one left by a killed ledgit (its process gone) is removed
by the next write. A board outside any Git work tree has nothing to guard.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from ledgit.core.errors import BUSY, LedgitError
from ledgit.storage.locate import git_dir_for
from ledgit.storage.oserrors import os_refusal

if TYPE_CHECKING:
    from collections.abc import Iterator

POLL = 0.002  # seconds between two looks at a lock Git (or another write) holds
# After waiting, the lock must stay free this long before a write takes it: a Git command takes
# index.lock more than once (git merge: refresh, then merge), and a write that took it in the
# gap would make the second take fail ("index.lock: File exists").
SETTLE = 0.1
MARK = b"ledgit "


def _lock_path(root: str) -> str | None:
    """The ``index.lock`` Git takes for the work tree holding ``root`` (``GIT_INDEX_FILE``
    is a per-command setting, not the worktree's: ignored), None outside Git."""
    git_dir = git_dir_for(root)
    if git_dir is None or not os.path.isdir(git_dir):
        return None
    return os.path.join(git_dir, "index.lock")


def _stale_ledgit_lock(path: str) -> bool:
    """True when ``path`` is a lock a ledgit process took and that process is gone."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    if not head.startswith(MARK):
        return False
    try:
        pid = int(head[len(MARK):].split(b"\n", 1)[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


@contextlib.contextmanager
def worktree_quiet(root: str, timeout: float) -> Iterator[None]:
    """Hold Git's ``index.lock`` of the work tree holding ``root`` while the block runs.

    Waits up to ``timeout`` seconds while Git (or another ledgit write) holds it; then
    raises LedgitError exit 5. Removes a lock left by a dead ledgit process. Does nothing
    outside a Git work tree, or where the git directory cannot be written (a read-only
    mount: nothing can update that work tree either)."""
    path = _lock_path(root)
    fd = -1 if path is None else _take(path, timeout)
    if fd >= 0 and path is not None:
        try:
            os.write(fd, MARK + str(os.getpid()).encode() + b"\n")
        except OSError as exc:  # a full disk: no lock left behind for Git to trip on
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            refusal = os_refusal(exc, path)
            refusal.message += "; nothing was written"
            raise refusal from None
        os.close(fd)
    try:
        yield
    finally:
        if fd >= 0 and path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _take(path: str, timeout: float) -> int:
    """The descriptor of ``path`` created exclusively, -1 where the git directory cannot be
    written; waits while it exists (exit 5 after ``timeout`` seconds)."""
    deadline = time.monotonic() + max(timeout, 0.0)
    waited = False
    while True:
        if waited and not os.path.exists(path):
            time.sleep(SETTLE)  # free now: still free a moment later?
            if os.path.exists(path) and time.monotonic() < deadline:
                continue
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            waited = True
            if _stale_ledgit_lock(path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            if time.monotonic() >= deadline:
                raise LedgitError(
                    f"Git is updating the work tree ({path} exists: a checkout, switch, "
                    f"reset, merge or rebase is running); nothing written: run the command "
                    f"again when it is done (no git running? remove that file)",
                    BUSY) from None
            time.sleep(POLL)
        except OSError:
            return -1  # a git dir we cannot write to: no Git can update this work tree
