"""The one expected-error type and the exit codes of DESIGN §9."""

from __future__ import annotations

# Exit codes (DESIGN §9).
OK = 0
CHECK_FAILED = 1  # check failed / merge conflict
USAGE = 2  # usage or invalid input
STALE = 3  # stale revision (--expect)
NOT_FOUND = 4  # not found / ambiguous
BUSY = 5  # lock timeout
CLAIM = 6  # claim held or lost


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
