"""The tests' real data lives in the repository (issue 34): the trimmed Beads snapshot in
tests/data/beads is what its README says (counts, sizes, sha256, the licence beside it),
trim.py keeps whole lines in their order, and no test looks outside the checkout."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

from shareddata import (
    BEADS_ISSUE_LINES,
    BEADS_ISSUES,
    BEADS_MERGE_CASES,
    BEADS_MERGE_LINES,
    BEADS_MERGES,
    DATA,
)

PROJECT = Path(__file__).resolve().parents[1]


def trim_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("beads_trim", DATA / "trim.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["beads_trim"] = module
    spec.loader.exec_module(module)
    return module


def test_the_snapshot_is_in_the_repository_as_its_readme_says() -> None:
    assert DATA.is_relative_to(PROJECT)
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"(?m)^\| `([\w-]+\.jsonl)` \| (.+) \|$", readme))
    for path, lines in ((BEADS_ISSUES, BEADS_ISSUE_LINES), (BEADS_MERGES, BEADS_MERGE_LINES)):
        data = path.read_bytes()
        count, size, digest = (c.strip(" `") for c in rows[path.name].split("|"))
        assert int(count) == lines == len(data.splitlines()), path.name
        assert int(size.replace(",", "")) == len(data), path.name
        assert digest == hashlib.sha256(data).hexdigest(), path.name
    merges = [json.loads(line) for line in BEADS_MERGES.open(encoding="utf-8")]
    cases = sum(all(row[k] for k in ("base", "ours", "theirs")) for row in merges)
    assert cases == BEADS_MERGE_CASES
    assert BEADS_ISSUES.stat().st_size + BEADS_MERGES.stat().st_size < 2_000_000
    notice = (DATA / "LICENSE").read_text(encoding="utf-8")
    assert notice.startswith("MIT License") and "Beads Contributors" in notice
    assert "github.com/steveyegge/beads" in readme and "MIT" in readme


def test_trim_keeps_whole_lines_in_their_order(tmp_path: Path) -> None:
    """Trimming the trimmed files (fewer lines than the targets) keeps every byte."""
    trim = trim_module()
    source = tmp_path / "source"
    source.mkdir()
    for path in (BEADS_ISSUES, BEADS_MERGES):
        (source / path.name).write_bytes(path.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    counts = trim.trim(source, out)
    assert counts == {BEADS_ISSUES.name: (BEADS_ISSUE_LINES, BEADS_ISSUES.stat().st_size),
                      BEADS_MERGES.name: (BEADS_MERGE_LINES, BEADS_MERGES.stat().st_size)}
    for path in (BEADS_ISSUES, BEADS_MERGES):
        assert (out / path.name).read_bytes() == path.read_bytes()


def test_trim_picks_features_then_an_even_spread() -> None:
    trim = trim_module()
    lines = [f"{n}\n" for n in range(20)]
    features = {3: {"a"}, 4: {"a"}, 9: {"b"}}
    kept = trim.pick(lines, [7], lambda i: features.get(i, set()), 6)
    assert {3, 7, 9} <= set(kept) and 4 not in kept
    assert len(kept) == 6 and kept == sorted(kept)


def test_no_test_reads_data_outside_the_checkout() -> None:
    for folder in ("tests", "stress"):
        for path in (PROJECT / folder).glob("*.py"):
            if path.name == "test_testdata.py":
                continue
            text = path.read_text(encoding="utf-8")
            assert "shared/data" not in text and "LEDGIT_SHARED_DATA" not in text, path.name
