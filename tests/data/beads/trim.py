"""Make the trimmed Beads snapshot in this directory from the full shared data.

Usage: ``python tests/data/beads/trim.py [SOURCE_DIR]`` (default: ``$LEDGIT_SHARED_DATA``, else
the first ``shared/data`` beside an ancestor of the checkout). Reads ``beads-issues.jsonl`` and
``beads-merges.jsonl`` there (shared/data/README.md says where they came from) and writes the
files of the same names here, every kept line byte for byte and in its original order.

Which lines are kept, deterministically (no randomness, no clock):

1. Issues: every live issue (a status other than ``closed`` and ``tombstone``: the board page's
   tests look at live tasks); then, in file order, each line that shows a feature no kept line
   shows yet (a status, an issue type, a top-level key, a timestamp's shape per field, a
   dependency type, an id prefix, a multi-line title, non-ASCII text); then an even spread of the
   rest (every k-th line) up to :data:`ISSUES`.
2. Merges: every line where a text field (description, design, acceptance criteria, notes)
   was changed differently on both sides (the hard cases: the only ones where a merge may
   conflict); then, in file order, each line that shows a feature no kept line shows yet
   (which sides are absent, a key changed on one side only, alike on both, differently on
   both, a committed result holding conflict markers); then an even spread of the rest up to
   :data:`MERGES`.

Running it again on the same source writes the same bytes (tests/data/beads/README.md gives
the resulting counts, which the tests assert).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ISSUES = 500  # lines of beads-issues.jsonl kept (of 5,722)
MERGES = 280  # lines of beads-merges.jsonl kept (of 2,613)
LIVE_EXCLUDED = ("closed", "tombstone")
TEXT_KEYS = ("description", "design", "acceptance_criteria", "notes")
TIMESTAMP_KEYS = ("created_at", "updated_at", "closed_at", "deleted_at")


def source_dir(argv: Sequence[str]) -> Path:
    """The directory holding the full files: the argument, ``$LEDGIT_SHARED_DATA``, or the
    first ``shared/data`` beside an ancestor of this checkout."""
    if argv:
        return Path(argv[0])
    named = os.environ.get("LEDGIT_SHARED_DATA")
    if named:
        return Path(named)
    for parent in HERE.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    raise SystemExit("trim.py: no shared/data found; give its directory as the argument")


def shape(value: object) -> str:
    """A timestamp's shape: digits as 9 (``9999-99-99T99:99:99.999999-99:99``)."""
    return re.sub(r"\d", "9", value) if isinstance(value, str) else type(value).__name__


def issue_features(obj: dict[str, Any], line: str) -> set[str]:
    """What one Beads issue shows that a test may depend on."""
    found = {f"status:{obj.get('status')}", f"type:{obj.get('issue_type')}",
             f"prefix:{str(obj.get('id', '')).split('-')[0]}"}
    found |= {f"key:{k}" for k in obj}
    found |= {f"ts:{k}:{shape(obj[k])}" for k in TIMESTAMP_KEYS if k in obj}
    found |= {f"dep:{d.get('type')}" for d in obj.get("dependencies") or []}
    if "\n" in str(obj.get("title", "")):
        found.add("title-newline")
    if not line.isascii():
        found.add("non-ascii")
    return found


def _changed(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> bool:
    return (a or {}).get(key) != (b or {}).get(key)


def merge_features(row: dict[str, Any], line: str) -> set[str]:
    """What one line of the merge corpus shows that a test may depend on."""
    base, ours, theirs = row["base"], row["ours"], row["theirs"]
    found = {"absent:" + ",".join(k for k in ("base", "ours", "theirs", "result")
                                  if row[k] is None)}
    for key in set(row["fields_ours"]) | set(row["fields_theirs"]):
        co, ct = _changed(base, ours, key), _changed(base, theirs, key)
        if co and ct:
            kind = "differently" if _changed(ours, theirs, key) else "alike"
            found.add(f"both-{kind}:{key}")
            if kind == "differently" and key in TEXT_KEYS:
                found.add("text-both-differently")
        else:
            found.add(f"one:{key}")
    if "<<<<<<<" in line:
        found.add("conflict-markers")
    return found


def pick(lines: Sequence[str], first: Iterable[int], features: Callable[[int], set[str]],
         want: int) -> list[int]:
    """Indices of ``lines`` to keep: ``first``, then each line adding a feature, then an even
    spread of the rest up to ``want`` in all; sorted (the file's own order)."""
    kept = list(dict.fromkeys(first))
    seen: set[str] = set()
    for i in kept:
        seen |= features(i)
    for i in range(len(lines)):
        if i in kept:
            continue
        new = features(i) - seen
        if new:
            kept.append(i)
            seen |= new
    chosen = set(kept)
    rest = [i for i in range(len(lines)) if i not in chosen]
    need = max(0, want - len(kept))
    kept += [rest[n * len(rest) // need] for n in range(need)] if need and rest else []
    return sorted(set(kept))


def trim(source: Path, target: Path = HERE) -> dict[str, tuple[int, int]]:
    """Write the trimmed files into ``target``; returns ``{name: (lines, bytes)}``."""
    out: dict[str, tuple[int, int]] = {}
    issues = source.joinpath("beads-issues.jsonl").read_text(encoding="utf-8").splitlines(True)
    objs = [json.loads(line) for line in issues]
    live = [i for i, o in enumerate(objs) if o.get("status") not in LIVE_EXCLUDED]
    keep = pick(issues, live, lambda i: issue_features(objs[i], issues[i]), ISSUES)
    out["beads-issues.jsonl"] = _write(target / "beads-issues.jsonl", [issues[i] for i in keep])
    merges = source.joinpath("beads-merges.jsonl").read_text(encoding="utf-8").splitlines(True)
    rows = [json.loads(line) for line in merges]
    hard = [i for i, row in enumerate(rows)
            if "text-both-differently" in merge_features(row, merges[i])]
    keep = pick(merges, hard, lambda i: merge_features(rows[i], merges[i]), MERGES)
    out["beads-merges.jsonl"] = _write(target / "beads-merges.jsonl", [merges[i] for i in keep])
    return out


def _write(path: Path, lines: list[str]) -> tuple[int, int]:
    data = "".join(lines).encode("utf-8")
    path.write_bytes(data)
    return len(lines), len(data)


def main(argv: Sequence[str]) -> int:
    for name, (count, size) in trim(source_dir(argv)).items():
        print(f"{name}: {count} lines, {size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
