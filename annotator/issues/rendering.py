"""Render untrusted GitHub issue and comment bodies to sanitized HTML.

Pipeline: markdown-it (CommonMark + GFM tables and strikethrough, raw HTML passed through
because GitHub users write ``<details>`` and ``<br>`` by hand) -> nh3 allow-list sanitizer.
Everything markdown-it emits, including the raw HTML, is treated as hostile by nh3.

What survives, and why:

* Text structure GitHub renders: p, br, hr, h1-h6, ul/ol/li (``ol start``), blockquote,
  em/strong/del/s, sub/sup, kbd, code/pre, tables (``align`` on th/td only, because markdown-it's
  ``style="text-align:..."`` is rewritten to ``align`` before sanitizing and no ``style`` is kept).
* ``pre`` always carries ``tabindex="0"``: a log wider (or, in a thread, longer) than its box
  scrolls, and a region that scrolls must take keyboard focus so it can be scrolled without a
  mouse (WCAG 2.1.1; axe's scrollable-region-focusable).
* ``<details>``/``<summary>`` (``open``; ``class="log"`` only): bug reports hide logs in them,
  and long code blocks are collapsed into ``<details class="log">`` here.
* ``code class="language-xxx"`` matching ``language-[A-Za-z0-9_+-]+``, for later highlighting.
* ``a`` (href, title) with http/https/mailto or relative URLs; nh3 adds
  ``rel="noopener noreferrer nofollow"`` so user links neither reach ``window.opener`` nor
  earn search ranking.
* ``img`` (src, alt, title, width, height) with an absolute http(s) ``src`` only, so a body can
  neither embed ``data:`` payloads nor make the reader's browser GET a URL on our own site.

Everything else goes: script/style/iframe/object/embed/template... with their content, other
tags unwrapped to their text, every other attribute (``on*``, ``style``, ``id``...) dropped,
comments stripped. nh3 (ammonia) parses like a browser, so entity-encoded, tab-split or
mixed-case ``javascript:`` URLs are seen for what they are and removed.

Imports no Django: plain text in, plain HTML out (see HOUSE_STYLE "Pure cores").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

__all__ = ["LONG_BLOCK_LINES", "render_markdown"]

LONG_BLOCK_LINES = 25

_LANGUAGE_CLASS = re.compile(r"language-[A-Za-z0-9_+-]+")
_HTTP_URL = re.compile(r"https?://", re.IGNORECASE)


class _IssueRenderer(RendererHTML):
    """Collapses code blocks longer than LONG_BLOCK_LINES into a ``<details class="log">``."""

    def fence(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _collapse_long(tokens[idx], super().fence(tokens, idx, options, env))

    def code_block(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        return _collapse_long(tokens[idx], super().code_block(tokens, idx, options, env))


def _collapse_long(token: Token, html: str) -> str:
    lines = len(token.content.splitlines())
    if lines <= LONG_BLOCK_LINES:
        return html
    return f'<details class="log"><summary>Log · {lines} lines</summary>{html}</details>\n'


def _table_align_as_attribute(state: StateCore) -> None:
    """markdown-it aligns cells with ``style``, which the sanitizer drops; use ``align``."""
    for token in state.tokens:
        style = token.attrs.pop("style", None) if token.type in ("th_open", "td_open") else None
        if isinstance(style, str) and style.startswith("text-align:"):
            token.attrSet("align", style.removeprefix("text-align:"))


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    """Per-value checks nh3's allow-lists cannot express (regex classes, http-only images)."""
    if tag == "code" and attribute == "class":
        kept = [name for name in value.split() if _LANGUAGE_CLASS.fullmatch(name)]
        return " ".join(kept) or None
    if tag == "img" and attribute == "src":
        return value if _HTTP_URL.match(value.strip()) else None
    return value


_MARKDOWN = MarkdownIt("commonmark", {"html": True}, renderer_cls=_IssueRenderer).enable(
    ["table", "strikethrough"]
)
_MARKDOWN.core.ruler.push("table_align_as_attribute", _table_align_as_attribute)

_ALIGN = {"align": {"left", "center", "right"}}
_CLEANER = nh3.Cleaner(
    tags={
        *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote"),
        *("em", "strong", "del", "s", "sub", "sup", "kbd", "code", "pre", "a", "img"),
        *("details", "summary", "table", "thead", "tbody", "tr", "th", "td"),
    },
    clean_content_tags={
        *("script", "style", "template", "noscript", "iframe", "frame", "frameset"),
        *("object", "embed", "applet", "noembed", "noframes", "xmp", "title", "textarea"),
    },
    attributes={
        "a": {"href", "title"},
        "img": {"src", "alt", "title", "width", "height"},
        "code": {"class"},
        "details": {"open"},
        "ol": {"start"},
    },
    tag_attribute_values={"details": {"class": {"log"}}, "th": _ALIGN, "td": _ALIGN},
    set_tag_attribute_values={"pre": {"tabindex": "0"}},
    attribute_filter=_filter_attribute,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
    strip_comments=True,
)


def render_markdown(text: str | None) -> str:
    """Markdown (CommonMark + GFM tables and strikethrough) -> sanitized HTML string."""
    if not text:
        return ""
    return _CLEANER.clean(_MARKDOWN.render(text))


@lru_cache(maxsize=2048)
def markdown_html(text: str) -> str:
    """render_markdown, memoised: a thread is read by k annotators and re-read on every reload,
    and its text rarely changes (a changed text is a new key)."""
    return render_markdown(text)
