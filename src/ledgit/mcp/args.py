"""Argument errors of ``ledgit mcp`` in ledgit's structured error shape (issue 28): a call
whose arguments do not match a tool's input schema (an unknown argument, a missing one, a
value of the wrong type, out of range or not among the allowed ones) is answered as every
other failure is -- ``{"error": {"code": 2, "kind": "invalid_input", "message", "argument",
"expected", ...}}`` -- not with pydantic's text and its link to errors.pydantic.dev.

Only the error path is here: the SDK validates arguments as it always does (their types and
bounds are the tools' signatures), and :class:`CheckedTool` rewrites the refusal.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError
from pydantic_core import to_json

from ledgit.core.errors import USAGE

_SHOWN = 40  # characters of a refused value quoted back in the message


def expected_of(schema: Any) -> str:
    """What a JSON Schema (one property of a tool's input schema) accepts, in words: ``an
    integer from 0 to 4``, ``one of: claim, heartbeat, release``, ``a list of strings``."""
    if not isinstance(schema, dict):
        return "a value"
    if "enum" in schema:
        return "one of: " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return f"exactly {schema['const']!r}"
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        return " or ".join(expected_of(o) for o in options if o != {"type": "null"}) \
            or "null"
    kind = schema.get("type")
    if kind == "integer" or kind == "number":
        noun = "an integer" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun}, {low} or more"
        if high is not None:
            return f"{noun}, {high} or less"
        return noun
    if kind == "string":
        return "a string"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        items = expected_of(schema.get("items")) if "items" in schema else "values"
        return f"a list of {_plural(items)}"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"an object of {_plural(expected_of(values))}" if isinstance(values, dict) \
            else "an object"
    if kind == "null":
        return "null"
    return "a value"


def _plural(phrase: str) -> str:
    for one, many in (("a string", "strings"), ("an integer", "integers"),
                      ("a number", "numbers"), ("true or false", "booleans")):
        if phrase == one:
            return many
    return phrase


def _shown(value: Any) -> str:
    text = to_json(value).decode("utf-8", "replace")
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def argument_problems(exc: ValidationError, parameters: dict[str, Any]
                      ) -> list[dict[str, Any]]:
    """One ``{argument, problem, expected[, allowed]}`` per error pydantic found, worded
    from the tool's advertised input schema ``parameters`` (so the words match what the
    agent was shown). ``argument`` is the top-level name (``set.status`` for a nested one)."""
    properties: dict[str, Any] = parameters.get("properties") or {}
    out: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err.get("loc", ())]
        name = ".".join(loc) or "arguments"
        top = loc[0] if loc else ""
        kind = err.get("type", "")
        entry: dict[str, Any] = {"argument": name}
        if kind == "extra_forbidden":
            entry["problem"] = "this tool takes no such argument"
            entry["expected"] = "one of the tool's arguments"
            entry["allowed"] = sorted(properties)
        elif kind == "missing":
            entry["problem"] = "required, not given"
            entry["expected"] = expected_of(properties.get(top))
        else:
            schema = properties.get(top)
            if len(loc) > 1 and isinstance(schema, dict):
                schema = schema.get("items") or schema.get("additionalProperties") or schema
            entry["problem"] = f"{_shown(err.get('input'))} is not accepted"
            entry["expected"] = expected_of(schema)
            if isinstance(schema, dict) and "enum" in schema:
                entry["allowed"] = list(schema["enum"])
        out.append(entry)
    return out


def argument_failure(tool: str, exc: ValidationError, parameters: dict[str, Any]
                     ) -> CallToolResult:
    """The tool error for arguments ``exc`` refused: ``{"error": {"code": 2, "kind":
    "invalid_input", "message", "argument", "expected"[, "allowed"], "problems"}}`` --
    the first problem's keys at the top (the common case is one), every problem under
    ``problems``; the message one line: ``TOOL: ARGUMENT: PROBLEM; expected EXPECTED``."""
    problems = argument_problems(exc, parameters)
    first = problems[0] if problems else {"argument": "arguments", "problem": "refused",
                                          "expected": "the tool's input schema"}
    message = "; ".join(f"{p['argument']}: {p['problem']}; expected {p['expected']}"
                        + (f" ({', '.join(map(str, p['allowed']))})"
                           if "allowed" in p and p["problem"].startswith("this tool")
                           else "")
                        for p in problems) or "arguments refused"
    error: dict[str, Any] = {"code": USAGE, "kind": "invalid_input",
                             "message": f"{tool}: {message}", **first, "problems": problems}
    return CallToolResult(content=[TextContent(type="text", text=to_json(error).decode())],
                          structured_content={"error": error}, is_error=True)


class CheckedTool(Tool):
    """A tool whose argument errors come back as :func:`argument_failure` (a result, as the
    tools' own failures are) instead of the SDK's ToolError text. Validation itself is the
    SDK's, done once."""

    async def run(self, arguments: dict[str, Any], context: Any,
                  convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            return argument_failure(self.name, cause, self.parameters)
