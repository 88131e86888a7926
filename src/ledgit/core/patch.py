"""RFC 6902 patches between two task states, as jsonpatch makes them, mostly without it.

Every write appends an event whose ``patch`` is ``jsonpatch.make_patch(before, after)``
(DESIGN §6). Importing jsonpatch costs ~3 ms (difflib, jsonpointer, copy, ...), more than the
rest of the diff for the usual write, which replaces a few scalar fields or adds/removes a
small object such as ``claim``. :func:`make_patch` produces those patches itself -- the same
operations, in the same order, as jsonpatch's ``DiffBuilder`` for objects (removed members,
then added members, then the members both have, each in document order; a value that differs
in type or value is replaced; ``~`` and ``/`` escaped as RFC 6901 says) -- and hands every
other case to jsonpatch: a list that differs (jsonpatch matches list items up with difflib),
or a removed value equal to an added one (jsonpatch turns that pair into a ``move``).
tests/test_patch.py checks the fast path against jsonpatch on generated states.

Pure; standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.core.canonjson import plain_encoder

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

_SCALARS = (str, int, float, bool, type(None))


class _Unsupported(Exception):
    """The difference is one the fast path leaves to jsonpatch."""


def make_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations turning ``before`` into ``after`` (two JSON objects), equal
    to ``jsonpatch.make_patch(before, after).patch``. Raises what jsonpatch raises for
    values that are not JSON."""
    ops = fast_patch(before, after)
    if ops is not None:
        return ops
    result: list[dict[str, Any]] = _jsonpatch().make_patch(before, after).patch
    return result


def apply_patch(state: Mapping[str, Any], patch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``patch`` (RFC 6902 operations) applied by jsonpatch to a deep copy of ``state``
    (``in_place=False``: jsonpatch copies the document first). Raises ValueError naming the
    reason when it does not apply (a missing path, a failed test, an index out of range)."""
    jsonpatch = _jsonpatch()
    try:
        result: dict[str, Any] = jsonpatch.apply_patch(dict(state), list(patch), in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError,
            IndexError, TypeError, RecursionError) as exc:
        raise ValueError(f"patch does not apply: {exc}") from None
    return result


def _jsonpatch() -> Any:
    """The jsonpatch module, imported by the first patch the fast paths leave to it."""
    import jsonpatch  # lazy: 2.8 ms; only lists and moves need it (ledgit update's do not)

    return jsonpatch


def fast_patch(before: Mapping[str, Any], after: Mapping[str, Any]
               ) -> list[dict[str, Any]] | None:
    """:func:`make_patch` for the differences it models (see the module docstring), else
    None (the caller asks jsonpatch)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    ops: list[dict[str, Any]] = []
    moved: list[tuple[str, Any]] = []  # ("add" | "remove", value): a pair would be a move
    try:
        _diff_dicts("", before, after, ops, moved)
    except _Unsupported:
        return None
    if moved:
        # jsonpatch pairs a removed and an added value equal as json.dumps(sort_keys=True)
        # text into a move; canonical JSON text is equal exactly then (both sort keys and
        # differ only in separators and escaping; what it refuses goes to jsonpatch).
        dumps = plain_encoder()
        try:
            removed = {dumps(v) for kind, v in moved if kind == "remove"}
            if any(dumps(v) in removed for kind, v in moved if kind == "add"):
                return None
        except (TypeError, ValueError, RecursionError):
            return None
    return ops


def _diff_dicts(path: str, src: dict[str, Any], dst: dict[str, Any],
                ops: list[dict[str, Any]], moved: list[tuple[str, Any]]) -> None:
    for key in src:
        if not isinstance(key, str):
            raise _Unsupported
        if key not in dst:
            ops.append({"op": "remove", "path": path + "/" + _escape(key)})
            moved.append(("remove", src[key]))
    for key in dst:
        if not isinstance(key, str):
            raise _Unsupported
        if key not in src:
            ops.append({"op": "add", "path": path + "/" + _escape(key),
                        "value": _copy(dst[key])})
            moved.append(("add", dst[key]))
    for key in src:
        if key not in dst:
            continue
        a, b = src[key], dst[key]
        where = path + "/" + _escape(key)
        if isinstance(a, dict) and isinstance(b, dict):
            _diff_dicts(where, a, b, ops, moved)
        elif isinstance(a, list) and isinstance(b, list):
            if not _same(a, b):
                raise _Unsupported  # jsonpatch matches list items up (difflib)
        elif _same(a, b):
            continue
        else:
            if not isinstance(b, (*_SCALARS, dict, list)):
                raise _Unsupported
            ops.append({"op": "replace", "path": where, "value": _copy(b)})


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON text (jsonpatch compares ``json.dumps`` of both): 1 and True differ,
    1 and 1.0 differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, _SCALARS):
        return bool(a == b)
    raise _Unsupported


def _copy(value: Any) -> Any:
    """A copy of a JSON value (jsonpatch's operations do not share the document's objects)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _escape(key: str) -> str:
    """An object member name as a JSON Pointer reference token (RFC 6901 §3)."""
    return key.replace("~", "~0").replace("/", "~1") if ("~" in key or "/" in key) else key
