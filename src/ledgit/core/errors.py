"""The one expected-error type and the exit codes of DESIGN §9."""

from __future__ import annotations

import errno
import sys

# Exit codes (DESIGN §9).
OK = 0
CHECK_FAILED = 1  # check failed / merge conflict
USAGE = 2  # usage or invalid input
STALE = 3  # stale revision (--expect)
NOT_FOUND = 4  # not found / ambiguous
BUSY = 5  # lock timeout
CLAIM = 6  # claim held or lost
REMOTE = 69  # EX_UNAVAILABLE (sysexits.h): a remote (leases, sync) is unreachable or refuses leases
IO_ERROR = 74  # EX_IOERR (sysexits.h): no space, quota or an I/O error; the write was undone
INTERNAL = 70  # EX_SOFTWARE (sysexits.h): a bug, never a verdict of ledgit
INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C

#: Every exit code a command returns, with its meaning in a few words: ``ledgit --help`` prints
#: this list, docs/cli.md ("Exit codes") explains each (tests/test_help.py holds them equal).
EXIT_CODES: dict[int, str] = {
    OK: "ok",
    CHECK_FAILED: "check failed / merge conflict",
    USAGE: "usage or invalid input",
    STALE: "stale revision",
    NOT_FOUND: "not found / ambiguous",
    BUSY: "busy",
    CLAIM: "claim held or lost",
    REMOTE: "a remote is unreachable (sync, leases) or refuses leases",
    INTERNAL: "internal error (a bug)",
    IO_ERROR: "the disk failed a write (no space, quota, I/O; undone)",
    INTERRUPTED: "interrupted (Ctrl-C)",
}


class LedgitError(Exception):
    """An expected failure: one actionable line for stderr and an exit code.

    ``str(err)`` is the line (``path:line: field: message`` when those are known).
    """

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message


class ArgumentError(LedgitError):
    """Invalid input pinned to one argument (exit 2): ``argument`` as the face spells it
    (``--cursor``, ``cursor``), ``problem`` and ``expected`` in words; the message is
    ``ARGUMENT: PROBLEM (expected EXPECTED)``."""

    def __init__(self, argument: str, problem: str, expected: str) -> None:
        super().__init__(f"{argument}: {problem} (expected {expected})", USAGE)
        self.argument, self.problem, self.expected = argument, problem, expected


# What str.splitlines() breaks at: none of it may reach a one-line error message.
_LINE_BREAKS = {ord(c): f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
                for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def located(message: str, path: str | None = None, line: int | None = None,
            field: str | None = None) -> str:
    """Format ``path:line: field: message``, leaving out the parts that are unknown. Always
    one line: a line break inside any part (a field name read from a file may hold one) is
    written as its escape (``\\x0b``, ``\\u2028``)."""
    head = ""
    if path is not None:
        head = path if line is None else f"{path}:{line}"
        head += ": "
    if field:
        head += f"{field}: "
    return (head + message).translate(_LINE_BREAKS)


# errno -> (what the system said, exit code): the failures an ordinary machine gives a
# write (issue 13). Anything else stays an internal error: it would be a bug of ours.
_ENVIRONMENT = {
    "EROFS": ("read-only file system", USAGE),
    "EACCES": ("permission denied", USAGE),
    "EPERM": ("operation not permitted", USAGE),
    "ENOSPC": ("no space left on device", IO_ERROR),
    "EDQUOT": ("disk quota exceeded", IO_ERROR),
    "EIO": ("input/output error", IO_ERROR),
    "EFBIG": ("file too large", IO_ERROR),
    "ENOTDIR": ("not a directory", USAGE),
    "EISDIR": ("is a directory", USAGE),
}


def os_failure(exc: OSError, path: str | None = None, detail: str | None = None
               ) -> LedgitError | None:
    """The one-line LedgitError for an OSError the machine causes (read-only or full file
    system, permissions, quota, I/O error): ``WHAT: PATH[; DETAIL]`` with exit 2 (the
    environment refuses) or :data:`IO_ERROR`; None for any other errno. ``path`` defaults
    to the exception's file name."""

    name = errno.errorcode.get(exc.errno or 0)
    known = _ENVIRONMENT.get(name or "")
    if known is None:
        return None
    what, code = known
    where = path if path is not None else exc.filename
    text = what if where is None else f"{what}: {where}"
    if detail:
        text += f"; {detail}"
    return LedgitError(located(text), code)


def print_traceback() -> None:
    """The traceback of the exception being handled, on stderr: what ``LEDGIT_DEBUG=1`` adds
    to an error's one line, for every entry point (the CLI, the hooks, the merge driver)."""
    # Python's own display (sys.__excepthook__, what an uncaught exception prints), so that
    # the traceback module is imported by no run.
    sys.__excepthook__(*sys.exc_info())
