"""Untrusted text in issue bodies stays text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from flakewarden.reports import markdown as md


def test_escape_neutralises_html_mentions_and_markdown() -> None:
    out = md.escape("<b>hi</b> @team **bold** [x](http://e) | <!-- -->")
    assert "<" not in out and ">" not in out
    assert "@team" not in out and "@\u200bteam" in out
    assert "\\*\\*bold\\*\\*" in out and "\\[x\\]\\(http:\\//" in out
    assert "\\|" in out
    assert "\n" not in md.escape("two\nlines")


def test_escape_keeps_the_visible_characters() -> None:
    text = "tests/test_a.py::test_b[x-1.5]"
    # Removing the escapes gives the original text back.
    assert re.sub(r"\\(.)", r"\1", md.escape(text)) == text


def test_code_span_outgrows_backtick_runs() -> None:
    assert md.code("plain") == "`plain`"
    assert md.code("a ``b`` c") == "```a ``b`` c```"
    assert md.code("`edge`") == "`` `edge` ``"
    assert md.code("") == "` `"
    assert "@\u200bme" in md.code("@me")


def test_code_block_fence_is_longer_than_any_run_inside() -> None:
    block = md.code_block("x\n`````\ny", "python")
    first, *_, last = block.splitlines()
    assert first == "``````python" and last == "``````"
    assert md.code_block("no ticks").splitlines()[0] == "```text"
    assert md.code_block("a", info="te`xt <x>").splitlines()[0] == "```textx"


def test_clip_states_the_cut() -> None:
    assert md.clip("short", 10) == "short"
    out = md.clip("y" * 1000, 100)
    # Room is kept for the longest note ("1,000", 39 characters): 61 kept, 939 cut, and the
    # shorter count leaves the text 2 characters under the limit.
    assert out == "y" * 61 + "\n… cut: 939 more characters not shown"
    assert len(out) == 98


def test_link_only_for_http_urls() -> None:
    assert md.link("run 1", "https://github.com/o/r/actions/runs/1") == (
        "[run 1](https://github.com/o/r/actions/runs/1)"
    )
    assert md.link("x", "javascript:alert(1)") == "x"
    assert md.link("x", "https://e.com/a b)(@") == "[x](https://e.com/a%20b%29%28%40)"


def test_table_code_escapes_pipes_even_inside_code() -> None:
    assert md.table_code("a|b") == "`a\\|b`"


# The Markdown GitHub renders: CommonMark with GFM's tables and strikethrough.
_GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_INERT = {"text", "softbreak"}


def _shown(text: str) -> str:
    """What a reader should see for ``text``: one line, no control characters, and a
    zero-width space after each ``@`` and ``#``."""
    kept = "".join(c for c in text if c.isspace() or not (ord(c) < 32 or 127 <= ord(c) < 160))
    return "".join(c + "\u200b" if c in "@#" else c for c in " ".join(kept.split()))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_an_escaped_cell_never_opens_a_tag_a_link_a_cell_or_a_line(text: str) -> None:
    cell = md.escape(text)
    tokens = _GFM.parse(f"| a | b |\n|---|---|\n| {cell} | end |\n")
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 2  # the header and one body row: no line started a new one
    inlines = [t for t in tokens if t.type == "inline"]
    assert [t.content for t in inlines][-1] == "end"  # no pipe opened a cell
    children = inlines[-2].children or []
    assert {c.type for c in children} <= _INERT, children  # no tag, link, image, code, emphasis
    assert "".join(c.content for c in children) == _shown(text)  # every character shown
    # In the raw text: no workflow command, no bare URL for GitHub to link, no mention.
    assert "::" not in cell and "##[" not in cell and "://" not in cell
    assert "www." not in cell.lower()
    assert "\n" not in cell and "\r" not in cell
    assert re.search(r"[@#][^\u200b]", cell) is None


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("- item", "\\- item"),  # a list at the start of a line
        ("1. first", "1\\. first"),
        ("=====", "\\====="),  # a setext heading under the previous line
        ("# heading", "#\u200b heading"),
        ("> quote", "&gt; quote"),
        ("2024-05-02 a-b", "2024-05-02 a-b"),  # mid-line, "-" means nothing
        ("3) third", "3\\) third"),
        ("::error::x", ":\\:error:\\:x"),  # a workflow command, should the line reach a log
        ("t.py::test_a", "t.py:\\:test\\_a"),
    ],
)
def test_text_at_the_start_of_a_line_opens_no_block(raw: str, shown: str) -> None:
    assert md.escape(raw) == shown
    html = _GFM.render(md.escape(raw) + "\n")
    assert html.startswith("<p>") and html.count("<") == 2  # one paragraph and nothing else


def test_a_cut_keeps_the_escapes_whole() -> None:
    assert md.escape("a|b" * 10, 4) == "a\\|b…"
    assert md.escape("short", 10) == "short"


SRC = Path(md.__file__).resolve().parents[1]


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_markdown_writer_uses_the_one_escaper() -> None:
    """A module that writes a Markdown table or heading imports ``reports.markdown``, and
    no module but that one defines an escaper or a mention breaker of its own."""
    own = Path(md.__file__).resolve()
    writers, others = [], []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        strings = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
        names = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        if path == own:
            continue
        if any(re.match(r"\| |\|---|#{2,3} ", s) for s in strings):
            imports = {
                f"{n.module}.{a.name}"
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module
                for a in n.names
            }
            writers.append(path.name)
            if "flakewarden.reports.markdown" not in imports and not any(
                i.startswith("flakewarden.reports.markdown.") for i in imports
            ):
                others.append(f"{path.relative_to(SRC)} writes Markdown without the escaper")
        if any("\u200b" in s or "&#8203;" in s for s in strings):
            others.append(f"{path.relative_to(SRC)} breaks mentions itself")
        for name in names:
            if "escape" in name and name != "escape_attribute":  # junit's is XML
                others.append(f"{path.relative_to(SRC)} defines {name}")
    assert len(writers) >= 10  # the summary, verdict.md, issue bodies, comments, the digest...
    assert others == []
