"""Board settings: ``.ledgit/config.yaml`` (DESIGN §2).

The file is a small YAML mapping read with the record's rules (no implicit typing: every
scalar is a string, coerced here)::

    id_prefix: T        # new ids are T-<10 base32 chars>
    claim_ttl: 30m      # a claim older than this is stale: 90s, 30m, 2h, 1d or seconds
    leases: origin      # the remote holding claim leases (docs/leases.md); none: local only

Unknown settings are refused (a typo must not be silently ignored); extensions go under ``x:``.
The common flat file is read by a tiny line parser so that reads do not pay for importing
PyYAML (nor re, dataclasses or pathlib: every command reads this file); anything beyond
``key: scalar`` lines goes through the YAML loader of ledgit.core.frontmatter.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CONFIG_NAME = "config.yaml"
DEFAULT_PREFIX = "T"
DEFAULT_CLAIM_TTL = 1800  # seconds (DESIGN §4: default 30 min)

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_ASCII_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_KEY_CHARS = frozenset(_ASCII_LETTERS + _DIGITS + "_")
_PLAIN_FIRST = frozenset(_ASCII_LETTERS + _DIGITS + "_./+-")  # a plain scalar starts with
_PLAIN_REST = _PLAIN_FIRST | frozenset(": ")  # ... and goes on with these


class BoardConfig:
    """Versioned board settings (immutable). ``id_prefix``: the id prefix; ``claim_ttl``:
    seconds; ``leases``: the remote that holds claim leases (None: the repository's remote, or
    with several the current branch's upstream; ``"none"``: local claims only; docs/leases.md);
    ``x``: extensions (not part of equality)."""

    __slots__ = ("id_prefix", "claim_ttl", "leases", "x")

    id_prefix: str
    claim_ttl: int
    leases: str | None
    x: dict[str, Any]

    def __init__(self, id_prefix: str = DEFAULT_PREFIX, claim_ttl: int = DEFAULT_CLAIM_TTL,
                 x: dict[str, Any] | None = None, leases: str | None = None) -> None:
        object.__setattr__(self, "id_prefix", id_prefix)
        object.__setattr__(self, "claim_ttl", claim_ttl)
        object.__setattr__(self, "leases", leases)
        object.__setattr__(self, "x", {} if x is None else x)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"BoardConfig is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoardConfig):
            return NotImplemented
        return ((self.id_prefix, self.claim_ttl, self.leases)
                == (other.id_prefix, other.claim_ttl, other.leases))

    def __hash__(self) -> int:
        return hash((self.id_prefix, self.claim_ttl, self.leases))

    def __repr__(self) -> str:
        return (f"BoardConfig(id_prefix={self.id_prefix!r}, claim_ttl={self.claim_ttl!r}, "
                f"leases={self.leases!r}, x={self.x!r})")


def valid_prefix(text: str) -> bool:
    """True for an id prefix: an ASCII letter, then up to 15 ASCII letters or digits."""
    return (1 <= len(text) <= 16 and text[0] in _ASCII_LETTERS
            and all(c in _ASCII_LETTERS or c in _DIGITS for c in text))


def valid_remote_name(text: str) -> bool:
    """True for what ``leases:`` may name: ``none``, or a Git remote name (git-check-ref-format
    rules for one path of components: no space, control character, ``..``, ``~^:?*[\\``,
    no leading ``-`` or ``.``, no trailing ``/``, ``.`` or ``.lock``)."""
    if not text or text.startswith(("-", ".", "/")) or text.endswith(("/", ".", ".lock")):
        return False
    if ".." in text or "//" in text or "@{" in text:
        return False
    return all(" " < c != "\x7f" and c not in "~^:?*[\\" for c in text)


def parse_duration(text: str) -> int:
    """Seconds in ``text``: ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m`` or a bare ``1800``.

    Returns an int >= 0. Raises LedgitError (exit 2) for anything else.
    """
    s = text.strip().lower()
    if s.isdigit() and s.isascii():
        return int(s)
    total, number = 0, ""
    for c in s:
        if c in _DIGITS:
            number += c
        elif c in _UNIT_SECONDS and number:
            total += int(number) * _UNIT_SECONDS[c]
            number = ""
        else:
            break
    else:
        if s and not number:
            return total
    raise LedgitError(f"invalid duration {text!r} (use e.g. 90s, 30m, 2h, 1d, 1h30m or a "
                      f"number of seconds)", USAGE)


def load_config(path: Path | str) -> BoardConfig:
    """Read a board's ``config.yaml`` (``path``: the file, or the ``.ledgit`` dir holding it).

    A missing file gives the defaults. Raises LedgitError (exit 2) naming ``file:line: field``
    for invalid YAML, an unknown setting or a bad value.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, CONFIG_NAME)
    try:
        data = read_board_file(path, BOARD_FILE_LIMIT)
    except FileNotFoundError:
        return BoardConfig()
    except OSError as exc:
        raise LedgitError(located(f"cannot read: {exc.strerror}", str(path)), USAGE) from None
    return parse_config(data, str(path))


def parse_config(data: bytes, path: str) -> BoardConfig:
    """The settings ``data`` (a ``config.yaml``'s bytes, from a file, the index or a commit)
    hold; ``path`` names it in messages. Raises LedgitError (exit 2) naming ``path:line:
    field`` as :func:`load_config` does."""
    if len(data) > BOARD_FILE_LIMIT:
        raise LedgitError(located(f"larger than {BOARD_FILE_LIMIT:,} bytes", path), USAGE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LedgitError(located("not valid UTF-8", path), USAGE) from None
    raw, lines = _read_mapping(text, path)
    return _coerce(raw, lines, path)


def render_config(config: BoardConfig) -> str:
    """The text ``ledgit init`` writes for ``config`` (extensions are not written)."""
    return ("# ledgit board settings (versioned; see docs/design.md §2)\n"
            f'id_prefix: "{config.id_prefix}"\n'
            f"claim_ttl: {_format_duration(config.claim_ttl)}\n")


def _format_duration(seconds: int) -> str:
    for unit in ("d", "h", "m"):
        n = _UNIT_SECONDS[unit]
        if seconds % n == 0:
            return f"{seconds // n}{unit}"
    return f"{seconds}s"


def _read_mapping(text: str, path: str) -> tuple[dict[str, Any], dict[str, int]]:
    """(mapping of strings, {key: line}) from the config text; fast path for flat files."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    raw: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, colon, rest = line.partition(":")
        value = rest.strip(" \t")
        simple = (colon and key and key[0] not in _DIGITS and all(c in _KEY_CHARS for c in key)
                  and (rest == "" or rest[:1] in (" ", "\t")))
        parsed = _simple_value(value) if simple else None
        if parsed is None or key in raw:
            return yaml_settings(text, path)
        raw[key] = parsed
        lines[key] = n
    return raw, lines


def yaml_settings(text: str, path: str) -> tuple[dict[str, Any], dict[str, int]]:
    """(mapping, {key: 1-based line}) of a settings file -- ``config.yaml`` beyond flat
    ``key: scalar`` lines, ``projects.yaml`` -- read by PyYAML
    (:func:`ledgit.core.frontmatter.settings_mapping`, which raises LedgitError exit 2 naming
    ``path``, the line and the key for what it refuses)."""
    # A flat config, the hooks and every get, list and update skip PyYAML (bench/results).
    from ledgit.core import frontmatter  # lazy: PyYAML, 10.5 ms (-X importtime)

    return frontmatter.settings_mapping(text, path)


def _simple_value(text: str) -> str | None:
    """A plain or simply quoted scalar as YAML would read it; None when it is not that simple."""
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    if text == "":
        return ""
    if len(text) >= 2 and text[0] == text[-1] == '"' and '"' not in text[1:-1] \
            and "\\" not in text:
        return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "'" and "'" not in text[1:-1]:
        return text[1:-1]
    if text[0] in _PLAIN_FIRST and all(c in _PLAIN_REST for c in text[1:]) \
            and ": " not in text and not text.endswith(":"):
        return text
    return None


def _coerce(raw: dict[str, Any], lines: dict[str, int], path: str) -> BoardConfig:
    def fail(key: str, message: str) -> LedgitError:
        return LedgitError(located(message, path, lines.get(key), key), USAGE)

    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "x":
            if not isinstance(value, dict) and value != "":
                raise fail(key, "x must be a mapping")
            kwargs["x"] = value or {}
            continue
        if key not in ("id_prefix", "claim_ttl", "leases"):
            raise fail(key, "unknown setting (known: id_prefix, claim_ttl, leases; put "
                            "extensions under 'x:')")
        if not isinstance(value, str):
            raise fail(key, "expected a single value")
        if value.strip() == "":
            continue  # empty means "default", as in task files
        if key == "id_prefix":
            if not valid_prefix(value.strip()):
                raise fail(key, f"invalid id prefix {value!r} (a letter, then up to 15 "
                                f"letters or digits)")
            kwargs[key] = value.strip()
        elif key == "leases":
            if not valid_remote_name(value.strip()):
                raise fail(key, f"invalid remote name {value!r} (a Git remote's name, or "
                                f"none for local claims only)")
            kwargs[key] = value.strip()
        else:
            try:
                seconds = parse_duration(value)
            except LedgitError as exc:
                raise fail(key, exc.message) from None
            if seconds < 1:
                raise fail(key, "claim_ttl must be at least one second")
            kwargs[key] = seconds
    return BoardConfig(**kwargs)
