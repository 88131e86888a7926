"""Function-level imports carry their reason (issue 14 item 3, docs/design.md "Where code goes").

An ``import`` inside a function is the exception, not the habit: it stays only where it saves
a measured cost on a hot path (a read must not pay for a write's modules, a hook for the
CLI's), and then says so with the figure -- ``# lazy: <what it saves, with a number>`` -- or
where the module is an optional extra that may not be installed -- ``# optional: <extra>``.
The comment sits on the import's line (any line of a multi-line import), or on the line above
it or above the block of consecutive imports it belongs to.
Imports under ``if TYPE_CHECKING:`` never run and are not counted.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from test_layers import _type_checking_nodes

SRC = Path(__file__).resolve().parents[1] / "src" / "ledgit"
LAZY = re.compile(r"#\s*lazy:.*\d")
OPTIONAL = re.compile(r"#\s*optional:\s*\S")


def _comments(text: str) -> dict[int, str]:
    """line number -> the comment on that line."""
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string
    return found


def function_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, source, its reason comment or None) for every import inside a function."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, str(path))
    comments = _comments(text)
    skip = _type_checking_nodes(tree)
    import_lines = {n for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skip:
                continue
            end = node.end_lineno or node.lineno
            above = node.lineno - 1
            while above in import_lines and above not in comments:  # a block of imports
                above -= 1
            own = [comments[n] for n in range(node.lineno, end + 1) if n in comments]
            near = own or [comments.get(above, "")]  # its own comment decides, if it has one
            reason = next((c for c in near if LAZY.search(c) or OPTIONAL.search(c)), None)
            found.append((node.lineno, ast.unparse(node), reason))
    return found


def test_the_rule_sees_a_bare_function_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    import json\n\n\ndef g():\n"
                      "    import yaml  # lazy: 9.8 ms that reads skip\n"
                      "    # optional: the [mcp] extra\n    import mcp\n"
                      "    import re  # lazy: no figure\n\n\ndef h():\n"
                      "    # lazy: both, 12 ms\n    import yaml\n    import json\n",
                      encoding="utf-8")
    got = [(line, reason is not None) for line, _src, reason in function_imports(sample)]
    assert sorted(got) == [(2, False), (6, True), (8, True), (9, False), (14, True), (15, True)]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_every_function_import_says_why(path: Path) -> None:
    bare = [f"{path.relative_to(SRC.parent)}:{line}: {src}"
            for line, src, reason in function_imports(path) if reason is None]
    assert not bare, ("function-level imports without '# lazy: <figure>' or '# optional: "
                      "<extra>' (move them to the top, or give the figure):\n" + "\n".join(bare))


def test_function_level_imports_stay_few() -> None:
    """Start-up tricks only where a hot path needs them (issue 23): at most 25 function-level
    imports in src, counted as the project's before-stop check counts them."""
    count = sum(len(function_imports(path)) for path in SRC.rglob("*.py"))
    assert count <= 25, count
