"""How to install one of ledgit's extras, as a command that works here (issue 28): from a
checkout of ledgit's source, ``pip install -e 'CHECKOUT[mcp]'`` (CHECKOUT being this
installation's source tree); from a VCS URL, a wheel's URL or an index, the same source with
the extra, pinned as installed (issue 34: :mod:`ledgit.operations.origin`) -- never the bare
name with the extra, which installs whatever an index holds under that name."""

from __future__ import annotations

import os
import shlex

import ledgit
from ledgit.core.errors import LedgitError
from ledgit.operations.origin import installed_origin, with_extra


def checkout() -> str | None:
    """The source checkout this ledgit runs from (the directory holding ``pyproject.toml``
    two levels above the package, as in ``src/ledgit``), None for an installed wheel."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ledgit.__file__))))
    return top if os.path.isfile(os.path.join(top, "pyproject.toml")) else None


def install_hint(extra: str) -> str:
    """``pip install -e '/path/to/checkout[EXTRA]'`` for this installation's checkout; for
    an installation from a VCS URL, a wheel or an index, its recorded origin with the extra
    (``pip install 'ledgit[EXTRA] @ git+URL@COMMIT'``); else the form to run in a checkout of
    ledgit (``pip install -e '.[EXTRA]'``)."""
    top = checkout()
    if top is None:
        try:
            spec = installed_origin().spec
        except LedgitError:
            spec = None
        if spec is not None:
            return f"pip install {shlex.quote(with_extra(spec, extra))}"
        return f"pip install -e '.[{extra}]' (run in a checkout of ledgit)"
    here = os.path.relpath(top) if top == os.getcwd() else top
    return f"pip install -e {shlex.quote(f'{here}[{extra}]')}"
