"""``ledgit`` console script and ``python -m ledgit``.

Kept tiny on purpose: startup cost is a budget (DESIGN §10), so nothing is imported here beyond
what dispatching needs; :mod:`ledgit.cli` imports the heavy parts inside each command. Three
invocations never import click at all: ``--version`` (the floor the budgets are measured
against), ``merge-driver`` (Git runs it once per conflicted file) and ``hook pre-commit`` (Git
runs it on every commit); their output and exit codes are those of the click commands.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its code (DESIGN §9 exit codes)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from ledgit import __version__

        sys.stdout.write(f"ledgit {__version__}\n")
        sys.exit(0)
    if args and args[0] == "merge-driver":
        # Git runs the driver once per conflicted file (gitattributes(5)): keep it import-light,
        # before anything imports click (DESIGN §7).
        from ledgit.mergedriver import main as merge_driver

        sys.exit(merge_driver(list(args[1:])))
    if args[:2] == ["hook", "pre-commit"]:
        sys.exit(_pre_commit(list(args[2:])))
    from ledgit.cli import run

    sys.exit(run(argv))


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
