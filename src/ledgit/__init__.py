"""ledgit: task state for coding agents, kept in Git, merged by Git.

The folder is the layer (docs/design.md, "The map"); each package says what it may import:

* :mod:`ledgit.core` -- the record, the history, the merge policy: pure;
* :mod:`ledgit.git` -- every question asked of Git;
* :mod:`ledgit.storage` -- the board on disk and its index;
* :mod:`ledgit.operations` -- what the faces run: transitions, gate, resolve, install;
* the faces: :mod:`ledgit.hooks` (what Git runs), :mod:`ledgit.interop`,
  :mod:`ledgit.boardpage`, :mod:`ledgit.mcp`, and :mod:`ledgit.cli` over them all;
  ``python -m ledgit`` is :mod:`ledgit.__main__`.

This module holds only the version, which every layer may read.

May import: nothing.
"""

__version__ = "0.1.0"
