"""Hashed content (DESIGN §3): canonical JSON, the revision of a record's state, sha256. Pure.

A revision is the sha256 of a state's canonical JSON; history events are hashed the same way
(docs/history.md, "Hashing").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.core.canonjson import plain_encoder

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def canonical_json(value: Any) -> bytes:
    """Canonical JSON (DESIGN §3): sorted keys, no whitespace, UTF-8, no floats.

    Raises ValueError on a float (hashed content holds none).
    """
    _reject_floats(value)
    return _encode(value).encode("utf-8")


_encode = plain_encoder()


def _reject_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ValueError("floats are not allowed in hashed content")
    if isinstance(value, dict):
        for v in value.values():
            _reject_floats(v)
    elif isinstance(value, list):
        for v in value:
            _reject_floats(v)


def revision_of(state: Mapping[str, Any]) -> str:
    """sha256 hex of ``canonical_json({"fields": ..., "body": ...})`` (DESIGN §3)."""
    return sha256_hex(canonical_json(state))


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data`` as 64 lower-case hex digits (FIPS 180-4)."""
    digest: str = sha256_function()(data).hexdigest()
    return digest


def sha256_function() -> Callable[[bytes], Any]:
    """``hashlib.sha256`` (``f(data).hexdigest()``), for a caller hashing many values."""

    import hashlib  # lazy: OpenSSL, 2.5 ms (-X importtime); the merge driver needs none

    return hashlib.sha256
