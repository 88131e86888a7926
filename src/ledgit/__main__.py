"""``ledgit`` console script and ``python -m ledgit``.

Kept tiny on purpose: startup cost is a budget (DESIGN §10), so nothing is imported here beyond
what dispatching needs; :mod:`ledgit.cli` imports the heavy parts inside each command.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its code (DESIGN §9 exit codes)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "merge-driver":
        # Git runs the driver once per conflicted file (gitattributes(5)): keep it import-light,
        # before anything imports click (DESIGN §7).
        from ledgit.mergedriver import main as merge_driver

        sys.exit(merge_driver(list(args[1:])))
    from ledgit.cli import run

    sys.exit(run(argv))


if __name__ == "__main__":
    main()
