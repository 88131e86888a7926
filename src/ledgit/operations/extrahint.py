"""How to install one of ledgit's extras, as a command that works here (issue 28): ledgit is
installed from a checkout of its source, so ``pip install 'ledgit[mcp]'`` (an index's
package) fails; ``pip install -e 'CHECKOUT[mcp]'`` works, CHECKOUT being this installation's
source tree when it has one."""

from __future__ import annotations

import os
import shlex

import ledgit


def checkout() -> str | None:
    """The source checkout this ledgit runs from (the directory holding ``pyproject.toml``
    two levels above the package, as in ``src/ledgit``), None for an installed wheel."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ledgit.__file__))))
    return top if os.path.isfile(os.path.join(top, "pyproject.toml")) else None


def install_hint(extra: str) -> str:
    """``pip install -e '/path/to/checkout[EXTRA]'`` for this installation's checkout, else
    the form to run in one (``pip install -e '.[EXTRA]'``, from a checkout of ledgit)."""
    top = checkout()
    if top is None:
        return f"pip install -e '.[{extra}]' (run in a checkout of ledgit)"
    here = os.path.relpath(top) if top == os.getcwd() else top
    return f"pip install -e {shlex.quote(f'{here}[{extra}]')}"
