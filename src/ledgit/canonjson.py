"""Canonical JSON (docs/history.md, "Hashing") and JSON decoding for ledgit's hot paths,
on CPython's C accelerator ``_json`` directly: a write does not import the :mod:`json`
package (its import compiles regular expressions: ~1 ms of a ~25 ms command, DESIGN §10).
Anything unusual -- an interpreter without ``_json``, a line the fast path does not take,
an error to word -- goes to :mod:`json` itself, imported then, so results and messages are
json's.

``record.canonical_json`` walks its value to refuse floats first; a value decoded by a
decoder whose float hook raises, or built from such values (states replayed from events,
records parsed and validated), holds none, so it can be encoded without the walk.
:func:`plain_encoder` builds that encoder once: ``json.JSONEncoder.encode`` builds a new
C encoder on every call (~1 us), which a board-wide check pays tens of thousands of times.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (startup budget, DESIGN §10)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# What plain_encoder must give for _PROBE (json.dumps(_PROBE, sort_keys=True,
# separators=(",", ":"), ensure_ascii=False)); tests/test_history.py checks it against json.
_PROBE: Any = {"b": [1, "\u00e9\x1f", None, True], "a": {"z": "", "y": -2}}
_PROBE_TEXT = '{"a":{"y":-2,"z":""},"b":[1,"\u00e9\\u001f",null,true]}'


def plain_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    (as text) for JSON values holding no float: the C encoder built once, no circular
    check (JSON values cannot be circular). Falls back to ``json.JSONEncoder.encode`` where
    the C encoder is missing or does not give json's text for a probe value."""
    try:
        from _json import encode_basestring
        from _json import make_encoder as c_make_encoder
    except ImportError:  # pragma: no cover - not CPython
        return _json_encoder()

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

    return encode if encode(_PROBE) == _PROBE_TEXT else _json_encoder()


def _json_encoder() -> Callable[[Any], str]:
    import json

    encode: Callable[[Any], str] = json.JSONEncoder(
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
    return encode


def scanner(parse_float: Callable[[str], Any] = float,
            parse_constant: Callable[[str], Any] | None = None
            ) -> Callable[[str, int], tuple[Any, int]]:
    """``json.JSONDecoder(parse_float=..., parse_constant=...).scan_once``: ``scan(text,
    i)`` decodes the one JSON value starting at ``text[i]`` and returns (value, end);
    raises StopIteration where no value starts there and ValueError for a malformed one.
    Built on ``_json.make_scanner`` (what JSONDecoder builds), else on json's own."""
    context = _ScanContext(parse_float, parse_constant or _constant)
    try:
        from _json import make_scanner
    except ImportError:  # pragma: no cover - not CPython
        from json.scanner import make_scanner
    scan: Callable[[str, int], tuple[Any, int]] = make_scanner(context)  # type: ignore[arg-type]
    return scan


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


class _ScanContext:
    """The attributes of a json.JSONDecoder that ``_json.make_scanner`` reads
    (json/scanner.py): strict, the hooks, the number parsers and the key memo."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_int = int

    def __init__(self, parse_float: Callable[[str], Any],
                 parse_constant: Callable[[str], Any]) -> None:
        self.parse_float = parse_float
        self.parse_constant = parse_constant
        self.memo: dict[str, str] = {}


_scan: Callable[[str, int], tuple[Any, int]] | None = None


def loads(text: str) -> Any:
    """``json.loads(text)`` for a str: the C scanner when the text is exactly one JSON value
    (no surrounding whitespace: what ledgit writes), else json.loads itself (its result, or
    its JSONDecodeError)."""
    global _scan
    if _scan is None:
        _scan = scanner()
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, RecursionError):
        pass
    import json

    return json.loads(text)
