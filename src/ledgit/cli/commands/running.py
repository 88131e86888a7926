"""Running one row of the command table: a plain command line parsed without click
(:func:`run_command_line`), its function called with the parsed keywords on the board it
names (``--project ALIAS``), and what it raises turned into the CLI's exit code (DESIGN §9).

Errors: a :class:`ledgit.core.errors.LedgitError` prints its one line on stderr and exits with its
code; anything unexpected prints one line ``ledgit: internal error: ...`` and exits 70 (a
traceback only with ``LEDGIT_DEBUG=1``); see :func:`guarded`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from ledgit.cli.argspec import ARG, Spec, find, parse
from ledgit.cli.commands.output import PipeClosed, err, silence_stdout, stdout_failed
from ledgit.cli.commands.table import FAST
from ledgit.core.errors import (
    INTERNAL,
    INTERRUPTED,
    OK,
    USAGE,
    LedgitError,
    os_failure,
    print_traceback,
)
from ledgit.integration.unmerged import unmerged_hint
from ledgit.storage.board import find_board

if TYPE_CHECKING:
    from collections.abc import Callable

    from ledgit.storage.board import Board


# [alias, writes] while a command runs with --project ALIAS (set by run_spec)
_PROJECT: list[Any] = []
# The boards the running command found (:func:`command_board`), for the hint after it.
_BOARDS: list[Board] = []


def command_board() -> Board:
    """The board the running command acts on: the working directory's
    (:func:`ledgit.storage.board.find_board`), or the registered board ``--project ALIAS`` names
    (:func:`ledgit.operations.projects.open_project`; opened for writing when the command takes
    ``--by``). Raises LedgitError exit 4 when there is no board or no such project."""
    board = find_board()
    _BOARDS.append(board)
    if _PROJECT:
        # --project is rare: every other command skips the projects module (bench/run.py).
        from ledgit.operations import projects  # lazy: 1.7 ms (-X importtime) of every command

        alias, writes = _PROJECT
        return projects.open_project(board, alias, write=writes)
    return board


def checked_board() -> Board:
    """:func:`command_board` for the checks (``verify``, ``check``): its ``config.yaml`` is
    read first, so a malformed one fails them as it fails every command that reads it
    (LedgitError exit 2 naming the file, the line and the setting; issue 36)."""
    board = command_board()
    board.config  # noqa: B018 - read for what it raises
    return board


def run_command_line(args: list[str]) -> int | None:
    """Run ``args`` (a command line without the program name) straight from the command
    table when :func:`ledgit.cli.argspec.parse` can read it, without click: its exit code
    (:func:`guarded`). None when click must answer it: help, an odd command line (click's
    usage errors), a command the fast table does not hold (``verify``, ``check``, ...)."""
    found = find(FAST, args)
    if found is None:
        return None
    spec, rest = found
    values = parse(spec, rest)
    if values is None:
        return None
    return guarded(lambda: run_spec(spec, values))


def run_spec(spec: Spec, values: dict[str, Any]) -> int:
    """Call ``spec``'s function (imported by its ``"module:function"`` name) with the parsed
    keywords, ``--project`` taken out and kept for :func:`command_board`; returns its exit
    code. Raises LedgitError exit 2 for an argument holding bytes the locale could not
    decode (surrogate escapes: no task holds them, and SQLite could not be asked about
    them)."""
    for param in spec.params:
        value = values.get(param.dest)
        for text in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    name = param.flag.upper() if param.kind == ARG else param.flag
                    raise LedgitError(f"{spec.name[-1]} {name}: holds bytes that cannot be "
                                      f"decoded (not UTF-8, or not this locale's encoding)",
                                      USAGE) from None
    if "project" in values:
        values = dict(values)
        project = values.pop("project")
        if project is not None:
            _PROJECT[:] = [project, any(p.dest == "by" for p in spec.params)]
    module_name, _, attr = spec.run.partition(":")
    try:
        rv = getattr(importlib.import_module(module_name), attr)(**values)
    finally:
        _PROJECT.clear()
    return rv if isinstance(rv, int) else OK


def guarded(call: Callable[[], int]) -> int:
    """Run ``call`` and turn what it raises into the CLI's exit code (DESIGN §9): a
    LedgitError prints its line and returns its code; Ctrl-C 130; a closed stdout pipe 0
    (quietly); what the machine refuses (read-only or full file system, permissions, quota,
    I/O; :func:`ledgit.core.errors.os_failure`) its line and code; anything else one ``internal
    error`` line and 70. stdout is flushed here, so a reader that went away is noticed
    before the interpreter's exit."""
    debug = os.environ.get("LEDGIT_DEBUG", "") not in ("", "0")
    _BOARDS.clear()
    try:
        code = call()
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full stdout (/dev/full, a full disk under a redirect)
            raise stdout_failed(exc) from None
        _hint_unmerged(None)
        return code
    except LedgitError as exc:
        if debug:
            print_traceback()
        err(f"ledgit: {exc}")
        _hint_unmerged(str(exc))
        return exc.code
    except KeyboardInterrupt:
        err("ledgit: interrupted")
        return INTERRUPTED
    except (PipeClosed, BrokenPipeError):
        silence_stdout()
        return OK
    except OSError as exc:
        # Other errnos fall through to the internal error below (issue 13).
        failure = os_failure(exc)
        if failure is None:
            return _internal(exc, debug)
        if debug:
            print_traceback()
        err(f"ledgit: {failure}")
        return failure.code
    except Exception as exc:  # noqa: BLE001 - the one place that reports bugs
        return _internal(exc, debug)


def _hint_unmerged(said: str | None) -> None:
    """After a command on a board: one line when Git stopped with task files unmerged
    (:func:`ledgit.integration.unmerged.unmerged_hint`), unless the command's own error named
    ``ledgit resolve`` already. Never fails the command."""
    if not _BOARDS or (said is not None and "ledgit resolve" in said):
        return
    try:
        hint = unmerged_hint(_BOARDS[0])
    except (LedgitError, OSError):
        return
    if hint is not None:
        err(f"ledgit: {hint}")


def _internal(exc: BaseException, debug: bool) -> int:
    """One ``internal error`` line (a traceback too when ``debug``); returns 70."""
    if debug:
        print_traceback()
    message = " ".join(str(exc).split())
    err(f"ledgit: internal error: {type(exc).__name__}: {message} "
        f"(set LEDGIT_DEBUG=1 for a traceback)")
    return INTERNAL
