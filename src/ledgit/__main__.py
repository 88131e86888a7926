"""``ledgit`` console script and ``python -m ledgit``.

Kept tiny on purpose: startup cost is a budget (DESIGN §10), so nothing is imported here beyond
what dispatching needs. Most invocations never import click: ``--version`` (the floor the
budgets are measured against), ``merge-driver`` (Git runs it once per conflicted file), ``hook
NAME`` (Git runs the hooks on every commit, checkout, merge and rebase), and every task
command whose command line :func:`ledgit.cli.argspec.parse` reads from the spec table of
:mod:`ledgit.cli.commands.table` (:func:`ledgit.cli.commands.running.run_command_line`). Help,
odd command lines (which click answers with its usage errors) and the other commands go through
:func:`ledgit.cli.main.run`; output and exit codes are the same either way.

May import: ledgit.core, ledgit.cli, ledgit.hooks.
"""

from __future__ import annotations

import gc
import os
import sys

from ledgit import __version__
from ledgit.core.errors import INTERNAL, INTERRUPTED, LedgitError, print_traceback


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its code (DESIGN §9 exit codes). A character that stdout's
    encoding cannot hold (``LC_ALL=C``, ``PYTHONIOENCODING=latin-1``, a file name with
    undecodable bytes) is written as a backslash escape instead of ending the command
    (stdout's error handler ``strict`` or ``surrogateescape`` becomes ``backslashreplace``)."""
    _fill_closed_streams()
    stdout = sys.stdout
    reconfigure = getattr(stdout, "reconfigure", None)
    if reconfigure is not None and stdout.errors in ("strict", "surrogateescape") \
            and not stdout.closed:
        reconfigure(errors="backslashreplace")
    code = run(list(sys.argv[1:] if argv is None else argv))
    # The command is over: its files are closed and its index committed. Freezing what it
    # made (gc.freeze, the permanent generation) spares the interpreter's shutdown a cyclic
    # collection over all of it: 4.6 ms of CPU on the pre-commit hook at 10,000 tasks.
    gc.freeze()
    sys.exit(code)


_filled: list[int] = []  # the standard descriptors _fill_closed_streams opened


def _fill_closed_streams() -> None:
    """A standard descriptor the caller closed (``ledgit list >&-``) is opened on the null
    device, so that nothing ledgit opens later (an index, a task file) takes its number and
    receives the output, and the command runs as with its output discarded (issue 13)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if fd:  # stdout or stderr: a read then runs here, not in the watcher
            _filled.append(fd)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115 - kept open


def run(args: list[str]) -> int:
    """Run one command line (without the program name) and return its exit code: the three
    click-free entry points, then the spec table when :func:`ledgit.cli.argspec.parse` can read
    the command line, else click (help, usage errors, the other commands)."""
    if args == ["--version"]:
        sys.stdout.write(f"ledgit {__version__}\n")
        return 0
    if args and args[0] == "merge-driver":
        # Git runs the driver once per conflicted file (gitattributes(5)): keep it import-light,
        # before anything imports click (DESIGN §7).
        from ledgit.hooks.mergedriver import main as merge_driver  # lazy: 0.3 ms (-X importtime)

        return merge_driver(list(args[1:]))
    if args[:1] == ["hook"] and len(args) > 1 and not args[1].startswith("-"):
        # Git runs these on every commit, checkout, merge and rebase (githooks(5)): no click.
        return _hook(args[1], list(args[2:]))
    # (the command table and the board, which the three above do without)
    # A table command is a short process: its cyclic garbage is reclaimed by its exit, so
    # the cyclic collector is off while it runs (as Mercurial's util.nogc does around its
    # dirstate): its collections are 2-4 ms CPU of a get, a list or an update, scanning
    # what the imports made (gc.callbacks, 10,000 tasks). Long-lived commands (ledgit mcp,
    # ledgit board --serve) are not in the table: click runs them, with the collector on.
    gc.disable()
    try:
        from ledgit.cli.commands.running import run_command_line  # lazy: 9.4 ms (-X importtime)

        code = run_command_line(args)
    finally:
        gc.enable()
    if code is not None:
        return code
    from ledgit.cli.main import run as click_run  # lazy: 23 ms (-X importtime, click): fast path

    return click_run(args)


def _hook(name: str, args: list[str]) -> int:
    """``ledgit hook NAME ARGS`` without click (= gitcli.hook_cmd under cli.run): a
    LedgitError (an unknown hook name: exit 2) is its one line and its code, anything else
    an internal error (70)."""
    debug = os.environ.get("LEDGIT_DEBUG", "") not in ("", "0")
    try:
        # (inside the try: a failing import is one line too)
        from ledgit.hooks.dispatch import run_hook  # lazy: 18 ms (-X importtime) the commands skip

        return run_hook(name, args)
    except LedgitError as exc:
        if debug:
            print_traceback()
        print(f"ledgit: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("ledgit: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs on this path
        if debug:
            print_traceback()
        message = " ".join(str(exc).split())
        print(f"ledgit: internal error: {type(exc).__name__}: {message} "
              f"(set LEDGIT_DEBUG=1 for a traceback)", file=sys.stderr)
        return INTERNAL


if __name__ == "__main__":
    main()
