"""Which boards an MCP server serves (issue 26): a tool's ``root`` cannot reach any board on
the machine.

By default a server serves the board it was started in, the projects that board registers
(``ledgit project add``: by alias, or by the registered path), and boards under its start
directory. ``ledgit mcp --allow-root PATH`` (repeatable) adds PATH and every board under it.
Paths are compared after resolving links and ``..`` (``os.path.realpath``), so neither a
symbolic link nor ``../other`` leads out. A refused root is a :class:`RootRefused` (exit 2)
whose ``rule`` the tool error carries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ledgit.core.errors import USAGE, LedgitError

RULE = "root-confined"


class RootRefused(LedgitError):
    """A ``root`` outside what the server serves; ``rule`` names the rule broken."""

    rule = RULE


def _real(path: str) -> str:
    return os.path.realpath(path)


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


class RootPolicy:
    """The rule for one server: ``start`` (its start directory), ``home`` (the root of the
    board it was started in, or None), ``allowed`` (``--allow-root`` paths) and
    ``registered`` (a callable giving the roots of the projects ``home`` registers, asked
    only when a root is outside the rest: reading them may read files)."""

    def __init__(self, start: str, home: str | None, allowed: Iterable[str] = (),
                 registered: Callable[[], Iterable[str]] | None = None) -> None:
        self.start = _real(start)
        self.home = None if home is None else _real(home)
        self.allowed = tuple(_real(os.path.join(start, os.path.expanduser(p)))
                             for p in allowed)
        self.registered = registered

    def check(self, root: str, given: str) -> None:
        """Raise :class:`RootRefused` unless the board at ``root`` (``given``: the ``root``
        argument as the call wrote it) is one this server serves."""
        real = _real(root)
        if real == self.home or _within(real, self.start) \
                or any(_within(real, base) for base in self.allowed):
            return
        if self.registered is not None:
            try:
                projects = [_real(p) for p in self.registered()]
            except (LedgitError, OSError):
                projects = []
            if real in projects:
                return
        raise RootRefused(
            f"root: {given}: the board at {real} is outside what this server serves "
            f"(rule {RULE}: the board it started in, its registered projects and boards "
            f"under {self.start}; widen with: ledgit mcp --allow-root PATH)", USAGE)
