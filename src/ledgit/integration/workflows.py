"""The GitHub workflows ``ledgit forge install-workflow`` writes (docs/git.md), each shipped
as package data in ``ledgit/data`` and written with the pip requirement that installs ledgit
in CI (issue 34): the one named by hand, else the running ledgit's recorded origin pinned to
its revision (:mod:`ledgit.operations.origin`) -- never a bare ``pip install ledgit``.

- the gate (``gate.yml`` -> ``.github/workflows/ledgit.yml``): ``ledgit verify --range`` on
  every pull request and merge-queue group, ``--ref-update`` on a forced push;
- forge update (``forge-update.yml`` -> ``.github/workflows/ledgit-forge.yml``): ``ledgit
  forge update --conflicting`` on pushes to the base and on pull requests
  (:mod:`ledgit.integration.forge`).

The templates hold ``LEDGIT_SPEC: "@LEDGIT_SPEC@"`` in the install step's environment; the
step runs ``pip install "$LEDGIT_SPEC"`` (the value reaches the shell through the
environment, never spliced into the script).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from ledgit.core.errors import CHECK_FAILED, USAGE, LedgitError
from ledgit.git import repository
from ledgit.operations.origin import Origin, checked_spec, installed_origin
from ledgit.storage.ownership import adopt_path, make_dirs

WORKFLOW_DATA = "forge-update.yml"  # package data: ledgit/data/forge-update.yml
WORKFLOW_PATH = Path(".github") / "workflows" / "ledgit-forge.yml"

GATE = "gate"  # .github/workflows/ledgit.yml: ledgit verify on pull requests and merge groups
UPDATE = "update"  # .github/workflows/ledgit-forge.yml: ledgit forge update
#: Each workflow install-workflow writes: (package data in ledgit/data, path in the work tree).
WORKFLOWS = {GATE: ("gate.yml", Path(".github") / "workflows" / "ledgit.yml"),
             UPDATE: (WORKFLOW_DATA, WORKFLOW_PATH)}
WORKFLOW_BASE = "    branches: [main]  # the base"
SPEC_SLOT = '"@LEDGIT_SPEC@"'  # the templates' LEDGIT_SPEC value, replaced when written


def _template(name: str) -> str:
    data = WORKFLOWS[name][0]
    return resources.files("ledgit").joinpath("data").joinpath(data).read_text(encoding="utf-8")


def _with_spec(text: str, spec: str) -> str:
    """``text`` with every :data:`SPEC_SLOT` set to ``spec`` (a YAML double-quoted string;
    :func:`ledgit.operations.origin.checked_spec` keeps quotes and backslashes out)."""
    return text.replace(SPEC_SLOT, json.dumps(checked_spec(spec)))


def workflow_text(base: str = "main", *, spec: str) -> str:
    """The forge update workflow shipped with the package (``ledgit/data/forge-update.yml``),
    run on pushes to ``base``, installing ledgit from ``spec`` (a pip requirement). Raises
    LedgitError (2) for a base name YAML would misread, or a spec
    :func:`ledgit.operations.origin.checked_spec` refuses."""
    if not base or any(c in base for c in " \t\n\r#:,[]{}'\"&*!|>%@`"):
        raise LedgitError(f"--base {base!r}: not a plain branch name", USAGE)
    text = _template(UPDATE).replace(WORKFLOW_BASE, f"    branches: [{base}]  # the base", 1)
    return _with_spec(text, spec)


def gate_text(*, spec: str) -> str:
    """The gate workflow shipped with the package (``ledgit/data/gate.yml``: ``ledgit
    verify`` on pull requests and merge groups, and a forced push checked tip to tip),
    installing ledgit from ``spec``. This repository's own gate is this text with spec
    ``.`` (its checkout). Raises LedgitError (2) for a refused spec."""
    return _with_spec(_template(GATE), spec)


def workflow_spec(named: str | None) -> tuple[str, Origin | None]:
    """The pip requirement a workflow installs ledgit from: ``named`` when given (checked),
    else the running ledgit's recorded origin pinned to its revision
    (:func:`ledgit.operations.origin.installed_origin`); with that origin (None when named).
    Raises LedgitError (2) when ledgit came from a local path and nothing is named."""
    if named is not None:
        return checked_spec(named), None
    origin = installed_origin()
    if origin.spec is None:
        raise LedgitError(f"ledgit here was installed from a local path ({origin.where}), "
                          f"which CI cannot install: name its source, e.g. --ledgit-spec "
                          f"'ledgit @ git+https://github.com/OWNER/ledgit@COMMIT'", USAGE)
    return origin.spec, origin


def install_workflows(cwd: Path, *, spec: str, base: str = "main", only: str | None = None,
                      force: bool = False) -> list[tuple[str, str, Path]]:
    """Write the workflows (:data:`WORKFLOWS`; ``only`` one of them) at the top of ``cwd``'s
    work tree, installing ledgit from ``spec``: ``[(workflow, "written" | "unchanged",
    path)]``. A different file already at one of the paths keeps every file as it is
    (LedgitError exit 1, naming it) unless ``force``: nothing is half-written."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree", USAGE)
    names = [only] if only else [GATE, UPDATE]
    texts = {name: gate_text(spec=spec) if name == GATE else workflow_text(base, spec=spec)
             for name in names}
    plan: list[tuple[str, str, Path]] = []
    for name in names:
        rel = WORKFLOWS[name][1]
        path = top / rel
        if path.is_file():
            if path.read_text(encoding="utf-8") == texts[name]:
                plan.append((name, "unchanged", path))
                continue
            if not force:
                raise LedgitError(f"{rel}: exists and differs from ledgit's; keep it, or "
                                  f"overwrite it: ledgit forge install-workflow --force"
                                  f"{' --only ' + name if only else ''} (nothing written)",
                                  CHECK_FAILED)
        plan.append((name, "written", path))
    for name, action, path in plan:
        if action == "written":
            make_dirs(path.parent)
            path.write_text(texts[name], encoding="utf-8")
            adopt_path(path)  # root in another user's repository: theirs (issue 36)
    return plan
