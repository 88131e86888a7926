"""Real concurrent edits: our task merge vs plain ``git merge-file`` on the Beads corpus.

For each line of a ``beads-merges.jsonl`` (see shared/data/README.md) whose base, ours and
theirs are all present, each side is imported as a ledgit task file
(:func:`ledgit.interop.beads.beads_to_record`), then merged

- by our driver's task path, :func:`ledgit.core.filemerge.merge_task_bytes`, ours-vs-theirs AND
  theirs-vs-ours (a rebase swaps the sides), and
- by ``git merge-file -p`` on the same three files, both ways.

Reported per merger: cases, clean merges, conflicts (by field), one-sided changes lost,
changes made identically on both sides but lost, asymmetric results. A "change" is judged on
the Beads fields (the source's own granularity): the merged task file is mapped back with
:func:`ledgit.interop.beads.record_to_beads` (lossless: tests/test_interop_beads.py), and a
field changed on exactly one side must hold that side's value. A conflicted result is checked
too, on every field outside the conflicted text (markers are not a silent loss; a lost scalar
next to them is). A clean ``git merge-file`` result that is no longer a valid task file
counts as "unparsable".

Usage: ``python bench/merge_corpus.py PATH [--json] [--limit N]``. Needs git on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledgit.core.errors import LedgitError
from ledgit.core.filemerge import merge_task_bytes
from ledgit.core.merge import merge_records
from ledgit.core.record import parse_record
from ledgit.core.render import render_record
from ledgit.interop.beads import (
    SECTIONS,
    beads_to_record,
    normalize_beads,
    record_to_beads,
    same_value,
)

TEXT_KEYS = ("description", *(k for k, _ in SECTIONS))
MARKERS = (b"<<<<<<< ", b"=======", b">>>>>>> ")


def changed(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> bool:
    """True when ``key`` differs between two normalised Beads objects (absent = None)."""
    if (key in a) != (key in b):
        return True
    return key in a and not same_value(key, a[key], b[key])


def audit(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any],
          result: Mapping[str, Any] | None, skip: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Which Beads fields a merge result lost: ``{"one_sided": [...], "same": [...],
    "two_sided": [...]}`` (the last: changed differently on both sides, listed for the
    by-rule table). ``result`` None = unreadable: every changed field counts as lost."""
    out: dict[str, list[str]] = {"one_sided": [], "same": [], "two_sided": []}
    for key in sorted(set(base) | set(ours) | set(theirs)):
        co, ct = changed(base, ours, key), changed(base, theirs, key)
        if not co and not ct:
            continue
        if co and ct and changed(ours, theirs, key):
            out["two_sided"].append(key)
            continue
        if key in skip:
            continue
        want = ours if co else theirs
        kind = "same" if co and ct else "one_sided"
        if result is None or changed(want, result, key):
            out[kind].append(key)
    return out


def git_merge_file(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> tuple[bytes, int]:
    """``git merge-file -p ours base theirs``: (output, number of conflicts)."""
    paths = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        p = tmp / name
        p.write_bytes(data)
        paths.append(str(p))
    proc = subprocess.run(["git", "merge-file", "-p", *paths], capture_output=True,
                          env={**os.environ, "LC_ALL": "C"}, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise RuntimeError(proc.stderr.decode(errors="replace"))
    return proc.stdout, proc.returncode


def conflicted_fields(text: bytes) -> list[str]:
    """Fields that differ between the two sides of the conflict hunks of a task file: a
    top-level key, ``x.<ns>.<key>`` for extensions, or ``body``."""
    fields: set[str] = set()
    path: list[str] = []
    fences = 0
    part: list[str] | None = None  # the side being read inside a hunk
    sides: list[list[tuple[str, str]]] = []
    hunk_path: list[str] = []
    for raw in text.split(b"\n"):
        line = raw.decode("utf-8", errors="replace")
        if line.startswith("<<<<<<< "):
            part, sides, hunk_path = list(path), [[]], list(path)
            continue
        if part is not None and line.startswith("======="):
            part, sides = list(hunk_path), [*sides, []]
            continue
        if part is not None and line.startswith(">>>>>>> "):
            if fences != 1:
                fields.add("body")
            else:
                one, two = set(sides[0]), set(sides[-1])
                fields.update(name for name, _ in one ^ two)
            part = None
            continue
        if line == "---" and part is None:
            fences += 1
            continue
        current = part if part is not None else path
        if fences == 1 and ":" in line and not line.lstrip().startswith("- "):
            indent = (len(line) - len(line.lstrip(" "))) // 2
            key = line.strip().split(":", 1)[0].strip('"')
            current[:] = current[:indent] + [key]
        if part is not None:
            sides[-1].append((_field_name(current), line))
    return sorted(fields)


def _field_name(path: list[str]) -> str:
    if not path:
        return "?"
    return ".".join(path[:3]) if path[0] == "x" else path[0]


def new_stats() -> dict[str, Any]:
    return {"cases": 0, "clean": 0, "conflicted": 0, "conflicts_by_field": Counter(),
            "one_sided_lost": 0, "one_sided_lost_by_field": Counter(), "same_lost": 0,
            "asymmetric": 0, "unparsable": 0, "examples": []}


def run(path: Path, limit: int | None = None, git: bool = True) -> dict[str, Any]:
    """Run the corpus; returns the figures (JSON-compatible). ``git=False`` skips
    ``git merge-file`` (its figures stay 0)."""
    ours_s, git_s = new_stats(), new_stats()
    corpus: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    started = time.perf_counter()
    ours_time = 0.0
    with tempfile.TemporaryDirectory() as tmpdir, open(path, encoding="utf-8") as fh:
        tmp = Path(tmpdir)
        for n, line in enumerate(fh, start=1):
            row = json.loads(line)
            corpus["lines"] += 1
            if not (row["base"] and row["ours"] and row["theirs"]):
                continue
            if limit is not None and corpus["cases"] >= limit:
                break
            corpus["cases"] += 1
            sides = [normalize_beads(row[k]) for k in ("base", "ours", "theirs")]
            try:
                recs = [beads_to_record(row[k], f"{path.name}:{n}:{k}")
                        for k in ("base", "ours", "theirs")]
            except LedgitError as exc:
                corpus["unconvertible"] += 1
                print(f"skip: {exc}", file=sys.stderr)
                continue
            b, o, t = (render_record(r).encode() for r in recs)
            if o == t:
                corpus["identical_sides"] += 1
            elif b in (o, t):
                corpus["one_side_unchanged_after_import"] += 1
            else:
                corpus["both_changed_after_import"] += 1
            task_path = f".ledgit/tasks/{recs[0].id}.md"
            # ---- ledgit
            t0 = time.perf_counter()
            out1, c1, _ = merge_task_bytes(b, o, t, 7, task_path)
            out2, c2, _ = merge_task_bytes(b, t, o, 7, task_path)
            ours_time += time.perf_counter() - t0
            ours_s["cases"] += 1
            if out1 != out2 or c1 != c2:
                ours_s["asymmetric"] += 1
            mres = merge_records(*recs)
            for k in audit(*sides, record_to_beads(mres.record))["two_sided"]:
                by_rule[k] += 1
            if c1:
                ours_s["conflicted"] += 1
                ours_s["conflicts_by_field"].update(mres.conflicts)
                lost = audit(*sides, record_to_beads(mres.record), skip=TEXT_KEYS)
            else:
                ours_s["clean"] += 1
                lost = audit(*sides, record_to_beads(parse_record(out1)))
            _count_lost(ours_s, lost, row)
            # ---- git merge-file
            if not git:
                continue
            git_s["cases"] += 1
            g1, n1 = git_merge_file(b, o, t, tmp)
            g2, n2 = git_merge_file(b, t, o, tmp)
            if n1:
                git_s["conflicted"] += 1
                git_s["conflicts_by_field"].update(conflicted_fields(g1))
            else:
                git_s["clean"] += 1
                if n2 == 0 and g1 != g2:
                    git_s["asymmetric"] += 1
                try:
                    merged = record_to_beads(parse_record(g1))
                except (LedgitError, ValueError, KeyError):
                    git_s["unparsable"] += 1
                    merged = None
                _count_lost(git_s, audit(*sides, merged), row)
            if bool(n1) != bool(n2):
                git_s["asymmetric"] += 1
    for s in (ours_s, git_s):
        s["clean_pct"] = round(100.0 * s["clean"] / s["cases"], 2) if s["cases"] else 0.0
    return {"path": str(path), "corpus": dict(corpus), "ledgit": _plain(ours_s),
            "git_merge_file": _plain(git_s), "two_sided_resolved_by_rule": dict(by_rule),
            "seconds": round(time.perf_counter() - started, 2),
            "ledgit_merge_seconds": round(ours_time, 2)}


def _count_lost(stats: dict[str, Any], lost: dict[str, list[str]], row: Mapping[str, Any]) -> None:
    if lost["one_sided"]:
        stats["one_sided_lost"] += len(lost["one_sided"])
        stats["one_sided_lost_by_field"].update(lost["one_sided"])
        if len(stats["examples"]) < 5:
            stats["examples"].append(f"{row['merge'][:10]} {row['id']}: "
                                     + ", ".join(lost["one_sided"]))
    stats["same_lost"] += len(lost["same"])


def _plain(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: (dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0])))
                if isinstance(v, Counter) else v) for k, v in stats.items()}


def markdown(res: dict[str, Any]) -> str:
    """The figures as the Markdown table of docs/merge.md."""
    o, g = res["ledgit"], res["git_merge_file"]

    def by_field(c: Mapping[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in c.items()) or "-"

    rows = [
        ("cases (base, ours and theirs present)", o["cases"], g["cases"]),
        ("clean merges", f"{o['clean']} ({o['clean_pct']}%)", f"{g['clean']} ({g['clean_pct']}%)"),
        ("conflicted merges", o["conflicted"], g["conflicted"]),
        ("conflicts by field", by_field(o["conflicts_by_field"]),
         by_field(g["conflicts_by_field"])),
        ("one-sided changes lost", o["one_sided_lost"], g["one_sided_lost"]),
        ("changes made on both sides alike, lost", o["same_lost"], g["same_lost"]),
        ("clean results that are not a valid task file", o["unparsable"], g["unparsable"]),
        ("asymmetric results (A into B vs B into A)", o["asymmetric"], g["asymmetric"]),
    ]
    lines = ["| | ledgit merge driver | git merge-file |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--limit", type=int, default=None, help="stop after N cases")
    args = ap.parse_args(argv)
    res = run(args.path, args.limit)
    if args.json:
        print(json.dumps(res, indent=2, sort_keys=True))
    else:
        print(markdown(res))
        print(f"corpus: {res['corpus']}")
        print(f"changed differently on both sides, resolved by rule: "
              f"{res['two_sided_resolved_by_rule']}")
        for name in ("ledgit", "git_merge_file"):
            for ex in res[name]["examples"]:
                print(f"{name} lost: {ex}")
        print(f"time: {res['seconds']}s (ledgit merges: {res['ledgit_merge_seconds']}s)")
    bad = res["ledgit"]["one_sided_lost"] or res["ledgit"]["asymmetric"]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
