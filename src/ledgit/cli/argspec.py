"""One table of command-line parameters, read by two parsers (DESIGN §9, §10).

Every task command declares its parameters once, as :class:`Param` values in a :class:`Spec`
(the table: :mod:`ledgit.cli.commands.table`). :mod:`ledgit.cli.main` turns each spec into a click
command (help, ``--help``, completion, error messages); :func:`parse` reads the same spec
without importing click, so that ``ledgit get``/``list``/``update`` ... do not pay ~20 ms of
click import on every call (startup is a budget: DESIGN §10).

:func:`parse` accepts a subset of what click accepts and gives the same values; for anything
else (``--help``, an unknown or short option, a bad value, a missing or extra argument) it
returns ``None`` and the caller hands the argv to click, which prints its usual one-line
error. tests/test_argspec.py checks that both parsers agree on generated command lines.

Rules followed (click's, see click.parser): options may follow positional arguments;
``--`` ends the options; ``--opt=value`` and ``--opt value`` are the same, and a value may
begin with ``-``; a repeated single-value option keeps the last value (only that one is
converted and checked); a repeatable option collects a tuple in command-line order.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# Parameter kinds.
ARG = "arg"  # positional; nargs=-1 collects the rest
VALUE = "value"  # --opt VALUE
MULTI = "multi"  # --opt VALUE, repeatable -> tuple
FLAG = "flag"  # --opt -> True


class Param:
    """One parameter: ``kind`` (ARG/VALUE/MULTI/FLAG), ``flag`` (``--name``, or the
    argument's name), ``dest`` (the keyword the command receives), and for conversion:
    ``choices`` (exact strings), ``int_range`` ((min, max), either may be None), ``path``
    ("file": click.Path(dir_okay=False, allow_dash=True); "dir": click.Path(file_okay=False)).
    ``default`` is the value when absent (VALUE: None unless given; MULTI: (); FLAG: False);
    ``required`` defaults as click's (an ARG with nargs=1 yes, anything else no).
    """

    __slots__ = ("kind", "flag", "dest", "help", "metavar", "choices", "int_range", "path",
                 "default", "required", "nargs", "show_default")

    def __init__(self, kind: str, flag: str, dest: str | None = None, *, help: str = "",
                 metavar: str | None = None, choices: tuple[str, ...] | None = None,
                 int_range: tuple[int | None, int | None] | None = None,
                 path: str | None = None, default: Any = None, required: bool | None = None,
                 nargs: int = 1, show_default: bool = False) -> None:
        self.kind = kind
        self.flag = flag
        self.dest = dest or flag.lstrip("-").replace("-", "_")
        self.help = help
        self.metavar = metavar
        self.choices = choices
        self.int_range = int_range
        self.path = path
        # click's defaults: an argument is required unless it takes any number (nargs=-1)
        self.required = required if required is not None else (kind == ARG and nargs == 1)
        self.nargs = nargs
        self.show_default = show_default
        if kind == MULTI:
            self.default: Any = ()
        elif kind == FLAG:
            self.default = False
        else:
            self.default = default

    def convert(self, text: str) -> Any:
        """The value of ``text`` for this parameter, or :data:`DEFER` when click should
        judge it (out of range, not a choice, a directory where a file is wanted)."""
        if self.choices is not None:
            return text if text in self.choices else DEFER
        if self.int_range is not None:
            try:
                number = int(text)
            except ValueError:
                return DEFER
            low, high = self.int_range
            if (low is not None and number < low) or (high is not None and number > high):
                return DEFER
            return number
        if self.path == "file" and text != "-" and os.path.isdir(text):
            return DEFER
        if self.path == "dir" and os.path.exists(text) and not os.path.isdir(text):
            return DEFER
        return text


class Spec:
    """A command: ``name`` (``("item", "add")`` for a group's subcommand), ``run`` (the
    ``"module:function"`` that takes the parsed keywords and returns an exit code), its
    ``help`` (first line: the summary) and its ``params`` in the order ``--help`` lists them.
    """

    __slots__ = ("name", "run", "help", "params", "_flags")

    def __init__(self, name: tuple[str, ...], run: str, help: str,
                 params: tuple[Param, ...]) -> None:
        self.name = name
        self.run = run
        self.help = help
        self.params = params
        self._flags = {p.flag: p for p in params if p.kind != ARG}


class _Defer:
    def __repr__(self) -> str:
        return "DEFER"


DEFER: Any = _Defer()  # "let click decide" (see Param.convert)


def parse(spec: Spec, args: list[str]) -> dict[str, Any] | None:
    """The keywords for ``spec``'s function from ``args`` (the argv after the command name),
    or None when click must parse them (help, an unknown option, a bad value, a missing or
    surplus argument). Never raises."""
    values: dict[str, Any] = {p.dest: p.default for p in spec.params}
    raw: dict[str, str] = {}
    positional: list[str] = []
    i, n, options = 0, len(args), True
    flags = spec._flags
    while i < n:
        token = args[i]
        i += 1
        if options and token == "--":
            options = False
            continue
        if options and token[:1] == "-" and token != "-":
            name, eq, text = token.partition("=")
            param = flags.get(name)
            if param is None:
                return None
            if param.kind == FLAG:
                if eq:
                    return None
                values[param.dest] = True
                continue
            if not eq:
                if i >= n:
                    return None
                text = args[i]
                i += 1
            if param.kind == MULTI:
                values[param.dest] = (*values[param.dest], text)
            else:
                raw[param.dest] = text  # converted at the end: the last one counts
            continue
        positional.append(token)
    for param in spec.params:
        if param.kind != ARG:
            if param.kind == MULTI:
                converted = tuple(param.convert(text) for text in values[param.dest])
                if DEFER in converted:
                    return None
                values[param.dest] = converted
            elif param.dest in raw:
                value = param.convert(raw[param.dest])
                if value is DEFER:
                    return None
                values[param.dest] = value
            if param.required and values[param.dest] in (None, ()):
                return None
            continue
        if param.nargs == -1:
            if param.required and not positional:
                return None
            values[param.dest] = tuple(positional)
            positional = []
        elif positional:
            value = param.convert(positional.pop(0))
            if value is DEFER:
                return None
            values[param.dest] = value
        elif param.required:
            return None
    return None if positional else values


def find(specs: dict[tuple[str, ...], Spec], args: list[str]) -> tuple[Spec, list[str]] | None:
    """The spec named by the first one or two words of ``args`` and the rest of ``args``."""
    if not args:
        return None
    spec = specs.get((args[0],))
    if spec is not None:
        return spec, args[1:]
    if len(args) > 1:
        spec = specs.get((args[0], args[1]))
        if spec is not None:
            return spec, args[2:]
    return None
