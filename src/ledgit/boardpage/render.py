"""The board page as one self-contained HTML text: Jinja2 (autoescape on) fills
``templates/board.html.j2``, which inlines its CSS, its JavaScript, the plots' SVG and the
page model as JSON (Jinja2's ``tojson``: ``<``, ``>``, ``&`` and ``'`` escaped, so no task
text can close the script element). No network, no CDN: the file opens from disk.

Task bodies are Markdown (GitHub flavour: tables, strikethrough, autolinks), rendered by
cmarkgfm (the Python binding of GitHub's cmark-gfm) in its default safe mode: raw HTML is
dropped (``<!-- raw HTML omitted -->``) and ``javascript:``, ``vbscript:``, ``file:`` and
non-image ``data:`` link targets are emptied. It renders 10,000 task bodies in ~0.15 s of
CPU where markdown-it-py needs ~6 s, which the ``board --html`` budget (bench/board_bench.py)
cannot pay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PAGE_SIZE = 50  # cards per column before "show more" (the page says how many there are)


def markdown_renderer() -> Callable[[str], str]:
    """A function from Markdown text to safe HTML (see the module docstring)."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    options = Options.CMARK_OPT_VALIDATE_UTF8  # CMARK_OPT_UNSAFE is never set

    def render(text: str) -> str:
        html: str = cmarkgfm.github_flavored_markdown_to_html(text, options)
        return html

    return render


def render_page(model: Mapping[str, Any], *, live: bool) -> str:
    """The page for ``model`` (:func:`ledgit.boardpage.model.build_model`); ``live``: the
    page listens to the server's events and fetches ``data.json`` on a change (served pages
    only; a file page never touches the network)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.PackageLoader("ledgit.boardpage", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    # tojson stays HTML-safe (it escapes < > & '); unsorted and compact: ~2x faster at 10,000
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "ensure_ascii": False}
    template = env.get_template("board.html.j2")
    return template.render(model=model, meta=model["meta"], live=live, page_size=PAGE_SIZE,
                           plots={k: Markup(v)
                                  for k, v in model["plots"].items()})
