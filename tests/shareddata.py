"""Where the tests' real data is: the trimmed Beads snapshot and merge corpus kept in this
repository, ``tests/data/beads/`` (its README.md gives the origin, the commit, the licence and
how ``trim.py`` beside it cut the full files down). Every test runs on a fresh clone: nothing
here is looked for outside the checkout (the benchmarks in bench/ may read the full files;
bench/benchdata.py).
"""

from __future__ import annotations

from pathlib import Path

#: The directory of the trimmed snapshot.
DATA = Path(__file__).resolve().parent / "data" / "beads"
#: Issues of the Beads snapshot (one JSON object a line): every live one and a spread of the
#: closed and deleted ones (tests/data/beads/README.md).
BEADS_ISSUES = DATA / "beads-issues.jsonl"
#: The Beads merge corpus (base, ours, theirs, result a line), trimmed likewise.
BEADS_MERGES = DATA / "beads-merges.jsonl"
#: Lines of :data:`BEADS_ISSUES` (README.md; a test checks the file against it).
BEADS_ISSUE_LINES = 500
#: Lines of :data:`BEADS_MERGES`, and those with base, ours and theirs all present.
BEADS_MERGE_LINES = 280
BEADS_MERGE_CASES = 125
