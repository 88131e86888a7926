"""``ledgit help [COMMAND...]`` and ``ledgit help json`` (issue 18): a command's help with its
example, or every ``--json`` shape from the shipped command reference.

A module of its own so that no other command loads the reference's reader (importlib.resources)
when the command line starts.
"""

from __future__ import annotations

import difflib

import click

from ledgit.cli.helpdoc import cli_reference, json_sections
from ledgit.cli.main import LazyGroup, add_examples, cli
from ledgit.core.errors import OK


@click.command("help")
@click.argument("topic", nargs=-1)
@click.pass_context
def help_cmd(ctx: click.Context, topic: tuple[str, ...]) -> int:
    """Help on ledgit, a command (ledgit help item add), or json: every --json shape."""
    if list(topic) == ["json"]:
        click.echo(json_shapes(), nl=False)
        return OK
    parent = ctx.parent or ctx
    command: click.Command = cli
    words: list[str] = []
    for word in topic:
        sub = (command.get_command(parent, word) if isinstance(command, click.Group)
               else None)
        if sub is None:
            known = (command.list_commands(parent) if isinstance(command, click.Group) else [])
            close = difflib.get_close_matches(word, known, n=3, cutoff=0.6)
            hint = (f"did you mean {' or '.join(repr(' '.join([*words, c])) for c in close)}? "
                    if close else "")
            raise click.UsageError(f"no command {' '.join([*words, word])!r}; {hint}"
                                   f"the commands: ledgit --help", ctx)
        words.append(word)
        if isinstance(command, LazyGroup):
            add_examples(sub, " ".join(words))
        command = sub
    name = " ".join(["ledgit", *words])
    with click.Context(command, info_name=name) as sub_ctx:
        click.echo(command.get_help(sub_ctx))
    return OK


def json_shapes() -> str:
    """The JSON shapes of every ``--json``: the paragraphs and code blocks of the command
    reference (docs/cli.md, shipped in the package as ``ledgit/data/cli.md``) that state
    one, under their command's heading."""
    # (the reference is read by `ledgit help json` only)

    return json_sections(cli_reference())
