"""``ledgit forge update`` and ``ledgit forge install-workflow`` (DESIGN §12): thin over
:mod:`ledgit.integration.forge` and :mod:`ledgit.integration.workflows` -- parse, call, print
one line per branch or file (or JSON), return the exit code."""

from __future__ import annotations

from pathlib import Path

from ledgit.cli.commands.output import out, out_json
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.integration.forge import check_repository as forge_repository
from ledgit.integration.forge import exit_code, update_all, update_branches
from ledgit.integration.workflows import install_workflows, workflow_spec


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


def forge_install_workflow_cmd(base: str, ledgit_spec: str | None, only: str | None,
                               print_spec: bool, force: bool, as_json: bool) -> int:
    """``ledgit forge install-workflow``: writes .github/workflows/ledgit.yml (the gate) and
    ledgit-forge.yml (``--only`` one), installing ledgit from ``ledgit_spec`` or from where
    this ledgit came from (:func:`ledgit.integration.workflows.workflow_spec`); one line per
    file, ``written: PATH`` or ``unchanged: PATH`` (JSON: ``{"ledgit_spec", "origin",
    "files": [{"workflow", "path", "action"}]}``). ``print_spec``: print the requirement
    only. Returns 0; LedgitError exit 1 when a different file is there (nothing written)
    unless ``force``, exit 2 when ledgit came from a local path and no spec is named."""
    spec, origin = workflow_spec(ledgit_spec)
    kind = origin.kind if origin else "named"
    if print_spec:
        if as_json:
            out_json({"ledgit_spec": spec, "origin": kind})
        else:
            out(spec)
        return OK
    done = install_workflows(Path.cwd(), spec=spec, base=base, only=only, force=force)
    if as_json:
        out_json({"ledgit_spec": spec, "origin": kind,
                  "files": [{"workflow": name, "path": str(path), "action": action}
                            for name, action, path in done]})
    else:
        for _name, action, path in done:
            out(f"{action}: {path}")
    return OK
