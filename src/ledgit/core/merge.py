"""The merge policy for task records, field by field (DESIGN §7). Pure.

Every rule is symmetric and uses no clock and no randomness: the two sides are first put in a
canonical order (by ``last_modified``, then by canonical JSON), so the output bytes do not depend
on which side Git calls "ours" (a rebase swaps them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ledgit.core.lifecycle import lifecycle_problems, outcome_contradiction
from ledgit.core.marklabels import marker_labels
from ledgit.core.record import Record, make_record
from ledgit.core.revision import canonical_json
from ledgit.core.schema import FIELD_ORDER, SET_FIELDS, TERMINAL_RANK, TRUST_RANK

# The merge driver runs this module in a fresh process per file (DESIGN §7): the task-file
# path needs neither ledgit.core.history (jsonpatch, hashlib) nor dataclasses: histories are
# merged by ledgit.core.historymerge.

OURS, THEIRS, BOTH, MERGED, BASE = "ours", "theirs", "both", "merged", "base"
#: The account an importer writes for a task its source closed without one (DESIGN §4: done
#: needs a ``response``). It carries no information, so a merge never lets it replace a real
#: account written on the other side (docs/merge.md).
NO_ACCOUNT = "(closed without an account)"
_ABSENT: Any = None


class MergeResult:
    """A merged record, the names of fields that conflicted, where each changed field came
    from (``ours``/``theirs``/``both``/``merged``) and, for a field both sides changed
    differently, the DESIGN §7 rule that decided it (``rules``; both for display only, not
    part of the output)."""

    __slots__ = ("record", "conflicts", "provenance", "notes", "rules")

    def __init__(self, record: Record, conflicts: list[str] | None = None,
                 provenance: dict[str, str] | None = None,
                 notes: list[str] | None = None, rules: dict[str, str] | None = None) -> None:
        self.record = record
        self.conflicts = conflicts if conflicts is not None else []
        self.provenance = provenance if provenance is not None else {}
        self.notes = notes if notes is not None else []
        self.rules = rules if rules is not None else {}

    def __repr__(self) -> str:
        return (f"MergeResult(record={self.record!r}, conflicts={self.conflicts!r}, "
                f"provenance={self.provenance!r}, notes={self.notes!r}, "
                f"rules={self.rules!r})")


# The DESIGN §7 rule that decides a field both sides changed differently, in words.
RULE_LATER = "both changed it; the later change wins"
RULE_TIE = "both changed it at the same instant; the greater value wins"
RULE_TERMINAL = "both changed it; a terminal status wins"
RULE_ACCOUNT = "both changed it; a real account beats none"
RULE_EARLIER_CLAIM = "both claimed it; the earlier claim wins"
RULE_SET = "both changed it; both sides' adds and removes apply"
RULE_ITEMS = "both changed them; items are joined by id"
RULE_MAP = "both changed it; merged key by key"
RULE_LINES = "both changed it; merged line by line"
RULE_NOTES = "both added notes; every note kept once, oldest first"


def describe_provenance(field: str, source: str, rule: str | None = None) -> str:
    """One field's provenance in words: ``priority from theirs``, ``body: merged from both
    sides``, ``status: the same change on both sides``; with the ``rule`` that decided it,
    ``next_action from theirs (both changed it; the later change wins)``."""
    if source == MERGED:
        text = f"{field}: merged from both sides"
    elif source == BOTH:
        text = f"{field}: the same change on both sides"
    else:
        text = f"{field} from {source}"
    return f"{text} ({rule})" if rule else text


def _key(value: Any) -> bytes:
    return canonical_json(value)


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line: str.splitlines would also split on U+2028 and friends.
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class _Sides:
    """The two sides in canonical order: ``a`` sorts before ``b``."""

    def __init__(self, base: Record | None, ours: Record, theirs: Record) -> None:
        ko = (ours.fields["last_modified"], _key(ours.state()))
        kt = (theirs.fields["last_modified"], _key(theirs.state()))
        self.swapped = kt < ko
        self.a, self.b = (theirs, ours) if self.swapped else (ours, theirs)
        self.base = base
        self.lm_a = self.a.fields["last_modified"]
        self.lm_b = self.b.fields["last_modified"]

    def label(self, which: str) -> str:
        """Map canonical side ``a``/``b`` back to ``ours``/``theirs`` for provenance."""
        if which in (BOTH, MERGED, BASE):
            return which
        is_a = which == "a"
        return THEIRS if is_a == self.swapped else OURS

    def later(self, va: Any, vb: Any) -> tuple[Any, str]:
        """DESIGN §7 scalar rule: the later last_modified wins; tie → greater canonical JSON."""
        if self.lm_a != self.lm_b:
            return (vb, "b") if self.lm_b > self.lm_a else (va, "a")
        return (vb, "b") if _key(vb) > _key(va) else (va, "a")


def _three_way(base: Any, a: Any, b: Any) -> tuple[Any, str | None]:
    """(value, source) when at most one side changed; (None, None) when both changed."""
    if _key(a) == _key(b):
        return a, (None if _key(a) == _key(base) else BOTH)
    if _key(a) == _key(base):
        return b, "b"
    if _key(b) == _key(base):
        return a, "a"
    return None, None


def merge_set(base: Sequence[str] | None, a: Sequence[str] | None,
              b: Sequence[str] | None) -> list[str]:
    """Set merge: base ∪ added − removed, both sides' adds and removes honoured (DESIGN §7).

    Kept base elements stay in base order; additions follow in sorted order.
    """
    base_l, a_l, b_l = list(base or []), list(a or []), list(b or [])
    removed = (set(base_l) - set(a_l)) | (set(base_l) - set(b_l))
    kept = [x for x in base_l if x not in removed]
    added = sorted((set(a_l) | set(b_l)) - set(base_l))
    return kept + added


def merge_notes(base: Sequence[Mapping[str, Any]] | None,
                a: Sequence[Mapping[str, Any]] | None,
                b: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Notes (DESIGN §4: append-only lines ``{at, by, text}``) as a set: the base's notes
    that neither side removed, in base order, then every note either side added, each once,
    oldest first (``at``, then ``by``, then ``text``). No order depends on which side is
    ours, so two sides that only appended merge with no conflict, byte-identical both ways."""
    base_l, a_l, b_l = list(base or []), list(a or []), list(b or [])
    in_a, in_b = {_key(n) for n in a_l}, {_key(n) for n in b_l}
    kept = [dict(n) for n in base_l if _key(n) in in_a and _key(n) in in_b]
    seen = {_key(n) for n in base_l}
    added: dict[bytes, Mapping[str, Any]] = {}
    for n in a_l + b_l:
        k = _key(n)
        if k not in seen:
            added.setdefault(k, n)
    order = sorted(added.items(), key=lambda kv: (kv[1]["at"], kv[1]["by"], kv[1]["text"],
                                                  kv[0]))
    return kept + [dict(n) for _, n in order]


def _renews(base: Any, claim: Any) -> bool:
    """Whether ``claim`` is the base's claim renewed (same claimant and ``at``: a heartbeat
    or a note), not a new one."""
    return bool(base and claim and claim["by"] == base["by"] and claim["at"] == base["at"])


def _merge_claims(sides: _Sides, base: Any, a: Any, b: Any,
                  contested: list[dict[str, Any]]) -> tuple[Any, str]:
    value, src = _three_way(base, a, b)
    if src is not None or _key(a) == _key(b):
        return value, src or BOTH
    # One side ended the base's claim (release, wait, monitor, complete, ...), the other only
    # renewed it: the end is a decision, the heartbeat only a lease kept alive (docs/merge.md).
    if base and not a and _renews(base, b):
        return None, "a"
    if base and not b and _renews(base, a):
        return None, "b"
    if a and b:
        if a["by"] == b["by"]:
            merged = dict(a)
            merged["at"] = min(a["at"], b["at"])
            hb = max(a.get("heartbeat", a["at"]), b.get("heartbeat", b["at"]))
            merged["heartbeat"] = hb
            if a.get("note") != b.get("note"):
                note, _ = sides.later(a.get("note"), b.get("note"))
                if note:
                    merged["note"] = note
                else:
                    merged.pop("note", None)
            return merged, MERGED
        winner, loser = sorted((a, b), key=lambda c: (c["at"], c["by"], _key(c)))
        contested.append(loser)
        return winner, ("a" if winner is a else "b")
    return sides.later(a, b)


def _merge_items(sides: _Sides, base: list[dict[str, Any]] | None,
                 a: list[dict[str, Any]] | None,
                 b: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    by_base = {i["id"]: i for i in base or []}
    by_a = {i["id"]: i for i in a or []}
    by_b = {i["id"]: i for i in b or []}
    order = [i["id"] for i in base or []]
    new = {iid for iid in set(by_a) | set(by_b) if iid not in by_base}
    order += sorted(new, key=lambda iid: ((by_a.get(iid) or by_b[iid])["at"], iid))
    out: list[dict[str, Any]] = []
    for iid in order:
        ib, ia, ibb = by_base.get(iid), by_a.get(iid), by_b.get(iid)
        # Items are never deleted: a side that lacks an item has not changed it.
        ia = ia if ia is not None else (ib if ib is not None else ibb)
        ibb = ibb if ibb is not None else (ib if ib is not None else ia)
        ib = ib if ib is not None else {}
        assert ia is not None and ibb is not None
        merged: dict[str, Any] = {}
        for k in sorted(set(ia) | set(ibb) | set(ib)):
            vb, va, vbb = ib.get(k), ia.get(k), ibb.get(k)
            if k in ("supersedes", "superseded_by"):
                value: Any = merge_set(vb, va, vbb)
            else:
                value, src = _three_way(vb, va, vbb)
                if src is None and _key(va) != _key(vbb):
                    if k == "trust":
                        value = max(va, vbb, key=lambda t: TRUST_RANK.get(t or "", -1))
                    else:
                        value, _ = sides.later(va, vbb)
            if value not in (None, "", []):
                merged[k] = value
        out.append(merged)
    return out


def _merge_map(sides: _Sides, base: Any, a: Any, b: Any) -> Any:
    """Extension maps (``x``), key by key and recursively: a key changed on one side takes
    that side's value (an added, changed or removed key alike), so two branches that touch
    different keys both keep their change; a key changed differently on both sides merges
    recursively when both values are maps, else takes the later side's value (the scalar
    rule). Empty maps left by removals are dropped. Keys: base order, then new keys sorted."""
    value, src = _three_way(base, a, b)
    if src is not None or _key(a) == _key(b):
        return value
    if not (isinstance(a, dict) and isinstance(b, dict)
            and (base is None or isinstance(base, dict))):
        return sides.later(a, b)[0]
    base_d: dict[str, Any] = base or {}
    keys = list(base_d) + sorted((set(a) | set(b)) - set(base_d))
    out: dict[str, Any] = {}
    for k in keys:
        merged = _merge_map(sides, base_d.get(k), a.get(k), b.get(k))
        if merged is not None and merged != {}:
            out[k] = merged
    return out


def _merge_body(sides: _Sides, base: str, a: str, b: str, marker_size: int,
                names: tuple[str, str] | None = None) -> tuple[str, bool, str]:
    value, src = _three_way(base, a, b)
    if src is not None or a == b:
        return value, False, src or BOTH
    base_l, a_l, b_l = _split_lines(base), _split_lines(a), _split_lines(b)
    m = line_merge3(base_l, a_l, b_l)
    regions = list(m.merge_regions())
    # Lines both sides inserted at one place, editing no base line (two notes appended at
    # the end of the body): both kept, no conflict (issue 24). Only edits of the same base
    # lines conflict.
    conflict = any(r[0] == "conflict" and r[1] != r[2] for r in regions)
    labels = ("", "")
    if conflict:
        name_a = name_b = None
        if names is not None and names[0] != names[1]:
            name_a, name_b = names[::-1] if sides.swapped else names
        labels = marker_labels((sides.a.fields, a), (sides.b.fields, b), (name_a, name_b))
    out: list[str] = []
    for region in regions:
        what = region[0]
        if what == "unchanged":
            out += base_l[region[1]:region[2]]
        elif what in ("a", "same"):
            out += a_l[region[1]:region[2]]
        elif what == "b":
            out += b_l[region[1]:region[2]]
        else:
            iz, zmatch, ia, amatch, ib, bmatch = (int(x) for x in region[1:])
            if iz == zmatch:
                out += union_insertions(a_l[ia:amatch], b_l[ib:bmatch], m.sequence_matcher)
            else:
                out += ["<" * marker_size + " " + labels[0] + "\n", *_ended(a_l[ia:amatch]),
                        "=" * marker_size + "\n", *_ended(b_l[ib:bmatch]),
                        ">" * marker_size + " " + labels[1] + "\n"]
    text = "".join(_ended(out))
    return text, conflict, MERGED


def line_merge3(base: Sequence[Any], a: Sequence[Any], b: Sequence[Any]) -> Any:
    """``merge3.Merge3(base, a, b)``: the merge3 library's 3-way merge of three lists of lines
    (``merge_regions()``, ``merge_lines()``, ``sequence_matcher``), for a body both sides
    changed and the merge driver's fallback line merge."""
    # Most driver runs merge a task whose body one side kept (bench/run.py: the merge driver
    # within 10% of before issue 23).
    import merge3  # lazy: 1.0 ms (-X importtime) of every driver run that merges no body

    return merge3.Merge3(base, a, b)


def _ended(lines: list[str]) -> list[str]:
    """``lines`` each ending with a newline (only a file's last line may lack one; inside a
    merge it would run into the next line)."""
    return [line if line.endswith("\n") else line + "\n" for line in lines]


def union_insertions(a: Sequence[str], b: Sequence[str],
                     sequence_matcher: Callable[..., Any]) -> list[str]:
    """Two runs of lines inserted at the same place on two sides, as one: the lines both
    hold in common (longest matching blocks) once, each side's own lines kept, ``a``'s before
    ``b``'s where they differ. ``a``/``b`` are the canonical sides (merge_records orders
    them by last_modified, then content), so the result does not depend on which is ours.
    ``sequence_matcher``: difflib.SequenceMatcher, as merge3 loaded it (no import here)."""
    out: list[str] = []
    matcher = sequence_matcher(None, list(a), list(b), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out += _ended(list(a[i1:i2]))
        if tag in ("replace", "insert"):
            out += _ended(list(b[j1:j2]))
    return out


def merge_records(base: Record | None, ours: Record, theirs: Record,
                  marker_size: int = 7, names: tuple[str, str] | None = None) -> MergeResult:
    """3-way merge of one task, field by field (DESIGN §7 table); symmetric in ours/theirs.

    ``base`` is None for add/add (then a field present on one side only counts as added).
    ``names`` (ours, theirs), e.g. ``("HEAD", "feature")``, label a conflicting body's markers
    (each name stays with its side, so the bytes follow the names); None: each side's last
    actor and time (:mod:`ledgit.marklabels`).
    Raises ValueError when the ids differ. A body conflict leaves markers in the body and
    ``"body"`` in ``conflicts``; every other disagreement is resolved by rule.
    """
    if ours.fields["id"] != theirs.fields["id"]:
        raise ValueError(f"cannot merge different tasks {ours.fields['id']} and "
                         f"{theirs.fields['id']}")
    sides = _Sides(base, ours, theirs)
    bf: Mapping[str, Any] = base.fields if base is not None else {}
    af, bbf = sides.a.fields, sides.b.fields
    result = MergeResult(record=ours)
    out: dict[str, Any] = {}
    contested: list[dict[str, Any]] = []
    keys = [k for k in FIELD_ORDER if k in bf or k in af or k in bbf]
    # The fields both sides may change and a merge joins (base, a, b -> joined), and the rule
    # it reports; the sets (depends_on, labels, commits) are joined by merge_set.
    joins: dict[str, tuple[Callable[[Any, Any, Any], Any], str]] = {
        "x": (lambda b, a, c: _merge_map(sides, b, a, c), RULE_MAP),
        "items": (lambda b, a, c: _merge_items(sides, b, a, c), RULE_ITEMS),
        "notes": (merge_notes, RULE_NOTES),
    }
    claim_src = BASE
    for k in keys:
        vb, va, vbb = bf.get(k), af.get(k), bbf.get(k)
        if k == "last_modified":
            # One side moved it (even backwards: an imported or restored snapshot): that
            # side, like every field; both moved it: the later of the two.
            value, src3 = _three_way(vb, va, vbb)
            out[k] = value if src3 is not None else max(str(va), str(vbb))
            continue
        if k == "contested":
            continue  # merged after claims, below
        both_changed = _three_way(vb, va, vbb)[1] is None and _key(va) != _key(vbb)
        if k == "claim":
            value, src = _merge_claims(sides, vb, va, vbb, contested)
            if both_changed and src != MERGED:
                result.rules[k] = RULE_EARLIER_CLAIM if va and vbb else RULE_LATER
            claim_src = src
        elif k in SET_FIELDS or k in joins:
            value, src3 = _three_way(vb, va, vbb)
            src = src3 or BOTH
            if src3 is None and _key(va) != _key(vbb):  # both changed it: joined
                join, rule = joins.get(k, (merge_set, RULE_SET))
                value, src = join(vb, va, vbb), MERGED
                result.rules[k] = rule
        else:
            value, src3 = _three_way(vb, va, vbb)
            src = src3 or BOTH
            if src3 is None and _key(va) != _key(vbb):
                if k == "status" and TERMINAL_RANK.get(str(va), 0) != TERMINAL_RANK.get(
                        str(vbb), 0):
                    value = max(va, vbb, key=lambda s: TERMINAL_RANK.get(str(s), 0))
                    src = "a" if value == va else "b"
                    result.rules[k] = RULE_TERMINAL
                elif k == "response" and (va == NO_ACCOUNT) != (vbb == NO_ACCOUNT):
                    value, src = (vbb, "b") if va == NO_ACCOUNT else (va, "a")
                    result.rules[k] = RULE_ACCOUNT
                else:
                    value, src = sides.later(va, vbb)
                    result.rules[k] = RULE_LATER if sides.lm_a != sides.lm_b else RULE_TIE
        if value not in (None, "", [], {}):
            out[k] = value
        if _key(value) != _key(vb):
            result.provenance[k] = sides.label(src)
    # contested claims: union of both sides' lists plus the loser of this merge
    cont = merge_set(
        [_key(c).decode() for c in bf.get("contested", [])],
        [_key(c).decode() for c in af.get("contested", [])],
        [_key(c).decode() for c in bbf.get("contested", [])])
    all_contested = [json.loads(c) for c in cont] + contested
    uniq: dict[bytes, dict[str, Any]] = {}
    for c in all_contested:
        uniq.setdefault(_key(c), c)
    if uniq:
        out["contested"] = sorted(uniq.values(), key=lambda c: (c["at"], c["by"], _key(c)))
    if contested:
        loser = contested[0]["by"]
        result.notes.append(f"claim contested: {out['claim']['by']} (earlier) keeps it; "
                            f"{loser} lost it")
    body, conflict, bsrc = _merge_body(sides, base.body if base else "", sides.a.body,
                                       sides.b.body, marker_size, names)
    if bsrc == MERGED:
        result.rules["body"] = RULE_LINES
    if conflict:
        result.conflicts.append("body")  # said once, by the caller: not also "merged"
    elif base is None or body != base.body:
        result.provenance["body"] = sides.label(bsrc)
    _claim_needs_in_progress(sides, out, claim_src)
    contradiction = (outcome_contradiction(out.get("status"), out.get("outcome"))
                     or _outcome_of_a_lost_status(out, bf, af, bbf))
    _reestablish_lifecycle(out, bf, af, bbf)
    if contradiction:  # said, so that "outcome from theirs" does not mislead
        result.notes.append(f"{contradiction}: the outcome follows the merged status")
        kept = _key(out.get("outcome"))
        if kept == _key(bf.get("outcome")):
            result.provenance.pop("outcome", None)
        else:
            result.provenance["outcome"] = sides.label("a" if kept == _key(af.get("outcome"))
                                                       else "b")
    result.record = make_record(out, body)
    return result


def _claim_needs_in_progress(sides: _Sides, out: dict[str, Any], claim_src: str) -> None:
    """A claim is held only in status in_progress (DESIGN §4). A merged claim beside an open,
    waiting or monitoring status means one side claimed while the other moved the status:
    the later side decides (``b``: later ``last_modified``, tie → greater canonical JSON; so
    symmetric). A later claiming side keeps its claim and sets in_progress (clearing
    ``waiting_on`` and ``signal``, as ``claim`` would); otherwise the claim is dropped."""
    if not out.get("claim") or out.get("status") not in ("open", "waiting", "monitoring"):
        return
    if claim_src == "b" and sides.b.fields.get("status") == "in_progress":
        out["status"] = "in_progress"
        out.pop("waiting_on", None)
        out.pop("signal", None)
        return
    out.pop("claim", None)
    out.pop("contested", None)


def _outcome_of_a_lost_status(out: dict[str, Any], base: Mapping[str, Any],
                              *sides: Mapping[str, Any]) -> str | None:
    """The outcome follows the merged status (docs/merge.md): an outcome that one side set
    together with a status change the merge overrode (it dropped or parked the task while the
    other side completed it; done beat dropped) describes an ending that did not happen. It
    gives way to the outcome of a side holding the merged status, or to none; the dropping
    event stays in the history. Symmetric: both sides are treated alike and a tie between
    outcomes goes to the greater canonical JSON. Returns the note to say, or None."""
    status, outcome = out.get("status"), _key(out.get("outcome"))
    if not any(s.get("status") == status for s in sides):
        return None  # the status came from neither side: nothing to follow
    for side in sides:
        if (side.get("status") not in (base.get("status"), status) and side.get("outcome")
                and _key(side.get("outcome")) == outcome
                and outcome != _key(base.get("outcome"))):
            _outcome_from_holders(out, status, sides)
            return (f"outcome kind {side['outcome'].get('kind')} came with status "
                    f"{side.get('status')}, which {status} beat")
    return None


def _outcome_from_holders(out: dict[str, Any], status: Any,
                          sources: Sequence[Mapping[str, Any]]) -> None:
    """Set ``out``'s outcome to the greatest (canonical JSON) outcome of a version in
    ``sources`` that holds ``status`` and fits it, or remove it when there is none."""
    fitting = [s["outcome"] for s in sources if s.get("status") == status
               and s.get("outcome") and not outcome_contradiction(status, s["outcome"])]
    if fitting:
        out["outcome"] = max(fitting, key=_key)
    else:
        out.pop("outcome", None)


def _reestablish_lifecycle(out: dict[str, Any], *sources: Mapping[str, Any]) -> None:
    """Re-establish DESIGN §4 invariants deterministically after a field-wise merge."""
    status = out.get("status")
    if status in ("done", "dropped", "archived", "parked"):
        out.pop("claim", None)
    if status == "archived":
        out.pop("waiting_on", None)
        out.pop("next_action", None)
    if "claim" not in out:
        out.pop("contested", None)
    # The outcome follows the status: one whose kind contradicts the merged status (one side
    # completed while the other dropped or parked; done beat dropped, the outcome came from
    # the other side) gives way to the outcome of a version holding that status, else none.
    if outcome_contradiction(status, out.get("outcome")):
        _outcome_from_holders(out, status, sources)
    # A status that needs a companion field borrows it from a side that has it.
    needs = {"done": "response", "waiting": "waiting_on", "parked": "outcome",
             "dropped": "outcome"}
    need = needs.get(str(status))
    if need and not out.get(need):
        candidates = [s[need] for s in sources if s.get(need)
                      and not (need == "outcome" and outcome_contradiction(status, s[need]))]
        if candidates:
            out[need] = max(candidates, key=_key)
    if lifecycle_problems(out):
        # Fall back to a status under which the merged fields are valid (deterministic order).
        for alt in sorted({str(s.get("status")) for s in sources if s.get("status")}):
            trial = dict(out, status=alt)
            if alt in ("done", "dropped", "archived", "parked"):
                trial.pop("claim", None)
            if not lifecycle_problems(trial):
                out.clear()
                out.update(trial)
                return


__all__ = ["MergeResult", "merge_records", "merge_set", "merge_notes", "union_insertions"]
