"""The board page as one self-contained HTML text: Jinja2 (autoescape on) fills
``templates/board.html.j2``, which inlines its CSS, its JavaScript, the plots' SVG and the
page model as JSON (:func:`page_json`: every ``<`` escaped, so no task text can close the
script element). No network, no CDN: the file opens from disk.

The page's own style and script are allowed by their hashes (:func:`assets`), not by
``'unsafe-inline'``: an inline event handler in the page would not run.

The model goes in two script elements: ``board-data`` (everything but the task details,
parsed at load) and, in a file page, ``board-details`` (the details, parsed on the first
detail opened): the first paint parses a third of the JSON.

Task bodies are Markdown (GitHub flavour: tables, strikethrough, autolinks), rendered by
cmarkgfm (the Python binding of GitHub's cmark-gfm) in its default safe mode: raw HTML is
dropped (``<!-- raw HTML omitted -->``) and ``javascript:``, ``vbscript:``, ``file:`` and
non-image ``data:`` link targets are emptied. It renders 10,000 task bodies in ~0.25 s of
CPU where markdown-it-py needs ~6 s, which the ``board --html`` budget (bench/board_bench.py)
cannot pay.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import cmarkgfm
import jinja2
import orjson
from cmarkgfm.cmark import Options
from markupsafe import Markup

MARKDOWN_MEMO = 20_000  # distinct bodies a renderer remembers
PAGE_SIZE = 50  # cards per column before "show more" (the page says how many there are)


def markdown_renderer() -> Callable[[str], str]:
    """A function from Markdown text to safe HTML (see the module docstring). It renders
    each distinct text once (a board's template bodies, empty bodies), remembering the last
    :data:`MARKDOWN_MEMO` texts (a long-lived server sees bodies come and go)."""
    options = Options.CMARK_OPT_VALIDATE_UTF8  # CMARK_OPT_UNSAFE is never set

    @functools.lru_cache(maxsize=MARKDOWN_MEMO)
    def render(text: str) -> str:
        html: str = cmarkgfm.github_flavored_markdown_to_html(text, options)
        return html

    return render


#: What :func:`page_json` escapes. Inside a ``<script>`` element the HTML tokenizer leaves its
#: "script data" state only at a ``<`` (HTML Standard, 13.2.5.4-13.2.5.7: ``</script``
#: ends the element, ``<!--`` opens the escaped states); with every ``<`` written as
#: ``\u003c`` no text in the JSON can end the element, open a comment or a tag, and a JSON
#: reader reads the same characters back. ``>``, ``&`` and ``'``, which Jinja2's ``tojson``
#: escapes too for use in attributes, mean nothing there (no character references in
#: script data); one pass over the bytes instead of four saves ~0.05 s of CPU on the 21 MB
#: page of a 10,000-task board.
HTML_UNSAFE = ((b"<", b"\\u003c"),)


def page_json(value: Any) -> bytes:
    """``value`` (JSON-ready: dicts with str keys, lists, str, int, bool, None) as compact
    UTF-8 JSON, safe inside a ``<script>`` element (:data:`HTML_UNSAFE` as ``\\u``
    escapes, which a JSON reader reads back as the same characters). Encoded by orjson:
    ~10x faster than the standard library's json at 10,000 tasks (0.04 s against 0.2-0.4 s
    of CPU for the 18 MB of a page, bench/board_bench.py); a value orjson refuses (a lone
    surrogate, kept from a history file that is not UTF-8) is encoded by json instead, as
    ``\\udcXX`` escapes."""
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError:
        data = json.dumps(value, separators=(",", ":")).encode("ascii")
    for char, escaped in HTML_UNSAFE:
        data = data.replace(char, escaped)
    return data


def details_json(details: Mapping[str, Any]) -> bytes:
    """The ``details`` object of a model as :func:`page_json` makes it, where each value is
    a detail or already the JSON bytes of its member ``"ID":{...}`` (encoded in a worker,
    :meth:`ledgit.boardpage.model.ExtrasCache.fill`), which are joined as they are: one
    copy of the ~15 MB of a 10,000-task board's details, not three."""
    members = [value if isinstance(value, bytes) else
               b"".join((page_json(key), b":", page_json(value)))
               for key, value in details.items()]
    return b"".join((b"{", b",".join(members), b"}"))


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("ledgit.boardpage", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined)


@functools.cache
def _template() -> jinja2.Template:
    return _environment().get_template("board.html.j2")


class Assets(NamedTuple):
    """The page's own style and script, inlined as they are, and the Content-Security-Policy
    that allows exactly them."""

    style: str
    script: str
    policy: str


def _source_hash(text: str) -> str:
    """A CSP hash source for an inline element whose text is ``text`` (CSP Level 3, "hash
    source": base64 of the SHA-256 of its UTF-8 bytes)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


@functools.cache
def assets() -> Assets:
    """:class:`Assets` of ``templates/board.css`` and ``templates/board.js``. The policy
    (the page's ``<meta>`` and, served, its header, issue 36) names the two by their hash
    instead of ``'unsafe-inline'``: no other script or style runs, no inline event handler
    (``onerror=``...), which no hash allows, and nothing is fetched but ``data:`` images and
    (served) the page's own server."""
    env = _environment()
    assert env.loader is not None
    style = env.loader.get_source(env, "board.css")[0]
    script = env.loader.get_source(env, "board.js")[0]
    policy = (f"default-src 'none'; script-src {_source_hash(script)}; "
              f"style-src {_source_hash(style)}; img-src data:; connect-src 'self'; "
              f"base-uri 'none'; form-action 'none'")
    return Assets(style, script, policy)


def render_page(model: Mapping[str, Any], *, live: bool) -> bytes:
    """The page for ``model`` (:func:`ledgit.boardpage.model.build_model`) as UTF-8 bytes;
    ``live``: the page listens to the server's events and fetches ``data.json`` on a change
    (served pages only; a file page never touches the network). ``model["details"]``, when
    there, goes into the ``board-details`` script (:func:`details_json`).

    The JSON is spliced into the rendered page as bytes, not passed through the template: a
    page of a big board is mostly JSON, and 18 MB of text holding one emoji is a 72 MB
    string to decode, copy into the template's output and encode again (~0.3 s at 10,000
    tasks). The template gets a random marker in its place instead (no task text can hold
    it), and the page is cut at the markers."""
    marker = f"ledgit-json-{secrets.token_hex(16)}"
    details = model.get("details")
    json_parts = [page_json({k: v for k, v in model.items() if k != "details"})]
    if details is not None:
        json_parts.append(details_json(details))
    own = assets()
    page = _template().render(
        style=Markup(own.style), script=Markup(own.script), policy=Markup(own.policy),
        data_json=Markup(marker), details_json=None if details is None else Markup(marker),
        meta=model["meta"], columns=model["columns"], live=live, page_size=PAGE_SIZE,
        plots={k: Markup(v) for k, v in model["plots"].items()})
    html = page.split(marker)
    if len(html) != len(json_parts) + 1:  # pragma: no cover - the template names each once
        raise RuntimeError("board.html.j2 must hold each JSON script exactly once")
    out = [html[0].encode("utf-8", "replace")]  # a lone surrogate (an undecodable path): "?"
    for data, text in zip(json_parts, html[1:], strict=True):
        out += [data, text.encode("utf-8", "replace")]
    return b"".join(out)
