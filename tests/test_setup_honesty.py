"""Issue 28, "Setup honesty": the extras' install command works from a checkout and says so
(the hint names this checkout), the end-of-run line counts skips by what they need, and
docs/cli.md has one ``demo`` section and no placeholder."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from skipsummary import OTHER, need_of, summary_line

from ledgit.operations.extrahint import checkout, install_hint

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("extra", ["mcp", "board"])
def test_the_extra_hint_names_a_checkout_that_declares_the_extra(
        extra: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    top = checkout()
    assert top is not None  # the tests run from a checkout
    monkeypatch.chdir(tmp_path)
    hint = install_hint(extra)
    words = shlex.split(hint)
    assert words[:3] == ["pip", "install", "-e"] and words[3] == f"{top}[{extra}]"
    pyproject = (Path(top) / "pyproject.toml").read_text()
    extras = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    assert re.search(rf"(?m)^{extra} = \[", extras)
    monkeypatch.chdir(top)
    assert install_hint(extra) == f"pip install -e '.[{extra}]'"


def test_the_readme_installs_extras_from_the_checkout() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install 'ledgit[" not in readme
    assert "pip install -e '.[mcp]'" in readme and "-rs" in readme


def test_skips_are_counted_by_what_they_need() -> None:
    reasons = ["yylo-ledger not found ($YYLO_LEDGER, PATH); install it with: pip install yylo",
               "Backlog.md CLI not found ($BACKLOG_BIN, PATH, npm prefix -g)",
               "needs /proc"]
    line = summary_line(reasons)
    assert line == ("3 test(s) skipped: 2 need the peer tools (pip install yylo-ledger; "
                    f"npm install backlog.md), 1 need {OTHER}; see each reason: pytest -rs")
    assert summary_line([]) is None
    assert need_of("no chromium at /usr/bin/chromium").startswith("chromium")


def test_cli_md_has_one_demo_section_and_no_placeholder() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    assert len(re.findall(r"(?m)^### `ledgit demo", text)) == 1
    assert "<!--" not in text
