"""Which Beads files a benchmark reads: the full ones when they are beside the checkout,
else the trimmed snapshot kept in the repository (tests/data/beads), saying so.

The full files (5,722 issues, 2,613 merge lines) live in the project's shared data
directory: ``$LEDGIT_SHARED_DATA``, else the first ``shared/data`` beside an ancestor of this
checkout (``../shared/data`` for a checkout in ``/work/main``). The trimmed copy (500 issues,
280 merge lines; tests/data/beads/README.md) makes every benchmark runnable on a fresh clone,
with fewer distinct task shapes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
TRIMMED = CHECKOUT / "tests" / "data" / "beads"


def full_dir() -> Path | None:
    """The directory of the full files, None when there is none."""
    named = os.environ.get("LEDGIT_SHARED_DATA")
    if named:
        return Path(named)
    for parent in CHECKOUT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return None


def beads_file(name: str) -> Path:
    """``name`` (``beads-issues.jsonl`` or ``beads-merges.jsonl``) from the full data when
    present, else from the trimmed snapshot, with a note on stderr naming it."""
    full = full_dir()
    if full is not None and (full / name).is_file():
        return full / name
    print(f"bench: note: the full {name} is not beside this checkout ($LEDGIT_SHARED_DATA or "
          f"../shared/data); using the trimmed copy {TRIMMED / name} (fewer task shapes)",
          file=sys.stderr)
    return TRIMMED / name
