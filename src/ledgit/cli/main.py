"""The ``ledgit`` command line (DESIGN §9): click, over the command table of ledgit.cli.commands.

The task commands are declared once, as :class:`ledgit.cli.argspec.Spec` values in
:data:`ledgit.cli.commands.table.SPECS`, and implemented in :mod:`ledgit.cli.commands` without
click;
this module turns each
spec into a click command (help, ``--help``, usage errors) and finds every subcommand through
:data:`COMMANDS`, a lazy table of ``name -> "module:attribute"`` so that other modules
register commands with one line and ``ledgit list`` never imports write-path code.
``python -m ledgit`` (:mod:`ledgit.__main__`) runs a plain command line straight from the
spec table and comes here only for help, odd command lines and the other commands.

Errors: a :class:`ledgit.core.errors.LedgitError` prints its one line on stderr and exits with its
code; click usage errors print one line and exit 2; anything unexpected prints one line
``ledgit: internal error: ...`` and exits 70 (a traceback only with ``LEDGIT_DEBUG=1``).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ledgit import __version__
from ledgit.cli.argspec import ARG, FLAG, MULTI, Param, Spec
from ledgit.cli.clitypes import WholeNumber, range_words
from ledgit.cli.commands.running import guarded, run_spec
from ledgit.cli.commands.table import BY, GROUPS, JSON, SPECS
from ledgit.core.errors import EXIT_CODES, OK, USAGE

# Subcommand name -> "module:attribute" of a click.Command. One line per command; other
# modules add theirs here (e.g. "merge-driver": "ledgit.hooks.mergedriver:command").
COMMANDS: dict[str, str] = {
    "init": "ledgit.cli.main:init_cmd",
    "create": "ledgit.cli.main:create_cmd",
    "get": "ledgit.cli.main:get_cmd",
    "list": "ledgit.cli.main:list_cmd",
    "search": "ledgit.cli.main:search_cmd",
    "ready": "ledgit.cli.main:ready_cmd",
    "claim": "ledgit.cli.main:claim_cmd",
    "heartbeat": "ledgit.cli.main:heartbeat_cmd",
    "release": "ledgit.cli.main:release_cmd",
    "update": "ledgit.cli.main:update_cmd",
    "note": "ledgit.cli.main:note_cmd",
    "complete": "ledgit.cli.main:complete_cmd",
    "wait": "ledgit.cli.main:wait_cmd",
    "monitor": "ledgit.cli.main:monitor_cmd",
    "park": "ledgit.cli.main:park_cmd",
    "drop": "ledgit.cli.main:drop_cmd",
    "archive": "ledgit.cli.main:archive_cmd",
    "reopen": "ledgit.cli.main:reopen_cmd",
    "item": "ledgit.cli.main:item_group",
    "accept": "ledgit.cli.main:accept_cmd",
    "revise": "ledgit.cli.main:revise_cmd",
    "writeback": "ledgit.cli.main:writeback_cmd",
    "handoff": "ledgit.cli.main:handoff_cmd",
    "history": "ledgit.cli.main:history_cmd",
    "record": "ledgit.cli.main:record_cmd",
    "revert": "ledgit.cli.main:revert_cmd",
    "check": "ledgit.cli.check:check_cmd",
    "verify": "ledgit.cli.gitcli:verify_cmd",  # cli.verify_cmd + the CI gate options
    "cache": "ledgit.cli.main:cache_group",
    "lease": "ledgit.cli.main:lease_group",
    "project": "ledgit.cli.main:project_group",
    "demo": "ledgit.cli.demo:demo_cmd",
    "board": "ledgit.boardpage.cli:board_cmd",
    "import": "ledgit.interop.cli:import_group",
    "export": "ledgit.interop.cli:export_group",
    "install": "ledgit.cli.gitcli:install_cmd",
    "uninstall": "ledgit.cli.gitcli:uninstall_cmd",
    "doctor": "ledgit.cli.gitcli:doctor_cmd",
    "resolve": "ledgit.cli.gitcli:resolve_cmd",
    "restore-events": "ledgit.cli.gitcli:restore_events_cmd",
    "hook": "ledgit.cli.gitcli:hook_cmd",
    "merge-driver": "ledgit.cli.gitcli:merge_driver_cmd",
    "forge": "ledgit.cli.main:forge_group",
    "sync": "ledgit.cli.main:sync_cmd",
    "help": "ledgit.cli.helpcmd:help_cmd",
    "mcp": "ledgit.cli.mcpcli:mcp_cmd",
}

# ``ledgit --help`` lists the commands in these sections, in this order (issue 18); a command
# named in no section is listed under "Other commands", so a new one needs one line here.
SECTIONS = ("Tasks", "Agent state", "Git integration", "Import / export", "Maintenance")
SECTION: dict[str, str] = {
    "init": "Tasks", "create": "Tasks", "get": "Tasks", "list": "Tasks", "search": "Tasks",
    "ready": "Tasks", "update": "Tasks", "complete": "Tasks", "wait": "Tasks",
    "monitor": "Tasks", "park": "Tasks", "drop": "Tasks", "archive": "Tasks",
    "reopen": "Tasks", "history": "Tasks",
    "claim": "Agent state", "heartbeat": "Agent state", "release": "Agent state",
    "item": "Agent state", "lease": "Agent state", "accept": "Agent state",
    "revise": "Agent state",
    "writeback": "Agent state", "handoff": "Agent state", "note": "Agent state",
    "install": "Git integration", "uninstall": "Git integration", "verify": "Git integration",
    "restore-events": "Git integration",
    "resolve": "Git integration", "doctor": "Git integration", "forge": "Git integration",
    "sync": "Git integration",
    "import": "Import / export", "export": "Import / export",
    "check": "Maintenance", "record": "Maintenance", "cache": "Maintenance",
    "demo": "Maintenance", "help": "Maintenance",
    "project": "Tasks", "mcp": "Agent state", "revert": "Tasks", "board": "Tasks",
}
# Run by Git, not by people: left out of the main list (still ``ledgit help hook``).
PLUMBING = ("hook", "merge-driver")

# One example per command, shown at the end of its --help (issue 18). Keyed by the command's
# words after ``ledgit``; tests/test_help.py checks that every command has one.
EXAMPLES: dict[str, str] = {
    "init": "ledgit init",
    "create": "ledgit create 'Make the export resumable' --priority 1 --goal 'Resumes "
              "after a crash' --accept 'kill -9, restart: same output'",
    "get": "ledgit get T-k3v --no-body",
    "list": "ledgit list --status open --label ci --limit 20",
    "search": "ledgit search 'cursor file' --field body",
    "ready": "ledgit ready --limit 5",
    "claim": "ledgit claim T-k3v --by agent-a --note 'cursor file first'",
    "heartbeat": "ledgit heartbeat T-k3v --by agent-a",
    "release": "ledgit release T-k3v --by agent-a --note 'blocked on review'",
    "update": "ledgit update T-k3v --next-action 'write the detector' --label reliability",
    "note": "ledgit note T-k3v 'the flaky test is the clock, not the lock' --by agent-a",
    "complete": "ledgit complete T-k3v --response 'resumable export in src/export.py'",
    "wait": "ledgit wait T-k3v --on 'review by alice'",
    "monitor": "ledgit monitor T-k3v --signal 'nightly export duration'",
    "park": "ledgit park T-k3v --reason 'needs the new storage API' --reuse 'benchmark script'",
    "drop": "ledgit drop T-k3v --reason 'upstream fixed it' --kind no_change",
    "archive": "ledgit archive T-k3v",
    "reopen": "ledgit reopen T-k3v --note 'the crash is back'",
    "item": "ledgit item add T-k3v --kind decision --text 'fsync per batch'",
    "item add": "ledgit item add T-k3v --kind decision --text 'fsync per batch' --why 'cheap'",
    "item list": "ledgit item list T-k3v --trust locked",
    "accept": "ledgit accept T-k3v i-o3xkqngt --by owner",
    "revise": "ledgit revise T-k3v --supersedes i-o3xkqngt --text 'fsync every 100 rows'",
    "writeback": "ledgit writeback T-k3v --evidence 'tests pass' --set response='done, see PR'",
    "handoff": "ledgit handoff T-k3v --json",
    "history": "ledgit history T-k3v",
    "record": "ledgit record T-k3v --by alice",
    "check": "ledgit check --fix",
    "verify": "ledgit verify --range origin/main..HEAD --format github",
    "cache": "ledgit cache rebuild",
    "cache rebuild": "ledgit cache rebuild",
    "cache status": "ledgit cache status --json",
    "lease": "ledgit lease list",
    "lease list": "ledgit lease list --expired --json",
    "lease prune": "ledgit lease prune",
    "demo": "ledgit demo --keep",
    "import": "ledgit import beads .beads/issues.jsonl",
    "import beads": "ledgit import beads .beads/issues.jsonl",
    "import stateframe": "ledgit import stateframe task.ledger.json",
    "import yylo": "ledgit import yylo ../other-repo",
    "import backlog": "ledgit import backlog ../other-repo",
    "export": "ledgit export stateframe T-k3v -o task.ledger.json",
    "export stateframe": "ledgit export stateframe T-k3v -o task.ledger.json",
    "install": "ledgit install",
    "uninstall": "ledgit uninstall",
    "doctor": "ledgit doctor --fix",
    "resolve": "ledgit resolve .ledgit/tasks/T-k3v9q2mz7a.md",
    "restore-events": "ledgit restore-events ORIG_HEAD",
    "hook": "ledgit hook pre-commit",
    "merge-driver": "ledgit merge-driver %O %A %B %L %P",
    "help": "ledgit help json",
    "project": "ledgit project add lib ../lib",
    "project add": "ledgit project add spec ../spec --ref v1.2",
    "project list": "ledgit project list --json",
    "project remove": "ledgit project remove lib",
    "mcp": "ledgit mcp --http --port 8765",
    "revert": "ledgit revert T-k3v 3f9c0a1b",
    "board": "ledgit board --serve",
    "forge": "ledgit forge update feature-x --base main",
    "sync": "ledgit sync --json",
    "forge update": "ledgit forge update --all --base main --conflicting",
    "forge install-workflow": "ledgit forge install-workflow",
}

F = TypeVar("F", bound=Callable[..., Any])


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use from a name table."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy if lazy is not None else {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.lazy.get(cmd_name)
        if spec is None:
            return None
        module_name, _, attr = spec.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{spec} is not a click command")
        add_examples(command, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, plus "Did you mean ...?" for a mistyped command (difflib)."""
        name = args[0] if args else ""
        if (not ctx.resilient_parsing and not name.startswith("-")
                and self.get_command(ctx, name) is None):
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise click.UsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands by :data:`SECTIONS`, each with its whole summary; plumbing left out."""
        order = {name: i for i, name in enumerate(SECTION)}  # a section's own order
        names = sorted((n for n in self.list_commands(ctx) if n not in PLUMBING),
                       key=lambda n: (order.get(n, len(order)), n))
        width = max(map(len, names), default=0)
        rows: dict[str, list[tuple[str, str]]] = {}
        for name in names:
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.setdefault(SECTION.get(name, "Other commands"), []).append(
                (name.ljust(width), summary(command)))  # one column across the sections
        for section in (*SECTIONS, "Other commands"):
            if rows.get(section):
                with formatter.section(section):
                    formatter.write_dl(rows[section])


def summary(command: click.Command) -> str:
    """A command's one-line summary: its ``short_help``, else the first sentence of its help,
    whole (click's own short help cuts it at 45 characters)."""
    if command.short_help:
        return command.short_help
    text = " ".join((command.help or "").split("\n\n")[0].split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def add_examples(command: click.Command, path: str) -> None:
    """Give ``command`` (and a group's subcommands) its :data:`EXAMPLES` line as epilog."""
    example = EXAMPLES.get(path)
    if example and not command.epilog:
        command.epilog = f"Example:\n\n\b\n  {example}"
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            add_examples(sub, f"{path} {name}")


MAIN_HELP = ("ledgit: task state for coding agents, kept in the Git repository.\n\n"
             "Start here: ledgit init, then ledgit install (in a Git repository), then ledgit "
             "create TITLE. To see it work first: ledgit demo.\n\n"
             "Exit codes: " + ", ".join(f"{code} {meaning}"
                                        for code, meaning in EXIT_CODES.items()) + ".")


@click.group(cls=LazyGroup, lazy=COMMANDS, help=MAIN_HELP,
             context_settings={"help_option_names": ["-h", "--help"],
                               "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="ledgit",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """The ``ledgit`` group; its help is :data:`MAIN_HELP` (the exit codes from
    :data:`ledgit.core.errors.EXIT_CODES`)."""


cli.epilog = ("More: ledgit help COMMAND (each ends with an example); the JSON shapes of "
              "--json: ledgit help json. Plumbing, run by Git: " + ", ".join(PLUMBING) + ".")


# --------------------------------------------------------------------------- running


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: sys.argv[1:]) through click; return the exit code."""

    def main() -> int:
        try:
            rv = cli.main(args=list(argv) if argv is not None else None, prog_name="ledgit",
                          standalone_mode=False)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else "ledgit --help")
            return OK
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else _command_path(argv)
            message = " ".join(exc.format_message().split())  # one line (DESIGN §9)
            with contextlib.suppress(BrokenPipeError, ValueError):  # stderr closed: the code
                click.echo(f"{where}: {message} (see: {where} --help)", err=True)  # says it
            return USAGE
        except click.ClickException as exc:
            click.echo(f"ledgit: {exc.format_message()}", err=True)
            return exc.exit_code
        except click.Abort:
            raise KeyboardInterrupt from None
        return rv if isinstance(rv, int) else OK

    return guarded(main)


def _command_path(argv: Sequence[str] | None) -> str:
    """``ledgit`` and the (sub)command words that lead ``argv``, for an error click raised
    without a context (e.g. ``--json=1``: "option does not take a value")."""
    words = list(sys.argv[1:] if argv is None else argv)
    path = ["ledgit"]
    if words and words[0] in COMMANDS:
        path.append(words[0])
        if len(words) > 1 and (words[0], words[1]) in SPECS:
            path.append(words[1])
    return " ".join(path)


# --------------------------------------------------------------------------- specs -> click


def click_param(param: Param) -> Callable[[F], F]:
    """The click decorator for one :class:`ledgit.cli.argspec.Param` (same names, types,
    defaults and help as :func:`ledgit.cli.argspec.parse` reads)."""
    kind: Any = None
    if param.choices is not None:
        kind = click.Choice(param.choices)
    elif param.int_range is not None:
        kind = WholeNumber(*param.int_range, range_words(*param.int_range, param.help or ""))
    elif param.path == "file":
        kind = click.Path(dir_okay=False, allow_dash=True)
    elif param.path == "dir":
        kind = click.Path(file_okay=False)
    if param.kind == ARG:
        return click.argument(param.dest, nargs=param.nargs, required=param.required,
                              type=kind)
    extra: dict[str, Any] = {}
    if param.kind == FLAG:
        extra["is_flag"] = True
    else:
        extra.update(type=kind, metavar=param.metavar, required=param.required)
        if param.kind == MULTI:
            extra["multiple"] = True
        elif param.default is not None:
            extra.update(default=param.default, show_default=param.show_default)
    return click.option(param.flag, param.dest, help=param.help or None, **extra)


def click_command(spec: Spec) -> click.Command:
    """The click command for ``spec``: its parameters, its function's docstring as help, and
    the function as callback (it returns the exit code)."""
    def callback(**values: Any) -> int:
        return run_spec(spec, values)

    for param in reversed(spec.params):
        callback = click_param(param)(callback)
    command = click.command(spec.name[-1], help=spec.help)(callback)
    add_examples(command, " ".join(spec.name))
    return command


def json_option(f: F) -> F:
    """``--json`` (as_json), as the task commands declare it."""
    return click_param(JSON)(f)


def by_option(f: F) -> F:
    """``--by WHO`` (by), as the task commands declare it."""
    return click_param(BY)(f)


def _group(name: str) -> click.Group:
    group = click.Group(name, help=GROUPS[name])
    for spec in SPECS.values():
        if len(spec.name) == 2 and spec.name[0] == name:
            group.add_command(click_command(spec))
    return group


def _command(name: str) -> click.Command:
    return click_command(SPECS[(name,)])


init_cmd = _command("init")
create_cmd = _command("create")
get_cmd = _command("get")
list_cmd = _command("list")
search_cmd = _command("search")
ready_cmd = _command("ready")
claim_cmd = _command("claim")
heartbeat_cmd = _command("heartbeat")
release_cmd = _command("release")
update_cmd = _command("update")
note_cmd = _command("note")
complete_cmd = _command("complete")
wait_cmd = _command("wait")
monitor_cmd = _command("monitor")
park_cmd = _command("park")
drop_cmd = _command("drop")
archive_cmd = _command("archive")
reopen_cmd = _command("reopen")
item_group = _group("item")
accept_cmd = _command("accept")
revise_cmd = _command("revise")
writeback_cmd = _command("writeback")
handoff_cmd = _command("handoff")
history_cmd = _command("history")
record_cmd = _command("record")
revert_cmd = _command("revert")
verify_cmd = _command("verify")
cache_group = _group("cache")
lease_group = _group("lease")
project_group = _group("project")
forge_group = _group("forge")
sync_cmd = _command("sync")


__all__ = ["COMMANDS", "LazyGroup", "by_option", "cli", "click_command", "click_param",
           "json_option", "run"]
