"""Tests for annotator.issues.rendering: safe output for hostile bodies, faithful for real ones.

Safety is asserted on the parsed output (stdlib HTMLParser), not on substrings: every tag and
attribute must be on the allow-list and every URL must use an allowed scheme.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from annotator.issues.rendering import LONG_BLOCK_LINES, render_markdown

REPO = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO / "annotator" / "issues" / "demo_data"
PAYLOADS_FILE = Path(__file__).parent / "data" / "xss_payloads.txt"

# Spelled out independently of rendering.py so a loosened sanitizer fails here.
_BARE_TAGS = (
    *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "li", "blockquote"),
    *("em", "strong", "del", "s", "sub", "sup", "kbd", "summary", "table", "thead", "tbody", "tr"),
)
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set() for tag in _BARE_TAGS},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
    "code": {"class"},
    "pre": {"tabindex"},  # always "0": a log that scrolls takes keyboard focus
    "details": {"open", "class"},
    "a": {"href", "title", "rel"},
    "img": {"src", "alt", "title", "width", "height"},
}
LINK_SCHEMES = {"http", "https", "mailto"}
# What a browser does before reading a scheme (WHATWG URL: strip C0/space, drop tab/newline).
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_URL_NOISE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")

# Payloads that need characters a one-per-line file cannot hold (newlines, NUL, CR).
MULTILINE_PAYLOADS = [
    '<a href="\njavascript:alert(1)">x</a>',
    '<a href="java\nscript:alert(1)">x</a>',
    '<a href="java\r\nscript:alert(1)">x</a>',
    '<a href="java\x00script:alert(1)">x</a>',
    '<img src="\n\tjavascript:alert(1)">',
    "[a]: javascript:alert(1)\n\n[a]",
    "[a](\njavascript:alert(1))",
    '```"><img src=x onerror=alert(1)>\ncode\n```',
    "| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | <script>alert(1)</script> |",
    "<details>\n<summary>s</summary>\n\n<img src=x onerror=alert(1)>\n\n</details>",
    "```\n" + "</code></pre></details><script>alert(1)</script>\n" * 30 + "```",
    "<div\nonmouseover=alert(1)>x</div>",
]


def _file_payloads() -> list[str]:
    lines = PAYLOADS_FILE.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()]


XSS_PAYLOADS = _file_payloads() + MULTILINE_PAYLOADS


class _TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.start_tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.end_tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.end_tags.append(tag)


def _parse(html: str) -> _TagCollector:
    collector = _TagCollector()
    collector.feed(html)
    collector.close()
    return collector


def _scheme(url: str) -> str | None:
    """The scheme a browser would see, or None for a relative URL."""
    match = _SCHEME.match(_URL_NOISE.sub("", url.strip(_C0_AND_SPACE)))
    return match.group(1).lower() if match else None


def _safety_problems(html: str) -> list[str]:
    parsed = _parse(html)
    problems = [f"end tag {t}" for t in parsed.end_tags if t not in ALLOWED_ATTRIBUTES]
    for tag, attrs in parsed.start_tags:
        if tag not in ALLOWED_ATTRIBUTES:
            problems.append(f"tag {tag}")
        for name, value in attrs:
            allowed_names = ALLOWED_ATTRIBUTES.get(tag, set())
            if name.startswith("on") or name == "style" or name not in allowed_names:
                problems.append(f"attribute {tag}[{name}]")
            if name == "tabindex" and value != "0":
                problems.append(f"{tag}[tabindex] {value}")
            if name in ("href", "src"):
                allowed = {"http", "https"} if tag == "img" else LINK_SCHEMES
                scheme = _scheme(value or "")
                if scheme is not None and scheme not in allowed:
                    problems.append(f"{tag}[{name}] scheme {scheme}")
    return problems


def _tags(html: str) -> list[str]:
    return [tag for tag, _ in _parse(html).start_tags]


def _attrs(html: str, tag: str) -> list[dict[str, str | None]]:
    return [dict(attrs) for name, attrs in _parse(html).start_tags if name == tag]


# --- hostile input ---------------------------------------------------------------------------


def test_xss_corpus_has_at_least_sixty_payloads() -> None:
    assert len(XSS_PAYLOADS) >= 60


@pytest.mark.parametrize("payload", XSS_PAYLOADS)
def test_xss_payload_renders_without_unsafe_tags_attributes_or_urls(payload: str) -> None:
    assert _safety_problems(render_markdown(payload)) == []


@pytest.mark.parametrize(
    "payload",
    ["[a](javascript:alert(1))", '<a href="javascript:alert(1)">a</a>', "<javascript:alert(1)>"],
)
def test_javascript_link_never_gets_an_href(payload: str) -> None:
    assert all("href" not in attrs for attrs in _attrs(render_markdown(payload), "a"))


@pytest.mark.parametrize(
    ("payload", "gone"),
    [
        ("<script>alert('boom')</script>ok", "boom"),
        ("<style>p{color:red}</style>ok", "color"),
        ('<iframe srcdoc="x">inner</iframe>ok', "inner"),
    ],
)
def test_script_like_tags_are_removed_with_their_content(payload: str, gone: str) -> None:
    html = render_markdown(payload)
    assert gone not in html
    assert "ok" in html


def test_checker_flags_what_the_sanitizer_must_remove() -> None:
    problems = _safety_problems('<script></script><a href="jav&#x09;ascript:x" onclick="y">a</a>')
    assert problems == [
        "end tag script",
        "tag script",
        "a[href] scheme javascript",
        "attribute a[onclick]",
    ]


# --- faithful rendering ----------------------------------------------------------------------


@pytest.mark.parametrize("text", [None, ""])
def test_empty_body_renders_empty_string(text: str | None) -> None:
    assert render_markdown(text) == ""


@pytest.mark.parametrize("language", ["python", "c++", "shell-session", "objective_c"])
def test_fenced_code_keeps_its_language_class(language: str) -> None:
    html = render_markdown(f"```{language} title=x\nx = 1\n```")
    assert _tags(html) == ["pre", "code"]
    assert _attrs(html, "code") == [{"class": f"language-{language}"}]


@pytest.mark.parametrize("info", ['"><b>x', "py3.11", "a:b"])
def test_fence_language_outside_the_class_pattern_is_dropped(info: str) -> None:
    assert _attrs(render_markdown(f"```{info}\nx\n```"), "code") == [{}]


def test_indented_code_block_renders_as_pre_code() -> None:
    html = render_markdown('Trace:\n\n    File "a.py", line 1\n    boom\n')
    assert _tags(html) == ["p", "pre", "code"]
    assert "boom" in html


def test_a_code_block_takes_keyboard_focus_whatever_the_body_says() -> None:
    # A log scrolls in its box; without focus a keyboard cannot scroll it.
    html = render_markdown('```\nlog\n```\n\n<pre tabindex="-1">raw</pre>')
    assert html.count('<pre tabindex="0">') == 2
    assert "-1" not in html


def test_forty_line_log_is_collapsed_into_details() -> None:
    log = "\n".join(f"step {i}: loss=0.{i}" for i in range(40))
    html = render_markdown(f"```\n{log}\n```")
    assert html.startswith(
        '<details class="log"><summary>Log · 40 lines</summary><pre tabindex="0">'
    )
    assert _tags(html) == ["details", "summary", "pre", "code"]
    assert "step 39" in html


@pytest.mark.parametrize(
    ("lines", "collapsed"),
    [(5, False), (LONG_BLOCK_LINES, False), (LONG_BLOCK_LINES + 1, True)],
)
def test_only_blocks_longer_than_the_limit_collapse(lines: int, collapsed: bool) -> None:
    fenced = render_markdown("```\n" + "x\n" * lines + "```")
    indented = render_markdown("    x\n" * lines)
    for html in (fenced, indented):
        assert ("details" in _tags(html)) is collapsed
        assert (f"Log · {lines} lines" in html) is collapsed


def test_details_block_written_by_hand_is_kept() -> None:
    html = render_markdown("<details><summary>x</summary>y</details>")
    assert html.strip() == "<details><summary>x</summary>y</details>"


def test_gfm_table_renders_as_table_with_alignment() -> None:
    html = render_markdown("| a | b |\n|:--|--:|\n| 1 | ~~2~~ |")
    assert _tags(html) == ["table", "thead", "tr", "th", "th", "tbody", "tr", "td", "td", "s"]
    assert [a.get("align") for a in _attrs(html, "td")] == ["left", "right"]
    assert _safety_problems(html) == []


def test_links_get_rel_and_keep_http_https_and_mailto() -> None:
    html = render_markdown("[a](https://x.example) [b](http://x.example) <mailto:me@x.example>")
    links = _attrs(html, "a")
    assert [link["href"] for link in links] == [
        "https://x.example",
        "http://x.example",
        "mailto:me@x.example",
    ]
    assert {link["rel"] for link in links} == {"noopener noreferrer nofollow"}


@pytest.mark.parametrize(
    ("markdown", "src"),
    [
        ("![a](https://x.example/a.png)", "https://x.example/a.png"),
        ('<img src="http://x.example/a.png" width="40">', "http://x.example/a.png"),
        ("![a](/relative.png)", None),
        ("![a](data:image/png;base64,iVBORw0KGgo=)", None),
    ],
)
def test_images_keep_only_absolute_http_sources(markdown: str, src: str | None) -> None:
    assert _attrs(render_markdown(markdown), "img")[0].get("src") == src


def test_crlf_body_renders_like_lf_body() -> None:
    body = "## Bug\n\n```python\nimport torch\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n"
    assert render_markdown(body.replace("\n", "\r\n")) == render_markdown(body)


# Full-width punctuation and letters are what Chinese-language bug reports really contain.
@pytest.mark.parametrize("text", ["训练时显存溢出，怎么办？", "works now 🎉👍", "ＧＰＵ：Ａ１００"])  # noqa: RUF001
def test_chinese_text_and_emoji_survive(text: str) -> None:
    assert text in render_markdown(text)


# --- real ColossalAI bodies ------------------------------------------------------------------


def _load(name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((DEMO_DATA / name).read_text(encoding="utf-8"))
    return records


REAL_RECORDS = [
    (f"{name.removesuffix('.json')}[{i}]", record.get("body"))
    for name in ("colossalai_issues.json", "colossalai_comments.json")
    for i, record in enumerate(_load(name))
]


@pytest.mark.parametrize(
    "body", [body for _, body in REAL_RECORDS], ids=[i for i, _ in REAL_RECORDS]
)
def test_real_body_renders_safely(body: str | None) -> None:
    html = render_markdown(body)
    assert isinstance(html, str)
    assert _safety_problems(html) == []


def test_some_real_body_renders_a_code_block() -> None:
    rendered = [render_markdown(body) for _, body in REAL_RECORDS]
    assert any("pre" in _tags(html) for html in rendered)


# --- purity ----------------------------------------------------------------------------------


def test_importing_rendering_loads_no_django() -> None:
    code = (
        "import annotator.issues.rendering, sys; "
        "assert not any(m.startswith('django') for m in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
