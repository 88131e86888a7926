"""``ledgit board``: the board as one self-contained page, written to a file or served live.

A face (DESIGN §11): :mod:`.model` builds the page model from the board, its index and the
histories; :mod:`.plots` draws the inline SVG plots; :mod:`.render` fills the Jinja2 template
(autoescape on) and renders task bodies with cmarkgfm (raw HTML dropped); :mod:`.server`
serves the page read-only with server-sent events; :mod:`.cli` is the ``board`` command.
Nothing else in ledgit imports this package, and no other command pays for its imports.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations,
ledgit.integration.
"""
