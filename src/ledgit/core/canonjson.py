"""Canonical JSON text (docs/history.md, "Hashing"), encoded by the :mod:`json` module.

``revision.canonical_json`` walks its value to refuse floats first; a value decoded by a
decoder whose float hook raises, or built from such values (states replayed from events,
records parsed and validated), holds none, so it can be encoded without the walk:
:func:`plain_encoder` is that encoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def plain_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    (as text) for JSON values holding no float; NaN and infinities raise ValueError, other
    non-JSON values TypeError. No circular check (JSON values cannot be circular)."""
    encode: Callable[[Any], str] = json.JSONEncoder(
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
        check_circular=False).encode
    return encode
