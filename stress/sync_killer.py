"""``ledgit sync`` run in this process, SIGKILLed at a chosen step (issue 32 item 5).

Usage: ``python sync_killer.py PLAN.json``. The plan::

    {"root": "<work tree>", "args": ["sync", "--json"],
     "kill": {"point": "<point>", "at": <k>} | null, "pid_file": "<path>" | null}

Patches pygit2's public methods, ``subprocess.run`` and ``os`` functions -- never a function
of ledgit's -- so that the ``at``-th (1-based) arrival at ``point`` kills this process with
SIGKILL, then runs the CLI's own entry (:func:`ledgit.__main__.main`) on ``args``. The
points, in the order a sync reaches them:

* ``commit-between``: the board's commit made, and the first of its two writes done --
  Git's index file (``pygit2.Index.write``) or the branch (``ReferenceTransaction.commit``),
  whichever the sync writes first -- the other not;
* ``fetch-start``: after the board's commit, before the fetch (``pygit2.Remote.fetch``);
* ``fetch-mid``: during the fetch, objects part-received (``RemoteCallbacks.transfer_progress``
  with some but not all objects in);
* ``fetch-done``: the fetch returned, its tracking ref moved, nothing integrated;
* ``merge-object``: the rebased (or merge) commit written to the object store, nothing moved
  (``pygit2.Repository.create_commit``, the ``at``-th call: 1 is the board's own commit);
* ``note-written``: the work-tree move's note on disk, nothing written yet (``os.replace`` of
  ``sync-move.json``);
* ``worktree-partial``: mid-checkout, after the first file (``checkout_progress``);
* ``worktree-written``: the work tree and index written, the branch not moved
  (``pygit2.Repository.checkout_tree`` returned);
* ``note-left``: the branch moved, the note not yet removed (``os.unlink`` of the note);
* ``push-start``: before the push (``subprocess.run`` of ``git push``, or
  ``pygit2.Remote.push``);
* ``push-mid``: the push under way (``git push`` started and this process gone; its pid is
  written to ``pid_file`` so the caller can wait for it -- or libgit2's
  ``push_transfer_progress`` after some objects were sent);
* ``push-done``: the push returned, the remote moved; nothing recorded here yet.

Without ``kill`` it runs the command as the console script would (the rerun after a kill).
Not a test module: stress/test_sync_crash.py runs it as a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2

POINTS = ("commit-between", "fetch-start", "fetch-mid", "fetch-done", "merge-object",
          "note-written", "worktree-partial", "worktree-written", "note-left", "push-start",
          "push-mid", "push-done")
NOTE = "sync-move.json"


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _override(obj: Any, name: str, fn: Callable[..., Any]) -> None:
    """``obj``'s class becomes a subclass whose method ``name`` is ``fn`` (pygit2 wires some
    callbacks only where the payload's class overrides the stub)."""
    cls = type(obj)
    obj.__class__ = type(f"Killing{cls.__name__}", (cls,), {name: fn})


def _is_git_push(args: Any) -> bool:
    argv = [os.fspath(a) for a in args] if isinstance(args, (list, tuple)) else []
    return bool(argv) and os.path.basename(argv[0]) == "git" and "push" in argv[1:]


def install_kill(point: str, at: int, pid_file: str | None) -> None:
    """Patch this process so that the ``at``-th arrival at ``point`` kills it (module doc)."""
    if point not in POINTS:
        raise SystemExit(f"unknown kill point {point!r}")
    count = {"n": 0, "fetching": 0}

    def arrive(here: str) -> bool:
        if here != point:
            return False
        count["n"] += 1
        return count["n"] == at

    real_write = pygit2.Index.write

    def index_write(self: pygit2.Index) -> None:
        real_write(self)
        if arrive("commit-between"):
            _die()

    real_txn_commit = pygit2.ReferenceTransaction.commit

    def txn_commit(self: pygit2.ReferenceTransaction) -> None:
        real_txn_commit(self)
        if arrive("commit-between"):
            _die()

    real_fetch = pygit2.Remote.fetch

    def fetch(self: pygit2.Remote, *args: Any, **kwargs: Any) -> Any:
        if arrive("fetch-start"):
            _die()
        count["fetching"] += 1
        try:
            got = real_fetch(self, *args, **kwargs)
        finally:
            count["fetching"] -= 1
        if arrive("fetch-done"):
            _die()
        return got

    def transfer_progress(self: pygit2.RemoteCallbacks, stats: Any) -> None:
        if count["fetching"] and 0 < stats.received_objects < stats.total_objects \
                and arrive("fetch-mid"):
            _die()

    real_commit = pygit2.Repository.create_commit

    def create_commit(self: pygit2.Repository, *args: Any, **kwargs: Any) -> Any:
        oid = real_commit(self, *args, **kwargs)
        if arrive("merge-object"):
            _die()
        return oid

    real_checkout = pygit2.Repository.checkout_tree

    def checkout_tree(self: pygit2.Repository, treeish: Any, **kwargs: Any) -> None:
        if point == "worktree-partial":
            callbacks = kwargs.get("callbacks") or pygit2.CheckoutCallbacks()

            def progress(_cb: Any, path: str | None, done: int, total: int) -> None:
                if path and 0 < done < total and arrive("worktree-partial"):
                    _die()

            _override(callbacks, "checkout_progress", progress)
            kwargs["callbacks"] = callbacks
        real_checkout(self, treeish, **kwargs)
        if arrive("worktree-written"):
            _die()

    real_replace, real_unlink = os.replace, os.unlink

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        real_replace(src, dst, *args, **kwargs)
        if os.fspath(dst).endswith(NOTE) and arrive("note-written"):
            _die()

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(path, (str, Path)) and os.fspath(path).endswith(NOTE) \
                and arrive("note-left"):
            _die()
        real_unlink(path, *args, **kwargs)

    real_run = subprocess.run

    def run(args: Any, *rest: Any, **kwargs: Any) -> Any:
        if not _is_git_push(args):
            return real_run(args, *rest, **kwargs)
        if arrive("push-start"):
            _die()
        if point == "push-mid" and arrive("push-mid"):
            for name in ("capture_output", "check", "text", "timeout", "input"):
                kwargs.pop(name, None)
            child = subprocess.Popen(args, *rest, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, **kwargs)
            if pid_file:
                Path(pid_file).write_text(str(child.pid), encoding="utf-8")
            _die()
        done = real_run(args, *rest, **kwargs)
        if arrive("push-done"):
            _die()
        return done

    real_push = pygit2.Remote.push

    def push(self: pygit2.Remote, *args: Any, **kwargs: Any) -> Any:
        if arrive("push-start"):
            _die()
        if point == "push-mid":
            callbacks = kwargs.get("callbacks") or pygit2.RemoteCallbacks()

            def sent(_cb: Any, current: int, total: int, _bytes: int) -> None:
                if current > 0 and arrive("push-mid"):
                    _die()

            _override(callbacks, "push_transfer_progress", sent)
            kwargs["callbacks"] = callbacks
        got = real_push(self, *args, **kwargs)
        if arrive("push-done"):
            _die()
        return got

    pygit2.Index.write = index_write  # type: ignore[method-assign]
    pygit2.ReferenceTransaction.commit = txn_commit  # type: ignore[method-assign]
    pygit2.Remote.fetch = fetch  # type: ignore[method-assign]
    pygit2.RemoteCallbacks.transfer_progress = transfer_progress  # type: ignore[method-assign]
    pygit2.Repository.create_commit = create_commit  # type: ignore[method-assign]
    pygit2.Repository.checkout_tree = checkout_tree  # type: ignore[method-assign]
    pygit2.Remote.push = push  # type: ignore[method-assign]
    os.replace = replace
    os.unlink = unlink
    subprocess.run = run


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    os.chdir(plan["root"])
    kill = plan.get("kill")
    if kill:
        install_kill(kill["point"], int(kill.get("at", 1)), plan.get("pid_file"))
    from ledgit.__main__ import main as ledgit_main  # after the patches, as a user's run

    ledgit_main(list(plan["args"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
