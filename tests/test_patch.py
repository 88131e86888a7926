"""ledgit.core.patch: the fast RFC 6902 diff against jsonpatch itself, on generated task states."""

from __future__ import annotations

from typing import Any

import jsonpatch
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgit.core.patch import fast_patch, make_patch

KEYS = st.sampled_from(["title", "status", "claim", "labels", "x", "a/b", "t~1", "é", "n", ""])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    st.sampled_from(["", "a", "b", "1", "true", "x/y", "é"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=6)
STATES = st.fixed_dictionaries({"body": st.sampled_from(["", "b", "## Goal\nx\n"]),
                                "fields": st.dictionaries(KEYS, VALUES, max_size=5)})


@settings(max_examples=examples(600), deadline=None)
@given(STATES, STATES)
def test_make_patch_is_jsonpatch(before: dict[str, Any], after: dict[str, Any]) -> None:
    want = jsonpatch.make_patch(before, after).patch
    assert make_patch(before, after) == want
    fast = fast_patch(before, after)
    assert fast is None or fast == want
    assert jsonpatch.apply_patch(before, make_patch(before, after)) == after


@settings(max_examples=examples(300), deadline=None)
@given(STATES, st.data())
def test_small_edits_take_the_fast_path(before: dict[str, Any], data: st.DataObject) -> None:
    """What writes do -- set or clear scalar fields, add or drop a claim-like object -- is
    answered without jsonpatch, and equals jsonpatch."""
    after = {"body": before["body"], "fields": dict(before["fields"])}
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(["status", "response", "last_modified", "claim"]))
        if key == "claim":
            after["fields"].pop("claim", None) if data.draw(st.booleans()) else \
                after["fields"].__setitem__("claim", {"by": "a", "at": "t", "note": "n"})
        else:
            after["fields"][key] = data.draw(st.sampled_from(["open", "done", "x", "t1"]))
    fast = fast_patch(before, after)
    want = jsonpatch.make_patch(before, after).patch
    if fast is None:  # only a removed value equal to an added one (jsonpatch: move) or lists
        removed = [v for k, v in before["fields"].items() if k not in after["fields"]]
        added = [v for k, v in after["fields"].items() if k not in before["fields"]]
        assert any(a == r for a in added for r in removed) or any(
            isinstance(v, list) for v in before["fields"].values())
    else:
        assert fast == want


def test_the_usual_update_and_claim() -> None:
    before = {"body": "b", "fields": {"id": "T-1", "status": "open", "last_modified": "t0",
                                      "labels": ["a"]}}
    update = {"body": "b", "fields": {**before["fields"], "response": "r", "last_modified": "t1"}}
    assert fast_patch(before, update) == [
        {"op": "add", "path": "/fields/response", "value": "r"},
        {"op": "replace", "path": "/fields/last_modified", "value": "t1"}]
    claim = {"body": "b", "fields": {**before["fields"], "status": "in_progress",
                                     "claim": {"by": "a", "at": "t1"}, "last_modified": "t1"}}
    ops = fast_patch(before, claim)
    assert ops == jsonpatch.make_patch(before, claim).patch
    assert ops is not None and ops[0]["op"] == "add" and ops[0]["path"] == "/fields/claim"
    ops[0]["value"]["by"] = "changed"  # the patch holds copies
    assert claim["fields"]["claim"]["by"] == "a"
