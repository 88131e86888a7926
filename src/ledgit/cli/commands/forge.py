"""``ledgit forge update`` and ``ledgit forge install-workflow`` (DESIGN §12): thin over
:mod:`ledgit.integration.forge` -- parse, call, print one line per branch (or JSON), return
the exit code."""

from __future__ import annotations

from pathlib import Path

from ledgit.cli.commands.output import out, out_json
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.integration.forge import check_repository as forge_repository
from ledgit.integration.forge import exit_code, install_workflow, update_all, update_branches


def forge_update_cmd(branches: tuple[str, ...], base: str, remote: str, rebase: bool,
                     update_every: bool, conflicting: bool, as_json: bool) -> int:
    """``ledgit forge update BRANCH... --base BASE`` or ``--all``: one line per branch on
    stdout (JSON: ``{"base", "remote", "branches": [...]}``, docs/cli.md). Returns 0 when
    every branch is up to date or was updated, 1 when one conflicts or the gate refused it,
    5 when one kept moving, 4 when one is missing; LedgitError exit 2 for BRANCH and --all
    together or neither."""
    if bool(branches) == update_every:
        raise LedgitError("forge update: give BRANCH... or --all (not both)", USAGE)
    base = base.removeprefix("refs/heads/")
    top = forge_repository(Path.cwd(), remote)
    if update_every:
        outcomes = update_all(top, base, remote=remote, rebase=rebase, conflicting=conflicting)
    else:
        names = [b.removeprefix("refs/heads/") for b in dict.fromkeys(branches)]
        if base in names:
            raise LedgitError(f"forge update: {base} is the base itself", USAGE)
        outcomes = update_branches(top, names, base, remote=remote, rebase=rebase,
                                   conflicting=conflicting)
    if as_json:
        out_json({"base": base, "remote": remote,
                  "branches": [o.as_json() for o in outcomes]})
    else:
        for outcome in outcomes:
            out(outcome.line)
        if not outcomes:
            out(f"every branch of {remote} is up to date with {remote}/{base} (nothing pushed)")
    return exit_code(outcomes)


def forge_install_workflow_cmd(base: str, force: bool, as_json: bool) -> int:
    """``ledgit forge install-workflow``: writes .github/workflows/ledgit-forge.yml (exit 0),
    or keeps a different one there (exit 1) unless ``--force``."""
    what, path = install_workflow(Path.cwd(), base=base, force=force)
    if as_json:
        out_json({"path": str(path), "action": what})
    else:
        out(f"{what}: {path}")
    return OK
