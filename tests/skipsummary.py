"""The one line at the end of a test run that says why tests skipped (issue 28: ``-q`` hid
that a few tests need the peer tools): skips counted by what they need, then how to see each
reason (``pytest -rs``). Every file a test reads is in the repository (issue 34): what a skip
needs is something a user can install, or a feature of the machine. Called by
tests/conftest.py's ``pytest_terminal_summary``; no ``assert`` here (PYTEST_DONT_REWRITE)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

#: (what the skipped tests need, words found in their skip reasons), first match wins.
NEEDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the peer tools (pip install yylo-ledger; npm install backlog.md)",
     ("yylo", "backlog")),
    ("chromium and playwright (.ci/run installs them)", ("chromium", "playwright")),
    ("an extra (pip install -e '.[test]')", ("extra", "mcp sdk", "ruamel")),
    ("root, another user or a mount (as .ci/run runs)",
     ("root", "user", "mount", "setpriv")),
)
OTHER = "this machine's features (Linux, /proc, fork, inotify)"


def need_of(reason: str) -> str:
    """What a test skipped for ``reason`` needs, in the words of :data:`NEEDS`."""
    text = reason.lower()
    for need, words in NEEDS:
        if any(w in text for w in words):
            return need
    return OTHER


def summary_line(reasons: Iterable[str]) -> str | None:
    """``N test(s) skipped: A need X, B need Y; see why: pytest -rs`` for the skip reasons
    of a run, None when nothing skipped."""
    counts = Counter(need_of(r) for r in reasons)
    total = sum(counts.values())
    if not total:
        return None
    order = [need for need, _ in NEEDS] + [OTHER]
    parts = [f"{counts[n]} need {n}" for n in order if counts[n]]
    return f"{total} test(s) skipped: {', '.join(parts)}; see each reason: pytest -rs"


def reason_of(longrepr: object) -> str:
    """The reason text of a skipped test's report (``(path, line, 'Skipped: why')``)."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
