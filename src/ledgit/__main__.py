"""``ledgit`` console script and ``python -m ledgit``.

Kept tiny on purpose: startup cost is a budget (DESIGN §10), so nothing is imported here beyond
what dispatching needs. Most invocations never import click: ``--version`` (the floor the
budgets are measured against), ``merge-driver`` (Git runs it once per conflicted file), ``hook
pre-commit`` (Git runs it on every commit), and every task command whose command line
:func:`ledgit.argspec.parse` reads from the spec table of :mod:`ledgit.commands`. Help, odd
command lines (which click answers with its usage errors) and the other commands go through
:func:`ledgit.cli.run`; output and exit codes are the same either way.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its code (DESIGN §9 exit codes). A character that stdout's
    encoding cannot hold (``LC_ALL=C``, ``PYTHONIOENCODING=latin-1``, a file name with
    undecodable bytes) is written as a backslash escape instead of ending the command
    (stdout's error handler ``strict`` or ``surrogateescape`` becomes ``backslashreplace``)."""
    stdout = sys.stdout
    reconfigure = getattr(stdout, "reconfigure", None)
    if reconfigure is not None and stdout.errors in ("strict", "surrogateescape") \
            and not stdout.closed:
        reconfigure(errors="backslashreplace")
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(args: list[str]) -> int:
    """Run one command line (without the program name) and return its exit code: the three
    click-free entry points, then the spec table when :func:`ledgit.argspec.parse` can read
    the command line, else click (help, usage errors, the other commands)."""
    if args == ["--version"]:
        from ledgit import __version__

        sys.stdout.write(f"ledgit {__version__}\n")
        return 0
    if args and args[0] == "merge-driver":
        # Git runs the driver once per conflicted file (gitattributes(5)): keep it import-light,
        # before anything imports click (DESIGN §7).
        from ledgit.mergedriver import main as merge_driver

        return merge_driver(list(args[1:]))
    if args[:2] == ["hook", "pre-commit"]:
        return _pre_commit(list(args[2:]))
    from ledgit.argspec import find, parse
    from ledgit.commands import FAST, guarded, run_spec

    found = find(FAST, args)
    if found is not None:
        spec, rest = found
        values = parse(spec, rest)
        if values is not None:
            return guarded(lambda: run_spec(spec, values))
    from ledgit.cli import run as click_run

    return click_run(args)


def _pre_commit(args: list[str]) -> int:
    """``ledgit hook pre-commit`` without click (= gitcli.hook_cmd under cli.run): a
    LedgitError is its one line and its code, anything else an internal error (70)."""
    from ledgit.errors import LedgitError

    debug = os.environ.get("LEDGIT_DEBUG", "") not in ("", "0")
    try:
        from ledgit.hooks import run_hook

        return run_hook("pre-commit", args)
    except LedgitError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"ledgit: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("ledgit: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs on this path
        if debug:
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split())
        print(f"ledgit: internal error: {type(exc).__name__}: {message} "
              f"(set LEDGIT_DEBUG=1 for a traceback)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    main()
