"""Where the shared test data is: the real Beads snapshot and merge corpus
(``shared/data/README.md``), kept beside the checkout, never inside it.

``$LEDGIT_SHARED_DATA`` names the directory; otherwise it is the first ``shared/data`` found
beside an ancestor of this checkout (``../shared/data`` for a checkout in ``/work/main``,
``../../shared/data`` for a worktree in ``/work/wt/NAME``). Tests that need a file skip, naming
the path, when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """The shared data directory (it may not exist: callers test the file they need)."""
    named = os.environ.get("LEDGIT_SHARED_DATA")
    if named:
        return Path(named)
    for parent in _CHECKOUT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return _CHECKOUT.parent / "shared" / "data"


DATA = shared_data()
#: The 5,722-issue Beads snapshot (one JSON object a line).
BEADS_ISSUES = DATA / "beads-issues.jsonl"
#: The Beads merge corpus (base, ours, theirs, result a line).
BEADS_MERGES = DATA / "beads-merges.jsonl"
