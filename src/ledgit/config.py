"""Board settings: ``.ledgit/config.yaml`` (DESIGN §2).

The file is a small YAML mapping read with the record's rules (no implicit typing: every
scalar is a string, coerced here)::

    id_prefix: T        # new ids are T-<10 base32 chars>
    claim_ttl: 30m      # a claim older than this is stale: 90s, 30m, 2h, 1d or seconds

Unknown settings are refused (a typo must not be silently ignored); extensions go under ``x:``.
The common flat file is read by a tiny line parser so that reads do not pay for importing
PyYAML; anything beyond ``key: scalar`` lines goes through the YAML loader of record.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgit.errors import USAGE, LedgitError, located

CONFIG_NAME = "config.yaml"
DEFAULT_PREFIX = "T"
DEFAULT_CLAIM_TTL = 1800  # seconds (DESIGN §4: default 30 min)

PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,15}")
_DURATION_PART = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?:[ \t]+(.*?))?[ \t]*")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_./+-][A-Za-z0-9_./+: -]*")


@dataclass(frozen=True)
class BoardConfig:
    """Versioned board settings. ``claim_ttl`` is in seconds; ``x`` holds extensions."""

    id_prefix: str = DEFAULT_PREFIX
    claim_ttl: int = DEFAULT_CLAIM_TTL
    x: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def parse_duration(text: str) -> int:
    """Seconds in ``text``: ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m`` or a bare ``1800``.

    Returns an int >= 0. Raises LedgitError (exit 2) for anything else.
    """
    s = text.strip().lower()
    if s.isdigit():
        return int(s)
    pos, total = 0, 0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        total += int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if s and pos == len(s):
        return total
    raise LedgitError(f"invalid duration {text!r} (use e.g. 90s, 30m, 2h, 1d, 1h30m or a "
                      f"number of seconds)", USAGE)


def load_config(path: Path) -> BoardConfig:
    """Read a board's ``config.yaml`` (``path``: the file, or the ``.ledgit`` dir holding it).

    A missing file gives the defaults. Raises LedgitError (exit 2) naming ``file:line: field``
    for invalid YAML, an unknown setting or a bad value.
    """
    if path.is_dir():
        path = path / CONFIG_NAME
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return BoardConfig()
    except UnicodeDecodeError:
        raise LedgitError(located("not valid UTF-8", str(path)), USAGE) from None
    raw, lines = _read_mapping(text, str(path))
    return _coerce(raw, lines, str(path))


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
        m = _SIMPLE_LINE.fullmatch(line)
        value = _simple_value(m.group(2) or "") if m else None
        if m is None or value is None or m.group(1) in raw:
            return _yaml_mapping(text, path)
        raw[m.group(1)] = value
        lines[m.group(1)] = n
    return raw, lines


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
    if _PLAIN_VALUE.fullmatch(text) and ": " not in text and not text.endswith(":"):
        return text
    return None


def _yaml_mapping(text: str, path: str) -> tuple[dict[str, Any], dict[str, int]]:
    import yaml

    from ledgit.record import _LOADER  # the composer without implicit typing

    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise LedgitError(located(f"invalid YAML: {exc.problem or exc.context}", path,
                                  mark.line + 1 if mark is not None else None), USAGE) from None
    finally:
        loader.dispose()
    if node is None:
        return {}, {}
    if not isinstance(node, yaml.MappingNode):
        raise LedgitError(located("the config must be a mapping of setting: value", path, 1),
                          USAGE)
    raw: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for knode, vnode in node.value:
        key = _plain(knode, path, "")
        if key in raw:
            raise LedgitError(located("duplicate key", path, knode.start_mark.line + 1, key),
                              USAGE)
        lines[key] = knode.start_mark.line + 1
        raw[key] = _plain(vnode, path, key, set())
    return raw, lines


def _plain(node: Any, path: str, where: str, seen: set[int] | None = None) -> Any:
    """Strings, lists and mappings of a YAML node; tags and aliases refused."""
    import yaml

    line = node.start_mark.line + 1
    seen = set() if seen is None else seen
    if id(node) in seen:
        raise LedgitError(located("YAML anchors and aliases are not allowed", path, line,
                                  where or None), USAGE)
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        return node.value
    if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
        return [_plain(child, path, where, seen) for child in node.value]
    if isinstance(node, yaml.MappingNode) and node.tag == "tag:yaml.org,2002:map":
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            key = _plain(knode, path, where)
            if not isinstance(key, str) or key in out:
                raise LedgitError(located("keys must be unique plain strings", path,
                                          knode.start_mark.line + 1, where or None), USAGE)
            out[key] = _plain(vnode, path, f"{where}.{key}" if where else key, seen)
        return out
    raise LedgitError(located(f"YAML tag {node.tag!r} is not allowed", path, line,
                              where or None), USAGE)


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
        if key not in ("id_prefix", "claim_ttl"):
            raise fail(key, "unknown setting (known: id_prefix, claim_ttl; put extensions "
                            "under 'x:')")
        if not isinstance(value, str):
            raise fail(key, "expected a single value")
        if value.strip() == "":
            continue  # empty means "default", as in task files
        if key == "id_prefix":
            if not PREFIX_RE.fullmatch(value.strip()):
                raise fail(key, f"invalid id prefix {value!r} (a letter, then up to 15 "
                                f"letters or digits)")
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
