"""The `ledgit get` readout and the handoff packet (DESIGN §4-§5), plus the pure helpers they
share with :mod:`ledgit.operations.transitions`: claim freshness, durations, the Goal/Acceptance
body sections.

Pure, and light on purpose: it works on ``fields`` (the front matter as a dict) and ``body``,
so ``get`` can answer from an index row without parsing YAML, and it imports only the
standard library at the top. Anything missing, contradictory or stale is listed in
``unknown`` as ``{"field", "reason"}`` and shown as ``UNKNOWN (reason)`` in text, never guessed.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.timestamps import parse_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

READOUT_VERSION = 1
NOT_READY_OUTCOMES = ("drop", "no_change")  # `ready` never offers these (DESIGN §4)
ACTIVE = ("open", "in_progress", "waiting", "monitoring", "parked")


def build_readout(fields: Mapping[str, Any], body: str, *, path: str, revision: str,
                  now: str, ttl: int) -> dict[str, Any]:
    """The readout as a JSON-ready dict (shape documented in docs/cli.md, ``readout: 1``).

    ``fields``/``body``: a valid record's front matter and body; ``path``: the task file
    relative to the board root; ``revision``: the record's revision; ``now``: RFC 3339 UTC;
    ``ttl``: claim TTL in seconds.
    """
    f = fields
    status = f["status"]
    goal = goal_of(body)
    acceptance = acceptance_of(body)
    fresh = freshness_of(f, now, ttl)
    items: list[dict[str, Any]] = f.get("items", [])
    unknown: list[dict[str, str]] = []

    def missing(field: str, reason: str) -> None:
        unknown.append({"field": field, "reason": reason})

    for field, message in lifecycle_problems(f):
        missing(field, f"contradictory: {message}")
    if goal is None:
        missing("goal", "no '## Goal' section in the body")
    if acceptance is None:
        missing("acceptance", "no '## Acceptance' section in the body")
    elif not acceptance:
        missing("acceptance", "the '## Acceptance' section is empty")
    if fresh.state in ("stale", "contested"):
        missing("claim", fresh.reason)
    if status == "in_progress" and not f.get("claim"):
        missing("claim", "status in_progress but nobody holds a claim")
    if status in ACTIVE:
        if not f.get("next_action"):
            missing("next_action", "not set")
        if not f.get("gate"):
            missing("gate", "not set: no decision is recorded as blocking the next step "
                            "(ledgit update ID --gate TEXT)")
    if status == "monitoring" and not f.get("signal"):
        missing("signal", "status monitoring but no signal recorded")
    candidates = [i for i in items if i["trust"] == "candidate"]
    if candidates and not f.get("owner"):
        missing("owner", f"not set: {len(candidates)} candidate item(s) wait for an owner "
                         "to accept them")
    return {
        "readout": READOUT_VERSION,
        "id": f["id"],
        "title": f["title"],
        "status": status,
        "path": path,
        "revision": revision,
        "created": f["created"],
        "last_modified": f["last_modified"],
        "priority": f.get("priority"),
        "owner": f.get("owner"),
        "worker": f.get("worker"),
        "claim": f.get("claim"),
        "freshness": {"state": fresh.state, "reason": fresh.reason,
                      "age_seconds": fresh.age, "ttl_seconds": fresh.ttl},
        "contested": f.get("contested", []),
        "next_action": f.get("next_action"),
        "gate": f.get("gate"),
        "waiting_on": f.get("waiting_on"),
        "signal": f.get("signal"),
        "outcome": f.get("outcome"),
        "response": f.get("response"),
        "depends_on": f.get("depends_on", []),
        "labels": f.get("labels", []),
        "commits": f.get("commits", []),
        "goal": goal,
        "acceptance": acceptance or [],
        "locked_items": [i for i in items if i["trust"] == "locked"],
        "artifacts": [i for i in items if i["kind"] == "artifact" and i["trust"] != "deprecated"],
        "candidate_items": candidates,
        "deprecated_items": [i["id"] for i in items if i["trust"] == "deprecated"],
        "notes": f.get("notes", []),
        "unknown": unknown,
        "fields": dict(f),
        "body": body,
    }


def _unknown_for(readout: Mapping[str, Any], field: str) -> str | None:
    reasons = [u["reason"] for u in readout["unknown"] if u["field"] == field]
    return "; ".join(reasons) if reasons else None


def render_readout(readout: Mapping[str, Any], *, body: bool = True) -> str:
    """The readout as text: labelled lines, then goal, acceptance, items, UNKNOWNs, body."""
    r = readout

    def show(field: str, value: Any) -> str:
        reason = _unknown_for(r, field)
        if value in (None, "", [], {}):
            return f"UNKNOWN ({reason or 'not set'})"
        return str(value) + (f"  [UNKNOWN: {reason}]" if reason else "")

    lines = [f"{r['id']}  {r['title']}",
             f"status:        {r['status']}",
             f"path:          {r['path']}",
             f"revision:      {r['revision']}",
             f"created:       {r['created']}",
             f"last_modified: {r['last_modified']}"]
    for key in ("priority", "owner", "worker"):
        if r.get(key) is not None:
            lines.append(f"{key + ':':<15}{r[key]}")
    claim = r["claim"]
    fr = r["freshness"]
    if claim:
        lines.append(f"claim:         {claim['by']} since {claim['at']} ({fr['state']}: "
                     f"{fr['reason']})")
        if claim.get("note"):
            lines.append(f"claim note:    {claim['note']}")
        for c in r.get("contested") or []:
            lines.append(f"contested by:  {c['by']} (claimed {c['at']}, lost in a merge)")
    else:
        extra = _unknown_for(r, "claim")
        lines.append("claim:         none" + (f"  [UNKNOWN: {extra}]" if extra else ""))
    lines.append(f"next_action:   {show('next_action', r['next_action'])}")
    lines.append(f"gate:          {show('gate', r['gate'])}")
    if r["waiting_on"] or r["status"] == "waiting":
        lines.append(f"waiting_on:    {show('waiting_on', r['waiting_on'])}")
    if r["signal"] or r["status"] == "monitoring":
        lines.append(f"signal:        {show('signal', r['signal'])}")
    outcome = r["outcome"]
    if outcome:
        text = outcome["kind"] + (f": {outcome['reason']}" if outcome.get("reason") else "")
        if outcome.get("reuse"):
            text += f" (reuse: {outcome['reuse']})"
        lines.append(f"outcome:       {text}")
    elif r["status"] in ("parked", "dropped"):
        lines.append(f"outcome:       {show('outcome', None)}")
    if r["response"]:
        lines.append(f"response:      {r['response']}")
    if r["depends_on"]:
        lines.append(f"depends_on:    {', '.join(r['depends_on'])}")
    if r["labels"]:
        lines.append(f"labels:        {', '.join(r['labels'])}")
    if r["commits"]:
        lines.append(f"commits:       {', '.join(r['commits'])}")
    lines.append("goal:")
    lines.append("  " + show("goal", r["goal"]).replace("\n", "\n  "))
    lines.append("acceptance:")
    if r["acceptance"]:
        lines += [f"  - {a}" for a in r["acceptance"]]
    else:
        lines.append(f"  {show('acceptance', None)}")
    lines.append("locked items:" + ("" if r["locked_items"] else " none"))
    lines += [_item_line(i) for i in r["locked_items"]]
    lines.append("artifacts:" + ("" if r["artifacts"] else " none"))
    lines += [_item_line(i) for i in r["artifacts"]]
    if r["candidate_items"]:
        lines.append(f"candidate items ({len(r['candidate_items'])}, not yet accepted):")
        lines += [_item_line(i) for i in r["candidate_items"]]
    if r["deprecated_items"]:
        lines.append(f"deprecated items: {len(r['deprecated_items'])} "
                     "(see --json or the task file)")
    if r.get("notes"):
        lines.append(f"notes ({len(r['notes'])}):")
        lines += [f"  {n['at']} {n['by']}: {n['text']}" for n in r["notes"]]
    if r["unknown"]:
        lines.append("UNKNOWN:")
        lines += [f"  {u['field']}: {u['reason']}" for u in r["unknown"]]
    text = "\n".join(lines) + "\n"
    if body and r["body"]:
        text += "---\n" + str(r["body"])
    return text


def _item_line(item: Mapping[str, Any]) -> str:
    line = f"  {item['id']} [{item['kind']}, {item['trust']}] {item['text']}"
    if item.get("why"):
        line += f" (why: {item['why']})"
    if item.get("evidence"):
        line += f" (evidence: {item['evidence']})"
    if item.get("supersedes"):
        line += f" (supersedes {', '.join(item['supersedes'])})"
    return str(line).replace("\n", "\n    ")


# --------------------------------------------------------------------------- helpers


class Freshness:
    """A claim's freshness: ``state`` fresh|stale|none|contested, a one-line ``reason``,
    ``age`` seconds since the last heartbeat (None without a claim), ``ttl`` seconds, and
    ``stale``: the lease has expired (also when the state is contested)."""

    __slots__ = ("state", "reason", "age", "ttl", "stale")

    def __init__(self, state: str, reason: str, age: int | None, ttl: int,
                 stale: bool = False) -> None:
        self.state, self.reason, self.age, self.ttl, self.stale = state, reason, age, ttl, stale

    def _tuple(self) -> tuple[str, str, int | None, int, bool]:
        return (self.state, self.reason, self.age, self.ttl, self.stale)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Freshness) and self._tuple() == other._tuple()

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return "Freshness(state={!r}, reason={!r}, age={!r}, ttl={!r}, stale={!r})".format(
            *self._tuple())


def format_duration(seconds: float) -> str:
    """Human duration: ``45s``, ``30m``, ``2h``, ``1h05m``, ``3d`` (rounded down)."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    if s < 2 * 3600:
        m, rest = divmod(s, 60)
        return f"{m}m" if rest == 0 or s >= 600 else f"{m}m{rest:02d}s"
    if s < 48 * 3600:
        h, rest = divmod(s, 3600)
        m = rest // 60
        return f"{h}h" if m == 0 else f"{h}h{m:02d}m"
    return f"{s // 86400}d"


def now_timestamp() -> str:
    """The current time as canonical RFC 3339 UTC with microseconds
    (``2026-08-29T10:00:00.000000Z``, :func:`ledgit.core.timestamps.format_timestamp`'s form), from
    time.time_ns: neither a read nor a write imports datetime for it."""
    return timestamp_at(time.time_ns() // 1000)


def timestamp_at(micros: int) -> str:
    """The canonical RFC 3339 UTC text of ``micros`` microseconds since the epoch."""
    seconds, micro = divmod(micros, 1_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{micro:06d}Z")


def claim_expiry(claim: Mapping[str, Any], ttl: int) -> str:
    """When a claim goes stale (DESIGN §4): its last heartbeat (else its ``at``) plus ``ttl``
    seconds, as canonical RFC 3339 UTC text."""
    last = claim.get("heartbeat") or claim["at"]
    return timestamp_at(round((epoch_seconds(last) + ttl) * 1_000_000))


def epoch_seconds(stamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 UTC timestamp as ledgit writes them
    (``2026-08-29T10:00:00.000000Z``; other offsets and precisions are accepted too)."""
    if len(stamp) == 27 and stamp[4] == "-" and stamp[10] == "T" and stamp[19] == "." \
            and stamp[26] == "Z" and stamp[:4].isdigit():
        # the canonical form (what ledgit writes), without importing datetime
        try:
            y, mo, d = int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10])
            h, mi, sec = int(stamp[11:13]), int(stamp[14:16]), int(stamp[17:19])
            micro = int(stamp[20:26])
        except ValueError:
            pass
        else:
            if 1 <= mo <= 12 and 1 <= d <= _month_days(y, mo) and h < 24 and mi < 60 \
                    and sec < 60:
                return (_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec
                        + micro / 1_000_000)

    text = stamp.strip().replace("z", "Z").replace("t", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    m = re.fullmatch(r"(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?([+-]\d\d:\d\d)", text)
    if m:  # Python 3.10's fromisoformat wants 0, 3 or 6 fraction digits
        frac = (m.group(2) or "0")[:6].ljust(6, "0")
        text = f"{m.group(1)}.{frac}{m.group(3)}"
    return parse_timestamp(text).timestamp()


def _month_days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def format_ttl(seconds: int) -> str:
    """A TTL in the units config uses: ``90s``, ``30m``, ``2h``."""
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds // 60}m"
    return f"{seconds}s"




# Compiled on first use (re's own cache): list and search import this module for the claim
# helpers only.
_HEADING = r"^(#{1,6})[ \t]+(.*?)[ \t#]*$"
_BULLET = r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?"


def _section(body: str, name: str) -> str | None:
    """The text under the first heading named ``name`` (case-insensitive) up to the next
    heading of the same or a higher level; None when there is no such heading."""
    lines = body.split("\n")
    start = level = None
    for i, line in enumerate(lines):
        if not line.startswith("#"):  # every heading does (_HEADING): ~10x fewer matches
            continue
        m = re.match(_HEADING, line)
        if not m:
            continue
        if start is None:
            if m.group(2).strip().lower() == name:
                start, level = i + 1, len(m.group(1))
        elif level is not None and len(m.group(1)) <= level:
            return "\n".join(lines[start:i]).strip("\n")
    if start is None:
        return None
    return "\n".join(lines[start:]).strip("\n")


def goal_of(body: str) -> str | None:
    """The ``## Goal`` section's text (stripped), None when missing or empty."""
    text = _section(body, "goal")
    return text.strip() if text and text.strip() else None


def acceptance_of(body: str) -> list[str] | None:
    """The ``## Acceptance`` criteria, list markers and ``[ ]`` checkboxes removed; None when
    the section is missing. When the section has list items only they count; otherwise every
    non-empty line is one criterion."""
    text = _section(body, "acceptance")
    if text is None:
        return None
    lines = [line for line in text.split("\n") if line.strip()]
    bullet = re.compile(_BULLET)
    bullets = [line for line in lines if bullet.match(line) and not line.startswith((" ", "\t"))]
    chosen = bullets if bullets else lines
    return [text for line in chosen if (text := bullet.sub("", line).strip())]




def freshness_of(fields: Mapping[str, Any], now: str, ttl: int) -> Freshness:
    """Freshness of a task's claim (DESIGN §4); ``now``: RFC 3339 UTC, ``ttl``: seconds.

    ``none`` without a claim; ``contested`` while ``contested`` lists claims that lost to the
    current one in a merge; ``stale`` when the last heartbeat (or the claim time) is more than
    ``ttl`` seconds before ``now``; else ``fresh``.
    """
    claim = fields.get("claim")
    if not claim:
        return Freshness("none", "nobody holds a claim", None, ttl)
    by = claim["by"]
    last = claim.get("heartbeat") or claim["at"]
    age = epoch_seconds(now) - epoch_seconds(last)
    beat = "last heartbeat" if claim.get("heartbeat") else "claimed"
    if age < 0:
        timing = f"{beat} {format_duration(-age)} in the future (clock skew?)"
        age = 0
    else:
        timing = f"{beat} {format_duration(age)} ago, TTL {format_ttl(ttl)}"
    stale = age > ttl
    contested = fields.get("contested") or []
    if contested:
        losers = ", ".join(sorted({c["by"] for c in contested}))
        extra = "; stale" if stale else ""
        return Freshness("contested",
                         f"claim by {by} {timing}{extra}; contested in a merge by {losers}, "
                         f"whose claim lost", int(age), ttl, stale)
    if stale:
        return Freshness("stale", f"claim by {by} {timing}", int(age), ttl, True)
    return Freshness("fresh", f"claim by {by} {timing}", int(age), ttl)




def _item_view(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in ("id", "kind", "text", "why", "evidence", "by", "at")
            if k in item}


def handoff_of(fields: Mapping[str, Any], body: str, revision: str) -> dict[str, Any]:
    """The compact handoff packet (DESIGN §5): id, title, status, revision, goal, acceptance,
    next_action, gate, outcome and the locked items only (never candidate or deprecated).
    Missing values are None (acceptance: an empty list)."""
    f = fields
    return {
        "id": f["id"],
        "title": f["title"],
        "status": f["status"],
        "revision": revision,
        "goal": goal_of(body),
        "acceptance": acceptance_of(body) or [],
        "next_action": f.get("next_action"),
        "gate": f.get("gate"),
        "outcome": f.get("outcome"),
        "items": [_item_view(i) for i in f.get("items", []) if i["trust"] == "locked"],
    }


def render_handoff(packet: Mapping[str, Any]) -> str:
    """The handoff packet as Markdown (``UNKNOWN (not set)`` for missing values)."""

    def val(v: Any) -> str:
        return str(v) if v else "UNKNOWN (not set)"

    out = [f"# Handoff: {packet['id']} {packet['title']}", "",
           f"- status: {packet['status']}",
           f"- revision: {packet['revision']}",
           f"- next action: {val(packet['next_action'])}",
           f"- gate: {val(packet['gate'])}"]
    outcome = packet.get("outcome")
    if outcome:
        extra = f" (reuse: {outcome['reuse']})" if outcome.get("reuse") else ""
        out.append(f"- outcome: {outcome['kind']}: {outcome.get('reason', '')}{extra}")
    out += ["", "## Goal", val(packet["goal"]), "", "## Acceptance"]
    out += [f"- {a}" for a in packet["acceptance"]] or ["UNKNOWN (not set)"]
    out += ["", "## Locked state"]
    if packet["items"]:
        for i in packet["items"]:
            line = f"- [{i['kind']}] {i['text']} ({i['id']})"
            if i.get("why"):
                line += f" — why: {i['why']}"
            if i.get("evidence"):
                line += f" — evidence: {i['evidence']}"
            out.append(line)
    else:
        out.append("(none)")
    return "\n".join(out) + "\n"
