"""The command reference shipped with the package, for ``ledgit help json`` (issue 18).

docs/cli.md is the one source: a wheel carries a copy as ``ledgit/data/cli.md`` (setup.py's
``build_py`` copies it at build time), and a source checkout (an editable install) reads
docs/cli.md itself. :func:`json_sections` picks out what states a ``--json`` shape.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ledgit.core.errors import NOT_FOUND, LedgitError

SOURCE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def cli_reference() -> str:
    """docs/cli.md's text: the packaged copy, else the source checkout's file. Raises
    LedgitError (exit 4) when neither is there (a package built without it)."""
    packaged = resources.files("ledgit").joinpath("data").joinpath("cli.md")
    for source in (packaged, SOURCE):
        try:
            return source.read_text(encoding="utf-8")
        except OSError:
            continue
    raise LedgitError("the command reference (ledgit/data/cli.md) is not in this "
                      "installation; see docs/cli.md in ledgit's source", NOT_FOUND)


def _blocks(text: str) -> list[str]:
    """Markdown ``text`` as blocks: fenced code blocks whole, else paragraphs and list
    items (a line starting ``- `` begins a new block)."""
    blocks: list[str] = []
    current: list[str] = []
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            if not fence and current:
                blocks.append("\n".join(current))
                current = []
            current.append(line)
            fence = not fence
            if not fence:
                blocks.append("\n".join(current))
                current = []
            continue
        if fence:
            current.append(line)
        elif not line.strip() or line.startswith("- ") or line.startswith("|"):
            if current:
                blocks.append("\n".join(current))
            current = [line] if line.strip() else []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def json_sections(text: str) -> str:
    """Each command's ``###`` heading of ``text`` that states a JSON shape, followed by the
    blocks that state one (a block mentioning JSON, and a ``json`` code block after it).

    Only command sections: the page's title and its ``##`` sections (Exit codes, ...) say
    what holds for every command, and a heading of theirs printed above a block that merely
    mentions JSON read as that block's command (docs/cli.md: "under their command")."""
    out: list[str] = []
    for part in re.split(r"(?m)^(?=#{1,3} )", text):
        heading, _, body = part.partition("\n")
        if not heading.startswith("### "):
            continue
        picked: list[str] = []
        for block in _blocks(body):
            if "JSON" in block or block.startswith("```json"):
                picked.append(block)
        if picked:
            out.append(heading.lstrip("# ").replace("`", "").strip() + "\n" + "\n".join(
                "  " + line if line else "" for block in picked
                for line in block.splitlines()) + "\n")
    return "\n".join(out)
