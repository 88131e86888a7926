"""The board page as one self-contained HTML text: Jinja2 (autoescape on) fills
``templates/board.html.j2``, which inlines its CSS, its JavaScript, the plots' SVG and the
page model as JSON (Jinja2's ``tojson``: ``<``, ``>``, ``&`` and ``'`` escaped, so no task
text can close the script element). No network, no CDN: the file opens from disk.

Task bodies are Markdown, rendered by markdown-it-py in CommonMark mode with raw HTML off
(``html=False``: a ``<script>`` in a body is shown as text) and its link validation on
(``javascript:``, ``vbscript:``, ``file:`` and non-image ``data:`` links are not made).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PAGE_SIZE = 50  # cards per column before "show more" (the page says how many there are)


def markdown_renderer() -> Callable[[str], str]:
    """A function from Markdown text to safe HTML (see the module docstring)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False})
    return md.render


def render_page(model: Mapping[str, Any], *, live: bool) -> str:
    """The page for ``model`` (:func:`ledgit.boardpage.model.build_model`); ``live``: the
    page listens to the server's events and fetches ``data.json`` on a change (served pages
    only; a file page never touches the network)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.PackageLoader("ledgit.boardpage", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.get_template("board.html.j2")
    return template.render(model=model, meta=model["meta"], live=live, page_size=PAGE_SIZE,
                           plots={k: Markup(v)
                                  for k, v in model["plots"].items()})
