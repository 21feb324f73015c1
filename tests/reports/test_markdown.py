"""Untrusted text in issue bodies stays text."""

from __future__ import annotations

import re

from flakewarden.reports import markdown as md


def test_escape_neutralises_html_mentions_and_markdown() -> None:
    out = md.escape("<b>hi</b> @team **bold** [x](http://e) | <!-- -->")
    assert "<" not in out and ">" not in out
    assert "@team" not in out and "@\u200bteam" in out
    assert "\\*\\*bold\\*\\*" in out and "\\[x\\]\\(http\\:" in out
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
