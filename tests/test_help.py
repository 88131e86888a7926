"""Help that guides (issue 18): commands in sections with whole summaries and plumbing left
out, "did you mean" for a mistyped command, an example in every command's help, and the
JSON shapes from the installed package (``ledgit help json``)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from sourcetree import copy_sources

from ledgit.__main__ import run as ledgit_run
from ledgit.cli import main as cli
from ledgit.cli.helpdoc import json_sections
from ledgit.core import errors

PROJECT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = ledgit_run(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def every_command() -> list[tuple[str, click.Command]]:
    """(words after ``ledgit``, command) for every command and group subcommand."""
    group_ctx = click.Context(cli.cli, info_name="ledgit")
    found: list[tuple[str, click.Command]] = []
    for name in cli.cli.list_commands(group_ctx):
        command = cli.cli.get_command(group_ctx, name)
        assert command is not None, name
        found.append((name, command))
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", c) for sub, c in command.commands.items()]
    return found


def test_main_help_lists_sections_with_whole_summaries(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--help")
    assert code == 0 and not err
    heads = [line[:-1] for line in out.splitlines() if re.fullmatch(r"[A-Z][\w /]+:", line)]
    assert heads == ["Options", *cli.SECTIONS]  # no "Other commands": each has its section
    shown = set(re.findall(r"(?m)^  ([a-z][a-z-]*)  +\S", out.split("Options:")[1]))
    assert shown == set(cli.COMMANDS) - set(cli.PLUMBING), shown ^ set(cli.COMMANDS)
    assert not shown & set(cli.PLUMBING)
    assert "Plumbing, run by Git: hook, merge-driver." in " ".join(out.split())
    assert "ledgit help json" in out
    text = "".join(out.split())  # wrapping may break a line at a hyphen
    for name, command in every_command():
        if " " in name or name in cli.PLUMBING:
            continue
        line = cli.summary(command)
        assert "".join(line.split()) in text, (name, line)  # whole, not cut at 45 chars
        assert not line.endswith("..."), name
    # a section keeps its commands in the table's order: the workflow, not the alphabet
    tasks = out.split("Tasks:")[1].split("Agent state:")[0]
    assert tasks.index("  init ") < tasks.index("  create ") < tasks.index("  archive ")


def test_a_new_command_fits_a_section_by_itself(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "zz-new", "ledgit.cli.demo:demo_cmd")
    code, out, _ = run(capsys, "--help")
    assert code == 0
    other = out.split("Other commands:")[1]
    assert re.search(r"(?m)^  zz-new +Three agents", other)


@pytest.mark.parametrize(("typo", "hint"), [("lsit", "Did you mean 'list'?"),
                                            ("instal", "Did you mean 'install' or "),
                                            ("qqqqzz", None)])
def test_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str], typo: str,
                                              hint: str | None) -> None:
    code, out, err = run(capsys, typo)
    assert code == 2 and not out
    assert len(err.splitlines()) == 1 and f"No such command '{typo}'." in err
    if hint is None:
        assert "Did you mean" not in err
    else:
        assert hint in err


def test_a_mistyped_subcommand_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "item", "ad")
    assert code == 2 and "Did you mean 'add'?" in err


@pytest.mark.parametrize(("topic", "hint"), [(["snyc"], "did you mean 'sync'?"),
                                             (["item", "ad"], "did you mean 'item add'?"),
                                             (["qqqqzz"], None)])
def test_help_on_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str],
                                                      topic: list[str], hint: str | None) -> None:
    code, out, err = run(capsys, "help", *topic)
    assert code == 2 and not out and len(err.splitlines()) == 1
    assert f"no command '{' '.join(topic)}'" in err
    assert (hint in err) if hint else "did you mean" not in err


def test_every_command_ends_its_help_with_an_example() -> None:
    missing = []
    for name, command in every_command():
        with click.Context(command, info_name=f"ledgit {name}") as ctx:
            text = command.get_help(ctx)
        m = re.search(r"Example:\n\n +(ledgit \S+( \S+)?)", text)
        if m is None or not m[1].startswith(f"ledgit {name.split()[0]}"):
            missing.append(name)
    assert not missing, f"add a line to ledgit.cli.main.EXAMPLES for: {missing}"


def test_help_command_is_the_commands_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, via_help, _ = run(capsys, "help", "item", "add")
    assert code == 0
    code, via_flag, _ = run(capsys, "item", "add", "--help")
    assert code == 0 and via_help == via_flag and "Example:" in via_help
    code, main, _ = run(capsys, "help")
    assert code == 0 and main == run(capsys, "--help")[1]
    code, _, err = run(capsys, "help", "nope")
    assert code == 2 and "no command 'nope'" in err


def test_json_option_points_at_the_installed_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "get", "--help")
    assert "Print JSON (shapes: ledgit help json)." in out and "docs/cli.md" not in out
    code, shapes, err = run(capsys, "help", "json")
    assert code == 0 and not err
    assert '"readout": 1' in shapes and '"tasks": [{"id"' in shapes
    assert "ledgit get ID [--no-body] [--json]\n" in shapes
    assert shapes == json_sections((PROJECT / "docs" / "cli.md").read_text(encoding="utf-8"))
    # Structure (a fresh-user trial found "Exit codes" printed above a paragraph on malformed
    # files, and the page title above the writes' bullet): every heading is a command
    # section of the page, each followed by its indented blocks.
    page = (PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")
    commands = {h.replace("`", "").strip() for h in re.findall(r"(?m)^### (.*)$", page)}
    headings = [line for line in shapes.splitlines() if line and not line.startswith(" ")]
    assert headings[0] == "ledgit init [PATH] [--prefix T] [--json]"
    assert set(headings) <= commands, set(headings) - commands
    lines = shapes.splitlines()
    for i, line in enumerate(lines):
        if line in headings:
            assert i + 1 < len(lines) and lines[i + 1].startswith("  "), line  # its blocks


def test_json_sections_picks_the_blocks_that_state_a_shape() -> None:
    text = ("# Title\n\nNot JSON here.\n\n## Exit codes\n\nThe JSON has `errors`.\n\n"
            "### `ledgit a`\nWhat a does.\n\nJSON: `{\"x\"}`.\n\n"
            "### `ledgit b`\nNo shape here.\n\n### `ledgit c`\n- one\n- JSON `{\"y\"}`\n\n"
            "```json\n{\"z\": 1}\n```\n")
    assert json_sections(text) == ("ledgit a\n  JSON: `{\"x\"}`.\n\n"
                                   "ledgit c\n  - JSON `{\"y\"}`\n  ```json\n  {\"z\": 1}\n"
                                   "  ```\n")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_built_package_carries_the_reference(tmp_path: Path) -> None:
    """setup.py's build_py copies docs/cli.md into the package: ``ledgit help json`` works
    where no source checkout is (the build, run from a copy of the sources)."""
    src = copy_sources(tmp_path / "src", skip=("bench", "stress", "tests"))
    lib = tmp_path / "lib"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(lib)], cwd=src, env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    packaged = lib / "ledgit" / "data" / "cli.md"
    assert packaged.read_bytes() == (PROJECT / "docs" / "cli.md").read_bytes()
    shutil.rmtree(src)  # no docs/cli.md to fall back on
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                           "from ledgit.__main__ import main; sys.argv[1:] = ['help', 'json']; "
                           "main()", str(lib)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '"readout": 1' in proc.stdout


def test_main_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: every exit code a command returns is in ``ledgit --help`` (69 and 130
    included), in docs/cli.md's table and in the README's list, as errors.EXIT_CODES says."""
    constants = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, int)}
    assert constants == set(errors.EXIT_CODES), constants ^ set(errors.EXIT_CODES)
    assert {69, 70, 74, 130} <= constants
    code, out, _ = run(capsys, "--help")
    assert code == 0
    text = " ".join(out.split())
    for number, meaning in errors.EXIT_CODES.items():
        assert f"{number} {meaning}" in text, number
    table = {int(n) for n in re.findall(r"(?m)^\| (\d+) \|", (PROJECT / "docs" / "cli.md")
                                        .read_text(encoding="utf-8"))}
    assert table == set(errors.EXIT_CODES)
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    listed = readme.split("## Exit codes", 1)[1]
    assert {int(n) for n in re.findall(r"(?m)(?:^|· )(\d+) ", listed)} == set(errors.EXIT_CODES)


def test_every_literal_exit_code_is_listed() -> None:
    """A LedgitError raised with a literal code, or a literal returned by the entry points,
    is one of errors.EXIT_CODES."""
    found: dict[int, str] = {}
    for path in (PROJECT / "src" / "ledgit").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "LedgitError" \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                found[node.args[1].value] = f"{path.name}:{node.lineno}"
    for path in (PROJECT / "src" / "ledgit" / "__main__.py",
                 PROJECT / "src" / "ledgit" / "cli" / "commands" / "running.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, int) and node.value.value is not True:
                found[node.value.value] = f"{path.name}:{node.lineno}"
    assert set(found) <= set(errors.EXIT_CODES), found
