"""Canonical JSON (docs/history.md, "Hashing") for values known to hold no float. Pure,
imports only :mod:`json`.

``record.canonical_json`` walks its value to refuse floats first; a value decoded by a
decoder whose float hook raises, or built from such values (states replayed from events,
records parsed and validated), holds none, so it can be encoded without the walk.
:func:`plain_encoder` builds that encoder once: ``json.JSONEncoder.encode`` builds a new
C encoder on every call (~1 us), which a board-wide check pays tens of thousands of times.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is not imported at run time (startup budget, DESIGN §10)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def plain_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    (as text) for JSON values holding no float: the C encoder built once, no circular
    check (JSON values cannot be circular). Falls back to ``json.JSONEncoder.encode`` where
    the C encoder is missing or does not give the same text."""
    from json import encoder as module

    plain = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                             allow_nan=False).encode
    c_make_encoder = getattr(module, "c_make_encoder", None)
    encode_basestring = module.encode_basestring
    if c_make_encoder is None:  # pragma: no cover - not CPython
        return plain

    def refuse(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys,
    # skipkeys, allow_nan)
    chunks = c_make_encoder(None, refuse, encode_basestring, None, ":", ",", True, False,
                            False)
    join = "".join

    def encode(value: Any) -> str:
        if value.__class__ is str:
            return str(encode_basestring(value))
        return join(chunks(value, 0))

    probe = {"b": [1, "\u00e9\x1f", None, True], "a": {"z": "", "y": -2}}
    return encode if encode(probe) == plain(probe) else plain  # same text, or no shortcut
