"""What a ``ledgit mcp`` tool returns: the typed result shapes (:class:`Rows`,
:class:`Created`, :class:`Written`, ``Readout``), a result (:func:`ok`) and a failure
(:func:`failure`), each in the envelope every answer shares (DESIGN §14).

The envelope: every answer names its board (``root``, absolute) and how it was found
(``root_source``, :data:`ledgit.mcp.boards.ROOT_SOURCES`); its JSON fits the server's byte
budget (:data:`MAX_ANSWER_BYTES` unless ``ledgit mcp --max-answer-bytes``: an answer that
would not fit is a ``too_large`` failure, never cut silently); and its text block is a short
summary (:func:`summary`), not the structured content again.

Failures are tool errors (``isError``) whose structured content carries the CLI's exit code
and meaning (:data:`KINDS`: ``stale_revision`` with the current revision, ``claim_held`` with
the holder, ``not_found`` with candidates, ``invalid_input`` with the ``argument`` at fault).
"""

import contextlib
from typing import Any, NamedTuple

from mcp.types import CallToolResult, TextContent
from pydantic_core import to_json
from typing_extensions import NotRequired, TypedDict

from ledgit.core.errors import CLAIM, NOT_FOUND, REMOTE, STALE, USAGE, ArgumentError, LedgitError
from ledgit.mcp.roots import RootRefused
from ledgit.storage.board import Board

KINDS = {USAGE: "invalid_input", STALE: "stale_revision", NOT_FOUND: "not_found",
         CLAIM: "claim_held", 5: "busy", 1: "check_failed", REMOTE: "remote_unavailable"}

MAX_ANSWER_BYTES = 65_536  # an answer's JSON-RPC message at most, by default (DESIGN §14)
MIN_ANSWER_BYTES = 8_192  # the least --max-answer-bytes: a task's readout without its body
DEFAULT_PAGE_BYTES = 8_192  # a list's default page (no limit given): ~2,000 tokens
TEXT_BYTES = 1_024  # the text block's summary at most
# Bytes of an answer besides its structured content and text: the result's own keys and the
# JSON-RPC envelope ({"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text",
# "text":…}],"structuredContent":…,"isError":false}}), with room to spare.
WRAPPING = 160


class Where(NamedTuple):
    """The board a call acts on and how it was found (``ROOT_SOURCES``)."""

    board: Board
    source: str


# --------------------------------------------------------------------------- shapes


# Tool results. No docstrings: a TypedDict's docstring lands in every tool's listing
# (docs/mcp.md documents the shapes).
class Rows(TypedDict):
    # each row has the keys asked for in ``fields`` (search adds ``matches``); ``total``:
    # how many matched; ``next_cursor``: continues after this page, null at the end;
    # ``errors``: malformed task files skipped
    tasks: list[dict[str, Any]]
    count: int
    total: int
    next_cursor: str | None
    errors: list[dict[str, str]]


class Created(TypedDict):
    id: str
    revision: str
    path: str


class Written(TypedDict):
    # ``written`` false: nothing changed; ``meta``: op details (``item``, ``took_over_from``);
    # ``held_by``: {by, since, until}, only when someone else holds a live claim on the task;
    # ``status`` and ``revision`` absent: a release/heartbeat of the actor's lease on a task
    # whose file is not here (``meta.lease``: released or renewed)
    id: str
    op: str
    status: NotRequired[str]
    revision: NotRequired[str]
    actor: str
    written: bool
    meta: dict[str, Any]
    held_by: NotRequired[dict[str, str]]


Readout = dict[str, Any]


# --------------------------------------------------------------------------- errors


def failure(exc: LedgitError, where: Where | None, task: str | None) -> CallToolResult:
    """A tool error carrying the CLI's meaning: ``{"error": {code, kind, message, ...}}``
    with ``current_revision`` (stale), ``holder``/``claim`` (claim held or lost),
    ``candidates`` (not found / ambiguous), ``argument``/``problem``/``expected`` (an
    argument at fault: :class:`ledgit.core.errors.ArgumentError`); ``root`` and
    ``root_source`` beside it once the board was found (``where``). Its text block is the
    same small JSON (what a client that reads only text needs to act on it)."""
    error: dict[str, Any] = {"code": exc.code, "kind": KINDS.get(exc.code, "error"),
                             "message": str(exc)}
    if isinstance(exc, RootRefused):
        error["rule"] = exc.rule
    if isinstance(exc, ArgumentError):
        error.update(argument=exc.argument, problem=exc.problem, expected=exc.expected)
    board = None if where is None else where.board
    if board is not None and task:
        with contextlib.suppress(LedgitError, OSError):
            if exc.code == NOT_FOUND:
                if not _resolves(board, task):  # else: an item or dependency was not found
                    error["candidates"] = candidates(board, task)
            elif exc.code in (STALE, CLAIM):
                record = board.read(board.resolve_id(task))
                error["current_revision"] = record.revision
                claim = record.fields.get("claim")
                if exc.code == CLAIM:
                    error["holder"] = claim.get("by") if claim else None
                    error["claim"] = claim
    value: dict[str, Any] = {"error": error}
    if where is not None:
        value.update(root=where.board.root_str, root_source=where.source)
    return CallToolResult(content=[TextContent(type="text", text=json_text(value))],
                          structured_content=value, is_error=True)


def too_large(size: int, budget: int, where: Where) -> CallToolResult:
    """The failure of an answer whose JSON would be ``size`` bytes, over ``budget``
    (``kind: too_large``, exit 2: ask for less)."""
    error = {"code": USAGE, "kind": "too_large", "size": size, "budget": budget,
             "message": f"the answer would be {size:,} bytes, over this server's budget of "
                        f"{budget:,} (ledgit mcp --max-answer-bytes N); ask for less (fewer "
                        f"fields, a lower limit, body false) or read it with the CLI's --json"}
    value = {"error": error, "root": where.board.root_str, "root_source": where.source}
    return CallToolResult(content=[TextContent(type="text", text=json_text(value))],
                          structured_content=value, is_error=True)


def _resolves(board: Board, text: str) -> bool:
    try:
        board.resolve_id(text)
    except LedgitError:
        return False
    return True


def candidates(board: Board, text: str, limit: int = 10) -> list[str]:
    """Ids that ``text`` could mean (the prefix rule of :meth:`Board.resolve_id`), at most
    ``limit``."""
    want = text.strip().lower()
    if not want or len(want) > 64:
        return []
    found = [tid for tid in board.list_ids()
             if tid.lower().startswith(want) or tid.lower().partition("-")[2].startswith(want)]
    return found[:limit]


# --------------------------------------------------------------------------- results


def ok(value: dict[str, Any], where: Where, budget: int) -> CallToolResult:
    """A tool's result: ``value`` with the envelope (``root``, ``root_source``) as
    structured content and :func:`summary` as text; :func:`too_large` when the answer's
    JSON (:func:`answer_bytes`) would be over ``budget`` bytes."""
    value = {**value, "root": where.board.root_str, "root_source": where.source}
    text = summary(value)
    size = answer_bytes(value, text)
    if size > budget:
        return too_large(size, budget, where)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=value)


def answer_bytes(value: Any, text: str) -> int:
    """The bytes of an answer's JSON-RPC message (UTF-8) whose structured content is
    ``value`` and text ``text``: both serialized, plus :data:`WRAPPING`."""
    return len(to_json(value)) + len(to_json(text)) + WRAPPING


def envelope_bytes(board: Board) -> int:
    """What the envelope and the text block add to an answer about ``board``, at most (for
    a page that fills the budget row by row)."""
    return len(to_json({"root": board.root_str, "root_source": "project_alias"})) \
        + 2 * TEXT_BYTES + WRAPPING


def summary(value: dict[str, Any]) -> str:
    """The text block of an answer: compact JSON of its members, a member longer than 160
    bytes replaced by what it is (``"<20 items in structuredContent>"``, ``"<350,112
    characters in structuredContent>"``), at most :data:`TEXT_BYTES` (DESIGN §14: the
    structured content is not repeated in full as text)."""
    shown: dict[str, Any] = {}
    room = TEXT_BYTES - 64
    first = ("root", "root_source")  # where the answer came from, whatever is cut
    for key, member in sorted(value.items(), key=lambda kv: kv[0] not in first):
        if len(to_json(member)) > 160:
            what = (f"{len(member):,} items" if isinstance(member, list)
                    else f"{len(member):,} characters" if isinstance(member, str)
                    else "an object")
            member = f"<{what} in structuredContent>"
        cost = len(to_json(key)) + len(to_json(member)) + 2
        if cost > room:
            shown["more"] = "<in structuredContent>"
            break
        shown[key] = member
        room -= cost
    return json_text(shown)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text."""
    # pydantic-core's serializer (the SDK's own, already loaded): compact, UTF-8 as is --
    # the text of json.dumps(ensure_ascii=False, separators=(",", ":")) for these values,
    # ~3x faster (20 full rows, ~10 KB: 0.10 -> 0.035 ms).
    return to_json(value).decode()
