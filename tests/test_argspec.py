"""The click-free command-line parser (ledgit.cli.argspec) against click on the same spec table.

For every task command, generated command lines must give the same keywords through
:func:`ledgit.cli.argspec.parse` as through the click command that :mod:`ledgit.cli.main` builds
from
the same spec — or ``parse`` must hand the line to click (None) exactly when click refuses it
(usage error, bad value) or prints help.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgit.cli import argspec
from ledgit.cli import main as cli
from ledgit.cli.argspec import ARG, Spec
from ledgit.cli.commands import table

VALUES = ("x", "", "-", "3", "0", "4", "9", "-1", "1.5", "open", "done", "desc", "asc",
          "fact", "no_change", "T-abc", "a,b", "=", "--", "-x", "--json", "--bogus", "-h",
          "--help", "a=b", "title with spaces")


def click_values(spec: Spec, args: list[str]) -> dict[str, Any] | None:
    """What click makes of ``args`` for ``spec`` (None: it refused them or printed help)."""
    command = cli.click_command(spec)
    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            ctx = command.make_context(" ".join(spec.name), list(args))
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None
    return dict(ctx.params)


def tokens(spec: Spec) -> st.SearchStrategy[list[str]]:
    flags = [p.flag for p in spec.params if p.kind != ARG]
    words = st.one_of(st.sampled_from(flags), st.sampled_from(VALUES),
                      st.sampled_from(flags).map(lambda f: f + "=v"),
                      st.sampled_from(flags).map(lambda f: f + "=3"))
    return st.lists(words, max_size=8)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "a file" and "a dir" exist, for the path parameters (create --body-file, init PATH)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a file").write_text("body\n")
    (tmp_path / "a dir").mkdir()


SPECS = sorted(table.SPECS.values(), key=lambda s: s.name)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: " ".join(s.name))
@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_parse_agrees_with_click(spec: Spec, data: st.DataObject) -> None:
    args = data.draw(tokens(spec))
    extra = data.draw(st.lists(st.sampled_from(["a file", "a dir", "T-1", "x"]), max_size=3))
    args = args + extra
    fast = argspec.parse(spec, args)
    slow = click_values(spec, args)
    assert fast == slow, (args, fast, slow)


@pytest.mark.parametrize("argv,expected", [
    (["list", "--limit", "20"], {"limit": 20, "sort": "desc", "status": ()}),
    (["list", "--status=open", "--status", "done", "--json"],
     {"status": ("open", "done"), "as_json": True}),
    (["update", "T-1", "--response", "--json"], {"task": "T-1", "response": "--json"}),
    (["update", "--set", "a=b", "T-1", "--set", "c="], {"task": "T-1", "sets": ("a=b", "c=")}),
    (["search", "--", "-dialer"], {"text": "-dialer"}),
    (["accept", "T-1", "I-1", "I-2", "--by", "olga"], {"items": ("I-1", "I-2"), "by": "olga"}),
    (["item", "add", "T-1", "--kind", "fact", "--text", "t"], {"kind": "fact", "text": "t"}),
])
def test_plain_command_lines_never_reach_click(argv: list[str],
                                               expected: dict[str, Any]) -> None:
    found = argspec.find(table.FAST, argv)
    assert found is not None
    values = argspec.parse(*found)
    assert values is not None
    assert {k: values[k] for k in expected} == expected


@pytest.mark.parametrize("argv", [
    ["list", "--help"], ["get"], ["get", "a", "b"], ["list", "--limit", "0"],
    ["list", "--status", "closed"], ["list", "--nope"], ["get", "-h", "T-1"],
    ["update", "T-1", "--priority", "5"], ["create", "t", "--body-file", "a dir"],
    ["item", "add", "T-1", "--text", "t"], ["list", "--json=1"], ["update", "T-1", "--title"],
])
def test_what_click_must_answer_is_left_to_click(argv: list[str]) -> None:
    found = argspec.find(table.FAST, argv)
    assert found is not None
    assert argspec.parse(*found) is None


def test_verify_is_not_on_the_fast_path() -> None:
    # its command line belongs to ledgit.cli.gitcli (--rev/--range/--format)
    assert argspec.find(table.FAST, ["verify", "--all"]) is None
    assert ("verify",) in table.SPECS


def test_every_spec_function_exists_and_takes_its_parameters() -> None:
    for spec in table.SPECS.values():
        module, _, attr = spec.run.partition(":")
        function = getattr(__import__(module, fromlist=[attr]), attr)
        names = list(inspect.signature(function).parameters)
        # --project is taken by ledgit.cli.commands.running.run_spec (it picks the board), not by
        # the function
        assert names == [p.dest for p in spec.params if p.dest != "project"], spec.name
        assert spec.help, spec.name


def test_every_click_command_has_the_spec_help() -> None:
    ctx = click.Context(cli.cli)
    for spec in table.SPECS.values():
        if spec.name == ("verify",):
            continue
        command = cli.cli.get_command(ctx, spec.name[0])
        assert command is not None
        if len(spec.name) == 2:
            assert isinstance(command, click.Group)
            command = command.get_command(ctx, spec.name[1])
        assert command is not None and command.help == spec.help, spec.name


def test_the_table_imports_no_command_module() -> None:
    """The table names each command's function as ``module:function`` and imports none of
    them (ledgit.cli.commands.running imports one when it runs), so a read pays for no write."""
    code = "import sys, ledgit.cli.commands.table; print(','.join(sorted(sys.modules)))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip().split(",")
    assert {m for m in found if m.startswith("ledgit.")} == {
        "ledgit.cli", "ledgit.cli.argspec", "ledgit.cli.commands", "ledgit.cli.commands.table"}
    assert all(s.run.startswith("ledgit.cli.commands.") for s in table.SPECS.values())
