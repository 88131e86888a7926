"""What the commands print: lines on stdout and stderr, JSON, and a validator's findings.

stdout is written through :func:`out`: a reader that went away (``ledgit list | head``) raises
:class:`PipeClosed` (the command stops quietly, exit 0), a stdout that cannot take the output
(full, an I/O error) a LedgitError exit 74. stderr lines go through :func:`err`, flushed, and
never fail the command.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import CHECK_FAILED, IO_ERROR, OK, LedgitError

if TYPE_CHECKING:
    from ledgit.storage.board import Board


class PipeClosed(Exception):
    """The reader of stdout went away (``ledgit list | head``): stop quietly, exit 0."""


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def stdout_failed(exc: OSError) -> LedgitError:
    """The error for a stdout that could not take the output (full, an I/O error): exit 74,
    stdout silenced so that the interpreter's last flush does not fail again."""
    silence_stdout()
    return LedgitError(f"cannot write to stdout: {exc.strerror or exc}", IO_ERROR)


def out(text: str = "", nl: bool = True) -> None:
    """Write ``text`` (and a newline) to stdout. Raises PipeClosed when the reader went away,
    LedgitError exit 74 when stdout cannot take it."""
    try:
        sys.stdout.write(text + "\n" if nl else text)
    except BrokenPipeError:
        silence_stdout()
        raise PipeClosed() from None
    except OSError as exc:
        raise stdout_failed(exc) from None


def err(line: str) -> None:
    """Write one line to stderr (flushed: it must not wait behind stdout)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or full stderr: the exit code still tells
        pass


def out_json(value: Any) -> None:
    """Print ``value`` as indented JSON (shapes: docs/cli.md)."""

    out(json.dumps(value, ensure_ascii=False, indent=2))


def report_problems(board: Board, ids: list[str] | None, problems: list[Any], as_json: bool,
                    verb: str, actions: list[str] | None = None,
                    warnings: list[dict[str, str]] | None = None) -> int:
    """Print a validator's findings (``verify``, ``check``; each a
    :class:`ledgit.core.history.Problem`): JSON ``{ok, [actions,] problems[, warnings]}`` or
    the action lines, one line per problem and, with none, a summary on stderr (``verb`` N
    task(s): ok). ``warnings`` (``{task, field, value, message}`` each: worth saying, failing
    nothing) go to stderr as ``ledgit: warning: TASK: FIELD: VALUE: MESSAGE``. Returns the
    exit code: 1 while any problem remains, else 0."""
    if as_json:
        doc: dict[str, Any] = {"ok": not problems}
        if actions is not None:
            doc["actions"] = actions
        doc["problems"] = [{"task": p.task, "line": p.line, "rule": p.rule,
                            "message": p.message} for p in problems]
        if warnings is not None:
            doc["warnings"] = warnings
        out_json(doc)
    else:
        for line in actions or []:
            out(line)
        for p in problems:
            out(str(p))
        for w in warnings or []:
            err(f"ledgit: warning: {w['task']}: {w['field']}: {w['value']}: {w['message']}")
        if not problems:
            count = len(ids) if ids is not None else len(board.list_ids())
            err(f"ledgit: {verb} {count} task(s): ok")
    return CHECK_FAILED if problems else OK
