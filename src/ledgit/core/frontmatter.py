"""Front matter that is not in the canonical form, composed by PyYAML (DESIGN §3): no
implicit typing (every untagged scalar a string, typed later by :mod:`ledgit.core.schema`), and
refused with ``path:line: field: message`` wherever a YAML reader could read it otherwise
than ledgit: tags, anchors and aliases, duplicate keys, tabs in indentation, raw control
characters, U+2028/U+2029/U+0085, nesting deeper than 32 levels. Rules: docs/format.md.

Files written by ledgit are read by :mod:`ledgit.core.canonread` and never come here: this module
(and PyYAML with it) is imported by :func:`ledgit.core.record.parse_record` for other files only.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ledgit.core.errors import USAGE, LedgitError, located


class _FieldError(Exception):
    """Internal: a refused value, located later by its node."""


class _StringsOnly:
    yaml_implicit_resolvers: dict[Any, Any] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        # Called by the composer for nodes without an explicit tag (or with "!").
        if kind is yaml.ScalarNode:
            return _STR_TAG
        return _SEQ_TAG if kind is yaml.SequenceNode else _MAP_TAG

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


class _Loader(_StringsOnly, yaml.SafeLoader):
    """A YAML composer with no implicit typing (pure Python): we walk the node graph
    ourselves."""


#: The composer in use: libyaml's when PyYAML was built with it, else :class:`_Loader`
#: (tests swap it).
_LOADER: Any = _Loader
if yaml.__with_libyaml__:

    class _FastLoader(_StringsOnly, yaml.CSafeLoader):
        pass

    _LOADER = _FastLoader

_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_MAX_DEPTH = 32  # nesting levels below the front matter's top mapping

# Patterns the canonical path never needs are strings, compiled (and cached by re) on first
# use: a character class reaching into the astral planes costs ~0.25 ms to compile.
#
# Refused raw in front matter (the writer always escapes them): C0/C1 controls other than TAB
# and LF, DEL, U+2028/U+2029 (line breaks to a YAML 1.1 reader, not to a 1.2 one), BOM,
# U+FFFE/U+FFFF and lone surrogates (not printable in YAML).
_RAW_REFUSED = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff"
                "\ufffe\uffff]")
_TAB_INDENT = r"(?m)^ *\t"
_CHAR_NAMES = {"\u2028": "line separator", "\u2029": "paragraph separator",
               "\x85": "next line", "\ufeff": "byte order mark", "\ufffe": "non-character",
               "\uffff": "non-character"}


def _line_at(yaml_text: str, pos: int) -> int:
    """The file line of offset ``pos`` in the front matter (which starts on line 2)."""
    return yaml_text.count("\n", 0, pos) + 2


def _field_at(yaml_text: str, pos: int) -> str | None:
    """The top-level field whose value holds offset ``pos`` (best effort, for messages)."""
    start = yaml_text.rfind("\n", 0, pos) + 1
    while True:
        line = yaml_text[start:yaml_text.find("\n", start)]
        if line[:1] not in ("", " ", "\t", "-", "#") and ":" in line:
            return line.split(":", 1)[0].strip().strip("\"'") or None
        if start == 0:
            return None
        start = yaml_text.rfind("\n", 0, start - 1) + 1


def load_front_matter(yaml_text: str, path: str) -> yaml.MappingNode:
    """Compose the front matter into a node tree, refusing what YAML would misread."""
    def fail(message: str, pos: int) -> None:
        raise LedgitError(located(message, path, _line_at(yaml_text, pos),
                                  _field_at(yaml_text, pos)))

    if not yaml_text.strip():
        raise LedgitError(located("empty front matter: no fields between the '---' lines",
                                  path, 2))
    bad = re.search(_RAW_REFUSED, yaml_text)
    if bad:
        ch = bad.group()
        name = _CHAR_NAMES.get(ch, "lone surrogate" if "\ud800" <= ch <= "\udfff"
                               else "control character")
        fail(f"raw U+{ord(ch):04X} ({name}) in front matter; write it as \\u{ord(ch):04x} "
             f"inside double quotes", bad.start())
    if "\t" in yaml_text:
        tab = re.search(_TAB_INDENT, yaml_text)
        if tab:
            fail("tab in indentation (YAML allows spaces only)", tab.end() - 1)
    if "&" in yaml_text or "*" in yaml_text:
        _refuse_anchors(yaml_text, path)
    loader = _LOADER(yaml_text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise LedgitError(_yaml_error_message(exc, yaml_text, path)) from None
    except yaml.YAMLError as exc:  # pragma: no cover - reader errors are pre-checked above
        raise LedgitError(located(f"invalid YAML: {str(exc).splitlines()[0]}", path)) from None
    except RecursionError:
        raise LedgitError(located("invalid YAML: nested too deeply", path)) from None
    finally:
        loader.dispose()
    if node is None:
        raise LedgitError(located("empty front matter: no fields between the '---' lines",
                                  path, 2))
    if not isinstance(node, yaml.MappingNode):
        raise LedgitError(located("front matter must be a mapping of field: value", path,
                                  node.start_mark.line + 2))
    return node


def _yaml_error_message(exc: yaml.MarkedYAMLError, yaml_text: str, path: str) -> str:
    """One line: where the parser stopped, and the field of the construct it was reading."""
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "unreadable"
    where = mark.line + 2 if mark is not None else None
    field = _field_at(yaml_text, mark.index) if mark is not None else None
    if exc.context and exc.problem:
        context = exc.context
        if exc.context_mark is not None and exc.problem_mark is not None:
            field = _field_at(yaml_text, exc.context_mark.index)
            if exc.context_mark.line != exc.problem_mark.line:
                context += f" that starts on line {exc.context_mark.line + 2}"
        problem += f" ({context})"
    return located(f"invalid YAML: {problem}", path, where, field)


def _refuse_anchors(yaml_text: str, path: str) -> None:
    """Refuse YAML anchors and aliases (an alias bomb stops at its first anchor)."""
    loader = _LOADER(yaml_text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                pos = event.start_mark.index
                raise LedgitError(located("YAML anchors and aliases are not allowed", path,
                                          _line_at(yaml_text, pos), _field_at(yaml_text, pos)))
    except yaml.YAMLError:
        pass  # composing reports it with its line
    finally:
        loader.dispose()


def front_matter_values(root: yaml.MappingNode, path: str) -> dict[str, Any]:
    """The composed front matter as plain values: str, list and dict (every scalar a string).
    Raises LedgitError ``path:line: field: message`` for a YAML tag, a key that is not a
    plain string, a duplicate key, or nesting deeper than 32 levels."""
    try:
        value = _walk(root, 0)
    except _FieldError as exc:
        message, node = exc.args
        raise LedgitError(located(message, path, node.start_mark.line + 2,
                                  _field_of_node(root, node))) from None
    assert isinstance(value, dict)
    return value


def _walk(node: yaml.Node, depth: int) -> Any:
    """Node tree → str / list / dict. Raises _FieldError(message, node)."""
    if node.__class__ is yaml.ScalarNode:
        if node.tag != _STR_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        return node.value
    if depth > _MAX_DEPTH:
        raise _FieldError(f"nested more than {_MAX_DEPTH} levels deep", node)
    if node.__class__ is yaml.MappingNode:
        if node.tag != _MAP_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            if knode.__class__ is not yaml.ScalarNode or knode.tag != _STR_TAG:
                raise _FieldError("keys must be plain strings", knode)
            key = knode.value
            if key in out:
                first = next(k for k, _ in node.value if k.value == key)
                raise _FieldError(f"duplicate key (first on line {first.start_mark.line + 2})",
                                  knode)
            out[key] = _walk(vnode, depth + 1)
        return out
    if node.__class__ is yaml.SequenceNode:
        if node.tag != _SEQ_TAG:
            raise _FieldError(_tag_message(node.tag), node)
        return [_walk(child, depth + 1) for child in node.value]
    raise _FieldError("unsupported YAML node", node)  # pragma: no cover


def _tag_message(tag: str) -> str:
    shown = "!!" + tag[18:] if tag.startswith("tag:yaml.org,2002:") else tag
    return f"YAML tag {shown} is not allowed (values are plain strings, lists and mappings)"


def _field_of_node(root: yaml.Node, target: yaml.Node) -> str | None:
    """The field name (``items[0].kind``) of ``target`` in the tree, or None for the root."""
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, name = stack.pop()
        if node is target:
            return name or None
        if isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                child = f"{name}.{knode.value}" if name else str(knode.value)
                if knode is target:
                    return child
                stack.append((vnode, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((c, f"{name}[{i}]") for i, c in enumerate(node.value))
    return None


_FIELD_STEP = r"\[(\d+)\]|\.?([^.\[]+)"


def line_of_field(root: yaml.Node, fieldname: str) -> int | None:
    """The file line of ``fieldname`` (``claim.at``, ``items[1].kind``): the deepest node of
    the path that exists; None when not even its first step is in the file."""
    node: yaml.Node = root
    line: int | None = None
    for m in re.finditer(_FIELD_STEP, fieldname):
        index, key = m.groups()
        nxt: yaml.Node | None = None
        if key is not None and isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                if knode.value == key:
                    line, nxt = knode.start_mark.line + 2, vnode
        elif (index is not None and isinstance(node, yaml.SequenceNode)
              and int(index) < len(node.value)):
            nxt = node.value[int(index)]
            line = nxt.start_mark.line + 2
        if nxt is None:
            break
        node = nxt
    return line


def settings_mapping(text: str, path: str) -> tuple[dict[str, Any], dict[str, int]]:
    """(mapping, {key: line}) of a small settings file (``.ledgit/config.yaml``,
    ``projects.yaml``): no implicit typing (every scalar a string), no tags, anchors or
    duplicate keys. Raises LedgitError exit 2 naming ``path:line``."""
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
        key = _plain_value(knode, path, "")
        if key in raw:
            raise LedgitError(located("duplicate key", path, knode.start_mark.line + 1, key),
                              USAGE)
        lines[key] = knode.start_mark.line + 1
        raw[key] = _plain_value(vnode, path, key, set())
    return raw, lines


def _plain_value(node: Any, path: str, where: str, seen: set[int] | None = None) -> Any:
    """Strings, lists and mappings of a YAML node; tags and aliases refused."""

    line = node.start_mark.line + 1
    seen = set() if seen is None else seen
    if id(node) in seen:
        raise LedgitError(located("YAML anchors and aliases are not allowed", path, line,
                                  where or None), USAGE)
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        return node.value
    if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
        return [_plain_value(child, path, where, seen) for child in node.value]
    if isinstance(node, yaml.MappingNode) and node.tag == "tag:yaml.org,2002:map":
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            key = _plain_value(knode, path, where)
            if not isinstance(key, str) or key in out:
                raise LedgitError(located("keys must be unique plain strings", path,
                                          knode.start_mark.line + 1, where or None), USAGE)
            out[key] = _plain_value(vnode, path, f"{where}.{key}" if where else key, seen)
        return out
    raise LedgitError(located(f"YAML tag {node.tag!r} is not allowed", path, line,
                              where or None), USAGE)
